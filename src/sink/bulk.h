/*-------------------------------------------------------------------------
 *
 * bulk.h
 *	  Writing new rows into a pipeline's sink table in bulk.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/bulk.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_H
#define WEIR_SINK_H

#include "definition/definition.h"

extern bool weir_sink_bulk_eligible(Oid sink, WeirPlan *plan,
									 const char *checkpoint_column, int *map);
extern void weir_sink_bulk_insert(Oid sink, WeirPlan *plan, const int *map,
								  int ncols, Datum **values, bool **nulls,
								  int nrows);
extern bool weir_sink_bulk_update(Oid sink, WeirPlan *plan, const int *map,
								  int ncols, Datum **values, bool **nulls,
								  int nrows);

extern bool weir_sink_try_insert(void (*insert) (void *arg), void *arg);

#endif							/* WEIR_SINK_H */
