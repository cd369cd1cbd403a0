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

#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_apply.h"
#include "definition/definition.h"
#include "operator/operator.h"
#include "base/shmem.h"
#include "state/window.h"

#define WEIR_BATCH_ROWS 10000	/* rows per partition per round */

/* A record that could not be processed, written at the next checkpoint */
typedef struct WeirDeadLetter
{
	Oid			source;
	int32		part;
	int64		position;
	char	   *error;
	char	   *record;			/* the row as JSON text */
} WeirDeadLetter;

/* One topic row evaluated, not yet applied to state */
typedef enum WeirRowKind
{
	WEIR_ROW_OK,
	WEIR_ROW_FILTERED,
	WEIR_ROW_DEAD
} WeirRowKind;

typedef struct WeirEvalRow
{
	int64		position;
	WeirRowKind kind;
	TimestampTz t;
	int			keyoff;			/* into WeirWorker.batch_keys */
	int			keylen;
	uint32		keyhash;		/* weir_window_key_hash of the key image */
	int			args;			/* its row of batch_values / batch_nulls (the
								 * batch is sorted by position after reading) */
	char	   *error;			/* DEAD: why */
	char	   *record;			/* DEAD: the row as JSON */
} WeirEvalRow;

/*
 * A source and how its rows are evaluated.  A join has two (left, right);
 * every other kind one.  Partitions of all sources are numbered on in the
 * worker's arrays (and in weir.pipeline_position): the second source's
 * partition p is first + p.
 */
typedef struct WeirSide
{
	WeirPlan   *plan;			/* this source's keys, event time, columns */
	Oid			source;
	char	   *source_name;	/* for error context */
	int32		partitions;
	int32		first;
	ExprState **key_exprs;
	ExprState  *event_time_expr;	/* NULL: none (projection) */
	ExprState  *filter_expr;
	ExprState **arg_exprs;		/* [plan->nargs]: every aggregate's arguments,
								 * or the columns */
	int16	   *arg_copy_len;	/* [plan->nargs]: typlen of by-reference
								 * arguments to copy; 0: none */

	/*
	 * An expression that is just a column of the topic is read from the
	 * deformed row instead of being evaluated (nearly all keys, event times
	 * and columns are): the column's number, or 0 for an expression.
	 */
	AttrNumber *key_columns;	/* [plan->nkeys] */
	AttrNumber	event_time_column;
	AttrNumber *arg_columns;	/* [plan->nargs] */
	AttrNumber	deform_columns;	/* the highest of them: deformed first */
} WeirSide;

/*
 * A checkpoint that wrote at least this many sink rows measures what one
 * costs; until one has, a row is taken to cost the default (about what a
 * first emission costs on a 2-core machine).
 */
#define WEIR_SINK_ROWS_MEASURED 1000
#define WEIR_SINK_ROW_US_DEFAULT 2.0

typedef struct WeirWorker
{
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirPipelineSlot *slot;
	MemoryContext cxt;			/* worker lifetime */
	int32		partitions;		/* of all sources */
	int			nsides;
	WeirSide	sides[2];
	WeirSide   *side;			/* being read */
	int32		cur_part;		/* being read, for error context; -1: none */
	int64		cur_pos;

	/* source progress, per partition */
	int64	   *pos;			/* last position processed */
	TimestampTz *max_event_time;	/* DT_NOBEGIN: none yet */
	TimestampTz *last_data_at;	/* wall clock, for idle_timeout */
	TimestampTz watermark;		/* never decreases */
	int32		watermark_holder;	/* partition holding it back; -1: none */

	/*
	 * Event times a record may have: far enough inside timestamptz's range
	 * that no window bound, watermark or expiry computed from it leaves
	 * it (weir_worker_setup_reading); outside, it is a dead letter.
	 */
	TimestampTz min_event_time;
	TimestampTz max_event_time_allowed;
	/* records to move past (skip.c): dead letters */
	bool		applying;		/* records are being applied to state */
	int			nskips;
	struct WeirSkip *skips;

	int64		out_of_orderness;	/* us */
	int64		lateness;		/* us */
	int64		idle_timeout;	/* us; 0: none */
	int64		checkpoint_interval;	/* us */
	bool		emit_updates;

	WeirWindowStore *store;		/* the pipeline's state, in `area` */
	WeirOperator *op;			/* what the records go through, over `store` */
	dsa_area   *area;			/* the pipeline's state, in DSA */
	int64		local_bytes;	/* generic-aggregate states in this process */

	/* expression evaluation against a slot of a topic table */
	EState	   *estate;
	ExprContext *econtext;
	int			batch_stride;	/* evaluated arguments per row: max over sides */

	/*
	 * A batch of a group of partitions, read in one pass and evaluated
	 * before it touches state: partition group_first + g has rows
	 * [g * WEIR_BATCH_ROWS, + group_nbatch[g]).
	 */
	int			group_size;		/* partitions per group, at most */
	int32		group_first;	/* the group being read */
	int			ngroup;
	int		   *group_nbatch;	/* [group_size] */
	struct WeirPositionRange *ranges;	/* [group_size]: what is read */
	WeirEvalRow *batch;			/* [WEIR_BATCH_ROWS * group_size] */
	Datum	   *batch_values;	/* [WEIR_BATCH_ROWS * group_size * batch_stride] */
	bool	   *batch_nulls;
	StringInfoData batch_keys;	/* key images, by offset */
	MemoryContext batch_cxt;	/* reset after each batch */

	/* checkpointing */
	int64		checkpoint_id;	/* last collected (committed, or being written) */
	struct WeirWriterLink *writer;	/* the checkpoint writer; NULL: the worker
									 * writes its checkpoints itself */
	struct WeirReadAhead *read_ahead;	/* the read-ahead process; NULL: the
										 * worker reads itself */
	TimestampTz next_checkpoint;
	int64		records_since;	/* records in since the last checkpoint */
	List	   *dead;			/* WeirDeadLetter *, until the next checkpoint */
	List	   *late;			/* int64[2] {part, position} of late rows, when kept */
	bool		changed;		/* anything to checkpoint */
	int64		last_sync_us;	/* the last checkpoint's sync phase */
	TimestampTz idle_since;		/* no rows read since; 0 while reading */
	bool		memory_released;	/* since going idle (process_memory.c) */
	double		sink_row_us;	/* what a sink row costs a checkpoint, as last
								 * measured (worker.c: checkpoints sized to
								 * the interval) */
	WeirCheckpointTarget *target;	/* the worker's own checkpoints: where
									 * they are written */
} WeirWorker;

extern PGDLLEXPORT void weir_worker_main(Datum main_arg);

/* reading, for the worker and its read-ahead process (read_ahead.c) */
typedef void (*WeirGroupDone) (WeirWorker *w, void *arg);
extern WeirWorker *weir_worker_setup_reading(int32 id);
extern void weir_worker_evaluate_group(WeirWorker *w, Relation rel, int32 first, int n,
									   const int64 *bounds, Snapshot snapshot);
extern void weir_worker_apply_group(WeirWorker *w);
extern int64 weir_worker_checkpoint_tickets(WeirWorker *w);
extern int64 weir_worker_read_round(WeirWorker *w, TimestampTz now, int64 *lag,
									bool *caught_up, WeirGroupDone done, void *arg);
extern void weir_worker_begin_round(void);
extern void weir_worker_end_round(void);

#endif							/* WEIR_WORKER_H */
