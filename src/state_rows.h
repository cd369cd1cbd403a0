/*-------------------------------------------------------------------------
 *
 * state_rows.h
 *	  A checkpoint's window state rows (weir.pipeline_state), written in
 *	  bulk.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state_rows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_ROWS_H
#define WEIR_STATE_ROWS_H

#include "datatype/timestamp.h"

#include "columns.h"

/* Rows of weir.pipeline_state for one pipeline, column by column */
typedef struct WeirStateRows
{
	WeirColumn	keys;			/* bytea: the key image */
	WeirColumn	starts;
	WeirColumn	ends;
	WeirColumn	fired;
	WeirColumn	states;			/* bytea: weir_agg_states_image() */
} WeirStateRows;

extern void weir_state_rows_init(WeirStateRows *s);
extern void weir_state_rows_add(WeirStateRows *s, bytea *key, TimestampTz start,
								TimestampTz end, bool fired, bytea *image);
extern void weir_state_rows_write(int32 id, WeirStateRows *s, bool persisted);
extern void weir_state_rows_delete(int32 id, WeirColumn *keys, WeirColumn *starts);

#endif							/* WEIR_STATE_ROWS_H */
