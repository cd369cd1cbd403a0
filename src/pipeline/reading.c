/*-------------------------------------------------------------------------
 *
 * reading.c
 *	  Reading a pipeline's sources a round at a time, and evaluating the
 *	  user's expressions on their rows into a batch (reading.h).
 *
 * Each round: every source's bounds (source_ops.h), then a snapshot taken
 * after them, then partition groups of up to WEIR_READ_GROUP partitions,
 * each read in one pass (up to WEIR_BATCH_ROWS rows per partition) and
 * evaluated into the batch: filter, event time, keys (key_image.h) and
 * arguments.  A group's batch goes to the round's `done` callback: the
 * worker applies it (worker.c), the read-ahead process sends it to the
 * worker (read_ahead.c).  Evaluation touches no state, so a batch whose
 * evaluation fails is thrown away and evaluated again row by row, each
 * row in a subtransaction, and the rows that fail are marked dead.
 *
 * Runs in the worker or in its read-ahead process, as the pipeline's owner
 * (weir_reading_setup), in the round's transaction.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/reading.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/ipc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/subxact.h"
#include "base/transaction.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/change_topic.h"
#include "definition/definition.h"
#include "definition/key_image.h"
#include "definition/pipeline_plan.h"
#include "definition/write_target.h"
#include "pipeline/reading.h"
#include "pipeline/skip.h"
#include "source/topic_source.h"

#define WEIR_READ_GROUP 8		/* partitions read in one pass over the heap */

/*
 * What the operator does with the operations of a change topic
 * (change_topic.h, README "Change topics"): WeirSide.change_mode.
 */
typedef enum WeirChangeMode
{
	CHANGE_NONE,				/* an ordinary topic (or a projection, which
								 * passes every row on): all inserts */
	CHANGE_INSERTS,				/* dedup, join: inserts only, the other rows
								 * filtered */
	CHANGE_INSERT_ONLY,			/* window with insert_only: inserts, the other
								 * rows dead letters */
	CHANGE_RETRACT,				/* window: inserts and updates add a row,
								 * before images and deletes take it back, a
								 * truncate is a dead letter */
	CHANGE_MIRROR				/* last value: every operation */
} WeirChangeMode;

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

/* The column a change item is (a bare Var of the source: definition.c). */
static AttrNumber
change_column(WeirSide *side, Expr *expr)
{
	AttrNumber	attnum = ((Var *) expr)->varattno;

	side->deform_columns = Max(side->deform_columns, attnum);
	return attnum;
}

/*
 * The columns `expr` uses, as indexes into side->used_attnums (added there
 * if new).
 */
static Bitmapset *
used_columns(WeirSide *side, Node *expr)
{
	Bitmapset  *attnos = NULL;
	Bitmapset  *used = NULL;
	int			a = -1;

	if (expr == NULL)
		return NULL;
	pull_varattnos(expr, 1, &attnos);
	while ((a = bms_next_member(attnos, a)) >= 0)
	{
		AttrNumber	attnum = a + FirstLowInvalidHeapAttributeNumber;
		int			i;

		if (attnum <= 0)
			continue;
		for (i = 0; i < side->nused; i++)
			if (side->used_attnums[i] == attnum)
				break;
		if (i == side->nused)
		{
			side->used_attnums = repalloc(side->used_attnums, sizeof(AttrNumber) * (i + 1));
			side->used_names = repalloc(side->used_names, sizeof(char *) * (i + 1));
			side->used_attnums[i] = attnum;
			side->used_names[i] = get_attname(side->src->relid, attnum, false);
			side->nused++;
		}
		used = bms_add_member(used, i);
	}
	return used;
}

/*
 * A change topic's side: what its operator does with each operation, and,
 * when the topic has unchanged_columns, which columns each expression uses
 * (eval_unchanged).
 */
