/*-------------------------------------------------------------------------
 *
 * dedup.h
 *	  Deduplication: which records pass, over keyed state (keyed.h), and
 *	  the records kept since the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/dedup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEDUP_H
#define WEIR_DEDUP_H

#include "columns.h"
#include "keyed.h"

typedef struct WeirDedup
{
	WeirPlan   *plan;
	WeirKeyed  *ids;			/* one entry per id; t: last seen at */
	int64		horizon;		/* us of event time; 0: ids are kept forever */

	/* records kept since the last checkpoint: the sink's next rows */
	MemoryContext pending_cxt;
	WeirColumn *pending;		/* [plan->ncolumns] */
	WeirColumn *column_types;	/* [plan->ncolumns]: their types, resolved once */
} WeirDedup;

extern WeirDedup *weir_dedup_create(WeirPlan *plan, WeirWindowStore *store,
									MemoryContext parent);
extern bool weir_dedup_is_late(WeirDedup *d, TimestampTz t, TimestampTz watermark);
extern bool weir_dedup_apply(WeirDedup *d, const char *id, uint32 idlen,
							 uint32 idhash, TimestampTz t, Datum *values,
							 bool *nulls, bool *duplicate);
extern void weir_dedup_forget_pending(WeirDedup *d);

#endif							/* WEIR_DEDUP_H */
