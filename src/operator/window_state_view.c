/*-------------------------------------------------------------------------
 *
 * window_state_view.c
 *	  The state view of a window aggregate (state_view.h): one row per open
 *	  window, its aggregates' current values as JSON.
 *
 * Each aggregate's value is its final value as text (its result type's
 * output function), or null.  Fast-path states are flat and read as they
 * are.  A generic aggregate's state lives in the memory of the process that
 * built it (aggregate.c), so its windows are read from an image, its states
 * serialised (the worker writes one when asked: pipeline/state_image.c;
 * committed_state one of the checkpoint it restored), deserialised here and
 * finished by the aggregate's final function, or shown as the state itself
 * when it has none.  A final or output function that raises shows
 * {"error": "its message"} for that value, not an error of the whole call
 * (each in a subtransaction); a cancel still cancels.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/window_state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"

#include "base/subxact.h"
#include "definition/aggregate.h"
#include "operator/state_view.h"
#include "state/window.h"

static bool
window_state_in_process(WeirPlan *plan)
{
	return plan->has_generic;
}

/*
 * Every window of a store with its states' image (weir_agg_states_image:
 * generic states serialised).  In the process that holds the states; false
 * if it would exceed a buffer's 1 GB.
 */
static bool
window_image(WeirStore *store, WeirPlan *plan, StringInfo buf)
{
	WeirStoreIter iter;
	WeirEntry  *w;

	weir_store_iter_init(&iter, store);
	while ((w = weir_store_iter_next(&iter)) != NULL)
	{
		bytea	   *image = weir_agg_states_image(plan, weir_entry_states(store->root, w));

		if (!weir_state_buf_has_room(buf, 64 + weir_entry_keylen(w) + VARSIZE(image)))
			return false;
		(void) weir_state_copy_append(buf, weir_entry_key(w), weir_entry_keylen(w),
									  weir_entry_flags(w), w->start,
									  weir_window_end(store->root, plan, w),
									  VARDATA(image), VARSIZE(image) - VARHDRSZ);
		pfree(image);
	}
	return true;
}

/* A generic aggregate's value as text, for weir_in_subtransaction */
typedef struct GenericValue
{
	WeirAggSpec *agg;
	char	   *states;
	char	   *text;			/* NULL: null */
} GenericValue;

static void
generic_value(void *arg)
{
	GenericValue *g = arg;
	bool		isnull;
	Datum		v = weir_agg_generic_final(g->agg, g->states, &isnull);

	if (!isnull)
	{
		Oid			output;
		bool		varlena;

		getTypeOutputInfo(g->agg->resulttype, &output, &varlena);
		g->text = OidOutputFunctionCall(output, v);
	}
}

/* "name": value into the JSON object being built in buf */
static void
put_value(StringInfo buf, WeirAggSpec *agg, char *states)
{
	const char *problem = NULL;
	char	   *text = NULL;

	if (buf->len > 1)
		appendStringInfoString(buf, ", ");
	escape_json(buf, agg->name);
	appendStringInfoString(buf, ": ");
	if (agg->kind == WEIR_AGG_GENERIC)
	{
		GenericValue g = {agg, states, NULL};
		ErrorData  *edata;

		if (weir_in_subtransaction(generic_value, &g, &edata))
			text = g.text;
		else if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION)
			ReThrowError(edata);	/* canceled, or shutting down */
		else
			problem = edata->message;
	}
	else if ((problem = weir_agg_final_problem(agg, states)) == NULL)
	{
		bool		isnull;
		Datum		v = weir_agg_final(agg, states, &isnull);

		if (!isnull)
		{
			Oid			output;
			bool		varlena;

			getTypeOutputInfo(agg->resulttype, &output, &varlena);
			text = OidOutputFunctionCall(output, v);
		}
	}
	if (problem)
	{
		appendStringInfoString(buf, "{\"error\": ");
		escape_json(buf, problem);
		appendStringInfoChar(buf, '}');
	}
	else if (text)
		escape_json(buf, text);
	else
		appendStringInfoString(buf, "null");
}

/*
 * Windows: their start, end, whether they fired, when they close for good
 * (end + allowed lateness: weir_window_margin), and their aggregates.
 */
static void
window_put(WeirStateOut *out, WeirStateCopy *copies, int64 n)
{
	WeirPlan   *plan = out->plan;
	char	   *states = palloc0(Max(plan->state_size, 1));
	int64		margin = weir_window_margin(&plan->windowing, out->lateness);
	StringInfoData value;

	initStringInfo(&value);
	for (int64 i = 0; i < n; i++)
	{
		WeirStateCopy *c = &copies[i];
		WeirStateRow row;

		if (plan->has_generic ?
			!weir_agg_states_restore(plan, states, c->state, c->statelen) :
			c->statelen != plan->state_size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("malformed window state in the image of pipeline state")));
		if (!plan->has_generic)
			memcpy(states, c->state, plan->state_size);

		memset(&row, 0, sizeof(row));
		row.copy = c;
		row.has_window = true;
		row.window_start = c->start;
		row.window_end = plan->windowing.kind == WEIR_WINDOW_SESSION ? c->end :
			c->start + plan->windowing.size;
		row.fired = (c->flags & WEIR_ENTRY_FIRED) != 0;
		row.has_expires_at = true;
		row.expires_at = row.window_end + margin;
		resetStringInfo(&value);
		appendStringInfoChar(&value, '{');
		for (int a = 0; a < plan->naggs; a++)
			put_value(&value, &plan->aggs[a], states);
		appendStringInfoChar(&value, '}');
		row.value = value.data;
		weir_state_put(out, &row);
		if (plan->has_generic)
			weir_agg_free_generic(plan, states);
	}
}

const WeirStateView weir_window_state_view = {
	.copy_extra = NULL,
	.state_in_process = window_state_in_process,
	.image = window_image,
	.put = window_put,
};
