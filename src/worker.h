/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  A pipeline's background worker.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WORKER_H
#define WEIR_WORKER_H

#include "executor/execdesc.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"

#include "catalog_pipeline.h"
#include "definition.h"
#include "shmem.h"
#include "window.h"

/* A record that could not be processed, written at the next checkpoint */
typedef struct WeirDeadLetter
{
	int32		part;
	int64		position;
	char	   *error;
	char	   *record;			/* the row as JSON text */
} WeirDeadLetter;

typedef struct WeirWorker
{
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirPipelineSlot *slot;
	MemoryContext cxt;			/* worker lifetime */
	int32		partitions;

	/* source progress, per partition */
	int64	   *pos;			/* last position processed */
	TimestampTz *max_event_time;	/* DT_NOBEGIN: none yet */
	TimestampTz *last_data_at;	/* wall clock, for idle_timeout */
	TimestampTz watermark;		/* never decreases */

	int64		out_of_orderness;	/* us */
	int64		lateness;		/* us */
	int64		idle_timeout;	/* us; 0: none */
	int64		checkpoint_interval;	/* us */
	bool		emit_updates;

	WeirWindowStore *store;

	/* expression evaluation against a slot of the topic table */
	EState	   *estate;
	ExprContext *econtext;
	ExprState **key_exprs;
	ExprState  *event_time_expr;
	ExprState  *filter_expr;
	ExprState **agg_exprs;
	Datum	   *agg_values;
	bool	   *agg_nulls;
	StringInfoData keybuf;

	/* checkpointing */
	int64		checkpoint_id;	/* last committed */
	TimestampTz next_checkpoint;
	int64		records_since;	/* records in since the last checkpoint */
	List	   *dead;			/* WeirDeadLetter *, until the next checkpoint */
	List	   *late;			/* late rows as JSON text, when kept */
	bool		changed;		/* anything to checkpoint */
	SPIPlanPtr	sink_plan;
	SPIPlanPtr	sink_delete_plan;
} WeirWorker;

extern PGDLLEXPORT void weir_worker_main(Datum main_arg);

/* checkpoint.c */
extern void weir_checkpoint_restore(WeirWorker *w);
extern void weir_checkpoint_write(WeirWorker *w, TimestampTz due);
extern void weir_checkpoint_decode_key(WeirPlan *plan, const char *image,
									   Datum *values);

#endif							/* WEIR_WORKER_H */
