/*-------------------------------------------------------------------------
 *
 * keyed.c
 *	  State of keyed operators (deduplication, last value per key, interval
 *	  join): one entry per key, its expiry, and its checkpoint as chunks.
 *
 * Memory.  Each key is one entry in the pipeline's state store (store.h:
 * start = the space, which the store indexes but links nowhere), holding
 * a WeirKeyedState (the first k->state_size bytes of it).  An entry
 * expires when the watermark reaches t + retention (dedup: the horizon
 * after the id was last seen; last value: the ttl after its newest row).
 * Entries sit in expiry buckets, worker-local arrays of their
 * dsa_pointers (walked with prefetching: a list through the entries made
 * each expiry wait for the entry before it), by t + retention rounded up
 * to retention/8; a later t
 * does not move the entry: when its bucket comes due, it is moved to the
 * right one.  So memory holds the keys of about 1.125 retentions before the
 * watermark (buckets are at least a second wide).  Without retention,
 * entries never expire.
 *
 * Checkpoints.  One row per key and checkpoint would cost as much as the
 * SQL alternatives; instead each checkpoint appends one chunk row to
 * weir.pipeline_chunk holding the entries changed since the previous one
 * (image: uint32 length, key image, state).  A chunk whose every entry has
 * expired goes as a whole.  Later changes leave older versions in older
 * chunks; when the chunks hold more than twice the live entries (and at
 * least 1 MB more), the checkpoint writes all live entries as new chunks
 * and deletes the older ones: compaction.  Restore reads the chunks in
 * order and keeps each key's newest state that has not expired.
 *
 * Entries changed since the last checkpoint are on the dirty list.  When
 * they expire meanwhile they leave the index at once (a record with their
 * key starts a new entry) and are not written to the chunk (a restore would
 * skip them).  If the operator owes the sink something for them (last
 * value: their rows deleted), they stay, "held", until the checkpoint has
 * settled it; otherwise (dedup; a join, whose rows go through the remove
 * hook, which emits a left outer join's unmatched ones) they are freed as
 * soon as there are many, after taking them off the dirty list: reading a
 * backlog, entries come and expire many times between two checkpoints,
 * and holding them all took a join to a million entries, a dedup to 1.2
 * million ids, at the peak.
 *
 * Tombstones (last value over a change topic, keyed.h).  A deleted key
 * stays as an entry flagged WEIR_KEYED_DELETED, written to chunks like any
 * other, until the watermark passes its time (with a retention: its time +
 * retention, as any entry).  Without a retention, live entries never
 * expire, so a tombstone is linked into an expiry bucket when it becomes
 * one (WEIR_KEYED_LINKED), and its chunk versions never expire: a later
 * version of a key must outlive the earlier ones in the chunks, or a
 * restore would bring a deleted key back.  They go at compaction, which
 * rewrites only what memory still holds.  A restore keeps each key's newest
 * version, tombstones included, and tombstones whose time the watermark
 * has passed then expire as usual.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/keyed.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "base/columns.h"
#include "catalog_sql/catalog_chunk.h"
#include "checkpoint/checkpoint_package.h"
#include "definition/key_image.h"
#include "state/keyed.h"

#define CHUNK_MAX_BYTES (32 * 1024 * 1024)	/* split larger chunks */
#define COMPACT_SLACK_BYTES (1024 * 1024)
/*
 * Held entries are freed in one pass over the dirty list once there are
 * this many, and at least half as many as the list is long: so each pass
 * frees as many entries as it looks at (amortised O(1) an entry).  With a
 * fixed count alone, a backlog whose keys come and go within a checkpoint
 * interval (a join's: hundreds of thousands) walked its whole dirty list
 * every few thousand expiries.
 */
#define RELEASE_HELD_AT 4096
#define PREFETCH_AHEAD 16		/* entries ahead a walk over an array asks for */

typedef struct ExpiryBucket
{
	TimestampTz due;			/* hash key: entries expire at or before */
	dsa_pointer *entries;		/* [n], in k->cxt */
	int			n;
	int			cap;
} ExpiryBucket;

