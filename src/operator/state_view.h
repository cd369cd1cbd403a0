/*-------------------------------------------------------------------------
 *
 * state_view.h
 *	  What weir.live_state and weir.committed_state show of each operator's
 *	  state, read by a backend that has no operator: a table of functions
 *	  per kind (window_state_view.c, dedup_state_view.c,
 *	  last_value_state_view.c, join_state_view.c; a projection has none).
 *
 * Reading takes two steps, so that the pipeline slot's lock is held only
 * while bytes are copied.  Under the lock (or over a store of the reading
 * backend's own: committed_state restores the last checkpoint into one),
 * weir_state_copy_store appends every entry of a store to a buffer as raw
 * bytes (the view's copy_extra adds what an entry points to: a join's
 * rows).  A view whose state is partly in the worker's own memory (generic
 * aggregates) has the process that holds it write an image of its entries
 * instead, in the same format (its `image`; pipeline/state_image.c asks
 * the worker for one).  After the lock, weir_state_copies parses the
 * buffer, and the view's `put` decodes the copies into rows, running the
 * owner's functions (aggregate final functions, output functions): the
 * caller acts as the pipeline's owner by then (pipeline/state_view.c).
 *
 * Buffer format, per entry: uint32 keylen, uint32 flags, int64 start,
 * int64 end, uint32 statelen, uint32 extralen, then the key image, the
 * state and the extra bytes.  Only the process that wrote it reads it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/state_view.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_VIEW_H
#define WEIR_STATE_VIEW_H

#include "fmgr.h"
#include "lib/stringinfo.h"

#include "definition/definition.h"
#include "state/store.h"

/* One entry of a store, as copied out */
typedef struct WeirStateCopy
{
	TimestampTz start;			/* a window's start; a keyed entry's space */
	TimestampTz end;			/* a session window's end; else 0 */
	uint32		flags;			/* WEIR_ENTRY_* */
	uint32		keylen;
	const char *key;			/* key image (key_image.h) */
	uint32		statelen;
	const char *state;			/* the entry's state, or (an image) what
								 * the view's `image` wrote for it */
	uint32		extralen;
	const char *extra;			/* what copy_extra wrote for it */
} WeirStateCopy;

/* Where the rows go, and what decoding them needs */
typedef struct WeirStateOut
{
	struct ReturnSetInfo *rsinfo;
	const char *operator;		/* the operator column: "window", ... */
	WeirPlan   *plan;
	int64		lateness;		/* us: a window closes that long after its end */
	TimestampTz watermark;		/* of the state: what it passed has left */
	Datum	   *keyvals;		/* [plan->nkeys], scratch */
} WeirStateOut;

/* One row; the `has_` flags say which columns are not NULL */
typedef struct WeirStateRow
{
	const WeirStateCopy *copy;	/* the key comes from it */
	bool		has_window;		/* window_start, window_end, fired */
	TimestampTz window_start;
	TimestampTz window_end;
	bool		fired;
	bool		has_event_time;
	TimestampTz event_time;
	bool		has_expires_at;
	TimestampTz expires_at;		/* the watermark at which it leaves */
	const char *value;			/* JSON text; NULL: none */
} WeirStateRow;

typedef struct WeirStateView
{
	/*
	 * What an entry points to, appended to buf (NULL: nothing but its
	 * state).  Called with the slot's lock held shared: it copies, no
	 * more; area is attached by the caller.
	 */
	void		(*copy_extra) (dsa_area *area, WeirStoreRoot *root, WeirEntry *w,
							   StringInfo buf);

	/*
	 * Whether some state of the plan's entries is in the memory of the
	 * process that made them (NULL: never).  Its live state is then an
	 * image written by the worker, and its committed state one written
	 * after restoring the checkpoint here.
	 */
	bool		(*state_in_process) (WeirPlan *plan);

	/*
	 * The image of every entry of a store, by the process whose memory
	 * holds their state (the worker, with its slot's lock held
	 * exclusively).  May run the owner's functions (serialising).  False
	 * when the image would not fit in a buffer (weir_state_buf_has_room):
	 * buf is then incomplete, and the worker must not fail for it.
	 */
	bool		(*image) (WeirStore *store, WeirPlan *plan, StringInfo buf);

	/* The rows of the copies (as the pipeline's owner) */
	void		(*put) (WeirStateOut *out, WeirStateCopy *copies, int64 n);
} WeirStateView;

extern const WeirStateView weir_window_state_view;
extern const WeirStateView weir_dedup_state_view;
extern const WeirStateView weir_last_value_state_view;
extern const WeirStateView weir_join_state_view;

extern bool weir_state_buf_has_room(StringInfo buf, Size more);
extern int	weir_state_copy_append(StringInfo buf, const char *key, uint32 keylen,
								   uint32 flags, TimestampTz start, TimestampTz end,
								   const char *state, uint32 statelen);
extern void weir_state_copy_store(const WeirStateView *view, dsa_area *area,
								  WeirStoreRoot *root, StringInfo buf);
extern WeirStateCopy *weir_state_copies(const char *buf, Size len, int64 *n);
extern void weir_state_put(WeirStateOut *out, const WeirStateRow *row);

#endif							/* WEIR_STATE_VIEW_H */
