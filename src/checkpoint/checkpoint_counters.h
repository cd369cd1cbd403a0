/*-------------------------------------------------------------------------
 *
 * checkpoint_counters.h
 *	  A pipeline's counters, cumulative across restarts and crashes
 *	  (checkpoint_counters.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_counters.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHECKPOINT_COUNTERS_H
#define WEIR_CHECKPOINT_COUNTERS_H

#include "base/shmem.h"

/*
 * The counters since the pipeline was created, as of one checkpoint: each
 * counts exactly the records (and sink rows) whose effects that checkpoint
 * holds.  A row of weir.pipeline_counters.
 */
typedef struct WeirCounters
{
	int64		records_in;		/* records read */
	int64		records_late;	/* too late for state */
	int64		records_dead;	/* dead letters the worker found (records it
								 * could not process, rows it could not
								 * compute) */
	int64		records_dropped;	/* duplicates (dedup) */
	int64		records_out;	/* sink rows written */
	int64		dead_at_write;	/* rows the sink or the late-records table
								 * refused when a checkpoint wrote them */
} WeirCounters;

extern void weir_counters_of_worker(WeirPipelineSlot *slot, WeirCounters *c);
extern void weir_counters_restore(WeirPipelineSlot *slot, const WeirCounters *c);
extern void weir_counters_committed(WeirPipelineSlot *slot, const WeirCounters *c);

#endif							/* WEIR_CHECKPOINT_COUNTERS_H */