static inline WeirKeyedState *
state_of(WeirKeyed *k, WeirEntry *w)
{
	return (WeirKeyedState *) weir_entry_states(k->store->root, w);
}

/* Image bytes of one entry in a chunk. */
static inline int64
entry_image_bytes(WeirKeyed *k, WeirEntry *w)
{
	return sizeof(uint32) + weir_entry_keylen(w) + k->state_size;
}

/* Whether state a is newer than b: later t, then partition, then position. */
static bool
newer(WeirKeyed *k, const WeirKeyedState *a, const WeirKeyedState *b)
{
	/* only last value keeps a position */
	if (a->t != b->t || k->plan->op != WEIR_OP_LAST_VALUE)
		return a->t > b->t;
	if (a->part != b->part)
		return a->part > b->part;
	return a->pos > b->pos;
}

/* Whether an entry is a tombstone (only last value's can be: keyed.h). */
static inline bool
is_tombstone(WeirKeyed *k, const WeirKeyedState *s)
{
	return k->tombstones && (s->flags & WEIR_KEYED_DELETED) != 0;
}

/* Whether any entry may leave memory: a retention, or tombstones. */
static inline bool
expiring(WeirKeyed *k)
{
	return k->retention > 0 || k->tombstones;
}

/*
 * When an entry leaves memory: the watermark at or past its time +
 * retention; without a retention a tombstone once the watermark has
 * passed its time, and anything else never (DT_NOEND).
 */
static inline TimestampTz
entry_expiry(WeirKeyed *k, const WeirKeyedState *s)
{
	return weir_keyed_expiry(k->retention, k->tombstones, s);
}

/* The smallest multiple of width at or after t. */
static TimestampTz
ceil_to(TimestampTz t, int64 width)
{
	TimestampTz q = t / width;

	if (t > 0 && t % width != 0)
		q++;
	return q * width;
}

static void
link_expiry(WeirKeyed *k, dsa_pointer dp, TimestampTz due)
{
	TimestampTz key = ceil_to(due, k->bucket_width);
	ExpiryBucket *b = k->last_bucket;

	/* records come in about time order: mostly the same bucket again */
	if (b == NULL || b->due != key)
	{
		bool		found;

		b = hash_search(k->buckets, &key, HASH_ENTER, &found);
		if (!found)
		{
			b->cap = 64;
			b->n = 0;
			b->entries = MemoryContextAlloc(k->cxt, sizeof(dsa_pointer) * b->cap);
		}
		k->last_bucket = b;
	}
	if (b->n == b->cap)
	{
		b->cap *= 2;
		b->entries = repalloc_huge(b->entries, sizeof(dsa_pointer) * b->cap);
	}
	b->entries[b->n++] = dp;
}

static void
push_dirty(WeirKeyed *k, dsa_pointer dp)
{
	if (k->ndirty == k->dirty_cap)
	{
		k->dirty_cap *= 2;
		k->dirty = repalloc_huge(k->dirty, sizeof(dsa_pointer) * k->dirty_cap);
	}
	k->dirty[k->ndirty++] = dp;
}

