/*-------------------------------------------------------------------------
 *
 * lastvalue.h
 *	  Last value per key: the newest row of each key, over keyed state
 *	  (keyed.h), and the rows changed since the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/lastvalue.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_LASTVALUE_H
#define WEIR_LASTVALUE_H

#include "keyed.h"

typedef struct WeirLastValue
{
	WeirPlan   *plan;
	WeirKeyed  *keys;			/* one entry per key: its newest row's t, part, pos */
	int64		ttl;			/* us of event time; 0: keys are kept forever */

	/* the newest row of each key changed since the last checkpoint */
	MemoryContext pending_cxt;
	int			npending;
	int			pending_cap;
	dsa_pointer *pending_entry; /* [pending_cap]: its key's entry */
	Datum	   *pending_values; /* [pending_cap * plan->ncolumns] */
	bool	   *pending_nulls;
} WeirLastValue;

extern WeirLastValue *weir_last_value_create(WeirPlan *plan, WeirWindowStore *store,
											 MemoryContext parent);
extern bool weir_last_value_is_late(WeirLastValue *lv, TimestampTz t,
									TimestampTz watermark);
extern bool weir_last_value_apply(WeirLastValue *lv, const char *key, uint32 keylen,
								  uint32 keyhash, TimestampTz t, int32 part, int64 pos,
								  Datum *values, bool *nulls, bool *superseded);
extern void weir_last_value_forget_pending(WeirLastValue *lv);

#endif							/* WEIR_LASTVALUE_H */
