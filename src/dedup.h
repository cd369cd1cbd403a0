/*-------------------------------------------------------------------------
 *
 * dedup.h
 *	  Deduplication: the ids seen within a horizon of event time, in the
 *	  pipeline's DSA area, and the records kept since the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/dedup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEDUP_H
#define WEIR_DEDUP_H

#include "columns.h"
#include "definition.h"
#include "window.h"

typedef struct WeirDedup
{
	WeirPlan   *plan;
	WeirWindowStore *store;		/* one entry per id; its state: last seen at */
	int64		horizon;		/* us of event time; 0: ids are kept forever */
	int64		bucket_width;	/* us; expiry buckets */
	HTAB	   *buckets;		/* expiry time -> entries, through `next` */
	MemoryContext cxt;

	/* entries changed since the last checkpoint (never removed meanwhile) */
	dsa_pointer *dirty;
	int			ndirty;
	int			dirty_cap;

	/* records kept since the last checkpoint: the sink's next rows */
	MemoryContext pending_cxt;
	WeirColumn *pending;		/* [plan->ncolumns] */
	WeirColumn *column_types;	/* [plan->ncolumns]: their types, resolved once */

	/* weir.pipeline_chunk */
	int64		next_chunk;
	int64		chunk_bytes;	/* data bytes all chunks hold */
	int64		live_bytes;		/* data bytes the live entries would take */
} WeirDedup;

/* What a checkpoint of the ids writes */
typedef struct WeirDedupCollected
{
	List	   *chunks;			/* chunk images (dedup.c) */
	int64		entries;
	int64		bytes;
	int64		deleted_bytes;	/* chunks deleted */
	bool		compacted;
} WeirDedupCollected;

extern WeirDedup *weir_dedup_create(WeirPlan *plan, WeirWindowStore *store,
									MemoryContext parent);
extern bool weir_dedup_is_late(WeirDedup *d, TimestampTz t, TimestampTz watermark);
extern bool weir_dedup_apply(WeirDedup *d, const char *id, uint32 idlen,
							 TimestampTz t, Datum *values, bool *nulls,
							 bool *duplicate);
extern int64 weir_dedup_expire(WeirDedup *d, TimestampTz watermark);
extern void weir_dedup_collect(WeirDedup *d, WeirDedupCollected *out);
extern void weir_dedup_write(WeirDedup *d, int32 pipeline_id, TimestampTz watermark,
							 WeirDedupCollected *collected);
extern void weir_dedup_forget_pending(WeirDedup *d);
extern int64 weir_dedup_restore(WeirDedup *d, int32 pipeline_id,
								TimestampTz watermark, int64 *bytes);

#endif							/* WEIR_DEDUP_H */
