/*-------------------------------------------------------------------------
 *
 * catalog_chunk.h
 *	  SQL on weir.pipeline_chunk (catalog_chunk.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_chunk.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_CHUNK_H
#define WEIR_CATALOG_CHUNK_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

/*
 * The layout of the entry images in a chunk's data, stamped on every chunk
 * written: a restore refuses chunks of another layout rather than read
 * them as its own.  Bump it with any change to what an image holds: window
 * entries (checkpoint.c, window_chunks.c) and their aggregate states
 * (aggregate.c), keyed entries (keyed.c), a join's rows (join.c).
 *   1: 16-byte sum(int) states; a join's key entry holds both sides' rows
 *   2: a join row's image without partition and position
 *   3: avg(float8) states hold the sum of squared deviations too
 */
#define WEIR_STATE_FORMAT 3

/*
 * The oldest format this build still reads.  weir 0.1 (released) and 0.2
 * write format 3.  A build that changes the layout bumps WEIR_STATE_FORMAT
 * and either teaches the restore (window_chunks.c, keyed.c) to read the
 * older images, leaving this alone, or raises it to its new format, so
 * that chunks of an older one are refused with a clear error (never read
 * as its own).  A format above WEIR_STATE_FORMAT was written by a newer
 * build (the library was downgraded) and is refused too.
 */
#define WEIR_STATE_FORMAT_OLDEST 3

typedef void (*WeirChunkCallback) (void *arg, const char *data, Size len);

/* One chunk of a checkpoint: built in its sync phase, written in the async one */
typedef struct WeirChunk
{
	bytea	   *data;
	int32		entries;
	TimestampTz expires_at;		/* every entry in it expired (or closed) by then */
} WeirChunk;

extern WeirChunk *weir_chunk_make(const StringInfoData *buf, int32 entries,
								  TimestampTz expires_at);
extern void weir_catalog_write_chunk(int32 id, int space, int64 chunk,
									 TimestampTz expires_at, int32 entries,
									 bytea *data);
extern int64 weir_catalog_delete_chunks(int32 id, int space, TimestampTz watermark,
										 int64 below_chunk, int64 *entries);
extern int64 weir_catalog_apply_chunks(int32 id, int space, List *chunks,
									   int64 first_chunk, bool compacted,
									   TimestampTz watermark, int64 *deleted_bytes);
extern void weir_catalog_chunks_size(int32 id, int64 *bytes, int64 *entries);
extern int64 weir_catalog_load_chunks(int32 id, int space, WeirChunkCallback cb,
									  void *arg, int64 *bytes, int64 *next_chunk);

#endif							/* WEIR_CATALOG_CHUNK_H */