WeirKeyed *
weir_keyed_create(WeirPlan *plan, WeirStore *store, int space,
				  Size state_size, int64 retention, bool keep_removed,
				  MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir keyed state",
											  ALLOCSET_DEFAULT_SIZES);
	WeirKeyed  *k = MemoryContextAllocZero(cxt, sizeof(WeirKeyed));
	HASHCTL		ctl;

	/* the store was made with entries of the operator's state (operator.c) */
	if (state_size != store->root->state_size)
		elog(ERROR, "keyed state of %zu bytes does not fit entries of %u",
			 state_size, store->root->state_size);
	k->cxt = cxt;
	k->plan = plan;
	k->space = space;
	k->state_size = state_size;
	k->store = store;
	k->retention = retention;
	/* at least a second: a tiny retention (a join bound of 0) must not make a bucket per record */
	k->bucket_width = Max(retention / 8, USECS_PER_SEC);
	ctl.keysize = sizeof(TimestampTz);
	ctl.entrysize = sizeof(ExpiryBucket);
	ctl.hcxt = cxt;
	k->buckets = hash_create("weir keyed expiry", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	k->dirty_cap = 1024;
	k->dirty = MemoryContextAlloc(cxt, sizeof(dsa_pointer) * k->dirty_cap);
	k->held_cap = 64;
	k->held = MemoryContextAlloc(cxt, sizeof(dsa_pointer) * k->held_cap);
	k->watermark = DT_NOBEGIN;
	k->keep_removed = keep_removed;
	k->removed_cxt = AllocSetContextCreate(cxt, "weir keyed removed",
										   ALLOCSET_DEFAULT_SIZES);
	k->next_chunk = 1;
	return k;
}

/*
 * The entry of a key (keyhash: weir_key_image_hash of it); created if
 * absent, with time t, linked for expiry and marked changed.  InvalidDsaPointer if state memory ran out
 * (store->out_of_memory is then set).
 */
dsa_pointer
weir_keyed_enter(WeirKeyed *k, const char *key, uint32 keylen, uint32 keyhash,
				 TimestampTz t, bool *created)
{
	dsa_pointer dp = weir_store_find(k->store, k->space, key, keylen, keyhash,
											true, created);
	WeirEntry *w;
	WeirKeyedState *s;

	if (!DsaPointerIsValid(dp) || !*created)
		return dp;
	w = weir_entry_at(k->store, dp);
	s = state_of(k, w);
	s->t = t;
	k->live_bytes += entry_image_bytes(k, w);
	if (k->retention > 0)
		link_expiry(k, dp, t + k->retention);
	push_dirty(k, dp);			/* created dirty */
	return dp;
}

/*
 * A hint that the key of hash `keyhash` (weir_key_image_hash) will be
 * looked up soon, in stages a few records apart: 0 asks for its slot, 1 for
 * its entry (the slot has come by then) and returns the entry it guessed
 * (or InvalidDsaPointer), 2 for what the operator will read through that
 * guess (prefetch_hook: a join's rows; the entry has come).  The guess must
 * still be in memory at stage 2: entries leave only between batches
 * (weir_keyed_expire and the checkpoint), never while one is applied.
 */
dsa_pointer
weir_keyed_prefetch(WeirKeyed *k, uint32 keyhash, int stage, dsa_pointer guess)
{
	if (stage < 2)
		return weir_store_prefetch(k->store, (TimestampTz) k->space, keyhash, stage > 0);
	if (DsaPointerIsValid(guess) && k->prefetch_hook)
		k->prefetch_hook(k->hook_arg, k, guess);
	return guess;
}

/*
 * In a walk over an array of entries (dirty, held), at a[i]: ask for the
 * entry PREFETCH_AHEAD on and, `deep`, for what the operator reads through
 * the one half as far on (prefetch_hook; its entry came meanwhile).
 */
void
weir_keyed_prefetch_walk(WeirKeyed *k, const dsa_pointer *a, int n, int i, bool deep)
{
	if (i + PREFETCH_AHEAD < n)
		WEIR_PREFETCH(weir_entry_at(k->store, a[i + PREFETCH_AHEAD]));
	if (deep && k->prefetch_hook && i + PREFETCH_AHEAD / 2 < n)
		k->prefetch_hook(k->hook_arg, k, a[i + PREFETCH_AHEAD / 2]);
}

/*
 * In a walk over an expiry bucket, at a[i]: as weir_keyed_prefetch_walk
 * deep, and the index slot of the entry half as far on, which taking it out
 * of the index reads (its hash is computed from the entry, come by then).
 */
