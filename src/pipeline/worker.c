/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  A pipeline's background worker: restore, then read, aggregate, fire
 *	  and checkpoint until stopped.
 *
 * The worker connects as the bootstrap superuser (PostgreSQL 15 workers
 * cannot log in as a NOLOGIN role) and then acts as the pipeline's owner
 * (SetUserIdAndSecContext with SECURITY_RESTRICTED_OPERATION): user
 * expressions run, and the sink is written, with the owner's rights.
 *
 * Each round is one transaction: read up to WEIR_BATCH_ROWS rows from each
 * partition (below its stable bound, with a snapshot taken after it, as
 * every topic reader does) and evaluate filter, event time, keys and
 * arguments on each row (or take what the read-ahead process read and
 * evaluated, read_ahead.c); apply the records to the operator (operator.h)
 * under the pipeline slot's lock; advance the watermark and let the
 * operator expire what it passed.  When the checkpoint interval has passed,
 * weir.checkpoint() asks or rows pile up, the round collects a checkpoint
 * (checkpoint.c), which the checkpoint writer applies and commits in its
 * own transaction while the worker reads on (checkpoint_writer.c), or the
 * worker applies itself.  State lives in the pipeline's DSA area, which
 * is not WAL-logged: a crash loses only work that the next start redoes
 * from the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "definition/aggregate.h"
#include "catalog_sql/catalog_pipeline.h"
#include "pipeline/checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "base/clock.h"
#include "definition/definition.h"
#include "topic/partition.h"
#include "base/process_memory.h"
#include "pipeline/read_ahead.h"
#include "topic/reader.h"
#include "base/dead_letter.h"
#include "sink/sink_table.h"
#include "pipeline/skip.h"
#include "base/subxact.h"
#include "definition/key_image.h"
#include "topic/topic.h"
#include "state/window.h"
#include "pipeline/worker.h"
#include "definition/write_target.h"

#define WEIR_READ_GROUP 8		/* partitions read in one pass over the heap */

static WeirWorker *worker = NULL;

/*
 * A relation changed (ALTER TABLE, a policy, a grant...): before the next
 * record, the tables are checked again as at the start.  Dependencies of
 * the definition keep the columns it uses from changing type
 * (write_target.c); this catches the rest (row-level security enabled, a
 * privilege revoked, a NOT NULL column added).
 */
static volatile bool tables_changed = false;

static void
relation_changed(Datum arg, Oid relid)
{
	WeirWorker *w = worker;

	if (w == NULL || relid == InvalidOid || relid == w->row.source ||
		relid == w->row.right_source || relid == w->row.sink || relid == w->row.late_records)
		tables_changed = true;
}

static void stop_out_of_memory(WeirWorker *w) pg_attribute_noreturn();

static void
worker_detach(int code, Datum arg)
{
	WeirPipelineSlot *slot = (WeirPipelineSlot *) DatumGetPointer(arg);

	LWLockReleaseAll();
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->area = DSM_HANDLE_INVALID;
	slot->root = InvalidDsaPointer;
	LWLockRelease(&slot->lock);
	/* the slot goes back; waiters and the launcher are told */
	weir_shmem_release_pipeline(slot);
}

static void
worker_error_context(void *arg)
{
	WeirWorker *w = (WeirWorker *) arg;

	if (w->cur_part >= 0)
		errcontext("while processing pipeline \"%s\" at topic \"%s\" partition %d position " INT64_FORMAT,
				   w->row.name, w->side->source_name, w->cur_part, w->cur_pos);
	else
		errcontext("while processing pipeline \"%s\"", w->row.name);
}

static void
begin_round(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
end_round(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}

void
weir_worker_begin_round(void)
{
	begin_round();
}

void
weir_worker_end_round(void)
{
	end_round();
}

/*
 * Compile one expression; *column: the topic column it is, when it is just
 * one (a Var of the row), else 0.
 */
static ExprState *
init_expression(WeirSide *side, Expr *expr, AttrNumber *column)
{
	Expr	   *planned = expression_planner(expr);

	*column = 0;
	if (IsA(planned, Var) && ((Var *) planned)->varattno > 0 &&
		((Var *) planned)->varlevelsup == 0)
	{
		*column = ((Var *) planned)->varattno;
		side->deform_columns = Max(side->deform_columns, *column);
	}
	return ExecInitExpr(planned, NULL);
}

/* Compile a side's expressions for evaluation against its topic's rows. */
static void
init_side_expressions(WeirSide *side)
{
	WeirPlan   *plan = side->plan;

	side->deform_columns = 0;
	side->key_exprs = palloc(sizeof(ExprState *) * Max(plan->nkeys, 1));
	side->key_columns = palloc0(sizeof(AttrNumber) * Max(plan->nkeys, 1));
	for (int i = 0; i < plan->nkeys; i++)
		side->key_exprs[i] = init_expression(side, plan->keys[i].expr, &side->key_columns[i]);
	side->event_time_column = 0;
	side->event_time_expr = plan->event_time ?
		init_expression(side, plan->event_time, &side->event_time_column) : NULL;
	side->filter_expr = plan->filter ?
		ExecInitQual(list_make1(expression_planner(plan->filter)), NULL) : NULL;
	side->arg_exprs = palloc0(sizeof(ExprState *) * Max(plan->nargs, 1));
	side->arg_columns = palloc0(sizeof(AttrNumber) * Max(plan->nargs, 1));
	side->arg_copy_len = palloc0(sizeof(int16) * Max(plan->nargs, 1));
	for (int i = 0; i < plan->naggs; i++)
		for (int j = 0; j < plan->aggs[i].nargs; j++)
		{
			int			n = plan->aggs[i].argoffset + j;
			int16		len;
			bool		byval;

			side->arg_exprs[n] = init_expression(side, plan->aggs[i].args[j],
												 &side->arg_columns[n]);
			/* fast-path arguments are by value; generic ones may not be */
			get_typlenbyval(exprType((Node *) plan->aggs[i].args[j]), &len, &byval);
			if (plan->aggs[i].kind == WEIR_AGG_GENERIC && !byval)
				side->arg_copy_len[n] = len;
		}
	/* columns (dedup, last value, projection, join) are the arguments */
	for (int i = 0; i < plan->ncolumns; i++)
	{
		side->arg_exprs[i] = init_expression(side, plan->columns[i].expr, &side->arg_columns[i]);
		if (!plan->columns[i].typbyval)
			side->arg_copy_len[i] = plan->columns[i].typlen;
	}
}

/* Compile the plan's expressions and set up the batch. */
static void
init_expressions(WeirWorker *w)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(w->cxt);

	w->estate = CreateExecutorState();
	w->econtext = GetPerTupleExprContext(w->estate);
	w->batch_stride = 1;
	for (int s = 0; s < w->nsides; s++)
	{
		init_side_expressions(&w->sides[s]);
		w->batch_stride = Max(w->batch_stride, w->sides[s].plan->nargs);
	}
	w->group_size = 1;
	for (int s = 0; s < w->nsides; s++)
		w->group_size = Max(w->group_size, Min(w->sides[s].partitions, WEIR_READ_GROUP));
	w->group_nbatch = palloc0(sizeof(int) * w->group_size);
	w->ranges = palloc0(sizeof(WeirPositionRange) * w->group_size);
	initStringInfo(&w->batch_keys);
	w->batch = palloc(sizeof(WeirEvalRow) * WEIR_BATCH_ROWS * w->group_size);
	w->batch_values = palloc0(sizeof(Datum) * WEIR_BATCH_ROWS * w->group_size * w->batch_stride);
	w->batch_nulls = palloc0(sizeof(bool) * WEIR_BATCH_ROWS * w->group_size * w->batch_stride);
	w->batch_cxt = AllocSetContextCreate(w->cxt, "weir batch", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(oldcxt);
}

static void
add_dead_letter(WeirWorker *w, int32 part, WeirEvalRow *r)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(w->cxt);
	WeirDeadLetter *d = palloc(sizeof(WeirDeadLetter));

	d->source = w->side->source;
	d->part = part;
	d->position = r->position;
	d->error = pstrdup(r->error);
	d->record = pstrdup(r->record);
	w->dead = lappend(w->dead, d);
	MemoryContextSwitchTo(oldcxt);
	pg_atomic_fetch_add_u64(&w->slot->records_dead, 1);
}

