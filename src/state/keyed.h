/*-------------------------------------------------------------------------
 *
 * keyed.h
 *	  State of keyed operators (deduplication, last value per key, interval
 *	  join): one entry per key in the pipeline's store (store.h), expired by
 *	  the watermark, checkpointed as chunks.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/keyed.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_KEYED_H
#define WEIR_KEYED_H

#include "lib/stringinfo.h"

#include "definition/definition.h"
#include "state/store.h"

/*
 * An entry's state starts with the event time that decides its expiry
 * (dedup: last seen; last value: the newest row's); last value adds the
 * row's position, and over a change topic flags.  k->state_size says how
 * much of this is used: a last value over an ordinary topic stops before
 * flags, so its chunks keep the layout they had before change topics.
 */
typedef struct WeirKeyedState
{
	TimestampTz t;
	int64		pos;			/* last value: the row's partition and */
	int32		part;			/* position, which break ties of t */
	int32		pending;		/* last value: its row in this worker's
								 * pending rows; -1: none (not checkpointed) */
	int32		flags;			/* last value over a change topic: WEIR_KEYED_* */
} WeirKeyedState;

/*
 * WeirKeyedState.flags.  A deleted key (a tombstone) stays in memory, so
 * that a row older than its deletion, read later (from another partition),
 * does not bring it back; it expires when the watermark passes its time,
 * and a row of a key not in memory older than the watermark is then late
 * (last_value.c); with a retention it expires as live keys do.
 */
#define WEIR_KEYED_DELETED	0x01	/* the newest row of the key deleted it */
#define WEIR_KEYED_LINKED	0x02	/* in an expiry bucket although live keys
									 * never expire (no retention): this
									 * process's, cleared on restore */

/*
 * The watermark at which an entry leaves memory (at or past it): its time
 * + retention; without a retention a tombstone once the watermark has
 * passed its time, anything else never (DT_NOEND).  For keyed.c and the
 * state views (operator/state_view.h), so they agree.
 */
static inline TimestampTz
weir_keyed_expiry(int64 retention, bool tombstones, const WeirKeyedState *s)
{
	if (retention > 0)
		return s->t + retention;
	if (tombstones && (s->flags & WEIR_KEYED_DELETED))
		return s->t + 1;
	return DT_NOEND;
}

/* Bytes of WeirKeyedState a last value over an ordinary topic keeps */
#define WEIR_KEYED_STATE_PLAIN offsetof(WeirKeyedState, flags)

typedef struct WeirKeyed WeirKeyed;

/*
 * Operators that keep more per key than the fixed state (a join's buffered
 * rows) add it to the entry's chunk image, and read it back on restore
 * (returning the bytes consumed, or -1 if they make no sense; dp is
 * InvalidDsaPointer when the entry has expired and is only read past);
 * remove_hook runs before an expired entry leaves memory; prefetch_hook
 * asks the CPU for what the others will read through an entry soon.
 */
typedef void (*WeirKeyedImageHook) (void *arg, WeirKeyed *k, WeirEntry *w,
									StringInfo buf);
typedef int64 (*WeirKeyedRestoreHook) (void *arg, WeirKeyed *k, dsa_pointer dp,
									   const char *state, const char *p, Size avail);
typedef void (*WeirKeyedRemoveHook) (void *arg, WeirKeyed *k, dsa_pointer dp);
typedef void (*WeirKeyedPrefetchHook) (void *arg, WeirKeyed *k, dsa_pointer dp);

struct WeirKeyed
{
	WeirPlan   *plan;
	int			space;			/* its entries' start and chunks' space: keeps
								 * states of one store apart (0 for all today) */
	Size		state_size;		/* fixed state bytes per entry */
	WeirStore  *store;			/* the entries: start = space (store.h) */
	int64		retention;		/* us of event time after t; 0: forever */
	int64		bucket_width;	/* us; expiry buckets */
	HTAB	   *buckets;		/* expiry time -> entries, through `next` */
	struct ExpiryBucket *last_bucket;	/* the last one linked to, or NULL */
	MemoryContext cxt;

	/* entries changed since the last checkpoint (never removed meanwhile) */
	dsa_pointer *dirty;
	int			ndirty;
	int			dirty_cap;

	/* entries expired while changed since the last checkpoint: go after it */
	dsa_pointer *held;
	int			nheld;
	int			held_cap;
	TimestampTz watermark;		/* of the last expiry */

	/* last value over a change topic: entries may be tombstones */
	bool		tombstones;

	/* entries that expired since the last checkpoint, when kept (last value) */
	bool		keep_removed;
	List	   *removed;		/* bytea key images */
	MemoryContext removed_cxt;

	/* weir.pipeline_chunk */
	int64		next_chunk;
	int64		chunk_bytes;	/* data bytes all chunks hold */
	int64		live_bytes;		/* data bytes the live entries would take */

	void	   *hook_arg;
	WeirKeyedImageHook image_hook;
	WeirKeyedRestoreHook restore_hook;
	WeirKeyedRemoveHook remove_hook;
	WeirKeyedPrefetchHook prefetch_hook;	/* a hint: what the others will read */
};

/* An entry's state (and what an operator keeps after it) */
static inline WeirKeyedState *
weir_keyed_state(WeirKeyed *k, dsa_pointer dp)
{
	return (WeirKeyedState *) weir_entry_states(k->store->root,
												 weir_entry_at(k->store, dp));
}

/* What a checkpoint of the entries writes */
typedef struct WeirKeyedCollected
{
	List	   *chunks;			/* chunk images (keyed.c) */
	int64		entries;
	int64		bytes;
	bool		compacted;
} WeirKeyedCollected;

struct WeirPackage;				/* checkpoint_package.h */

extern WeirKeyed *weir_keyed_create(WeirPlan *plan, WeirStore *store,
									int space, Size state_size, int64 retention,
									bool keep_removed, MemoryContext parent);
extern dsa_pointer weir_keyed_enter(WeirKeyed *k, const char *key, uint32 keylen,
									uint32 keyhash, TimestampTz t, bool *created);
extern dsa_pointer weir_keyed_prefetch(WeirKeyed *k, uint32 keyhash, int stage,
									   dsa_pointer guess);
extern void weir_keyed_prefetch_walk(WeirKeyed *k, const dsa_pointer *a, int n, int i,
									 bool deep);
extern void weir_keyed_prefetch_expiry(WeirKeyed *k, const dsa_pointer *a, int n, int i);
extern bool weir_keyed_touch(WeirKeyed *k, dsa_pointer dp);
extern void weir_keyed_set_deleted(WeirKeyed *k, dsa_pointer dp, bool deleted);
extern int64 weir_keyed_expire(WeirKeyed *k, TimestampTz watermark);
extern int64 weir_keyed_expire_exact(WeirKeyed *k, TimestampTz watermark);
extern void weir_keyed_collect(WeirKeyed *k, TimestampTz watermark,
							   WeirKeyedCollected *out);
extern void weir_keyed_package(WeirKeyed *k, struct WeirPackage *pkg,
							   TimestampTz watermark, WeirKeyedCollected *collected);
extern void weir_keyed_chunks_deleted(WeirKeyed *k, int64 bytes);
extern void weir_keyed_forget_removed(WeirKeyed *k);
extern int64 weir_keyed_after_checkpoint(WeirKeyed *k);
extern int64 weir_keyed_restore(WeirKeyed *k, int32 pipeline_id,
								TimestampTz watermark, int64 *bytes);

#endif							/* WEIR_KEYED_H */