void
weir_keyed_prefetch_expiry(WeirKeyed *k, const dsa_pointer *a, int n, int i)
{
	weir_keyed_prefetch_walk(k, a, n, i, true);
	if (i + PREFETCH_AHEAD / 2 < n)
		weir_store_prefetch_slot(k->store, a[i + PREFETCH_AHEAD / 2]);
}

/*
 * An expired entry leaves memory: the operator's hook first (a join's rows),
 * its key kept if the operator owes the sink something for it (last value).
 */
static void
remove_entry(WeirKeyed *k, dsa_pointer dp)
{
	WeirEntry *w = weir_entry_at(k->store, dp);

	if (k->remove_hook)
		k->remove_hook(k->hook_arg, k, dp);
	/* a tombstone's row went when it became one */
	if (k->keep_removed && !is_tombstone(k, state_of(k, w)))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(k->removed_cxt);

		k->removed = lappend(k->removed, weir_make_bytea(weir_entry_key(w), weir_entry_keylen(w)));
		MemoryContextSwitchTo(oldcxt);
	}
	k->live_bytes -= entry_image_bytes(k, w);
	weir_store_remove(k->store, dp);
}

/* Mark an entry changed; returns whether it was not already. */
bool
weir_keyed_touch(WeirKeyed *k, dsa_pointer dp)
{
	WeirEntry *w = weir_entry_at(k->store, dp);

	if (weir_entry_flags(w) & WEIR_ENTRY_DIRTY)
		return false;
	weir_entry_set_flags(w, WEIR_ENTRY_DIRTY);
	push_dirty(k, dp);
	return true;
}

/*
 * Make an entry a tombstone (deleted) or a live key again (last value over
 * a change topic: keyed.h).  A tombstone leaves memory when the watermark
 * passes its time: without a retention, nothing else links it for that.
 */
void
weir_keyed_set_deleted(WeirKeyed *k, dsa_pointer dp, bool deleted)
{
	WeirKeyedState *s = weir_keyed_state(k, dp);

	Assert(k->tombstones);
	if (!deleted)
	{
		s->flags &= ~WEIR_KEYED_DELETED;
		return;
	}
	s->flags |= WEIR_KEYED_DELETED;
	if (k->retention == 0 && !(s->flags & WEIR_KEYED_LINKED))
	{
		link_expiry(k, dp, entry_expiry(k, s));
		s->flags |= WEIR_KEYED_LINKED;
	}
}

/*
 * Free the held entries (out of the index since they expired, unchanged
 * since): through the remove hook (a join's rows), then their memory.
 * Returns how many went.
 */
static int64
free_held(WeirKeyed *k)
{
	int64		removed = k->nheld;

	for (int i = 0; i < k->nheld; i++)
	{
		dsa_pointer dp = k->held[i];

		weir_keyed_prefetch_walk(k, k->held, k->nheld, i, true);
		if (k->remove_hook)
			k->remove_hook(k->hook_arg, k, dp);
		k->live_bytes -= entry_image_bytes(k, weir_entry_at(k->store, dp));
		weir_store_free_entry(k->store, dp);
	}
	k->nheld = 0;
	return removed;
}

/*
 * Free the held entries before the checkpoint, having taken them off the
 * dirty list (one pass over it).  Only for operators that owe the sink
 * nothing for them (!keep_removed).  Returns how many went.
 */
static int64
release_held(WeirKeyed *k)
{
	int			kept = 0;

	for (int i = 0; i < k->ndirty; i++)
	{
		weir_keyed_prefetch_walk(k, k->dirty, k->ndirty, i, false);
		if (!(weir_entry_flags(weir_entry_at(k->store, k->dirty[i])) & WEIR_ENTRY_HELD))
			k->dirty[kept++] = k->dirty[i];
	}
	k->ndirty = kept;
	return free_held(k);
}

/*
 * Remove the entries the watermark has passed; returns how many left.  The
 * caller holds the pipeline slot's lock exclusively.
 */