/* The error of a record to move past (skip.c), or NULL. */
static const char *
skip_requested(WeirWorker *w, Oid source, int32 part, int64 position)
{
	for (int i = 0; i < w->nskips; i++)
		if (w->skips[i].position == position && w->skips[i].part == part &&
			w->skips[i].source == source)
			return w->skips[i].error;
	return NULL;
}

static const char *
event_time_out_of_range(WeirWorker *w, TimestampTz t)
{
	/* timestamptz_to_str returns a static buffer */
	char	   *at = pstrdup(timestamptz_to_str(t));
	char	   *from = pstrdup(timestamptz_to_str(w->min_event_time));

	return psprintf("event time %s is outside the range this pipeline can place (%s to %s)",
					at, from, timestamptz_to_str(w->max_event_time_allowed));
}

static void
mark_dead(WeirWorker *w, WeirEvalRow *r, TupleTableSlot *slot, const char *error)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(w->batch_cxt);

	r->kind = WEIR_ROW_DEAD;
	r->error = pstrdup(error);
	r->record = TextDatumGetCString(DirectFunctionCall1(row_to_json,
														ExecFetchSlotHeapTupleDatum(slot)));
	MemoryContextSwitchTo(oldcxt);
}

/*
 * The batch's next row of partition `part` (of the group being read): each
 * partition's rows have their own stretch of the batch, in the order read.
 */
static inline WeirEvalRow *
next_row(WeirWorker *w, int32 part)
{
	int			g = part - w->group_first;
	int			index = g * WEIR_BATCH_ROWS + w->group_nbatch[g]++;
	WeirEvalRow *r = &w->batch[index];

	Assert(g >= 0 && g < w->group_size && w->group_nbatch[g] <= WEIR_BATCH_ROWS);
	r->args = index;
	return r;
}

/* An expression's value on the row: read, when it is just a column. */
static inline Datum
eval_column(ExprState *expr, AttrNumber column, TupleTableSlot *slot,
			ExprContext *econtext, bool *isnull)
{
	if (column > 0)
	{
		*isnull = slot->tts_isnull[column - 1];
		return slot->tts_values[column - 1];
	}
	return ExecEvalExprSwitchContext(expr, econtext, isnull);
}

/*
 * Evaluate the user's expressions on one topic row into row r of the batch:
 * the hot path.  Nothing here touches window state, so a batch whose
 * evaluation fails can be thrown away and redone row by row
 * (weir_worker_evaluate_group).
 */
static void
eval_into(WeirWorker *w, WeirEvalRow *r, TupleTableSlot *slot, int32 part,
		  int64 position)
{
	WeirSide   *side = w->side;
	WeirPlan   *plan = side->plan;
	ExprContext *econtext = w->econtext;
	Datum	   *values = &w->batch_values[r->args * w->batch_stride];
	bool	   *nulls = &w->batch_nulls[r->args * w->batch_stride];
	bool		isnull;

	w->cur_part = part;
	w->cur_pos = position;
	r->position = position;
	r->kind = WEIR_ROW_OK;
	r->keyoff = w->batch_keys.len;
	r->keylen = 0;
	econtext->ecxt_scantuple = slot;
	/* as a rule the reader deformed them already (scan_group) */
	slot_getsomeattrs(slot, side->deform_columns);
	if (unlikely(w->nskips > 0))
	{
		const char *skipped = skip_requested(w, side->source, part, position);

		if (skipped)
		{
			r->t = DT_NOBEGIN;
			mark_dead(w, r, slot, skipped);
			goto done;
		}
	}
	if (side->event_time_expr == NULL)
	{
		/* a projection has no event time: every record passes, none is late */
		r->t = 0;
		isnull = false;
	}
	else
		r->t = DatumGetTimestampTz(eval_column(side->event_time_expr, side->event_time_column,
											   slot, econtext, &isnull));
	if (side->filter_expr && !ExecQual(side->filter_expr, econtext))
	{
		/* not processed, but its time still moves the partition's watermark */
		r->kind = WEIR_ROW_FILTERED;
		if (isnull || TIMESTAMP_NOT_FINITE(r->t))
			r->t = DT_NOBEGIN;
		goto done;
	}
	if (isnull || TIMESTAMP_NOT_FINITE(r->t))
	{
		mark_dead(w, r, slot, isnull ? "event time is null" : "event time is infinite");
		goto done;
	}
	if (unlikely(r->t < w->min_event_time || r->t > w->max_event_time_allowed))
	{
		mark_dead(w, r, slot, event_time_out_of_range(w, r->t));
		goto done;
	}
	for (int i = 0; i < plan->nkeys; i++)
	{
		Datum		v = eval_column(side->key_exprs[i], side->key_columns[i], slot,
									econtext, &isnull);

		if (isnull)
		{
			mark_dead(w, r, slot, psprintf("%s \"%s\" is null",
										   plan->op == WEIR_OP_DEDUP ? "id" : "key",
										   plan->keys[i].name));
			goto done;
		}
		weir_key_image_append(&w->batch_keys, &plan->keys[i], v);
	}
	r->keylen = w->batch_keys.len - r->keyoff;
	r->keyhash = weir_window_key_hash(w->batch_keys.data + r->keyoff, r->keylen);
	for (int i = 0; i < plan->nargs; i++)
	{
		Datum		v = eval_column(side->arg_exprs[i], side->arg_columns[i], slot,
									econtext, &nulls[i]);

		/* by-reference arguments must outlive this row: copy them */
		if (side->arg_copy_len[i] != 0 && !nulls[i])
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(w->batch_cxt);

			v = datumCopy(v, false, side->arg_copy_len[i]);
			MemoryContextSwitchTo(oldcxt);
		}
		values[i] = v;
	}
