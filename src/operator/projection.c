/*-------------------------------------------------------------------------
 *
 * projection.c
 *	  The projection operator: every record that passes the filter goes to
 *	  the sink as the columns it selects, at the next checkpoint.  No state
 *	  but the rows owed; no event time, so nothing is ever late.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/projection.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "operator/output.h"
#include "operator/projection.h"

static WeirApplied
projection_apply(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	weir_kept_rows_add((WeirKeptRows *) op->state, r->values, r->nulls);
	return WEIR_APPLIED;
}

static bool
projection_expire(WeirOperator *op, TimestampTz watermark)
{
	return false;
}

static void
projection_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark,
				   WeirCollected *n)
{
	weir_output_kept(op, pkg, watermark, ((WeirKeptRows *) op->state)->pending, NULL, n);
}

static bool
projection_after_checkpoint(WeirOperator *op)
{
	weir_kept_rows_forget((WeirKeptRows *) op->state);
	return false;
}

static void
projection_chunks_deleted(WeirOperator *op, int64 bytes)
{
}

static int64
projection_restore(WeirOperator *op, int32 pipeline_id, TimestampTz watermark, int64 *bytes,
				bool *owes_rows)
{
	*owes_rows = false;
	*bytes = 0;
	return 0;
}

static int64
projection_pending_sink_rows(WeirOperator *op)
{
	return ((WeirKeptRows *) op->state)->pending[0].n;
}

static int64
projection_held_entries(WeirOperator *op)
{
	return 0;
}

static const WeirOperatorOps projection_ops = {
	.state_noun = "keys",
	.rows_once = true,
	.worker_bound = false,
	.apply = projection_apply,
	.expire = projection_expire,
	.collect = projection_collect,
	.after_checkpoint = projection_after_checkpoint,
	.chunks_deleted = projection_chunks_deleted,
	.restore = projection_restore,
	.pending_sink_rows = projection_pending_sink_rows,
	.held_entries = projection_held_entries,
};

void
weir_projection_operator_init(WeirOperator *op)
{
	WeirKeptRows *kept = MemoryContextAllocZero(op->env.cxt, sizeof(WeirKeptRows));

	weir_kept_rows_init(kept, op->env.plan, op->env.cxt);
	op->ops = &projection_ops;
	op->keys = NULL;
	op->state = kept;
}
