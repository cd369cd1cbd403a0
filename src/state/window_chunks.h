/*-------------------------------------------------------------------------
 *
 * window_chunks.h
 *	  The open windows of a checkpoint, as chunks of weir.pipeline_chunk.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/window_chunks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WINDOW_CHUNKS_H
#define WEIR_WINDOW_CHUNKS_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

/* A pipeline's window chunks, as its worker keeps track of them */
typedef struct WeirWindowChunks
{
	int64		next_chunk;		/* the number of the next chunk written */
	int64		chunk_bytes;	/* data bytes of the chunks there are */
} WeirWindowChunks;

/* What one checkpoint writes: collected in sync, written in async */
typedef struct WeirWindowChunkBuilder
{
	int64		close_margin;	/* us: a window closes at end + this
								 * (weir_window_margin of the lateness) */
	StringInfoData buf;			/* the chunk being built */
	int32		entries;		/* in buf */
	TimestampTz expires_at;		/* when every window in buf has closed */
	List	   *chunks;			/* built (WeirChunk *) */
	int64		bytes;			/* data bytes of all built */
	int64		total_entries;
	bool		compacted;		/* all open windows: older chunks go */
} WeirWindowChunkBuilder;

/* One restored window (key image, states image), for a callback */
typedef void (*WeirWindowRestoreCallback) (void *arg, const char *key, uint32 keylen,
										   TimestampTz start, TimestampTz end,
										   bool fired, const char *state,
										   uint32 statelen);

struct WeirPackage;				/* checkpoint_package.h */

extern bool weir_window_chunks_compact_due(WeirWindowChunks *wc, WeirWindowChunkBuilder *cb,
										   int64 live_bytes);
extern void weir_window_chunks_begin(WeirWindowChunkBuilder *cb, int64 close_margin,
									 bool compacted);
extern void weir_window_chunks_add(WeirWindowChunkBuilder *cb, const char *key,
								   uint32 keylen, TimestampTz start, TimestampTz end,
								   bool fired, const char *state, uint32 statelen);
extern void weir_window_chunks_add_gone(WeirWindowChunkBuilder *cb, const char *key,
										uint32 keylen, TimestampTz start,
										TimestampTz end);
extern void weir_window_chunks_finish(WeirWindowChunkBuilder *cb);
extern void weir_window_chunks_package(WeirWindowChunks *wc, WeirWindowChunkBuilder *cb,
									   struct WeirPackage *pkg, TimestampTz watermark);
extern void weir_window_chunks_deleted(WeirWindowChunks *wc, int64 bytes);
extern int64 weir_window_chunks_restore(WeirWindowChunks *wc, int32 pipeline_id,
										TimestampTz watermark, int64 close_margin,
										WeirWindowRestoreCallback cb, void *arg,
										int64 *bytes);

#define WEIR_WINDOW_IMAGE_FIXED_BYTES \
	(sizeof(uint32) + 2 * sizeof(TimestampTz) + sizeof(uint8) + sizeof(uint32))

#endif							/* WEIR_WINDOW_CHUNKS_H */
