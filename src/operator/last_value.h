/*-------------------------------------------------------------------------
 *
 * last_value.h
 *	  Last value per key: the newest row of each key, over keyed state
 *	  (keyed.h), and the rows changed since the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/last_value.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_LASTVALUE_H
#define WEIR_LASTVALUE_H

#include "operator/operator.h"

extern Size weir_last_value_entry_state(WeirPlan *plan);
extern void weir_last_value_operator_init(WeirOperator *op);

#endif							/* WEIR_LASTVALUE_H */