done:
	ResetExprContext(econtext);
}

static void
eval_row(void *arg, TupleTableSlot *slot, int32 part, int64 position)
{
	WeirWorker *w = (WeirWorker *) arg;

	eval_into(w, next_row(w, part), slot, part, position);
}

/* One row to evaluate, for weir_in_subtransaction */
typedef struct RowToEvaluate
{
	WeirWorker *w;
	WeirEvalRow *r;
	TupleTableSlot *slot;
	int32		part;
	int64		position;
} RowToEvaluate;

static void
evaluate_row(void *arg)
{
	RowToEvaluate *e = arg;

	eval_into(e->w, e->r, e->slot, e->part, e->position);
}

/* Evaluate one row in its own subtransaction: an error makes it dead. */
static void
eval_row_guarded(void *arg, TupleTableSlot *slot, int32 part, int64 position)
{
	WeirWorker *w = (WeirWorker *) arg;
	RowToEvaluate e = {w, next_row(w, part), slot, part, position};
	int			keyoff = w->batch_keys.len;
	ErrorData  *edata;

	if (weir_in_subtransaction(evaluate_row, &e, &edata))
		return;
	ResetExprContext(w->econtext);
	w->batch_keys.len = keyoff;
	e.r->position = position;
	e.r->keyoff = keyoff;
	e.r->keylen = 0;
	mark_dead(w, e.r, slot, edata->message);
	FreeErrorData(edata);
}

/* A record too late for state: counted, and kept if the pipeline asks. */
static void
record_late(WeirWorker *w, int32 part, WeirEvalRow *r)
{
	pg_atomic_fetch_add_u64(&w->slot->records_late, 1);
	if (OidIsValid(w->row.late_records))
	{
		/* keep the record: look it up again by position at checkpoint */
		MemoryContext oldcxt = MemoryContextSwitchTo(w->cxt);
		int64	   *late = palloc(sizeof(int64) * 2);

		late[0] = part;
		late[1] = r->position;
		w->late = lappend(w->late, late);
		MemoryContextSwitchTo(oldcxt);
	}
}

/*
 * Keyed operators look each record's key up in a table too large for the
 * CPU's caches: its slot, its entry and what the entry points to (a join's
 * rows) are each a cache miss.  So a record's key is asked for in stages
 * (weir_keyed_prefetch) some records ahead of its turn: its slot
 * PREFETCH_AHEAD records ahead, its entry two thirds of that, what the entry
 * points to a third: far enough for a miss to come back (~0.1 us; a record's
 * work is a few tenths), near enough that what came is still in cache.
 */
#define PREFETCH_AHEAD 12

/*
 * Stage `stage` for record b; guesses[b % PREFETCH_AHEAD] carries the entry
 * stage 1 guessed to stage 2 (a third of PREFETCH_AHEAD records later).
 */
static inline void
prefetch_record(WeirKeyed *keys, WeirEvalRow *rows, int n, int b, int stage,
				dsa_pointer *guesses)
{
	dsa_pointer *guess = &guesses[b % PREFETCH_AHEAD];

	if (keys == NULL || b >= n)
		return;					/* keys: NULL for a projection */
	if (rows[b].kind != WEIR_ROW_OK)
		*guess = InvalidDsaPointer;
	else if (stage == 0)
		(void) weir_keyed_prefetch(keys, rows[b].keyhash, 0, InvalidDsaPointer);
	else
		*guess = weir_keyed_prefetch(keys, rows[b].keyhash, stage, *guess);
}

/*
 * Every YIELD_EVERY records of a batch, the worker lets go of its slot's
 * lock for a moment: interrupts are serviced (an LWLock holds them off),
 * and readers of weir.live_state waiting for the lock get it, rather than
 * waiting for the whole batch.  The store is consistent between records.
 */
#define YIELD_EVERY 256

static void
yield_slot_lock(WeirWorker *w)
{
	LWLockRelease(&w->slot->lock);
	CHECK_FOR_INTERRUPTS();
	/* a reader counts itself out once it holds the lock (live.c) */
	for (int i = 0; i < 100000 && pg_atomic_read_u32(&w->slot->readers_waiting) > 0; i++)
		pg_usleep(10);
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
}

/*
 * Apply the n evaluated rows of partition `part` of the current side to the
 * operator, record by record; dead letters, late records and each
 * partition's greatest event time are the worker's.  Stops early if state
 * memory ran out (the caller stops the pipeline).
 */
