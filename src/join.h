/*-------------------------------------------------------------------------
 *
 * join.h
 *	  Interval join of two topics: both sides' rows buffered per key in the
 *	  pipeline's DSA area (over keyed.h), until no match is possible.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/join.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_JOIN_H
#define WEIR_JOIN_H

#include "columns.h"
#include "keyed.h"
#include "row_arena.h"

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

typedef struct WeirJoin
{
	WeirPlan   *plan;			/* the left side's; plan->right the right's */
	WeirWindowStore *store;
	WeirKeyed  *keys;			/* one entry per key: both sides' rows */
	WeirRowArena arenas[2];		/* per side: the rows' memory (a side's rows
								 * leave in about arrival order) */
	int64		bound[2];		/* a row can match until t + bound[side] */
	TimestampTz watermark;		/* as of the last apply or drain */

	/* joined rows since the last checkpoint: the sink's next rows */
	MemoryContext pending_cxt;
	WeirColumn *pending;		/* [plan->nsinkcols] */
	WeirColumn *column_types;

	/* a buffered row's values, read back to emit a pair; the record's own */
	Datum	   *theirs;
	bool	   *their_nulls;
	Datum	   *own;
} WeirJoin;

extern WeirJoin *weir_join_create(WeirPlan *plan, WeirWindowStore *store,
								  MemoryContext parent);
extern bool weir_join_is_late(WeirJoin *j, TimestampTz t, TimestampTz watermark);
extern bool weir_join_apply(WeirJoin *j, int side, const char *key, uint32 keylen,
							uint32 keyhash, TimestampTz t, Datum *values, bool *nulls,
							TimestampTz watermark, int64 *matches);
extern void weir_join_expire(WeirJoin *j, TimestampTz watermark);
extern void weir_join_drain(WeirJoin *j, TimestampTz watermark);
extern void weir_join_forget_pending(WeirJoin *j);

#endif							/* WEIR_JOIN_H */
