/*-------------------------------------------------------------------------
 *
 * aggregate.h
 *	  Fixed-size aggregate states of the fast path.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/aggregate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_AGGREGATE_H
#define WEIR_AGGREGATE_H

#include "storage/lwlock.h"

#include "definition/definition.h"

extern void weir_agg_accum(WeirAggSpec *agg, char *states, Datum value, bool isnull);
extern bool weir_agg_can_retract(WeirAggSpec *agg, char *states, Datum value, bool isnull);
extern void weir_agg_retract(WeirAggSpec *agg, char *states, Datum value, bool isnull);
extern void weir_agg_combine(WeirAggSpec *agg, char *into, char *from);
extern Datum weir_agg_final(WeirAggSpec *agg, char *states, bool *isnull);
extern const char *weir_agg_final_problem(WeirAggSpec *agg, char *states);
extern void weir_agg_set_user_code_lock(LWLock *lock);
extern void weir_agg_generic_accum(WeirAggSpec *agg, char *states, Datum *args,
								   bool *nulls);
extern void weir_agg_generic_combine(WeirAggSpec *agg, char *into, char *from);
extern Datum weir_agg_generic_final(WeirAggSpec *agg, char *states, bool *isnull);
extern const char *weir_agg_generic_final_guarded(WeirAggSpec *agg, char *states, Datum *value,
												  bool *isnull);
extern void weir_agg_free_generic(WeirPlan *plan, char *states);
extern int64 weir_agg_generic_bytes(void);
extern MemoryContext weir_agg_generic_parent_swap(MemoryContext cxt);
extern bytea *weir_agg_states_image(WeirPlan *plan, char *states);
extern bool weir_agg_states_restore(WeirPlan *plan, char *states, const char *image,
									Size len);

#endif							/* WEIR_AGGREGATE_H */
