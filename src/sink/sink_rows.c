/*-------------------------------------------------------------------------
 *
 * sink_rows.c
 *	  Window sink rows under construction, a column each.
 *
 * A window's sink row is its key's columns, its start and end, and its
 * aggregates' results.  The checkpoint's sync phase builds them for the
 * open windows that changed (checkpoint.c); a window that leaves memory
 * builds its own at once (window.c), so that nothing of it but the row
 * outlives it until the checkpoint.  By-reference values are allocated in
 * the current memory context.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/timestamp.h"

#include "base/dead_letter.h"
#include "definition/aggregate.h"
#include "definition/key_image.h"
#include "sink/sink_order.h"
#include "sink/sink_rows.h"

void
weir_sink_rows_init(WeirSinkRows *s, WeirPlan *plan)
{
	s->plan = plan;
	s->ncols = plan->nsinkcols;
	s->cols = palloc(sizeof(WeirColumn) * s->ncols);
	s->keyvals = palloc(sizeof(Datum) * Max(plan->nkeys, 1));
	for (int i = 0; i < s->ncols; i++)
		weir_column_init(&s->cols[i], plan->sinkcols[i].type);
	s->problems = NIL;
	s->generic = NULL;
	s->generic_null = NULL;
	if (plan->has_generic)
	{
		s->generic = palloc(sizeof(Datum) * plan->naggs);
		s->generic_null = palloc(sizeof(bool) * plan->naggs);
	}
}

/* A window that cannot be a row, with its key (decoded in s->keyvals) and bounds. */
static void
add_problem(WeirSinkRows *s, const char *error, TimestampTz start, TimestampTz end)
{
	WeirPlan   *plan = s->plan;
	WeirSinkProblem *p = palloc(sizeof(WeirSinkProblem));
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < plan->nkeys; i++)
		weir_json_field(&buf, plan->sinkcols[i].name, plan->sinkcols[i].type, s->keyvals[i],
						false);
	weir_json_field(&buf, "window_start", TIMESTAMPTZOID, TimestampTzGetDatum(start), false);
	weir_json_field(&buf, "window_end", TIMESTAMPTZOID, TimestampTzGetDatum(end), false);
	appendStringInfoChar(&buf, '}');
	p->error = psprintf("the window's aggregates cannot be computed: %s", error);
	p->record = buf.data;
	s->problems = lappend(s->problems, p);
}

/* One sink row: the key image decoded, the window, the aggregates' results from `states`. */
void
weir_sink_rows_add(WeirSinkRows *s, const char *key, TimestampTz start, TimestampTz end,
				   char *states)
{
	WeirPlan   *plan = s->plan;
	int			c = 0;
	Datum	   *generic = s->generic;
	bool	   *generic_null = s->generic_null;

	weir_key_image_decode(plan, key, s->keyvals);
	for (int i = 0; i < plan->naggs; i++)
	{
		const char *problem = weir_agg_final_problem(&plan->aggs[i], states);

		if (unlikely(problem != NULL))
		{
			add_problem(s, problem, start, end);
			return;
		}
	}
	/* generic aggregates: the user's functions may raise (caught, per window) */
	if (generic)
	{
		for (int i = 0; i < plan->naggs; i++)
		{
			const char *problem;

			if (plan->aggs[i].kind != WEIR_AGG_GENERIC)
				continue;
			problem = weir_agg_generic_final_guarded(&plan->aggs[i], states, &generic[i],
													 &generic_null[i]);
			if (problem)
			{
				add_problem(s, problem, start, end);
				return;
			}
		}
	}
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_add(&s->cols[c++], s->keyvals[i], false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(start), false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(end), false);
	for (int i = 0; i < plan->naggs; i++)
	{
		bool		isnull;
		Datum		v;

		if (generic && plan->aggs[i].kind == WEIR_AGG_GENERIC)
		{
			v = generic[i];
			isnull = generic_null[i];
		}
		else
			v = weir_agg_final(&plan->aggs[i], states, &isnull);
		weir_column_add(&s->cols[c++], v, isnull);
	}
}

/*
 * Put the rows in order of window end, then start (a window's rows go to a
 * topic so: its readers see a checkpoint's windows as they closed).
 */
void
weir_sink_rows_sort_by_time(WeirSinkRows *s)
{
	int			n = s->ncols > 0 ? s->cols[0].n : 0;
	int			startcol = s->plan->nkeys;
	int		   *order;
	Datum	   *values;
	bool	   *nulls;

	if (n < 2)
		return;
	/* sink_order.c's inlined sort of (end, start, row) items */
	order = weir_sink_time_order(s->cols[startcol + 1].values, s->cols[startcol].values, n);
	values = palloc_extended(sizeof(Datum) * n, MCXT_ALLOC_HUGE);
	nulls = palloc_extended(sizeof(bool) * n, MCXT_ALLOC_HUGE);
	for (int c = 0; c < s->ncols; c++)
	{
		WeirColumn *col = &s->cols[c];

		for (int r = 0; r < n; r++)
		{
			values[r] = col->values[order[r]];
			nulls[r] = col->nulls[order[r]];
		}
		memcpy(col->values, values, sizeof(Datum) * n);
		memcpy(col->nulls, nulls, sizeof(bool) * n);
	}
	pfree(values);
	pfree(nulls);
	pfree(order);
}
