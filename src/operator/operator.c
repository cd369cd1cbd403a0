/*-------------------------------------------------------------------------
 *
 * operator.c
 *	  A pipeline's operator, chosen once by the kind of its definition.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/operator.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "operator/dedup.h"
#include "operator/join.h"
#include "operator/last_value.h"
#include "operator/operator.h"
#include "operator/projection.h"
#include "operator/state_view.h"
#include "operator/window_aggregate.h"

/*
 * The state each entry of the plan's store holds: a window's aggregate
 * states, a keyed entry's state (the operator's own layout).  The worker
 * makes the store so, and readers in other backends (pipeline/live.c)
 * check a store's layout by it.
 */
Size
weir_operator_entry_state(WeirPlan *plan)
{
	switch (plan->op)
	{
		case WEIR_OP_WINDOW:
			return plan->state_size;
		case WEIR_OP_DEDUP:
			return weir_dedup_entry_state();
		case WEIR_OP_LAST_VALUE:
			return weir_last_value_entry_state(plan);
		case WEIR_OP_JOIN:
			return weir_join_entry_state();
		case WEIR_OP_PROJECTION:
			break;
	}
	return 0;
}

/*
 * What weir.live_state and weir.committed_state show of the plan's state
 * (state_view.h); NULL: it has none (a projection).
 */
const WeirStateView *
weir_operator_state_view(WeirPlan *plan)
{
	switch (plan->op)
	{
		case WEIR_OP_WINDOW:
			return &weir_window_state_view;
		case WEIR_OP_DEDUP:
			return &weir_dedup_state_view;
		case WEIR_OP_LAST_VALUE:
			return &weir_last_value_state_view;
		case WEIR_OP_JOIN:
			return &weir_join_state_view;
		case WEIR_OP_PROJECTION:
			break;
	}
	return NULL;
}

/* Whether the store's entries carry an end: session windows' */
bool
weir_operator_entry_end(WeirPlan *plan)
{
	return plan->op == WEIR_OP_WINDOW && plan->windowing.kind == WEIR_WINDOW_SESSION;
}

/* The operator of env->plan, allocated in env->cxt (the worker's). */
WeirOperator *
weir_operator_create(const WeirOperatorEnv *env)
{
	WeirOperator *op = MemoryContextAllocZero(env->cxt, sizeof(WeirOperator));

	op->env = *env;
	switch (env->plan->op)
	{
		case WEIR_OP_WINDOW:
			weir_window_operator_init(op);
			break;
		case WEIR_OP_DEDUP:
			weir_dedup_operator_init(op);
			break;
		case WEIR_OP_LAST_VALUE:
			weir_last_value_operator_init(op);
			break;
		case WEIR_OP_JOIN:
			weir_join_operator_init(op);
			break;
		case WEIR_OP_PROJECTION:
			weir_projection_operator_init(op);
			break;
	}
	if (op->ops == NULL)
		elog(ERROR, "unrecognized pipeline operator: %d", (int) env->plan->op);
	return op;
}
