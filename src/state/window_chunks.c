/*-------------------------------------------------------------------------
 *
 * window_chunks.c
 *	  The open windows of a checkpoint, as chunks of weir.pipeline_chunk.
 *
 * A checkpoint appends one chunk (several past CHUNK_MAX_BYTES) holding the
 * windows that changed since the previous one: per window its key image,
 * start, end, whether it fired, and its aggregate states' image.  Windows
 * are not deleted one by one: a window closes for good when the watermark
 * passes its end plus the allowed lateness (plus a microsecond for
 * sessions that merge when they touch: weir_window_margin), and a restore
 * skips closed windows, so a chunk goes as a whole once every window in it
 * has closed (its expires_at).  The one exception, a session window merged into
 * another, is written as a "gone" entry that hides its earlier versions.
 * When the chunks hold more than twice what the open windows would take
 * (and 1 MB more), a checkpoint writes every open window as new chunks and
 * deletes the older ones: compaction.  A restore reads the chunks in
 * order and keeps the newest version of each (key, start) that has not
 * closed.
 *
 * So a checkpoint's cost follows what changed, as with one row per window
 * (which cost an index insertion, or a lookup and an update, per window,
 * and a lookup and a deletion per closed window: a fifth of a hopping
 * pipeline's time while reading a backlog), at the cost of a chunk's bytes.
 *
 * Entry image: uint32 keylen (| GONE for a gone entry), the key image,
 * int64 start, int64 end; then, unless gone, uint8 fired, uint32 statelen
 * and the states' image (weir_agg_states_image).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/window_chunks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "catalog_sql/catalog_chunk.h"
#include "checkpoint/checkpoint_package.h"
#include "state/window_chunks.h"

#define CHUNK_MAX_BYTES (32 * 1024 * 1024)	/* split larger chunks */
#define COMPACT_SLACK_BYTES (1024 * 1024)
#define GONE ((uint32) 1 << 31)

/*
 * Whether this checkpoint should write every open window instead (a
 * compaction): the chunks, with what it has collected so far, would hold
 * more than twice what the open windows take (live_bytes), and 1 MB more.
 */
bool
weir_window_chunks_compact_due(WeirWindowChunks *wc, WeirWindowChunkBuilder *cb,
							   int64 live_bytes)
{
	return wc->chunk_bytes + cb->bytes + cb->buf.len > 2 * live_bytes + COMPACT_SLACK_BYTES;
}

void
weir_window_chunks_begin(WeirWindowChunkBuilder *cb, int64 close_margin, bool compacted)
{
	memset(cb, 0, sizeof(*cb));
	cb->close_margin = close_margin;
	cb->compacted = compacted;
	cb->expires_at = DT_NOBEGIN;
	initStringInfo(&cb->buf);
}

static void
flush(WeirWindowChunkBuilder *cb)
{
	if (cb->entries == 0)
		return;
	cb->chunks = lappend(cb->chunks, weir_chunk_make(&cb->buf, cb->entries, cb->expires_at));
	cb->bytes += cb->buf.len;
	cb->total_entries += cb->entries;
	resetStringInfo(&cb->buf);
	cb->entries = 0;
	cb->expires_at = DT_NOBEGIN;
}

static void
add_header(WeirWindowChunkBuilder *cb, uint32 keyword, const char *key, uint32 keylen,
		   TimestampTz start, TimestampTz end)
{
	appendBinaryStringInfo(&cb->buf, (char *) &keyword, sizeof(uint32));
	appendBinaryStringInfo(&cb->buf, key, keylen);
	appendBinaryStringInfo(&cb->buf, (char *) &start, sizeof(TimestampTz));
	appendBinaryStringInfo(&cb->buf, (char *) &end, sizeof(TimestampTz));
}

static void
entry_done(WeirWindowChunkBuilder *cb, TimestampTz end)
{
	cb->entries++;
	/* every window in the chunk closed: it can go */
	if (end + cb->close_margin > cb->expires_at)
		cb->expires_at = end + cb->close_margin;
	if (cb->buf.len >= CHUNK_MAX_BYTES)
		flush(cb);
}

/* A window's current version. */
void
weir_window_chunks_add(WeirWindowChunkBuilder *cb, const char *key, uint32 keylen,
					   TimestampTz start, TimestampTz end, bool fired,
					   const char *state, uint32 statelen)
{
	uint8		f = fired ? 1 : 0;

	add_header(cb, keylen, key, keylen, start, end);
	appendBinaryStringInfo(&cb->buf, (char *) &f, sizeof(uint8));
	appendBinaryStringInfo(&cb->buf, (char *) &statelen, sizeof(uint32));
	appendBinaryStringInfo(&cb->buf, state, statelen);
	entry_done(cb, end);
}

/*
 * A window that left without closing (a session merged into another): its
 * earlier versions must not come back.  `end`: its own, until which those
 * versions would count as open.
 */
void
weir_window_chunks_add_gone(WeirWindowChunkBuilder *cb, const char *key, uint32 keylen,
							TimestampTz start, TimestampTz end)
{
	add_header(cb, keylen | GONE, key, keylen, start, end);
	entry_done(cb, end);
}

void
weir_window_chunks_finish(WeirWindowChunkBuilder *cb)
{
	flush(cb);
	pfree(cb->buf.data);
	cb->buf.data = NULL;
}

/*
 * The collected chunks into a checkpoint's package; after them the chunks
 * whose windows have all closed by `watermark` go, or after a compaction
 * every older chunk.  The bytes the closed chunks held come back with the
 * commit: weir_window_chunks_deleted.
 */
