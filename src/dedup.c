/*-------------------------------------------------------------------------
 *
 * dedup.c
 *	  Deduplication: which records pass, the ids' expiry, and their
 *	  checkpoint as chunks.
 *
 * Semantics (README "Deduplication").  A record whose id was seen within
 * the horizon is a duplicate: there is an earlier record (read before it)
 * with the same id whose event time is later than the record's event time
 * minus the horizon.  Duplicates are dropped and counted; the others are
 * kept and go to the sink.  Each id keeps one state, `seen_at`: the latest
 * event time it was seen at, duplicates included, so a record is a
 * duplicate exactly when seen_at > t - horizon.  Without a horizon an id,
 * once seen, makes every later record with it a duplicate.
 *
 * Expiry.  An id leaves memory when the watermark reaches seen_at +
 * horizon: no record that is not late can be its duplicate any more.  A
 * record with t < watermark is late (an id it might duplicate could have
 * left), and is dropped and counted as late, as with windows.  Entries sit
 * in expiry buckets (worker-local lists through WeirWindow.next) by
 * seen_at + horizon rounded up to horizon/8; a later sighting does not move
 * the entry: when its bucket comes due it is moved to the right one.  So
 * memory holds the ids seen within about 1.125 horizons of the watermark.
 *
 * Checkpoints.  Writing one row per id would cost as much as the SQL
 * alternative; instead each checkpoint appends one chunk row to
 * weir.pipeline_chunk holding the entries changed since the previous one
 * (image: uint32 length, id image, seen_at).  A chunk whose every entry has
 * expired goes as a whole.  Later sightings leave older versions in older
 * chunks; when the chunks hold more than twice the live entries (and at
 * least 1 MB more), the checkpoint writes all live entries as new chunks
 * and deletes the older ones: compaction.  Restore reads the chunks in
 * order and keeps each id's latest seen_at that has not expired.
 *
 * Entries changed since the last checkpoint are never removed before it
 * (expiry skips them), so the dirty list's pointers stay valid.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/dedup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "catalog_chunk.h"
#include "dedup.h"

#define CHUNK_MAX_BYTES (32 * 1024 * 1024)	/* split larger chunks */
#define COMPACT_SLACK_BYTES (1024 * 1024)

typedef struct ExpiryBucket
{
	TimestampTz due;			/* hash key: entries expire at or before */
	dsa_pointer head;
} ExpiryBucket;

static inline TimestampTz *
seen_at(WeirDedup *d, WeirWindow *w)
{
	return (TimestampTz *) weir_window_states(d->store->root, w);
}

/* Image bytes of one entry in a chunk. */
static inline int64
entry_image_bytes(WeirWindow *w)
{
	return sizeof(uint32) + w->keylen + sizeof(TimestampTz);
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
link_expiry(WeirDedup *d, dsa_pointer dp, TimestampTz due)
{
	TimestampTz key = ceil_to(due, d->bucket_width);
	bool		found;
	ExpiryBucket *b = hash_search(d->buckets, &key, HASH_ENTER, &found);

	if (!found)
		b->head = InvalidDsaPointer;
	weir_window_at(d->store, dp)->next = b->head;
	b->head = dp;
}

static void
mark_dirty(WeirDedup *d, dsa_pointer dp, WeirWindow *w, bool created)
{
	if (!created && (w->flags & WEIR_WINDOW_DIRTY))
		return;
	w->flags |= WEIR_WINDOW_DIRTY;
	if (d->ndirty == d->dirty_cap)
	{
		d->dirty_cap *= 2;
		d->dirty = repalloc_huge(d->dirty, sizeof(dsa_pointer) * d->dirty_cap);
	}
	d->dirty[d->ndirty++] = dp;
}

/* Empty pending columns; outside a transaction too (types known already). */
static void
init_pending(WeirDedup *d)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(d->pending_cxt);

	d->pending = palloc(sizeof(WeirColumn) * Max(d->plan->ncolumns, 1));
	for (int i = 0; i < d->plan->ncolumns; i++)
		weir_column_init_like(&d->pending[i], &d->column_types[i]);
	MemoryContextSwitchTo(oldcxt);
}