static void
apply_rows(WeirWorker *w, int32 part, WeirEvalRow *rows, int n)
{
	WeirOperator *op = w->op;
	WeirKeyed  *keys = op->keys;
	int32		index = w->side->first + part;
	int64		dropped_rows = 0;
	dsa_pointer guesses[PREFETCH_AHEAD];
	WeirRecord	rec;

	rec.side = w->side - w->sides;
	rec.part = part;
	/* counted per batch: the counter is shared, a per-record atomic is not free */
	w->records_since += n;
	pg_atomic_fetch_add_u64(&w->slot->records_in, n);
	for (int b = 0; b < PREFETCH_AHEAD; b++)
	{
		prefetch_record(keys, rows, n, b, 0, guesses);
		if (b >= PREFETCH_AHEAD / 3)
			prefetch_record(keys, rows, n, b - PREFETCH_AHEAD / 3, 1, guesses);
		if (b >= 2 * PREFETCH_AHEAD / 3)
			prefetch_record(keys, rows, n, b - 2 * PREFETCH_AHEAD / 3, 2, guesses);
	}
	for (int b = 0; b < n; b++)
	{
		WeirEvalRow *r = &rows[b];

		prefetch_record(keys, rows, n, b + PREFETCH_AHEAD, 0, guesses);
		prefetch_record(keys, rows, n, b + 2 * PREFETCH_AHEAD / 3, 1, guesses);
		prefetch_record(keys, rows, n, b + PREFETCH_AHEAD / 3, 2, guesses);
		if (unlikely((b % YIELD_EVERY) == YIELD_EVERY - 1))
			yield_slot_lock(w);
		w->cur_pos = r->position;	/* for the error context */

		if (r->kind == WEIR_ROW_DEAD)
		{
			add_dead_letter(w, part, r);
			continue;
		}
		/* a projection has no event time */
		if (r->t > w->max_event_time[index] && w->side->event_time_expr)
			w->max_event_time[index] = r->t;
		if (r->kind == WEIR_ROW_FILTERED)
			continue;
		rec.position = r->position;
		rec.t = r->t;
		rec.key = w->batch_keys.data + r->keyoff;
		rec.keylen = r->keylen;
		rec.keyhash = r->keyhash;
		rec.values = &w->batch_values[r->args * w->batch_stride];
		rec.nulls = &w->batch_nulls[r->args * w->batch_stride];
		switch (op->ops->apply(op, &rec, w->watermark))
		{
			case WEIR_APPLIED:
				break;
			case WEIR_DROPPED:
				dropped_rows++;
				break;
			case WEIR_LATE:
				record_late(w, part, r);
				break;
			case WEIR_NO_MEMORY:
				pg_atomic_fetch_add_u64(&w->slot->records_dropped, dropped_rows);
				return;
		}
	}
	pg_atomic_fetch_add_u64(&w->slot->records_dropped, dropped_rows);
}

static int
position_cmp(const void *a, const void *b)
{
	int64		pa = ((const WeirEvalRow *) a)->position;
	int64		pb = ((const WeirEvalRow *) b)->position;

	return pa < pb ? -1 : pa > pb ? 1 : 0;
}

/*
 * Evaluate the rows of the group's position ranges (w->ranges) with `eval`
 * into the batch, each partition's rows in position order.  The rows come
 * in the heap's order (reader.c: a page read once for all the group's
 * partitions, not once per partition or per row); partitions, and
 * concurrent producers of one, interleave across pages, and a partition's
 * rows are applied in position order (a duplicate is the later record), so
 * a partition's stretch of the batch is sorted when it is out of order.
 */
static void
scan_group(WeirWorker *w, Relation rel, Snapshot snapshot, WeirPartRowCallback eval)
{
	resetStringInfo(&w->batch_keys);
	MemoryContextReset(w->batch_cxt);
	for (int g = 0; g < w->ngroup; g++)
	{
		w->group_nbatch[g] = 0;
		w->ranges[g].max_position = w->ranges[g].after;
	}
	(void) weir_reader_scan_heap_order(rel, w->ranges, w->ngroup, snapshot,
									   Max(w->side->deform_columns, WEIR_TOPIC_POS_ATTNUM),
									   eval, w);
	for (int g = 0; g < w->ngroup; g++)
	{
		WeirEvalRow *rows = &w->batch[g * WEIR_BATCH_ROWS];

		for (int b = 1; b < w->group_nbatch[g]; b++)
			if (rows[b].position < rows[b - 1].position)
			{
				qsort(rows, w->group_nbatch[g], sizeof(WeirEvalRow), position_cmp);
				break;
			}
	}
}

/* A group of partitions to evaluate, for weir_in_subtransaction */
typedef struct GroupToEvaluate
{
	WeirWorker *w;
	Relation	rel;
	Snapshot	snapshot;
} GroupToEvaluate;

static void
evaluate_group(void *arg)
{
	GroupToEvaluate *g = arg;

	scan_group(g->w, g->rel, g->snapshot, eval_row);
}

/*
 * Read and evaluate up to WEIR_BATCH_ROWS rows of each of the current
 * side's partitions first .. first + n - 1 (n <= group_size), those below
 * their bound, into the batch.  The batch is evaluated inside a
 * subtransaction; if a user expression fails on some row, it is evaluated
 * again row by row, each in its own subtransaction, and the failing rows
 * become dead letters.  w->group_nbatch[g] is how many rows partition
 * first + g had, w->ranges[g].max_position the last one's position.  The
 * read-ahead process (read_ahead.c) evaluates so too.
 */
void
weir_worker_evaluate_group(WeirWorker *w, Relation rel, int32 first, int n,
						   const int64 *bounds, Snapshot snapshot)
{
	GroupToEvaluate group;

	w->group_first = first;
	w->ngroup = n;
	for (int g = 0; g < n; g++)
	{
		int32		index = w->side->first + first + g;	/* in the worker's arrays */

		w->ranges[g].part = first + g;
		w->ranges[g].after = w->pos[index];
		w->ranges[g].upto = Min(w->pos[index] + WEIR_BATCH_ROWS, bounds[index] - 1);
	}
	group.w = w;
	group.rel = rel;
	group.snapshot = snapshot;
	if (!weir_in_subtransaction(evaluate_group, &group, NULL))
		scan_group(w, rel, snapshot, eval_row_guarded);
}

/*
 * Apply the evaluated batch of the group (w->group_first, w->ngroup of the
 * current side) to state, partition after partition, and move the
 * partitions' positions past it.
 */