int64
weir_keyed_expire(WeirKeyed *k, TimestampTz watermark)
{
	HASH_SEQ_STATUS status;
	ExpiryBucket *b;
	List	   *due = NIL;
	ListCell   *lc;
	int64		removed = 0;

	if (!expiring(k) || TIMESTAMP_NOT_FINITE(watermark))
		return 0;
	k->watermark = watermark;
	hash_seq_init(&status, k->buckets);
	while ((b = hash_seq_search(&status)) != NULL)
		if (b->due <= watermark)
			due = lappend(due, b);
	k->last_bucket = NULL;		/* buckets go */
	foreach(lc, due)
	{
		ExpiryBucket *bucket = lfirst(lc);
		TimestampTz key = bucket->due;
		dsa_pointer *entries = bucket->entries;
		int			n = bucket->n;

		/* the bucket goes (link_expiry below may take its place) */
		hash_search(k->buckets, &key, HASH_REMOVE, NULL);
		for (int i = 0; i < n; i++)
		{
			dsa_pointer dp = entries[i];
			WeirEntry *w;
			TimestampTz expires;

			weir_keyed_prefetch_expiry(k, entries, n, i);
			w = weir_entry_at(k->store, dp);
			expires = entry_expiry(k, state_of(k, w));

			if (expires == DT_NOEND)
				state_of(k, w)->flags &= ~WEIR_KEYED_LINKED;	/* live again */
			else if (expires > watermark)
				link_expiry(k, dp, expires);	/* changed since */
			else if (weir_entry_flags(w) & WEIR_ENTRY_DIRTY)
			{
				/*
				 * Changed since the last checkpoint: the dirty list points
				 * to it, so its memory stays until the checkpoint; but
				 * lookups need not find it (a record with its key starts a
				 * new entry), so it leaves the index now, which keeps the
				 * index small while a backlog is read.
				 */
				if (k->nheld == k->held_cap)
				{
					k->held_cap *= 2;
					k->held = repalloc_huge(k->held, sizeof(dsa_pointer) * k->held_cap);
				}
				k->held[k->nheld++] = dp;
				weir_entry_set_flags(w, WEIR_ENTRY_HELD);
				weir_store_unindex(k->store, dp);
			}
			else
			{
				remove_entry(k, dp);
				removed++;
			}
		}
		pfree(entries);
	}
	list_free(due);
	if (!k->keep_removed && k->nheld >= Max(RELEASE_HELD_AT, k->ndirty / 2))
		removed += release_held(k);
	if (removed > 0)
		weir_store_shrink(k->store);
	return removed;
}

/*
 * Expire exactly: besides the due buckets, look at each entry of the next
 * one (the bucket the watermark is in), so that no entry with t +
 * retention at or below the watermark stays unless it changed since the
 * last checkpoint.  A join needs this before a checkpoint: a restore skips
 * such entries, so they must have been drained.
 */
int64
weir_keyed_expire_exact(WeirKeyed *k, TimestampTz watermark)
{
	int64		removed;
	TimestampTz key;
	ExpiryBucket *bucket;
	int			kept = 0;

	if (!expiring(k) || TIMESTAMP_NOT_FINITE(watermark))
		return 0;
	removed = weir_keyed_expire(k, watermark);
	key = ceil_to(watermark, k->bucket_width);
	if (key == watermark)
		key += k->bucket_width;	/* that one was due, and is gone */
	bucket = hash_search(k->buckets, &key, HASH_FIND, NULL);
	if (bucket == NULL)
		return removed;
	for (int i = 0; i < bucket->n; i++)
	{
		dsa_pointer dp = bucket->entries[i];
		WeirEntry *w;

		weir_keyed_prefetch_expiry(k, bucket->entries, bucket->n, i);
		w = weir_entry_at(k->store, dp);
		if (entry_expiry(k, state_of(k, w)) <= watermark &&
			!(weir_entry_flags(w) & WEIR_ENTRY_DIRTY))
		{
			remove_entry(k, dp);
			removed++;
		}
		else
			bucket->entries[kept++] = dp;	/* kept ones stay in order, in place */
	}
	bucket->n = kept;
	return removed;
}