void
weir_window_chunks_package(WeirWindowChunks *wc, WeirWindowChunkBuilder *cb,
						   WeirPackage *pkg, TimestampTz watermark)
{
	weir_package_add_chunks(pkg, 0, cb->chunks, cb->compacted, watermark, &wc->next_chunk);
	wc->chunk_bytes = (cb->compacted ? 0 : wc->chunk_bytes) + cb->bytes;
}

/* A committed checkpoint deleted closed chunks of `bytes` of data. */
void
weir_window_chunks_deleted(WeirWindowChunks *wc, int64 bytes)
{
	wc->chunk_bytes -= bytes;
}

/* Restore ---------------------------------------------------------------- */

typedef struct WindowId
{
	TimestampTz start;
	uint32		keylen;
	const char *key;
} WindowId;

typedef struct Version
{
	WindowId	id;				/* hash key; owns a copy of the key */
	TimestampTz end;
	bool		fired;
	uint32		statelen;
	char	   *state;
} Version;

typedef struct RestoreState
{
	HTAB	   *versions;
	MemoryContext cxt;
	bool		bad;
} RestoreState;

static uint32
window_id_hash(const void *key, Size keysize)
{
	const WindowId *id = key;

	return hash_combine(hash_bytes((const unsigned char *) id->key, id->keylen),
						hash_bytes_uint32((uint32) id->start ^ (uint32) (id->start >> 32)));
}

static int
window_id_match(const void *a, const void *b, Size keysize)
{
	const WindowId *x = a;
	const WindowId *y = b;

	if (x->start != y->start || x->keylen != y->keylen)
		return 1;
	return memcmp(x->key, y->key, x->keylen);
}

/* One chunk: each entry replaces (or, gone, removes) the version before. */
static void
restore_chunk(void *arg, const char *data, Size len)
{
	RestoreState *rs = arg;
	const char *p = data;
	const char *end = data + len;

	while (p < end && !rs->bad)
	{
		uint32		word;
		WindowId	id;
		TimestampTz wend;
		Version    *v;
		bool		found;

		if (end - p < sizeof(uint32))
			break;
		memcpy(&word, p, sizeof(uint32));
		p += sizeof(uint32);
		id.keylen = word & ~GONE;
		id.key = p;
		if (end - p < (Size) id.keylen + 2 * sizeof(TimestampTz))
			break;
		p += id.keylen;
		memcpy(&id.start, p, sizeof(TimestampTz));
		memcpy(&wend, p + sizeof(TimestampTz), sizeof(TimestampTz));
		p += 2 * sizeof(TimestampTz);
		if (word & GONE)
		{
			(void) hash_search(rs->versions, &id, HASH_REMOVE, NULL);
			continue;
		}
		if (end - p < sizeof(uint8) + sizeof(uint32))
			break;
		v = hash_search(rs->versions, &id, HASH_ENTER, &found);
		if (!found)
		{
			char	   *kcopy = MemoryContextAlloc(rs->cxt, Max(id.keylen, 1));

			memcpy(kcopy, id.key, id.keylen);
			v->id.key = kcopy;
		}
		else
			pfree(v->state);
		v->end = wend;
		v->fired = *p != 0;
		memcpy(&v->statelen, p + sizeof(uint8), sizeof(uint32));
		p += sizeof(uint8) + sizeof(uint32);
		if (end - p < v->statelen)
			break;
		v->state = MemoryContextAlloc(rs->cxt, Max(v->statelen, 1));
		memcpy(v->state, p, v->statelen);
		p += v->statelen;
	}
	if (p != end)
		rs->bad = true;
}

/*
 * Read a pipeline's window chunks and give each window that is open at
 * `watermark` (the checkpoint's: a window has closed when its end +
 * close_margin, weir_window_margin, is at or below it) to `cb`, in no
 * particular order.  Sets
 * wc for the checkpoints to come; *bytes: chunk bytes read.  Returns the
 * windows given.
 */
int64
weir_window_chunks_restore(WeirWindowChunks *wc, int32 pipeline_id,
						   TimestampTz watermark, int64 close_margin,
						   WeirWindowRestoreCallback cb, void *arg, int64 *bytes)
{
	RestoreState rs;
	HASHCTL		ctl;
	HASH_SEQ_STATUS status;
	Version    *v;
	int64		windows = 0;

	rs.cxt = AllocSetContextCreate(CurrentMemoryContext, "weir window restore",
								   ALLOCSET_DEFAULT_SIZES);
	rs.bad = false;
	ctl.keysize = sizeof(WindowId);
	ctl.entrysize = sizeof(Version);
	ctl.hash = window_id_hash;
	ctl.match = window_id_match;
	ctl.hcxt = rs.cxt;
	rs.versions = hash_create("weir window versions", 1024, &ctl,
							  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	(void) weir_catalog_load_chunks(pipeline_id, 0, restore_chunk, &rs, bytes,
									&wc->next_chunk);
	if (rs.bad)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint of pipeline %d: bad window chunk", pipeline_id),
				 errhint("Drop and recreate the pipeline to rebuild its state from the topic.")));
	wc->chunk_bytes = *bytes;
	hash_seq_init(&status, rs.versions);
	while ((v = hash_seq_search(&status)) != NULL)
	{
		/* closed: it left memory before the checkpoint, and so stays out */
		if (!TIMESTAMP_NOT_FINITE(watermark) && v->end + close_margin <= watermark)
			continue;
		cb(arg, v->id.key, v->id.keylen, v->id.start, v->end, v->fired, v->state,
		   v->statelen);
		windows++;
	}
	MemoryContextDelete(rs.cxt);
	return windows;
}