WeirDedup *
weir_dedup_create(WeirPlan *plan, WeirWindowStore *store, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir dedup", ALLOCSET_DEFAULT_SIZES);
	WeirDedup  *d = MemoryContextAllocZero(cxt, sizeof(WeirDedup));
	HASHCTL		ctl;

	d->cxt = cxt;
	d->plan = plan;
	d->store = store;
	d->horizon = plan->horizon;
	d->bucket_width = Max(plan->horizon / 8, 1000);
	ctl.keysize = sizeof(TimestampTz);
	ctl.entrysize = sizeof(ExpiryBucket);
	ctl.hcxt = cxt;
	d->buckets = hash_create("weir dedup expiry", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	d->dirty_cap = 1024;
	d->dirty = MemoryContextAlloc(cxt, sizeof(dsa_pointer) * d->dirty_cap);
	d->pending_cxt = AllocSetContextCreate(cxt, "weir dedup pending rows",
										   ALLOCSET_DEFAULT_SIZES);
	d->column_types = MemoryContextAlloc(cxt, sizeof(WeirColumn) * Max(plan->ncolumns, 1));
	for (int i = 0; i < plan->ncolumns; i++)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		weir_column_init(&d->column_types[i], plan->columns[i].type);
		MemoryContextSwitchTo(oldcxt);
	}
	init_pending(d);
	d->next_chunk = 1;
	return d;
}

/* A record the state can no longer judge: an id it matches may have left. */
bool
weir_dedup_is_late(WeirDedup *d, TimestampTz t, TimestampTz watermark)
{
	return d->horizon > 0 && t < watermark;
}

/*
 * Judge one record; a kept one's column values join the pending sink rows.
 * Returns false if state memory ran out (store->out_of_memory).
 */
