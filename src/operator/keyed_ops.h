/*-------------------------------------------------------------------------
 *
 * keyed_ops.h
 *	  What the keyed operators (dedup, last value, join) do alike, through
 *	  their keyed state (op->keys): entries for the operator interface
 *	  (operator.h) (keyed_ops.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/keyed_ops.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_KEYED_OPS_H
#define WEIR_KEYED_OPS_H

#include "operator/operator.h"

extern void weir_keyed_ops_chunks_deleted(WeirOperator *op, int64 bytes);
extern int64 weir_keyed_ops_restore(WeirOperator *op, int32 pipeline_id,
									TimestampTz watermark, int64 *bytes,
									bool *owes_rows);
extern int64 weir_keyed_ops_held_entries(WeirOperator *op);

#endif							/* WEIR_KEYED_OPS_H */
