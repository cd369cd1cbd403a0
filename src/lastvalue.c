/*-------------------------------------------------------------------------
 *
 * lastvalue.c
 *	  Last value per key: which row is the newest, and the rows owed to the
 *	  sink.
 *
 * Semantics (README "Last value per key").  The newest row of a key is the
 * one with the greatest event time; among equal event times, the greatest
 * partition, then the greatest position.  That order depends only on the
 * topic's contents, not on the order weir reads them in, so the sink equals
 *	SELECT DISTINCT ON (key) ... ORDER BY key, t DESC, part DESC, pos DESC
 * At each checkpoint the keys whose newest row changed are upserted into
 * the sink.  With a ttl, a key leaves memory when the watermark reaches its
 * newest event time + ttl (keyed.c), and its sink row is deleted at the
 * next checkpoint; a record whose event time + ttl is at or below the
 * watermark is late (its key may have left), dropped and counted as late.
 *
 * Each key's entry remembers, while it has one, the index of its row among
 * the pending rows (WeirKeyedState.pending), so a key that changes many
 * times between two checkpoints owes the sink one row.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/lastvalue.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/memutils.h"

#include "lastvalue.h"

static void
init_pending(WeirLastValue *lv)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(lv->pending_cxt);
	int			ncols = Max(lv->plan->ncolumns, 1);

	lv->npending = 0;
	lv->pending_cap = 1024;
	lv->pending_entry = palloc(sizeof(dsa_pointer) * lv->pending_cap);
	lv->pending_values = palloc(sizeof(Datum) * lv->pending_cap * ncols);
	lv->pending_nulls = palloc(sizeof(bool) * lv->pending_cap * ncols);
	MemoryContextSwitchTo(oldcxt);
}

WeirLastValue *
weir_last_value_create(WeirPlan *plan, WeirWindowStore *store, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir last value",
											  ALLOCSET_DEFAULT_SIZES);
	WeirLastValue *lv = MemoryContextAllocZero(cxt, sizeof(WeirLastValue));

	lv->plan = plan;
	lv->ttl = plan->retention;
	/* keys that expire lose their sink row: keep them until the checkpoint */
	lv->keys = weir_keyed_create(plan, store, 0, plan->state_size, plan->retention,
								 true, cxt);
	lv->pending_cxt = AllocSetContextCreate(cxt, "weir last value pending rows",
											ALLOCSET_DEFAULT_SIZES);
	init_pending(lv);
	return lv;
}

/* A record whose key may have expired already. */
bool
weir_last_value_is_late(WeirLastValue *lv, TimestampTz t, TimestampTz watermark)
{
	return lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(watermark) && t + lv->ttl <= watermark;
}

static int
new_pending(WeirLastValue *lv, dsa_pointer dp)
{
	int			ncols = Max(lv->plan->ncolumns, 1);

	if (lv->npending == lv->pending_cap)
	{
		lv->pending_cap *= 2;
		lv->pending_entry = repalloc_huge(lv->pending_entry,
										  sizeof(dsa_pointer) * lv->pending_cap);
		lv->pending_values = repalloc_huge(lv->pending_values,
										   sizeof(Datum) * lv->pending_cap * ncols);
		lv->pending_nulls = repalloc_huge(lv->pending_nulls,
										  sizeof(bool) * lv->pending_cap * ncols);
	}
	lv->pending_entry[lv->npending] = dp;
	return lv->npending++;
}

/*
 * Offer one row to its key.  *superseded: it is not the newest (it lost to
 * a row already seen).  Returns false if state memory ran out.
 */
bool
weir_last_value_apply(WeirLastValue *lv, const char *key, uint32 keylen,
					  uint32 keyhash, TimestampTz t, int32 part, int64 pos, Datum *values,
					  bool *nulls, bool *superseded)
{
	bool		created;
	dsa_pointer dp = weir_keyed_enter(lv->keys, key, keylen, keyhash, t, &created);
	WeirKeyedState *s;
	MemoryContext oldcxt;
	int			ncols = lv->plan->ncolumns;
	int			row;

	if (!DsaPointerIsValid(dp))
		return false;
	s = weir_keyed_state(lv->keys, dp);
	if (created)
		s->pending = -1;
	*superseded = !created &&
		!(t > s->t || (t == s->t && (part > s->part || (part == s->part && pos > s->pos))));
	if (*superseded)
		return true;
	s->t = t;
	s->part = part;
	s->pos = pos;
	weir_keyed_touch(lv->keys, dp);
	if (s->pending < 0)
		s->pending = new_pending(lv, dp);
	row = s->pending;

	oldcxt = MemoryContextSwitchTo(lv->pending_cxt);
	for (int i = 0; i < ncols; i++)
	{
		WeirColumnSpec *c = &lv->plan->columns[i];

		lv->pending_nulls[row * ncols + i] = nulls[i];
		lv->pending_values[row * ncols + i] = nulls[i] ? (Datum) 0 :
			datumCopy(values[i], c->typbyval, c->typlen);
	}
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/* After a checkpoint committed the pending rows (their entries' pending were reset). */
void
weir_last_value_forget_pending(WeirLastValue *lv)
{
	MemoryContextReset(lv->pending_cxt);
	init_pending(lv);
}
