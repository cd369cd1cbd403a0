/*-------------------------------------------------------------------------
 *
 * keyed_ops.c
 *	  What the keyed operators (dedup, last value, join) do alike, through
 *	  their keyed state (op->keys, state/keyed.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/keyed_ops.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "operator/keyed_ops.h"

/* The committed checkpoint deleted chunks of this many bytes. */
void
weir_keyed_ops_chunks_deleted(WeirOperator *op, int64 bytes)
{
	weir_keyed_chunks_deleted(op->keys, bytes);
}

/*
 * The entries of the last checkpoint (keyed.c).  Keys that expired since
 * owe the sink something only where the keyed state keeps them (last
 * value: their rows are deleted).
 */
int64
weir_keyed_ops_restore(WeirOperator *op, int32 pipeline_id, TimestampTz watermark,
					   int64 *bytes, bool *owes_rows)
{
	int64		entries = weir_keyed_restore(op->keys, pipeline_id, watermark, bytes);

	*owes_rows = op->keys->keep_removed && op->keys->removed != NIL;
	return entries;
}

/* Expired entries that wait for the next checkpoint to leave. */
int64
weir_keyed_ops_held_entries(WeirOperator *op)
{
	return op->keys->nheld;
}