/*
 * After a checkpoint committed: the entries that expired while changed since
 * the one before (out of the index since, kept for the dirty list) go.
 * Returns how many went.  The caller holds the slot's lock.
 */
int64
weir_keyed_after_checkpoint(WeirKeyed *k)
{
	/*
	 * The checkpoint settled what they owed (last value: their rows
	 * deleted; a join: their rows drained), so they only go.
	 */
	int64		removed = free_held(k);

	if (removed > 0)
		weir_store_shrink(k->store);
	return removed;
}

/* After a checkpoint committed what the removed entries owed. */
void
weir_keyed_forget_removed(WeirKeyed *k)
{
	k->removed = NIL;
	MemoryContextReset(k->removed_cxt);
}

typedef struct ChunkBuilder
{
	WeirKeyed  *d;
	TimestampTz watermark;		/* entries expired by it are not written */
	StringInfoData buf;
	int32		entries;
	TimestampTz expires_at;
	WeirKeyedCollected *out;
} ChunkBuilder;

static void
chunk_flush(ChunkBuilder *cb)
{
	if (cb->entries == 0)
		return;
	cb->out->chunks = lappend(cb->out->chunks,
							  weir_chunk_make(&cb->buf, cb->entries,
											  cb->d->retention > 0 ? cb->expires_at : DT_NOEND));
	cb->out->bytes += cb->buf.len;
	cb->out->entries += cb->entries;
	resetStringInfo(&cb->buf);
	cb->entries = 0;
	cb->expires_at = DT_NOBEGIN;
}

static void
chunk_add(ChunkBuilder *cb, WeirEntry *w)
{
	uint32		len = weir_entry_keylen(w);
	WeirKeyedState *s = state_of(cb->d, w);

	/*
	 * An expired entry is skipped by a restore anyway (and goes from memory
	 * right after this checkpoint): no need to write it.  Reading a backlog,
	 * that is most of what changed.
	 */
	if (!TIMESTAMP_NOT_FINITE(cb->watermark) && s->t + cb->d->retention <= cb->watermark)
	{
		weir_entry_clear_flags(w, WEIR_ENTRY_DIRTY);
		return;
	}
	{
		char	   *p = weir_append_space(&cb->buf, sizeof(uint32) + len + cb->d->state_size);

		memcpy(p, &len, sizeof(uint32));
		memcpy(p + sizeof(uint32), weir_entry_key(w), len);
		memcpy(p + sizeof(uint32) + len, s, cb->d->state_size);
	}
	if (cb->d->image_hook)
		cb->d->image_hook(cb->d->hook_arg, cb->d, w, &cb->buf);
	cb->entries++;
	if (s->t + cb->d->retention > cb->expires_at)
		cb->expires_at = s->t + cb->d->retention;
	weir_entry_clear_flags(w, WEIR_ENTRY_DIRTY);
	if (cb->buf.len >= CHUNK_MAX_BYTES)
		chunk_flush(cb);
}

/*
 * Sync phase of a checkpoint: the entries changed since the last one as chunk
 * images, or all live entries when the chunks hold too much (compaction).  The
 * caller holds the slot's lock.
 */
