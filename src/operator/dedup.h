/*-------------------------------------------------------------------------
 *
 * dedup.h
 *	  The deduplication operator (operator.h): ids kept per horizon in
 *	  the pipeline's store (keyed.h), records passed on unless duplicates.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/dedup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEDUP_H
#define WEIR_DEDUP_H

#include "operator/operator.h"

extern Size weir_dedup_entry_state(void);
extern void weir_dedup_operator_init(WeirOperator *op);

#endif							/* WEIR_DEDUP_H */
