/*-------------------------------------------------------------------------
 *
 * join_state.h
 *	  What an interval join keeps per key in the pipeline's store: the plan
 *	  sizes the store's entries by it (definition.c), the join operator
 *	  fills it (join.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/join_state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_JOIN_STATE_H
#define WEIR_JOIN_STATE_H

#include "datatype/timestamp.h"
#include "utils/dsa.h"

/*
 * A key's entry state, both sides' rows (keyed.c reads t, which must come
 * first): one entry per key, so a record costs one lookup.
 */
typedef struct JoinKeyState
{
	TimestampTz t;				/* the latest row time + its side's bound:
								 * past it, no row of the key can match */
	dsa_pointer rows[2];		/* per side, newest first */
	int32		nrows[2];
} JoinKeyState;

#endif							/* WEIR_JOIN_STATE_H */
