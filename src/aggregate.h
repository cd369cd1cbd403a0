/*-------------------------------------------------------------------------
 *
 * aggregate.h
 *	  Fixed-size aggregate states of the fast path.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/aggregate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_AGGREGATE_H
#define WEIR_AGGREGATE_H

#include "definition.h"

extern void weir_agg_accum(WeirAggSpec *agg, char *states, Datum value, bool isnull);
extern void weir_agg_combine(WeirAggSpec *agg, char *into, char *from);
extern Datum weir_agg_final(WeirAggSpec *agg, char *states, bool *isnull);

#endif							/* WEIR_AGGREGATE_H */
