/*-------------------------------------------------------------------------
 *
 * sink_rows.h
 *	  Window sink rows under construction, a column each.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_rows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_ROWS_H
#define WEIR_SINK_ROWS_H

#include "datatype/timestamp.h"

#include "base/columns.h"
#include "definition/definition.h"
#include "nodes/pg_list.h"

/* Sink rows under construction: one WeirColumn per sink column. */
typedef struct WeirSinkRows
{
	WeirPlan   *plan;
	WeirColumn *cols;
	int			ncols;
	Datum	   *keyvals;		/* scratch: a key image decoded */
	/*
	 * Windows whose values cannot be computed (weir_agg_final_problem): a
	 * WeirSinkProblem each, dead letters instead of rows
	 */
	List	   *problems;
	/* scratch: a window's generic aggregates' values (plans that have them) */
	Datum	   *generic;
	bool	   *generic_null;
} WeirSinkRows;

typedef struct WeirSinkProblem
{
	char	   *error;
	char	   *record;			/* the window's key and bounds, as JSON text */
} WeirSinkProblem;

extern void weir_sink_rows_init(WeirSinkRows *s, WeirPlan *plan);
extern void weir_sink_rows_add(WeirSinkRows *s, const char *key, TimestampTz start,
							   TimestampTz end, char *states);
extern void weir_sink_rows_sort_by_time(WeirSinkRows *s);

#endif							/* WEIR_SINK_ROWS_H */
