/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  A pipeline's background worker.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WORKER_H
#define WEIR_WORKER_H

#include "executor/execdesc.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"

#include "base/shmem.h"
#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_apply.h"
#include "definition/definition.h"
#include "operator/operator.h"
#include "pipeline/reading.h"
#include "pipeline/restore_follow.h"
#include "state/store.h"

/* A record that could not be processed, written at the next checkpoint */
typedef struct WeirDeadLetter
{
	Oid			source;
	int32		part;
	int64		position;
	char	   *error;
	char	   *record;			/* the row as JSON text; NULL: read from the
								 * topic by the checkpoint (one the operator
								 * refused) */
} WeirDeadLetter;

/*
 * A record too late for state, to be copied from its topic into the
 * late-records table by the next checkpoint.
 */
typedef struct WeirLateRecord
{
	Oid			source;			/* the topic (a join has two) */
	int32		part;			/* the topic's own partition */
	int64		position;
} WeirLateRecord;

/*
 * A checkpoint that wrote at least this many sink rows measures what one
 * costs; until one has, a row is taken to cost the default (about what a
 * first emission costs on a 2-core machine).
 */
#define WEIR_SINK_ROWS_MEASURED 1000
#define WEIR_SINK_ROW_US_DEFAULT 2.0

typedef struct WeirWorker
{
	WeirReading in;				/* its sources, positions and batch: what the
								 * read-ahead process has too */
	WeirPipelineSlot *slot;
	TimestampTz watermark;		/* never decreases */
	int32		watermark_holder;	/* partition holding it back; -1: none */
	bool		publishes_watermark;	/* its sink is a topic that others may
										 * read (topic_watermark.c) */
	TimestampTz watermark_published;	/* with the last checkpoint collected */
	TimestampTz *chain_moved_at;	/* [partitions]: when a chained partition's
									 * published watermark last moved */
	TimestampTz *chain_before;	/* [partitions]: scratch, the times before
								 * asking */
	bool		applying;		/* records are being applied to state */

	int64		out_of_orderness;	/* us */
	int64		lateness;		/* us */
	int64		idle_timeout;	/* us; 0: none */
	int64		checkpoint_interval;	/* us */
	bool		emit_updates;

	WeirStore *store;		/* the pipeline's state, in `area` */
	WeirOperator *op;			/* what the records go through, over `store` */
	dsa_area   *area;			/* the pipeline's state, in DSA */
	int64		local_bytes;	/* generic-aggregate states in this process */

	/* checkpointing */
	int64		checkpoint_id;	/* last collected (committed, or being written) */
	struct WeirWriterLink *writer;	/* the checkpoint writer; NULL: the worker
									 * writes its checkpoints itself */
	struct WeirReadAhead *read_ahead;	/* the read-ahead process; NULL: the
										 * worker reads itself */
	TimestampTz next_checkpoint;
	int64		records_since;	/* records in since the last checkpoint */
	List	   *dead;			/* WeirDeadLetter *, until the next checkpoint */
	List	   *late;			/* WeirLateRecord *, when kept, until the
								 * next checkpoint */
	bool		changed;		/* anything to checkpoint */
	int64		last_sync_us;	/* the last checkpoint's sync phase */
	TimestampTz idle_since;		/* no rows read since; 0 while reading */
	bool		memory_released;	/* since going idle (process_memory.c) */
	double		sink_row_us;	/* what a sink row costs a checkpoint, as last
								 * measured (worker.c: checkpoints sized to
								 * the interval) */
	WeirCheckpointTarget *target;	/* the worker's own checkpoints: where
									 * they are written */
	WeirRestoreFollow follow;	/* after its restore (restore_follow.c) */
} WeirWorker;

extern PGDLLEXPORT void weir_worker_main(Datum main_arg);

#endif							/* WEIR_WORKER_H */