void
weir_keyed_collect(WeirKeyed *d, TimestampTz watermark, WeirKeyedCollected *out)
{
	ChunkBuilder cb;
	int64		dirty_bytes = 0;

	memset(out, 0, sizeof(*out));
	cb.d = d;
	cb.entries = 0;
	cb.expires_at = DT_NOBEGIN;
	cb.out = out;
	cb.watermark = d->retention > 0 ? watermark : DT_NOBEGIN;
	initStringInfo(&cb.buf);

	for (int i = 0; i < d->ndirty; i++)
	{
		weir_keyed_prefetch_walk(d, d->dirty, d->ndirty, i, false);
		dirty_bytes += entry_image_bytes(d, weir_entry_at(d->store, d->dirty[i]));
	}
	out->compacted = d->chunk_bytes + dirty_bytes > 2 * d->live_bytes + COMPACT_SLACK_BYTES;
	if (out->compacted)
	{
		WeirStoreIter iter;
		WeirEntry *w;

		weir_store_iter_init(&iter, d->store);
		while ((w = weir_store_iter_next(&iter)) != NULL)
			if (w->start == d->space)	/* another space's entries are not ours */
				chunk_add(&cb, w);
	}
	else
		for (int i = 0; i < d->ndirty; i++)
		{
			weir_keyed_prefetch_walk(d, d->dirty, d->ndirty, i, true);
			chunk_add(&cb, weir_entry_at(d->store, d->dirty[i]));
		}
	chunk_flush(&cb);
	d->ndirty = 0;
	pfree(cb.buf.data);
}

/*
 * The collected chunks into a checkpoint's package, numbered on from the
 * last; after them the chunks the watermark has passed go, and after a
 * compaction every older chunk.  The bytes the expired chunks held come
 * back with the commit: weir_keyed_chunks_deleted.
 */
void
weir_keyed_package(WeirKeyed *d, WeirPackage *pkg, TimestampTz watermark,
				   WeirKeyedCollected *collected)
{
	/* entries expire only with a retention */
	weir_package_add_chunks(pkg, d->space, collected->chunks, collected->compacted,
							d->retention > 0 ? watermark : DT_NOBEGIN, &d->next_chunk);
	d->chunk_bytes = (collected->compacted ? 0 : d->chunk_bytes) + collected->bytes;
}

/* A committed checkpoint deleted expired chunks of `bytes` of data. */
void
weir_keyed_chunks_deleted(WeirKeyed *d, int64 bytes)
{
	d->chunk_bytes -= bytes;
}

typedef struct RestoreState
{
	WeirKeyed  *k;
	TimestampTz watermark;
	int64		entries;
	bool		corrupt;
	List	   *skipped;		/* keep_removed: keys of expired entries */
} RestoreState;

/*
 * The entry of a restored key, created as committed (unchanged since, its
 * last-value row in the sink); InvalidDsaPointer if it had expired by the
 * checkpoint's watermark (a restore skips those).
 */
static dsa_pointer
restore_enter(RestoreState *rs, const char *key, uint32 keylen, TimestampTz t,
			  bool *created)
{
	WeirKeyed  *k = rs->k;
	dsa_pointer dp;

	*created = false;
	if (k->retention > 0 && !TIMESTAMP_NOT_FINITE(rs->watermark) &&
		t + k->retention <= rs->watermark)
		return InvalidDsaPointer;
	dp = weir_keyed_enter(k, key, keylen, weir_key_image_hash(key, keylen), t, created);
	if (!DsaPointerIsValid(dp))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("checkpoint of the pipeline does not fit in its max_state_memory"),
				 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
	if (*created)
	{
		weir_entry_reset_flags(weir_entry_at(k->store, dp), WEIR_ENTRY_EMITTED);
		k->ndirty--;			/* weir_keyed_enter counted it as changed */
		rs->entries++;
	}
	return dp;
}

/*
 * A restored version of a key's state into its entry: the newest so far.
 * A tombstone's row is not in the sink (not EMITTED); without a retention
 * it is linked for expiry (keyed.h), once.
 */
static void
restore_state(WeirKeyed *k, dsa_pointer dp, WeirKeyedState *s, bool created)
{
	WeirKeyedState *into = weir_keyed_state(k, dp);
	WeirEntry  *w = weir_entry_at(k->store, dp);
	bool		linked = !created && k->tombstones && (into->flags & WEIR_KEYED_LINKED);

	memcpy(into, s, k->state_size);
	if (!k->tombstones)
		return;
	if (linked)
		into->flags |= WEIR_KEYED_LINKED;
	if (!is_tombstone(k, into))
	{
		weir_entry_set_flags(w, WEIR_ENTRY_EMITTED);
		return;
	}
	weir_entry_clear_flags(w, WEIR_ENTRY_EMITTED);
	if (k->retention == 0 && !linked)
	{
		link_expiry(k, dp, entry_expiry(k, into));
		into->flags |= WEIR_KEYED_LINKED;
	}
}

