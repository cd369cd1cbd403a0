/*-------------------------------------------------------------------------
 *
 * projection.h
 *	  The projection operator (operator.h): a stateless stage.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/projection.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_OPERATOR_PROJECTION_H
#define WEIR_OPERATOR_PROJECTION_H

#include "operator/operator.h"

extern void weir_projection_operator_init(WeirOperator *op);

#endif							/* WEIR_OPERATOR_PROJECTION_H */
