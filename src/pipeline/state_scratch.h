/*-------------------------------------------------------------------------
 *
 * state_scratch.h
 *	  Restore a pipeline's last checkpoint into a store of the calling
 *	  backend's own (state_scratch.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_scratch.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_SCRATCH_H
#define WEIR_STATE_SCRATCH_H

#include "catalog_sql/catalog_pipeline.h"
#include "definition/pipeline_plan.h"
#include "state/store.h"
#include "utils/dsa.h"

/* A checkpoint restored into scratch memory; detach `area` when done */
typedef struct WeirScratchState
{
	dsa_area   *area;			/* made for the call, in this backend */
	WeirStore  *store;			/* the restored state, in `area` */
	int64		checkpoint_id;	/* restored; 0: the pipeline had none */
	TimestampTz watermark;		/* the checkpoint's */
	int64		bytes;			/* of its chunks, read */
	int64		entries;		/* restored */
} WeirScratchState;

extern void weir_state_restore_scratch(WeirPipelineRow *row, WeirPlan *plan,
									   WeirScratchState *scratch);

#endif							/* WEIR_STATE_SCRATCH_H */