static void
restore_chunk(void *arg, const char *data, Size len)
{
	RestoreState *rs = (RestoreState *) arg;
	WeirKeyed  *k = rs->k;
	Size		state_size = k->state_size;
	const char *p = data;
	const char *end = data + len;

	while (p < end)
	{
		uint32		keylen;
		WeirKeyedState s;
		bool		created;
		dsa_pointer dp;

		if (end - p < sizeof(uint32))
			goto corrupt;
		memcpy(&keylen, p, sizeof(uint32));
		p += sizeof(uint32);
		if (keylen > PG_UINT16_MAX || end - p < (int64) keylen + (int64) state_size)
			goto corrupt;
		memset(&s, 0, sizeof(s));
		memcpy(&s, p + keylen, Min(state_size, sizeof(s)));
		if (k->plan->op == WEIR_OP_LAST_VALUE)
			s.pending = -1;		/* no pending row in this process yet */
		s.flags &= ~WEIR_KEYED_LINKED;	/* the writer's, not ours */
		if (k->restore_hook)
		{
			/*
			 * An entry with more than its state (a join's rows): a later
			 * chunk's version replaces an earlier one's, and an expired one
			 * is only read past.
			 */
			int64		used;

			dp = restore_enter(rs, p, keylen, s.t, &created);
			used = k->restore_hook(k->hook_arg, k, dp, p + keylen,
								   p + keylen + state_size,
								   end - (p + keylen + state_size));
			if (used < 0)
				goto corrupt;
			p += keylen + state_size + used;
			continue;
		}
		dp = restore_enter(rs, p, keylen, s.t, &created);
		if (DsaPointerIsValid(dp))
		{
			if (created || newer(k, &s, weir_keyed_state(k, dp)))
				restore_state(k, dp, &s, created);
		}
		else if (k->keep_removed && !is_tombstone(k, &s))
		{
			/* expired: the sink may still hold its row (see the caller) */
			MemoryContext oldcxt = MemoryContextSwitchTo(k->removed_cxt);

			rs->skipped = lappend(rs->skipped, weir_make_bytea(p, keylen));
			MemoryContextSwitchTo(oldcxt);
		}
		p += keylen + state_size;
	}
	return;
corrupt:
	rs->corrupt = true;
}

/*
 * Load the entries of the last checkpoint, skipping those the watermark
 * has passed; returns how many are in memory, *bytes the chunk bytes read.
 */
int64
weir_keyed_restore(WeirKeyed *k, int32 pipeline_id, TimestampTz watermark,
				   int64 *bytes)
{
	RestoreState rs = {k, watermark, 0, false, NIL};
	ListCell   *lc;

	(void) weir_catalog_load_chunks(pipeline_id, k->space, restore_chunk, &rs, bytes,
									&k->next_chunk);
	if (rs.corrupt)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint of the pipeline: bad chunk"),
				 errhint("Drop and recreate the pipeline to rebuild its state from the topic.")));

	/*
	 * An entry that had expired by the checkpoint but changed just before it
	 * was still in memory then, and so is its row in the sink (last value):
	 * it goes at the first checkpoint now, unless a newer version of the key
	 * lives.  Deleting a row that is not there costs nothing.
	 */
	foreach(lc, rs.skipped)
	{
		bytea	   *key = lfirst(lc);
		bool		created;

		uint32		keylen = VARSIZE(key) - VARHDRSZ;

		if (!DsaPointerIsValid(weir_store_find(k->store, k->space, VARDATA(key), keylen,
													  weir_key_image_hash(VARDATA(key), keylen),
													  false, &created)))
			k->removed = lappend(k->removed, key);
	}
	k->chunk_bytes = *bytes;
	return rs.entries;
}