static void
init_change_side(WeirSide *side)
{
	WeirPlan   *plan = side->plan;

	side->change_mode = CHANGE_NONE;
	if (plan->change_op == NULL)
		return;
	side->op_column = change_column(side, plan->change_op);
	switch (plan->op)
	{
		case WEIR_OP_WINDOW:
			side->change_mode = plan->insert_only ? CHANGE_INSERT_ONLY : CHANGE_RETRACT;
			break;
		case WEIR_OP_LAST_VALUE:
			side->change_mode = CHANGE_MIRROR;
			break;
		case WEIR_OP_DEDUP:
		case WEIR_OP_JOIN:
			side->change_mode = CHANGE_INSERTS;
			break;
		case WEIR_OP_PROJECTION:
			side->change_mode = CHANGE_NONE;
			break;
	}
	if (plan->unchanged == NULL)
		return;
	side->unchanged_column = change_column(side, plan->unchanged);
	side->nused = 0;
	side->used_attnums = palloc(sizeof(AttrNumber));
	side->used_names = palloc(sizeof(char *));
	side->fixed_used = NULL;
	for (int i = 0; i < plan->nkeys; i++)
		side->fixed_used = bms_add_members(side->fixed_used,
										   used_columns(side, (Node *) plan->keys[i].expr));
	side->fixed_used = bms_add_members(side->fixed_used,
									   used_columns(side, (Node *) plan->event_time));
	side->fixed_used = bms_add_members(side->fixed_used,
									   used_columns(side, (Node *) plan->filter));
	side->arg_used = palloc0(sizeof(Bitmapset *) * Max(plan->nargs, 1));
	for (int i = 0; i < plan->naggs; i++)
		for (int j = 0; j < plan->aggs[i].nargs; j++)
			side->fixed_used = bms_add_members(side->fixed_used,
											   used_columns(side, (Node *) plan->aggs[i].args[j]));
	for (int i = 0; i < plan->ncolumns; i++)
		side->arg_used[i] = used_columns(side, (Node *) plan->columns[i].expr);
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
	init_change_side(side);
}

/* Compile the plan's expressions and set up the batch. */
static void
init_expressions(WeirReading *rd)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rd->cxt);

	rd->estate = CreateExecutorState();
	rd->econtext = GetPerTupleExprContext(rd->estate);
	rd->batch_stride = 1;
	for (int s = 0; s < rd->nsides; s++)
	{
		init_side_expressions(&rd->sides[s]);
		rd->batch_stride = Max(rd->batch_stride, rd->sides[s].plan->nargs);
	}
	rd->group_size = 1;
	for (int s = 0; s < rd->nsides; s++)
		rd->group_size = Max(rd->group_size, Min(rd->sides[s].src->partitions, WEIR_READ_GROUP));
	rd->group_nbatch = palloc0(sizeof(int) * rd->group_size);
	rd->ranges = palloc0(sizeof(WeirPositionRange) * rd->group_size);
	initStringInfo(&rd->batch_keys);
	rd->batch = palloc(sizeof(WeirEvalRow) * WEIR_BATCH_ROWS * rd->group_size);
	rd->batch_values = palloc0(sizeof(Datum) * WEIR_BATCH_ROWS * rd->group_size * rd->batch_stride);
	rd->batch_nulls = palloc0(sizeof(bool) * WEIR_BATCH_ROWS * rd->group_size * rd->batch_stride);
	for (int s = 0; s < rd->nsides; s++)
		if (rd->sides[s].change_mode == CHANGE_MIRROR && rd->sides[s].unchanged_column != 0)
			rd->batch_kept = palloc0(sizeof(bool) * WEIR_BATCH_ROWS * rd->group_size *
									 rd->batch_stride);
	rd->batch_cxt = AllocSetContextCreate(rd->cxt, "weir batch", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(oldcxt);
}

/* The error of a record to move past (skip.c), or NULL. */
static const char *
skip_requested(WeirReading *rd, Oid source, int32 part, int64 position)
{
	for (int i = 0; i < rd->nskips; i++)
		if (rd->skips[i].position == position && rd->skips[i].part == part &&
			rd->skips[i].source == source)
			return rd->skips[i].error;
	return NULL;
}

