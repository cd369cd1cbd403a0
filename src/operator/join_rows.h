/*-------------------------------------------------------------------------
 *
 * join_rows.h
 *	  How an interval join keeps its buffered rows in the pipeline's store:
 *	  for join.c, which writes them, and join_state_view.c, which reads
 *	  them from another backend.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/join_rows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_JOIN_ROWS_H
#define WEIR_JOIN_ROWS_H

#include "datatype/timestamp.h"
#include "utils/dsa.h"

/*
 * A key's entry state, both sides' rows (keyed.c reads t, which must come
 * first): one entry per key, so a record costs one lookup.
 */
typedef struct WeirJoinKeyState
{
	TimestampTz t;				/* the latest row time + its side's bound:
								 * past it, no row of the key can match */
	dsa_pointer rows[2];		/* per side, newest first */
	int32		nrows[2];
} WeirJoinKeyState;

/*
 * A buffered row: what deciding and emitting its pairs needs (its time, its
 * values, whether it matched), no more (its partition and position decide
 * nothing: pairs follow from times alone).
 */
typedef struct WeirJoinRow
{
	dsa_pointer next;
	TimestampTz t;
	uint32		matched;		/* paired with a row of the other side */
	uint32		len;			/* bytes of values */
	uint32		arena_off;		/* where in its block (row_arena.c) */
	char		values[FLEXIBLE_ARRAY_MEMBER];	/* the side's columns, serialised */
} WeirJoinRow;

/* a row's chunk image: t, matched, len, then the values */
#define WEIR_JOIN_ROW_IMAGE_HEADER (sizeof(TimestampTz) + 2 * sizeof(uint32))

/*
 * Each value of a row: an int header, WEIR_JOIN_VALUE_NULL, or
 * WEIR_JOIN_VALUE_BY_VALUE followed by a Datum, or the count of bytes of
 * the value's image that follow (as datumSerialize writes them).
 */
#define WEIR_JOIN_VALUE_NULL		(-2)
#define WEIR_JOIN_VALUE_BY_VALUE	(-1)

#endif							/* WEIR_JOIN_ROWS_H */