bool
weir_dedup_apply(WeirDedup *d, const char *id, uint32 idlen, TimestampTz t,
				 Datum *values, bool *nulls, bool *duplicate)
{
	bool		created;
	dsa_pointer dp = weir_keyed_find(d->store, id, idlen, true, &created);
	WeirWindow *w;
	TimestampTz *seen;
	MemoryContext oldcxt;

	if (!DsaPointerIsValid(dp))
		return false;
	w = weir_window_at(d->store, dp);
	seen = seen_at(d, w);
	if (created)
	{
		*seen = t;
		*duplicate = false;
		d->live_bytes += entry_image_bytes(w);
		if (d->horizon > 0)
			link_expiry(d, dp, t + d->horizon);
		mark_dirty(d, dp, w, true);
	}
	else
	{
		*duplicate = d->horizon == 0 || *seen > t - d->horizon;
		if (t > *seen)
		{
			*seen = t;
			mark_dirty(d, dp, w, false);
		}
	}
	if (*duplicate)
		return true;

	oldcxt = MemoryContextSwitchTo(d->pending_cxt);
	for (int i = 0; i < d->plan->ncolumns; i++)
	{
		WeirColumnSpec *c = &d->plan->columns[i];

		weir_column_add(&d->pending[i],
						nulls[i] ? (Datum) 0 : datumCopy(values[i], c->typbyval, c->typlen),
						nulls[i]);
	}
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/*
 * Remove the ids the watermark has passed; returns how many left.  The
 * caller holds the pipeline slot's lock exclusively.
 */
int64
weir_dedup_expire(WeirDedup *d, TimestampTz watermark)
{
	HASH_SEQ_STATUS status;
	ExpiryBucket *b;
	List	   *due = NIL;
	ListCell   *lc;
	int64		removed = 0;

	if (d->horizon == 0 || TIMESTAMP_NOT_FINITE(watermark))
		return 0;
	hash_seq_init(&status, d->buckets);
	while ((b = hash_seq_search(&status)) != NULL)
		if (b->due <= watermark)
			due = lappend(due, b);
	foreach(lc, due)
	{
		ExpiryBucket *bucket = lfirst(lc);
		TimestampTz key = bucket->due;
		dsa_pointer dp = bucket->head;

		hash_search(d->buckets, &key, HASH_REMOVE, NULL);
		while (DsaPointerIsValid(dp))
		{
			WeirWindow *w = weir_window_at(d->store, dp);
			dsa_pointer next = w->next;
			TimestampTz expires = *seen_at(d, w) + d->horizon;

			if (expires > watermark)
				link_expiry(d, dp, expires);	/* seen again since */
			else if (w->flags & WEIR_WINDOW_DIRTY)
				link_expiry(d, dp, watermark + 1);	/* after the checkpoint */
			else
			{
				d->live_bytes -= entry_image_bytes(w);
				weir_keyed_remove(d->store, dp);
				removed++;
			}
			dp = next;
		}
	}
	list_free(due);
	if (removed > 0)
		weir_keyed_shrink(d->store);
	return removed;
}

/* One chunk image, collected in the sync phase and written in the async one */
typedef struct Chunk
{
	bytea	   *data;
	int32		entries;
	TimestampTz expires_at;		/* the latest expiry in it */
} Chunk;

typedef struct ChunkBuilder
{
	WeirDedup  *d;
	StringInfoData buf;
	int32		entries;
	TimestampTz expires_at;
	WeirDedupCollected *out;
} ChunkBuilder;

static void
chunk_flush(ChunkBuilder *cb)
{
	Chunk	   *c;

	if (cb->entries == 0)
		return;
	c = palloc(sizeof(Chunk));
	c->data = weir_make_bytea(cb->buf.data, cb->buf.len);
	c->entries = cb->entries;
	c->expires_at = cb->d->horizon > 0 ? cb->expires_at : DT_NOEND;
	cb->out->chunks = lappend(cb->out->chunks, c);
	cb->out->bytes += cb->buf.len;
	cb->out->entries += cb->entries;
	resetStringInfo(&cb->buf);
	cb->entries = 0;
	cb->expires_at = DT_NOBEGIN;
}

static void
chunk_add(ChunkBuilder *cb, WeirWindow *w)
{
	uint32		len = w->keylen;
	TimestampTz seen = *seen_at(cb->d, w);

	appendBinaryStringInfo(&cb->buf, (char *) &len, sizeof(uint32));
	appendBinaryStringInfo(&cb->buf, w->data, len);
	appendBinaryStringInfo(&cb->buf, (char *) &seen, sizeof(TimestampTz));
	cb->entries++;
	if (seen + cb->d->horizon > cb->expires_at)
		cb->expires_at = seen + cb->d->horizon;
	w->flags &= ~WEIR_WINDOW_DIRTY;
	if (cb->buf.len >= CHUNK_MAX_BYTES)
		chunk_flush(cb);
}

/*
 * Sync phase of a checkpoint: the ids changed since the last one as chunk
 * images, or all live ids when the chunks hold too much (compaction).  The
 * caller holds the slot's lock.
 */
void
weir_dedup_collect(WeirDedup *d, WeirDedupCollected *out)
{
	ChunkBuilder cb;
	int64		dirty_bytes = 0;

	memset(out, 0, sizeof(*out));
	cb.d = d;
	cb.entries = 0;
	cb.expires_at = DT_NOBEGIN;
	cb.out = out;
	initStringInfo(&cb.buf);

	for (int i = 0; i < d->ndirty; i++)
		dirty_bytes += entry_image_bytes(weir_window_at(d->store, d->dirty[i]));
	out->compacted = d->chunk_bytes + dirty_bytes > 2 * d->live_bytes + COMPACT_SLACK_BYTES;
	if (out->compacted)
	{
		WeirWindowIter iter;
		WeirWindow *w;

		weir_window_iter_init(&iter, d->store);
		while ((w = weir_window_iter_next(&iter)) != NULL)
			chunk_add(&cb, w);
	}
	else
		for (int i = 0; i < d->ndirty; i++)
			chunk_add(&cb, weir_window_at(d->store, d->dirty[i]));
	chunk_flush(&cb);
	d->ndirty = 0;
	pfree(cb.buf.data);
}

/*
 * Async phase: write the collected chunks, drop the chunks the watermark
 * has passed, and after a compaction every older chunk.
 */
void
weir_dedup_write(WeirDedup *d, int32 pipeline_id, TimestampTz watermark,
				 WeirDedupCollected *collected)
{
	int64		first = d->next_chunk;
	ListCell   *lc;

	foreach(lc, collected->chunks)
	{
		Chunk	   *c = lfirst(lc);

		weir_catalog_write_chunk(pipeline_id, d->next_chunk++, c->expires_at,
								 c->entries, c->data);
	}
	if (collected->compacted)
	{
		collected->deleted_bytes =
			weir_catalog_delete_chunks(pipeline_id, DT_NOBEGIN, first);
		d->chunk_bytes = collected->bytes;
	}
	else
	{
		d->chunk_bytes += collected->bytes;
		if (d->horizon > 0 && !TIMESTAMP_NOT_FINITE(watermark))
		{
			collected->deleted_bytes =
				weir_catalog_delete_chunks(pipeline_id, watermark, 0);
			d->chunk_bytes -= collected->deleted_bytes;
		}
	}
}

/* After a checkpoint committed the pending rows. */
void
weir_dedup_forget_pending(WeirDedup *d)
{
	MemoryContextReset(d->pending_cxt);
	init_pending(d);
}

typedef struct RestoreState
{
	WeirDedup  *d;
	TimestampTz watermark;
	int64		entries;
	bool		corrupt;
} RestoreState;

static void
restore_chunk(void *arg, const char *data, Size len)
{
	RestoreState *rs = (RestoreState *) arg;
	WeirDedup  *d = rs->d;
	const char *p = data;
	const char *end = data + len;

	while (p < end)
	{
		uint32		idlen;
		TimestampTz seen;
		bool		created;
		dsa_pointer dp;
		WeirWindow *w;

		if (end - p < sizeof(uint32))
			goto corrupt;
		memcpy(&idlen, p, sizeof(uint32));
		p += sizeof(uint32);
		if (idlen > PG_UINT16_MAX || end - p < (int64) idlen + (int64) sizeof(TimestampTz))
			goto corrupt;
		memcpy(&seen, p + idlen, sizeof(TimestampTz));
		if (d->horizon == 0 || TIMESTAMP_NOT_FINITE(rs->watermark) ||
			seen + d->horizon > rs->watermark)
		{
			dp = weir_keyed_find(d->store, p, idlen, true, &created);
			if (!DsaPointerIsValid(dp))
				ereport(ERROR,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("checkpoint of a deduplication does not fit in its max_state_memory"),
						 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
			w = weir_window_at(d->store, dp);
			if (created)
			{
				*seen_at(d, w) = seen;
				w->flags = 0;
				d->live_bytes += entry_image_bytes(w);
				if (d->horizon > 0)
					link_expiry(d, dp, seen + d->horizon);
				rs->entries++;
			}
			else if (seen > *seen_at(d, w))
				*seen_at(d, w) = seen;
		}
		p += idlen + sizeof(TimestampTz);
	}
	return;
corrupt:
	rs->corrupt = true;
}

/*
 * Load the ids of the last checkpoint, skipping those the watermark has
 * passed; returns how many are in memory, *bytes the chunk bytes read.
 */
int64
weir_dedup_restore(WeirDedup *d, int32 pipeline_id, TimestampTz watermark,
				   int64 *bytes)
{
	RestoreState rs = {d, watermark, 0, false};

	(void) weir_catalog_load_chunks(pipeline_id, restore_chunk, &rs, bytes,
									&d->next_chunk);
	if (rs.corrupt)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint of a deduplication: bad chunk"),
				 errhint("Drop and recreate the pipeline to rebuild its state from the topic.")));
	d->chunk_bytes = *bytes;
	return rs.entries;
}
