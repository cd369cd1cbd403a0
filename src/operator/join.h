/*-------------------------------------------------------------------------
 *
 * join.h
 *	  Interval join of two topics: both sides' rows buffered per key in the
 *	  pipeline's DSA area (over keyed.h), until no match is possible.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/join.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_JOIN_H
#define WEIR_JOIN_H

#include "operator/operator.h"

extern Size weir_join_entry_state(void);
extern void weir_join_operator_init(WeirOperator *op);

#endif							/* WEIR_JOIN_H */