void
weir_worker_apply_group(WeirWorker *w)
{
	MemoryContext oldcxt;
	int32		first = w->group_first;
	int			n = w->ngroup;

	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	oldcxt = MemoryContextSwitchTo(w->batch_cxt);
	w->applying = true;
	for (int g = 0; g < n && !w->store->out_of_memory; g++)
	{
		int32		part = first + g;
		WeirEvalRow *rows = &w->batch[g * WEIR_BATCH_ROWS];
		int			nrows = w->group_nbatch[g];

		w->cur_part = part;		/* for the error context */
		w->cur_pos = w->ranges[g].max_position;
		apply_rows(w, part, rows, nrows);
	}
	w->applying = false;
	MemoryContextSwitchTo(oldcxt);
	LWLockRelease(&w->slot->lock);
	w->cur_part = -1;
	if (w->store->out_of_memory)
		stop_out_of_memory(w);
	for (int g = 0; g < n; g++)
		w->pos[w->side->first + first + g] = w->ranges[g].max_position;
}

/*
 * How a partition group's rows that have been read go on: applied here, or
 * sent to the worker (read_ahead.c).  Either moves w->pos past them.
 */
static void
apply_group(WeirWorker *w, void *arg)
{
	weir_worker_apply_group(w);
}

/* The pipeline watermark: min over non-idle partitions, never decreasing. */
static void
advance_watermark(WeirWorker *w, TimestampTz now)
{
	TimestampTz candidate = DT_NOEND;
	bool		any = false;

	w->watermark_holder = -1;
	for (int p = 0; p < w->partitions; p++)
	{
		if (w->idle_timeout > 0 && now - w->last_data_at[p] > w->idle_timeout)
			continue;
		any = true;
		if (w->max_event_time[p] == DT_NOBEGIN)
		{
			w->watermark_holder = p;	/* a live partition with no time yet */
			return;
		}
		if (w->max_event_time[p] - w->out_of_orderness < candidate)
		{
			candidate = w->max_event_time[p] - w->out_of_orderness;
			w->watermark_holder = p;
		}
	}
	if (any && candidate != DT_NOEND && candidate > w->watermark)
		w->watermark = candidate;
}

/*
 * One round of reading; returns the number of rows read.  *caught_up: every
 * partition was read up to the bound computed at the start of the round.
 * Each partition group read and evaluated goes to `done`, which moves
 * w->pos past it.
 */
int64
weir_worker_read_round(WeirWorker *w, TimestampTz now, int64 *lag, bool *caught_up,
					   WeirGroupDone done, void *arg)
{
	Relation	rels[2];
	int64	   *bounds = palloc(sizeof(int64) * w->partitions);
	Snapshot	snapshot;
	int64		total = 0;

	for (int s = 0; s < w->nsides; s++)
	{
		WeirSide   *side = &w->sides[s];
		WeirTopic  *topic;

		rels[s] = table_open(side->source, AccessShareLock);
		topic = weir_topic_get(rels[s]);
		for (int p = 0; p < side->partitions; p++)
		{
			WeirPartitionInfo info;

			weir_partition_info(weir_topic_partition_slotno(topic, rels[s], p), &info);
			bounds[side->first + p] = info.stable_bound;
		}
	}
	/* the snapshot comes after every bound: see partition.c */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	*lag = 0;
	*caught_up = true;
	for (int s = 0; s < w->nsides; s++)
	{
		WeirSide   *side = &w->sides[s];

		w->side = side;
		for (int first = 0; first < side->partitions; first += w->group_size)
		{
			int			n = Min(w->group_size, side->partitions - first);

			weir_worker_evaluate_group(w, rels[s], first, n, bounds, snapshot);
			done(w, arg);
			for (int g = 0; g < n; g++)
			{
				int32		i = side->first + first + g;
				int64		got = w->group_nbatch[g];

				if (got > 0)
					w->last_data_at[i] = now;
				if (got == WEIR_BATCH_ROWS)
					*caught_up = false;
				total += got;
				*lag += Max(bounds[i] - 1 - w->pos[i], 0);
			}
		}
	}
	UnregisterSnapshot(snapshot);
	for (int s = 0; s < w->nsides; s++)
		table_close(rels[s], AccessShareLock);
	pfree(bounds);
	return total;
}

static void
publish(WeirWorker *w, int64 lag)
{
	/* with the expired entries that wait for the checkpoint: memory they hold */
	int64		entries = w->store->root->used + w->op->ops->held_entries(w->op);

	SpinLockAcquire(&w->slot->mutex);
	w->slot->watermark = w->watermark;
	w->slot->windows = entries;
	w->slot->state_bytes = w->store->root->bytes + w->local_bytes;
	w->slot->lag_rows = lag;
	w->slot->watermark_holder = -1;
	w->slot->has_idle_timeout = w->idle_timeout > 0;
	w->slot->latest_data_at = 0;
	for (int p = 0; p < w->partitions; p++)
		w->slot->latest_data_at = Max(w->slot->latest_data_at, w->last_data_at[p]);
	if (w->watermark_holder >= 0)
	{
		/* in its own topic's numbering (a join numbers on over two) */
		int			s = w->nsides > 1 && w->watermark_holder >= w->sides[1].first ? 1 : 0;

		w->slot->watermark_holder = w->watermark_holder - w->sides[s].first;
		w->slot->holder_source = w->sides[s].source;
		w->slot->holder_data_at = w->last_data_at[w->watermark_holder];
		w->slot->holder_has_time = w->max_event_time[w->watermark_holder] != DT_NOBEGIN;
	}
	SpinLockRelease(&w->slot->mutex);
}

/* Checkpoint tickets taken so far by weir.checkpoint() callers. */
int64
weir_worker_checkpoint_tickets(WeirWorker *w)
{
	int64		requested;

	SpinLockAcquire(&w->slot->mutex);
	requested = w->slot->checkpoint_requested;
	SpinLockRelease(&w->slot->mutex);
	return requested;
}

/*
 * State reached max_state_memory: stop with a clear status.  Nothing since
 * the last checkpoint is committed, so positions stay where the committed
 * state is, and raising the limit and starting again resumes from there.
 */
