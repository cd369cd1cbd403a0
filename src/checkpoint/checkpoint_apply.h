/*-------------------------------------------------------------------------
 *
 * checkpoint_apply.h
 *	  A checkpoint's async phase: the writes of a package, in one
 *	  transaction, by the worker or by its checkpoint writer.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_apply.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHECKPOINT_APPLY_H
#define WEIR_CHECKPOINT_APPLY_H

#include "base/shmem.h"
#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_counters.h"
#include "definition/definition.h"
#include "sink/sink_ops.h"

/* Chunk spaces of a pipeline's state: a join's two sides */
#define WEIR_CHECKPOINT_SPACES 2

/*
 * What applying a package needs of its pipeline: all a checkpoint writer
 * has, and the part of a worker it shares.  Lives in the process's own
 * memory.
 */
typedef struct WeirCheckpointTarget
{
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirPipelineSlot *slot;		/* its counters */
	WeirSink   *sink;
} WeirCheckpointTarget;

/* What a worker learns from a committed checkpoint */
typedef struct WeirCheckpointResult
{
	int64		checkpoint_id;
	int64		served;			/* weir.checkpoint() tickets answered */
	int64		sink_rows;
	double		write_us;		/* from the end of the sync phase to the commit */
	int64		deleted_bytes[WEIR_CHECKPOINT_SPACES];	/* chunks that expired */
	WeirCounters counters;		/* as committed (weir.pipeline_counters) */
} WeirCheckpointResult;

extern bool weir_checkpoint_pipeline_exists(const WeirPipelineRow *row);
extern bool weir_checkpoint_apply(WeirCheckpointTarget *target, const char *data, Size len,
								  WeirCheckpointResult *res);

#endif							/* WEIR_CHECKPOINT_APPLY_H */