static const char *
event_time_out_of_range(WeirReading *rd, TimestampTz t)
{
	/* timestamptz_to_str returns a static buffer */
	char	   *at = pstrdup(timestamptz_to_str(t));
	char	   *from = pstrdup(timestamptz_to_str(rd->min_event_time));

	return psprintf("event time %s is outside the range this pipeline can place (%s to %s)",
					at, from, timestamptz_to_str(rd->max_event_time_allowed));
}

static void
mark_dead(WeirReading *rd, WeirEvalRow *r, TupleTableSlot *slot, const char *error)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rd->batch_cxt);

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
next_row(WeirReading *rd, int32 part)
{
	int			g = part - rd->group_first;
	int			index = g * WEIR_BATCH_ROWS + rd->group_nbatch[g]++;
	WeirEvalRow *r = &rd->batch[index];

	Assert(g >= 0 && g < rd->group_size && rd->group_nbatch[g] <= WEIR_BATCH_ROWS);
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

/* A change_op as text for a message: the character, or its octal code. */
static char *
op_text(char op)
{
	unsigned char c = (unsigned char) op;

	return c >= 0x20 && c < 0x7f ? psprintf("'%c'", c) : psprintf("'\\%03o'", c);
}

/*
 * What the operator does with the operation of a change topic's row
 * (r->op, valid; WeirChangeMode), its event time evaluated into r->t
 * (isnull: it is null).  Returns false when that is all: the row is dead
 * (an operation the operator cannot take), filtered (dedup and join see
 * inserts only), or a truncate (last value: no key, no columns).
 */
static bool
eval_change(WeirReading *rd, WeirEvalRow *r, TupleTableSlot *slot, bool isnull)
{
	WeirSide   *side = rd->side;
	char	   *error = NULL;

	switch ((WeirChangeMode) side->change_mode)
	{
		case CHANGE_NONE:
			return true;
		case CHANGE_INSERTS:
			if (r->op == WEIR_CHANGE_OP_INSERT)
				return true;
			/* as a filtered row: its time still moves the watermark */
			r->kind = WEIR_ROW_FILTERED;
			if (isnull || TIMESTAMP_NOT_FINITE(r->t))
				r->t = DT_NOBEGIN;
			return false;
		case CHANGE_INSERT_ONLY:
			if (r->op == WEIR_CHANGE_OP_INSERT)
				return true;
			error = psprintf("change_op %s is not an insert, and the source was declared to have inserts only (insert_only => true)",
							 op_text(r->op));
			break;
		case CHANGE_RETRACT:
			if (r->op != WEIR_CHANGE_OP_TRUNCATE)
				return true;
			error = "a truncate cannot be taken back out of window aggregates";
			break;
		case CHANGE_MIRROR:
			if (r->op != WEIR_CHANGE_OP_TRUNCATE)
				return true;
			/* a truncate: no key, no columns; its time, if it has one */
			if (isnull || TIMESTAMP_NOT_FINITE(r->t) || r->t < rd->min_event_time ||
				r->t > rd->max_event_time_allowed)
				r->t = DT_NOBEGIN;
			r->keylen = 0;
			r->keyhash = 0;
			memset(&rd->batch_nulls[r->args * rd->batch_stride], true, side->plan->nargs);
			return false;
	}
	r->t = DT_NOBEGIN;
	mark_dead(rd, r, slot, error);
	return false;
}

/*
 * An update ('U') of a topic with unchanged_columns: the columns it names
 * hold NULL for a TOASTed value the update did not change.  Keys, the
 * event time and the filter (and a window's arguments) cannot be read so:
 * the row is dead.  A last value column computed from such columns only
 * keeps the sink's value (r->kept, batch_kept); one computed from them and
 * from others cannot be computed: dead.  Returns false if dead.
 */
static bool
eval_unchanged(WeirReading *rd, WeirEvalRow *r, TupleTableSlot *slot)
{
	WeirSide   *side = rd->side;
	AttrNumber	column = side->unchanged_column;
	Bitmapset  *unchanged = NULL;
	ArrayType  *names;
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	int			i;
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	if (slot->tts_isnull[column - 1] || side->nused == 0)
		return true;
	/* reset with the row (eval_into) */
	MemoryContextSwitchTo(rd->econtext->ecxt_per_tuple_memory);
	names = DatumGetArrayTypeP(slot->tts_values[column - 1]);
	deconstruct_array(names, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &elemnulls, &nelems);
	for (int e = 0; e < nelems; e++)
		for (i = 0; i < side->nused && !elemnulls[e]; i++)
			if (strcmp(NameStr(*DatumGetName(elems[e])), side->used_names[i]) == 0)
				unchanged = bms_add_member(unchanged, i);
	i = bms_next_member(bms_intersect(unchanged, side->fixed_used), -1);
	if (i >= 0)
	{
		r->t = DT_NOBEGIN;
		mark_dead(rd, r, slot,
				  psprintf("column \"%s\" is unchanged by this update, so its value is not in the record",
						   side->used_names[i]));
		ok = false;
	}
	for (int a = 0; ok && unchanged && side->change_mode == CHANGE_MIRROR &&
		 a < side->plan->nargs; a++)
	{
		Bitmapset  *used = side->arg_used[a];
		bool	   *kept = &rd->batch_kept[r->args * rd->batch_stride + a];

		*kept = false;
		if (!bms_overlap(used, unchanged))
			continue;
		if (!bms_is_subset(used, unchanged))
		{
			r->t = DT_NOBEGIN;
			mark_dead(rd, r, slot,
					  psprintf("column \"%s\" is computed from column \"%s\", which this update left unchanged (its value is not in the record), and from columns it changed",
							   side->plan->columns[a].name,
							   side->used_names[bms_next_member(bms_intersect(used, unchanged), -1)]));
			ok = false;
			break;
		}
		*kept = true;
		r->kept = true;
	}
	MemoryContextSwitchTo(oldcxt);
	return ok;
}

/*
 * Evaluate the user's expressions on one topic row into row r of the batch:
 * the hot path.  Nothing here touches window state, so a batch whose
 * evaluation fails can be thrown away and redone row by row
 * (evaluate_partitions).
 */
static void
eval_into(WeirReading *rd, WeirEvalRow *r, TupleTableSlot *slot, int32 part,
		  int64 position)
{
	WeirSide   *side = rd->side;
	WeirPlan   *plan = side->plan;
	ExprContext *econtext = rd->econtext;
	Datum	   *values = &rd->batch_values[r->args * rd->batch_stride];
	bool	   *nulls = &rd->batch_nulls[r->args * rd->batch_stride];
	bool		isnull;

	rd->cur_part = part;
	rd->cur_pos = position;
	r->position = position;
	r->kind = WEIR_ROW_OK;
	r->op = WEIR_CHANGE_OP_INSERT;
	r->kept = false;
	r->keyoff = rd->batch_keys.len;
	r->keylen = 0;
	econtext->ecxt_scantuple = slot;
	/* as a rule the reader deformed them already (scan_group) */
	slot_getsomeattrs(slot, side->deform_columns);
	if (unlikely(rd->nskips > 0))
	{
		const char *skipped = skip_requested(rd, side->src->relid, part, position);

		if (skipped)
		{
			r->t = DT_NOBEGIN;
			mark_dead(rd, r, slot, skipped);
			goto done;
		}
	}
	if (side->change_mode != CHANGE_NONE)
	{
		r->op = DatumGetChar(slot->tts_values[side->op_column - 1]);
		if (slot->tts_isnull[side->op_column - 1] || !weir_change_op_valid(r->op))
		{
			r->t = DT_NOBEGIN;
			mark_dead(rd, r, slot, slot->tts_isnull[side->op_column - 1] ?
					  "change_op is null" :
					  psprintf("change_op %s is not one of I, U, B, D, T", op_text(r->op)));
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
	if (side->change_mode != CHANGE_NONE)
	{
		if (!eval_change(rd, r, slot, isnull))
			goto done;
		if (r->op == WEIR_CHANGE_OP_UPDATE && side->unchanged_column != 0 &&
			!eval_unchanged(rd, r, slot))
			goto done;
	}
	if (side->filter_expr && side->change_mode == CHANGE_MIRROR)
	{
		/*
		 * Last value over a change topic: the sink holds the rows that pass
		 * the filter, so a row that no longer passes deletes its key, and
		 * removals (whose image may be the key alone) are not filtered.
		 */
		if (!weir_change_op_removes(r->op) && !ExecQual(side->filter_expr, econtext))
			r->op = WEIR_CHANGE_OP_DELETE;
	}
	else if (side->filter_expr && !ExecQual(side->filter_expr, econtext))
	{
		/* not processed, but its time still moves the partition's watermark */
		r->kind = WEIR_ROW_FILTERED;
		if (isnull || TIMESTAMP_NOT_FINITE(r->t))
			r->t = DT_NOBEGIN;
		goto done;
	}
	if (isnull || TIMESTAMP_NOT_FINITE(r->t))
	{
		mark_dead(rd, r, slot, isnull ? "event time is null" : "event time is infinite");
		goto done;
	}
	if (unlikely(r->t < rd->min_event_time || r->t > rd->max_event_time_allowed))
	{
		mark_dead(rd, r, slot, event_time_out_of_range(rd, r->t));
		goto done;
	}
	for (int i = 0; i < plan->nkeys; i++)
	{
		Datum		v = eval_column(side->key_exprs[i], side->key_columns[i], slot,
									econtext, &isnull);

		if (isnull)
		{
			mark_dead(rd, r, slot, psprintf("key \"%s\" is null", plan->keys[i].name));
			goto done;
		}
		weir_key_image_append(&rd->batch_keys, &plan->keys[i], v);
	}
	r->keylen = rd->batch_keys.len - r->keyoff;
	r->keyhash = weir_key_image_hash(rd->batch_keys.data + r->keyoff, r->keylen);
	for (int i = 0; i < plan->nargs; i++)
	{
		Datum		v = eval_column(side->arg_exprs[i], side->arg_columns[i], slot,
									econtext, &nulls[i]);

		/* by-reference arguments must outlive this row: copy them */
		if (side->arg_copy_len[i] != 0 && !nulls[i])
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(rd->batch_cxt);

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
	WeirReading *rd = (WeirReading *) arg;

	eval_into(rd, next_row(rd, part), slot, part, position);
}

/* One row to evaluate, for weir_in_subtransaction */
typedef struct RowToEvaluate
{
	WeirReading *rd;
	WeirEvalRow *r;
	TupleTableSlot *slot;
	int32		part;
	int64		position;
} RowToEvaluate;

static void
evaluate_row(void *arg)
{
	RowToEvaluate *e = arg;

	eval_into(e->rd, e->r, e->slot, e->part, e->position);
}

/* Evaluate one row in its own subtransaction: an error makes it dead. */
static void
eval_row_guarded(void *arg, TupleTableSlot *slot, int32 part, int64 position)
{
	WeirReading *rd = (WeirReading *) arg;
	RowToEvaluate e = {rd, next_row(rd, part), slot, part, position};
	int			keyoff = rd->batch_keys.len;
	ErrorData  *edata;

	if (weir_in_subtransaction(evaluate_row, &e, &edata))
		return;
	ResetExprContext(rd->econtext);
	rd->batch_keys.len = keyoff;
	e.r->position = position;
	e.r->keyoff = keyoff;
	e.r->keylen = 0;
	mark_dead(rd, e.r, slot, edata->message);
	FreeErrorData(edata);
}

static int
position_cmp(const void *a, const void *b)
{
	int64		pa = ((const WeirEvalRow *) a)->position;
	int64		pb = ((const WeirEvalRow *) b)->position;

	return pa < pb ? -1 : pa > pb ? 1 : 0;
}

/*
 * Evaluate the rows of the group's position ranges (rd->ranges) with `eval`
 * into the batch, each partition's rows in position order.  The rows come
 * in the heap's order (reader.c: a page read once for all the group's
 * partitions, not once per partition or per row); partitions, and
 * concurrent producers of one, interleave across pages, and a partition's
 * rows are applied in position order (a duplicate is the later record), so
 * a partition's stretch of the batch is sorted when it is out of order.
 */
static void
scan_group(WeirReading *rd, Snapshot snapshot, WeirPartRowCallback eval)
{
	resetStringInfo(&rd->batch_keys);
	MemoryContextReset(rd->batch_cxt);
	for (int g = 0; g < rd->ngroup; g++)
	{
		rd->group_nbatch[g] = 0;
		rd->ranges[g].max_position = rd->ranges[g].after;
	}
	rd->side->src->ops->scan(rd->side->src, rd->ranges, rd->ngroup, snapshot,
							 rd->side->deform_columns, eval, rd);
	for (int g = 0; g < rd->ngroup; g++)
	{
		WeirEvalRow *rows = &rd->batch[g * WEIR_BATCH_ROWS];

		for (int b = 1; b < rd->group_nbatch[g]; b++)
			if (rows[b].position < rows[b - 1].position)
			{
				qsort(rows, rd->group_nbatch[g], sizeof(WeirEvalRow), position_cmp);
				break;
			}
	}
}

/* A group of partitions to evaluate, for weir_in_subtransaction */
typedef struct GroupToEvaluate
{
	WeirReading *rd;
	Snapshot	snapshot;
} GroupToEvaluate;

static void
evaluate_group(void *arg)
{
	GroupToEvaluate *g = arg;

	scan_group(g->rd, g->snapshot, eval_row);
}

/*
 * Read and evaluate up to WEIR_BATCH_ROWS rows of each of the current
 * side's partitions first .. first + n - 1 (n <= group_size), those below
 * their bound, into the batch.  The batch is evaluated inside a
 * subtransaction; if a user expression fails on some row, it is evaluated
 * again row by row, each in its own subtransaction, and the failing rows
 * become dead letters.  rd->group_nbatch[g] is how many rows partition
 * first + g had, rd->ranges[g].max_position the last one's position.
 */
static void
evaluate_partitions(WeirReading *rd, int32 first, int n, const int64 *bounds,
					Snapshot snapshot)
{
	GroupToEvaluate group;

	rd->group_first = first;
	rd->ngroup = n;
	for (int g = 0; g < n; g++)
	{
		int32		index = rd->side->first + first + g;	/* in the worker's arrays */

		rd->ranges[g].part = first + g;
		rd->ranges[g].after = rd->pos[index];
		rd->ranges[g].upto = Min(rd->pos[index] + WEIR_BATCH_ROWS, bounds[index] - 1);
	}
	group.rd = rd;
	group.snapshot = snapshot;
	if (!weir_in_subtransaction(evaluate_group, &group, NULL))
		scan_group(rd, snapshot, eval_row_guarded);
}

/*
 * One round of reading; returns the number of rows read.  *caught_up: every
 * partition was read up to the bound computed at the start of the round.
 * Each partition group read and evaluated goes to `done`, which moves
 * rd->pos past it.  Needs the round's transaction (weir_transaction_begin).  The
 * worker reads so, and so does its read-ahead process (read_ahead.c): the
 * same bounds, snapshot, batches, subtransactions and dead rows.
 */
int64
weir_reading_round(WeirReading *rd, TimestampTz now, int64 *lag, bool *caught_up,
				   WeirGroupDone done, void *arg)
{
	int64	   *bounds = palloc(sizeof(int64) * rd->partitions);
	Snapshot	snapshot;
	int64		total = 0;

	for (int s = 0; s < rd->nsides; s++)
		rd->sides[s].src->ops->begin_round(rd->sides[s].src, &bounds[rd->sides[s].first]);
	/* the snapshot comes after every bound: see topic/partition.c */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	*lag = 0;
	*caught_up = true;
	for (int s = 0; s < rd->nsides; s++)
	{
		WeirSide   *side = &rd->sides[s];

		rd->side = side;
		for (int first = 0; first < side->src->partitions; first += rd->group_size)
		{
			int			n = Min(rd->group_size, side->src->partitions - first);

			evaluate_partitions(rd, first, n, bounds, snapshot);
			done(rd, arg);
			for (int g = 0; g < n; g++)
			{
				int32		i = side->first + first + g;
				int64		got = rd->group_nbatch[g];

				if (got > 0)
					rd->last_data_at[i] = now;
				if (got == WEIR_BATCH_ROWS)
					*caught_up = false;
				total += got;
				*lag += Max(bounds[i] - 1 - rd->pos[i], 0);
			}
		}
	}
	UnregisterSnapshot(snapshot);
	for (int s = 0; s < rd->nsides; s++)
		rd->sides[s].src->ops->end_round(rd->sides[s].src);
	pfree(bounds);
	return total;
}

/*
 * The event times a record may have (WeirReading.min_event_time): every
 * duration that is added to or subtracted from an event time (window size
 * and slide or session gap, out-of-orderness, lateness, retention, a
 * join's bounds) and a day's slack, away from each end of timestamptz's
 * range.  Each duration is at most WEIR_MAX_DURATION_USECS, so the sum
 * cannot overflow.
 */
static void
set_event_time_range(WeirReading *rd)
{
	WeirPlan   *plan = rd->plan;
	int64		margin = USECS_PER_DAY;

	margin += weir_interval_usecs(&rd->row.out_of_orderness, "out_of_orderness");
	margin += weir_interval_usecs(&rd->row.allowed_lateness, "allowed_lateness");
	if (plan->op == WEIR_OP_WINDOW)
		margin += plan->windowing.size + plan->windowing.slide;
	margin += plan->retention;
	if (plan->op == WEIR_OP_JOIN)
		margin += Max(plan->right_before, 0) + Max(plan->right_after, 0) + plan->right->retention;
	rd->min_event_time = MIN_TIMESTAMP + margin;
	rd->max_event_time_allowed = END_TIMESTAMP - 1 - margin;
}

/*
 * A pipeline as far as reading and evaluating its sources goes: its catalog
 * row, plan, sources, positions (all 0) and compiled expressions, acting as
 * the pipeline's owner, into *rd, allocated in cxt.  The worker goes on
 * from there; the read-ahead process needs no more.  Starts and commits a
 * transaction of its own; returns in cxt.
 */
void
weir_reading_setup(WeirReading *rd, int32 id, MemoryContext cxt)
{
	rd->cxt = cxt;
	weir_transaction_begin();
	MemoryContextSwitchTo(cxt);
	if (!weir_catalog_pipeline_by_id(id, &rd->row))
	{
		ereport(LOG, (errmsg("weir pipeline %d no longer exists", id)));
		proc_exit(0);
	}
	weir_pipeline_act_as_owner(&rd->row);
	rd->plan = weir_pipeline_plan(&rd->row);
	/* what was checked at creation may have changed since (write_target.c) */
	weir_check_tables(rd->plan, &rd->row, rd->row.owner);
	/* the sources: a join's left and right, every other kind's one */
	rd->nsides = rd->plan->op == WEIR_OP_JOIN ? 2 : 1;
	rd->partitions = 0;
	for (int s = 0; s < rd->nsides; s++)
	{
		WeirSide   *side = &rd->sides[s];

		side->plan = s == 0 ? rd->plan : rd->plan->right;
		side->src = weir_topic_source_open(s == 0 ? rd->row.source : rd->row.right_source, cxt);
		side->first = rd->partitions;
		rd->partitions += side->src->partitions;
	}
	set_event_time_range(rd);
	rd->skips = weir_skip_load(rd->row.id, &rd->nskips);
	rd->side = &rd->sides[0];
	rd->cur_part = -1;
	rd->pos = palloc0(sizeof(int64) * rd->partitions);
	rd->max_event_time = palloc(sizeof(TimestampTz) * rd->partitions);
	rd->last_data_at = palloc(sizeof(TimestampTz) * rd->partitions);
	for (int p = 0; p < rd->partitions; p++)
		rd->last_data_at[p] = weir_clock_now();
	init_expressions(rd);
	weir_transaction_end();
	MemoryContextSwitchTo(cxt);
}