static void
stop_out_of_memory(WeirWorker *w)
{
	char	   *msg;

	/* in the worker's context: the abort below frees the round's memory */
	msg = MemoryContextStrdup(w->cxt,
							  psprintf("state of pipeline \"%s\" reached its limit of " INT64_FORMAT " bytes (max_state_memory)",
									   w->row.name, w->row.max_state_memory));
	AbortCurrentTransaction();
	begin_round();
	(void) weir_catalog_pipeline_set_status(w->row.id, WEIR_PIPELINE_OUT_OF_MEMORY, msg, true);
	end_round();
	ereport(LOG,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("%s", msg),
			 errdetail("The pipeline is stopped at its last checkpoint, " INT64_FORMAT ".", w->checkpoint_id),
			 errhint("Raise max_state_memory of the pipeline and start it with weir.start().")));
	proc_exit(0);
}

/*
 * Whether the sink rows waiting are reason enough for a checkpoint now
 * (the operator's pending_sink_rows, at the cost a sink row was last
 * measured to have).  Reading a backlog, windows fire or records pass far
 * faster than a checkpoint writes their rows: a checkpoint then comes as
 * soon as the rows waiting would take half the interval to write, so that
 * checkpoints keep the interval instead of growing with the backlog (each
 * one's results committed within about an interval of being computed).
 *
 * An eighth of the interval instead of half, while a backlog is read with
 * a checkpoint writer: the writer then writes one checkpoint while the
 * worker computes the next, and the last checkpoint of a backlog, which
 * the worker only waits for, stays small.  Not less than an eighth: each
 * checkpoint has fixed costs (a commit, the state chunk, and the sync
 * phase, when the worker stops and walks every open window).  Only while
 * the last sync phase took under an eighth of the interval, or the worker
 * would be stopped most of its time.  And only for operators whose every
 * row is written once however often checkpoints come (rows_once): a last
 * value's row per changed key, or an open window's current values (emit
 * 'updates'), would be written again at every checkpoint.
 */
static bool
sink_rows_due(WeirWorker *w, bool caught_up)
{
	bool		rows_once = w->op->ops->rows_once && !w->emit_updates;
	int64		share = 2;

	if (!caught_up && rows_once && w->writer &&
		w->last_sync_us * 8 < w->checkpoint_interval)
		share = 8;

	return w->op->ops->pending_sink_rows(w->op) * w->sink_row_us >=
		w->checkpoint_interval / share;
}

/*
 * Whether the checkpoint writer still writes the last checkpoint; what a
 * committed one tells the worker is taken in here.
 */
static bool
writer_busy(WeirWorker *w)
{
	WeirCheckpointResult res;

	if (w->writer == NULL)
		return false;
	switch (weir_writer_poll(w->writer, &res))
	{
		case WEIR_WRITER_IDLE:
			return false;
		case WEIR_WRITER_COMMITTED:
			weir_checkpoint_committed(w, &res);
			return false;
		case WEIR_WRITER_BUSY:
			break;
	}
	return true;
}

