/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Open windows of a pipeline: per (key, window start) aggregate states.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/window.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WINDOW_H
#define WEIR_WINDOW_H

#include "datatype/timestamp.h"
#include "lib/ilist.h"
#include "utils/hsearch.h"

#include "definition.h"

typedef struct WeirWindowKey
{
	TimestampTz start;
	uint32		keylen;
	const char *key;			/* key image (see worker.c) */
} WeirWindowKey;

typedef struct WeirWindow
{
	WeirWindowKey hkey;			/* hash key; must be first */
	uint32		hash;
	TimestampTz end;
	bool		fired;			/* its row has gone to the sink */
	bool		dirty;			/* state changed since the last checkpoint */
	bool		sink_dirty;		/* its sink row must be (re)written */
	bool		persisted;		/* a state row exists in weir.pipeline_state */
	dlist_node	bucket_node;	/* tumbling, hopping: in its bucket's list */
	dlist_node	key_node;		/* session: in its key's list of sessions */
	char		states[FLEXIBLE_ARRAY_MEMBER];	/* plan->state_size bytes */
} WeirWindow;

/* A window that left memory, with what its checkpoint must still do */
typedef struct WeirRetired
{
	char	   *key;
	uint32		keylen;
	TimestampTz start;
	TimestampTz end;
	bool		write_sink;		/* its final row is not in the sink yet */
	bool		delete_state;	/* its state row must go */
	bool		retract_sink;	/* its sink row must go (a session that merged) */
	char	   *states;			/* copy, when write_sink */
} WeirRetired;

typedef struct WeirWindowStore
{
	MemoryContext cxt;
	WeirPlan   *plan;
	HTAB	   *windows;		/* WeirWindow by (start, key) */
	HTAB	   *buckets;		/* windows by start, for firing in order */
	HTAB	   *sessions;		/* session windows by key */
	List	   *retired;		/* WeirRetired *, until the next checkpoint */
	int64		nwindows;
	int64		bytes;			/* accounted memory of windows and keys */
} WeirWindowStore;

extern WeirWindowStore *weir_window_store_create(WeirPlan *plan, MemoryContext parent);
extern WeirWindow *weir_window_lookup(WeirWindowStore *store, TimestampTz start,
									  TimestampTz end, const char *key,
									  uint32 keylen, bool *created);
extern WeirWindow *weir_session_place(WeirWindowStore *store, const char *key,
									  uint32 keylen, TimestampTz t,
									  TimestampTz watermark, int64 lateness);
extern int	weir_window_assign(WeirWindowing *w, TimestampTz t, TimestampTz *starts,
							   int max);
extern int64 weir_window_fire(WeirWindowStore *store, TimestampTz watermark,
							  int64 lateness, bool emit_updates);
extern void weir_window_forget_retired(WeirWindowStore *store);

#define WEIR_MAX_HOPS 64		/* windows a record may fall in (size / slide) */

#endif							/* WEIR_WINDOW_H */
