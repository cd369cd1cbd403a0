/*-------------------------------------------------------------------------
 *
 * reading.h
 *	  Reading a pipeline's sources and evaluating their rows into a batch:
 *	  what the worker and its read-ahead process share (reading.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/reading.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_READING_H
#define WEIR_READING_H

#include "executor/execdesc.h"
#include "nodes/bitmapset.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"
#include "source/source_ops.h"

#define WEIR_BATCH_ROWS 10000	/* rows per partition per round */

/* One row of a source evaluated, not yet applied to state */
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
	char		op;				/* change_op (change_topic.h); 'I' for a row
								 * of an ordinary topic */
	bool		kept;			/* OK, last value: some columns keep the sink's
								 * value (batch_kept) */
	TimestampTz t;
	int			keyoff;			/* into WeirReading.batch_keys */
	int			keylen;
	uint32		keyhash;		/* weir_key_image_hash of the key image */
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
	WeirSource *src;			/* the source: its relation, name, partitions */
	int32		first;
	bool		chained;		/* its watermark is its writers' (source ops
								 * watermarks), not guessed from event times */
	TimestampTz chain_checked_at;	/* when the source was last asked */
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

	/*
	 * A change topic (plan->change_op): its change_op column, and what the
	 * operator does with each operation (reading.c change_mode).  With
	 * unchanged_columns (plan->unchanged), the columns the expressions use:
	 * an update that left one of them unchanged cannot be read as it is.
	 */
	int			change_mode;	/* a WeirChangeMode of reading.c */
	AttrNumber	op_column;
	AttrNumber	unchanged_column;
	int			nused;			/* columns the expressions use */
	AttrNumber *used_attnums;	/* [nused] */
	char	  **used_names;		/* [nused] */
	Bitmapset **arg_used;		/* [plan->nargs]: indexes into used_* of the
								 * columns each argument (last value: column)
								 * uses */
	Bitmapset  *fixed_used;		/* indexes of those keys, event time, filter
								 * (and a window's arguments) use */
} WeirSide;

/*
 * A pipeline's reading: its sources, where it is in each partition, and
 * the batch being read.  The worker has one (WeirWorker.in), its read-ahead
 * process another; each lives in its process's memory.
 */
typedef struct WeirReading
{
	WeirPipelineRow row;
	WeirPlan   *plan;
	MemoryContext cxt;			/* the process's lifetime */
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

	/*
	 * Event times a record may have: far enough inside timestamptz's range
	 * that no window bound, watermark or expiry computed from it leaves
	 * it (reading.c set_event_time_range); outside, it is a dead letter.
	 */
	TimestampTz min_event_time;
	TimestampTz max_event_time_allowed;
	/* records to move past (skip.c): dead letters */
	int			nskips;
	struct WeirSkip *skips;

	/* expression evaluation against a slot of a source's rows */
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
	WeirPositionRange *ranges;	/* [group_size]: what is read */
	WeirEvalRow *batch;			/* [WEIR_BATCH_ROWS * group_size] */
	Datum	   *batch_values;	/* [WEIR_BATCH_ROWS * group_size * batch_stride] */
	bool	   *batch_nulls;
	bool	   *batch_kept;		/* as batch_nulls: a column that keeps the
								 * sink's value (WeirEvalRow.kept) */
	StringInfoData batch_keys;	/* key images, by offset */
	MemoryContext batch_cxt;	/* reset after each batch */
} WeirReading;

/*
 * What becomes of a partition group read and evaluated (rd->side,
 * rd->group_first, rd->ngroup): applied, or sent to the worker.  Either
 * moves rd->pos past it.
 */
typedef void (*WeirGroupDone) (WeirReading *rd, void *arg);

extern void weir_reading_setup(WeirReading *rd, int32 id, MemoryContext cxt);
extern int64 weir_reading_round(WeirReading *rd, TimestampTz now, int64 *lag,
								bool *caught_up, WeirGroupDone done, void *arg);

#endif							/* WEIR_READING_H */