static void
run(WeirWorker *w)
{
	int64		served = 0;

	for (;;)
	{
		TimestampTz now;
		int64		got;
		int64		lag = 0;
		int64		tickets;
		bool		caught_up;
		bool		checkpoint;
		bool		in_flight;
		TimestampTz checkpoint_started = 0;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* a commit or a failure of the writer is taken in first */
		in_flight = writer_busy(w);
		/* a pipeline without a worker needs its helpers' slots more */
		if ((w->writer || w->read_ahead) && weir_shmem_helpers_should_yield())
		{
			if (w->writer && !in_flight)
			{
				weir_writer_stop(w->writer, w->slot, w->row.name);
				w->writer = NULL;
			}
			if (w->read_ahead)
				weir_read_ahead_stop(w, "to leave its background worker slot to a pipeline's worker");
		}
		now = weir_clock_now();
		begin_round();
		if (tables_changed)
		{
			tables_changed = false;
			weir_check_tables(w->plan, &w->row, w->row.owner);
		}
		if (w->read_ahead)
		{
			WeirReadAheadRound round;

			/* the process's round end says which tickets it covers */
			pgstat_report_activity(STATE_RUNNING, "weir: applying what was read ahead");
			got = weir_read_ahead_round(w, now, served, in_flight, &round);
			tickets = round.tickets;
			lag = round.lag;
			caught_up = round.caught_up;
		}
		else
		{
			/* tickets taken before this round's bounds are covered by it */
			tickets = weir_worker_checkpoint_tickets(w);
			pgstat_report_activity(STATE_RUNNING, "weir: reading");
			got = weir_worker_read_round(w, now, &lag, &caught_up, apply_group, NULL);
		}
		w->store->backlog = !caught_up;
		advance_watermark(w, now);
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		if (w->op->ops->expire(w->op, w->watermark))
			w->changed = true;
		LWLockRelease(&w->slot->lock);

		/* generic-aggregate states live in this process: they count too */
		if (w->plan->has_generic)
		{
			w->local_bytes = weir_agg_generic_bytes();
			if (w->store->root->bytes + w->local_bytes > w->row.max_state_memory)
				stop_out_of_memory(w);
		}
		if (got > 0)
			w->changed = true;

		/*
		 * Due, with something to write; or asked for, once caught up; or
		 * early, when state is past half its limit and a checkpoint would
		 * free some (keys that expired but changed since the last one wait
		 * for it: while a backlog is read, that can be most of the state).
		 */
		checkpoint = (now >= w->next_checkpoint && w->changed) ||
			(tickets > served && caught_up) ||
			(w->changed && w->store->root->bytes > w->row.max_state_memory / 2 &&
			 w->op->ops->held_entries(w->op) > 0) ||
			(w->changed && sink_rows_due(w, caught_up));
		/* one checkpoint in flight: the next waits for the writer, reading on */
		if (checkpoint && in_flight)
			checkpoint = false;
		if (checkpoint)
		{
			WeirPackage pkg;

			pgstat_report_activity(STATE_RUNNING, "weir: checkpoint");
			checkpoint_started = weir_clock_now();
			weir_checkpoint_collect(w, Min(w->next_checkpoint, now),
									caught_up ? tickets : served, &pkg);
			w->last_sync_us = weir_clock_now() - checkpoint_started;
			if (w->writer)
				weir_writer_send(w->writer, &pkg);
			else
			{
				WeirCheckpointResult res;

				(void) weir_checkpoint_apply(w->target, pkg.buf.data, pkg.buf.len, &res);
				weir_checkpoint_committed(w, &res);
			}
			pfree(pkg.buf.data);
		}
		end_round();
		if (checkpoint)
		{
			/* what expired while waiting for this checkpoint goes now */
			LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
			w->changed = w->op->ops->after_checkpoint(w->op);
			LWLockRelease(&w->slot->lock);
			if (caught_up)
				served = tickets;
			publish(w, lag);	/* what waiters read next is this round's */
			if (w->writer == NULL)	/* a writer says so when it commits */
				weir_shmem_checkpoint_committed(w->slot, w->checkpoint_id, served);
		}
		/*
		 * As Flink's: the interval runs from the start of one checkpoint to
		 * the next, with a pause after each of a quarter interval or the
		 * checkpoint's own duration, whichever is longer, so that long
		 * checkpoints (a backlog's) do not follow each other back to back.
		 */
		if (checkpoint)
		{
			TimestampTz done = weir_clock_now();

			/* a long checkpoint earns as long a pause: at most half the time */
			w->next_checkpoint = Max(checkpoint_started + w->checkpoint_interval,
									 done + Max(w->checkpoint_interval / 4,
												done - checkpoint_started));
		}
		else if (now >= w->next_checkpoint)
			w->next_checkpoint = now + w->checkpoint_interval;	/* nothing changed */
		publish(w, lag);
		pgstat_report_activity(STATE_IDLE, NULL);

		/* memory kept for the next busy spell goes back when idle a while */
		if (got > 0)
		{
			w->idle_since = 0;
			w->memory_released = false;
		}
		else if (w->idle_since == 0)
			w->idle_since = now;
		else if (!w->memory_released && !in_flight &&
				 now - w->idle_since >= w->checkpoint_interval)
		{
			weir_memory_release_freed();
			w->memory_released = true;
		}

		/*
		 * idle; or a checkpoint asked for waits for the one in flight (with
		 * a read-ahead process, its round waited already)
		 */
		if (got == 0 && w->read_ahead == NULL &&
			(weir_worker_checkpoint_tickets(w) == served || in_flight))
		{
			long		wait_ms = (w->next_checkpoint - weir_clock_now()) / 1000;

			wait_ms = Max(Min(wait_ms, 1000), 1);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}

/*
 * The event times a record may have (WeirWorker.min_event_time): every
 * duration that is added to or subtracted from an event time (window size
 * and slide or session gap, out-of-orderness, lateness, retention, a
 * join's bounds) and a day's slack, away from each end of timestamptz's
 * range.  Each duration is at most WEIR_MAX_DURATION_USECS, so the sum
 * cannot overflow.
 */
static void
set_event_time_range(WeirWorker *w)
{
	WeirPlan   *plan = w->plan;
	int64		margin = USECS_PER_DAY;

	margin += weir_interval_usecs(&w->row.out_of_orderness, "out_of_orderness");
	margin += weir_interval_usecs(&w->row.allowed_lateness, "allowed_lateness");
	if (plan->op == WEIR_OP_WINDOW)
		margin += plan->windowing.size + plan->windowing.slide;
	margin += plan->retention;
	if (plan->op == WEIR_OP_JOIN)
		margin += Max(plan->join_lower, 0) + Max(plan->join_upper, 0) + plan->right->retention;
	w->min_event_time = MIN_TIMESTAMP + margin;
	w->max_event_time_allowed = END_TIMESTAMP - 1 - margin;
}

/*
 * A worker as far as reading and evaluating its sources goes: its catalog
 * row, plan, sources, positions (all 0) and compiled expressions, acting as
 * the pipeline's owner.  The worker goes on from there (setup); the
 * read-ahead process needs no more.  Allocates in a new context under
 * TopMemoryContext; needs no transaction.
 */
WeirWorker *
weir_worker_setup_reading(int32 id)
{
	WeirWorker *w;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "weir worker",
											  ALLOCSET_DEFAULT_SIZES);
	Relation	rel;

	w = MemoryContextAllocZero(cxt, sizeof(WeirWorker));
	w->cxt = cxt;

	begin_round();
	MemoryContextSwitchTo(cxt);
	if (!weir_catalog_pipeline_by_id(id, &w->row))
	{
		ereport(LOG, (errmsg("weir pipeline %d no longer exists", id)));
		proc_exit(0);
	}
	weir_pipeline_act_as_owner(&w->row);
	w->plan = weir_pipeline_plan(&w->row);
	/* what was checked at creation may have changed since (write_target.c) */
	weir_check_tables(w->plan, &w->row, w->row.owner);
	/* the sources: a join's left and right, every other kind's one */
	w->nsides = w->plan->op == WEIR_OP_JOIN ? 2 : 1;
	w->partitions = 0;
	for (int s = 0; s < w->nsides; s++)
	{
		WeirSide   *side = &w->sides[s];

		side->plan = s == 0 ? w->plan : w->plan->right;
		side->source = s == 0 ? w->row.source : w->row.right_source;
		rel = table_open(side->source, AccessShareLock);
		side->partitions = weir_topic_get(rel)->partitions;
		side->source_name = pstrdup(RelationGetRelationName(rel));
		side->first = w->partitions;
		w->partitions += side->partitions;
		table_close(rel, AccessShareLock);
	}
	set_event_time_range(w);
	w->skips = weir_skip_load(w->row.id, &w->nskips);
	w->side = &w->sides[0];
	w->cur_part = -1;
	w->pos = palloc0(sizeof(int64) * w->partitions);
	w->max_event_time = palloc(sizeof(TimestampTz) * w->partitions);
	w->last_data_at = palloc(sizeof(TimestampTz) * w->partitions);
	for (int p = 0; p < w->partitions; p++)
		w->last_data_at[p] = weir_clock_now();
	init_expressions(w);
	end_round();
	MemoryContextSwitchTo(cxt);
	return w;
}

static WeirWorker *
setup(int32 id, WeirPipelineSlot *slot)
{
	WeirWorker *w;
	WeirOperatorEnv env;

	weir_memory_keep_freed();
	w = weir_worker_setup_reading(id);
	w->slot = slot;
	begin_round();
	MemoryContextSwitchTo(w->cxt);
	w->out_of_orderness = weir_interval_usecs(&w->row.out_of_orderness, "out_of_orderness");
	w->lateness = weir_interval_usecs(&w->row.allowed_lateness, "allowed_lateness");
	w->idle_timeout = w->row.has_idle_timeout ?
		weir_interval_usecs(&w->row.idle_timeout, "idle_timeout") : 0;
	w->checkpoint_interval = weir_interval_usecs(&w->row.checkpoint_interval, "checkpoint_interval");
	w->sink_row_us = WEIR_SINK_ROW_US_DEFAULT;
	w->emit_updates = strcmp(w->row.emit, "updates") == 0;
	w->watermark = DT_NOBEGIN;
	w->watermark_holder = -1;
	w->area = dsa_create(weir_shmem()->state_tranche);
	dsa_pin_mapping(w->area);
	/* a hard stop a little above the accounted limit, for safety */
	dsa_set_size_limit(w->area, w->row.max_state_memory + w->row.max_state_memory / 4 + 4 * 1024 * 1024);
	w->store = weir_window_store_create(w->plan, w->area, w->row.max_state_memory, w->cxt);
	env.name = w->row.name;
	env.plan = w->plan;
	env.store = w->store;
	env.lock = &w->slot->lock;
	env.sink = w->row.sink;
	env.records_dead = &w->slot->records_dead;
	env.lateness = w->lateness;
	env.emit_updates = w->emit_updates;
	env.cxt = w->cxt;
	w->op = weir_operator_create(&env);
	w->target = palloc0(sizeof(WeirCheckpointTarget));
	w->target->row = w->row;
	w->target->plan = w->plan;
	w->target->slot = slot;
	w->target->sink = weir_sink_table_open(&w->target->row, w->plan, w->cxt);
	end_round();
	MemoryContextSwitchTo(w->cxt);
	return w;
}

/*
 * Errors a restart cannot cure: the definition or the tables around it no
 * longer fit (write_target.c), or the owner lost a privilege.  The pipeline
 * is disabled with the error as its status, not restarted in a loop; its
 * owner fixes the cause and calls weir.start().
 */
static bool
error_is_permanent(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION ||
		sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED ||
		sqlerrcode == ERRCODE_UNDEFINED_OBJECT;
}

/*
 * The error as weir.pipelines shows it: with the record the worker was at,
 * if any, which weir.skip() can move past.
 */
static const char *
failure_message(ErrorData *edata)
{
	WeirWorker *w = worker;

	if (w == NULL || w->cur_part < 0 || w->side == NULL || w->side->source_name == NULL)
		return edata->message;
	return psprintf("%s (at topic \"%s\" partition %d position " INT64_FORMAT ")",
					edata->message, w->side->source_name, w->cur_part, w->cur_pos);
}

void
weir_worker_main(Datum main_arg)
{
	int32		id = DatumGetInt32(main_arg);
	Oid			dboid;
	WeirPipelineSlot *slot;
	ErrorContextCallback errcallback;
	int			pipelines;
	int			holder;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	PG_TRY();
	{
		slot = weir_shmem_claim_pipeline(id, &holder);
		if (slot == NULL && holder != 0)
		{
			/* a launcher that restarted does not know its predecessor's workers */
			ereport(LOG,
					(errmsg("weir pipeline %d already has a worker (PID %d)", id, holder)));
			proc_exit(0);
		}
		if (slot == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many pipelines running"),
					 errhint("Raise weir.max_pipelines (and max_worker_processes) and restart the server.")));
		before_shmem_exit(worker_detach, PointerGetDatum(slot));

		CacheRegisterRelcacheCallback(relation_changed, (Datum) 0);
		weir_agg_set_user_code_lock(&slot->lock);
		worker = setup(id, slot);
		errcallback.callback = worker_error_context;
		errcallback.arg = worker;
		errcallback.previous = error_context_stack;
		error_context_stack = &errcallback;

		/* an earlier worker's writer may still be committing */
		begin_round();
		weir_writer_wait_for_predecessor(id);
		end_round();
		weir_checkpoint_restore(worker);
		/* restored: weir.live_state may read the store from now on */
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->area = dsa_get_handle(worker->area);
		slot->root = worker->store->root_dp;
		LWLockRelease(&slot->lock);
		begin_round();
		pipelines = list_length(weir_catalog_enabled_pipelines());
		end_round();
		worker->writer = weir_writer_start(&worker->row, worker->slot, worker->checkpoint_id,
										   pipelines, worker->cxt);
		worker->read_ahead = weir_read_ahead_start(worker, pipelines);
		worker->next_checkpoint = weir_clock_now() + worker->checkpoint_interval;
		begin_round();
		(void) weir_catalog_pipeline_set_status(id, WEIR_PIPELINE_RUNNING, NULL, false);
		end_round();
		run(worker);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		RESUME_INTERRUPTS();
		/*
		 * A generic aggregate's transition function that raised on a record
		 * while it was applied: that record cannot be processed.  State may
		 * hold part of it, so the worker restores its last checkpoint (it
		 * exits, and is started again at once) and moves past the record,
		 * a dead letter with this error (skip.c).
		 */
		if (worker && worker->applying && worker->plan->has_generic &&
			worker->cur_part >= 0 && weir_error_is_about_data(edata->sqlerrcode))
		{
			begin_round();
			weir_skip_after_failure(id, worker->side->source, worker->cur_part,
									worker->cur_pos, edata->message);
			end_round();
			SpinLockAcquire(&worker->slot->mutex);
			worker->slot->restart_now = true;
			SpinLockRelease(&worker->slot->mutex);
			ereport(LOG,
					(errmsg("weir pipeline %d moves past topic \"%s\" partition %d position " INT64_FORMAT ", a dead letter, and restores its last checkpoint",
							id, worker->side->source_name, worker->cur_part, worker->cur_pos)));
			proc_exit(1);
		}
		/* record why, so that weir.pipelines can say it, and where */
		begin_round();
		(void) weir_catalog_pipeline_set_status(id, WEIR_PIPELINE_FAILED, failure_message(edata),
												error_is_permanent(edata->sqlerrcode));
		end_round();
		proc_exit(1);
	}
	PG_END_TRY();
}
