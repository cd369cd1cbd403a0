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
 *	  src/sink_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "aggregate.h"
#include "sink_rows.h"
#include "worker.h"

void
weir_sink_rows_init(WeirSinkRows *s, WeirPlan *plan)
{
	s->plan = plan;
	s->ncols = plan->nsinkcols;
	s->cols = palloc(sizeof(WeirColumn) * s->ncols);
	s->keyvals = palloc(sizeof(Datum) * Max(plan->nkeys, 1));
	for (int i = 0; i < s->ncols; i++)
		weir_column_init(&s->cols[i], plan->sinkcols[i].type);
}

/* One sink row: the key image decoded, the window, the aggregates' results from `states`. */
void
weir_sink_rows_add(WeirSinkRows *s, const char *key, TimestampTz start, TimestampTz end,
				   char *states)
{
	WeirPlan   *plan = s->plan;
	int			c = 0;

	weir_checkpoint_decode_key(plan, key, s->keyvals);
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_add(&s->cols[c++], s->keyvals[i], false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(start), false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(end), false);
	for (int i = 0; i < plan->naggs; i++)
	{
		bool		isnull;
		Datum		v = weir_agg_final(&plan->aggs[i], states, &isnull);

		weir_column_add(&s->cols[c++], v, isnull);
	}
}
