/*-------------------------------------------------------------------------
 *
 * window_aggregate.h
 *	  The window aggregate operator (operator.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/window_aggregate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_OPERATOR_WINDOW_H
#define WEIR_OPERATOR_WINDOW_H

#include "operator/operator.h"

extern void weir_window_operator_init(WeirOperator *op);

#endif							/* WEIR_OPERATOR_WINDOW_H */
