/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Open windows of a pipeline: entries of its store (store.h), listed by
 *	  start (tumbling, hopping) or by key (session), and their firing.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/window.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WINDOW_H
#define WEIR_WINDOW_H

#include "definition/definition.h"
#include "state/store.h"

/*
 * A session window merged into another while a checkpoint holds a version
 * of it or its row is in the sink, or (over a change topic) a window whose
 * rows all went that leaves memory with its row in the sink: the next
 * checkpoint writes it as gone if persisted, and retracts its row.
 */
typedef struct WeirRetired
{
	char	   *key;
	uint32		keylen;
	TimestampTz start;
	TimestampTz end;
	bool		persisted;		/* a checkpoint's chunk holds a version of it */
	bool		retract_sink;	/* its sink row must go */
} WeirRetired;

/* The windows of a pipeline, over its store; the worker's own */
typedef struct WeirWindows
{
	WeirStore  *store;
	WeirPlan   *plan;
	MemoryContext cxt;
	HTAB	   *buckets;		/* tumbling, hopping: window lists by start */
	HTAB	   *sessions;		/* session: window lists by key */
	List	   *retired;		/* WeirRetired *, until the next checkpoint */
	/* rows of windows that left memory: [0] first emissions, [1] updates */
	struct WeirSinkRows *retired_rows[2];	/* NULL: none yet */
	MemoryContext retired_cxt;	/* holds them; reset after each checkpoint */
} WeirWindows;

#define WEIR_MAX_HOPS 64		/* windows a record may fall in (size / slide) */

/*
 * How far past a window's end the watermark must be for a window to have
 * fired (margin after `lateness` 0) or closed for good (after the allowed
 * lateness): a window [start, end) fires when end + margin <= watermark.
 * Sessions that merge when they touch take a record at exactly their end,
 * which is not late while the watermark is at it, so they need the
 * watermark one microsecond further.  Every test of whether a window has
 * fired or closed (placing, firing, leaving memory, chunks' expiry,
 * restore) goes through here, so they agree.
 */
static inline int64
weir_window_margin(const WeirWindowing *w, int64 lateness)
{
	return lateness + (w->merge_touching ? 1 : 0);
}

extern WeirWindows *weir_windows_create(WeirStore *store, WeirPlan *plan,
										MemoryContext parent);
extern WeirEntry *weir_window_lookup(WeirWindows *ws, TimestampTz start,
									 TimestampTz end, const char *key,
									 uint32 keylen, bool *created);
extern WeirEntry *weir_window_lookup_hashed(WeirWindows *ws, TimestampTz start,
											TimestampTz end, const char *key,
											uint32 keylen, uint32 keyhash,
											bool *created);
extern WeirEntry *weir_session_place(WeirWindows *ws, const char *key,
									 uint32 keylen, TimestampTz t,
									 TimestampTz watermark, int64 lateness);
extern int	weir_window_assign(WeirWindowing *w, TimestampTz t, TimestampTz *starts,
							   int max);
extern int64 weir_window_fire(WeirWindows *ws, TimestampTz watermark,
							  int64 lateness, bool emit_updates);
extern bool weir_window_owes_retired(WeirWindows *ws);
extern void weir_window_forget_retired(WeirWindows *ws);
extern TimestampTz weir_window_end(WeirStoreRoot *root, WeirPlan *plan, WeirEntry *w);

#endif							/* WEIR_WINDOW_H */
