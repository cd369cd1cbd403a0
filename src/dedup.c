/*-------------------------------------------------------------------------
 *
 * dedup.c
 *	  Deduplication: which records pass, and the rows they owe the sink.
 *
 * Semantics (README "Deduplication").  A record whose id was seen within
 * the horizon is a duplicate: there is an earlier record (read before it)
 * with the same id whose event time is later than the record's event time
 * minus the horizon.  Duplicates are dropped and counted; the others are
 * kept and go to the sink.  Each id keeps one state, its last sighting t:
 * the latest event time it was seen at, duplicates included, so a record
 * is a duplicate exactly when t > its event time - horizon.  Without a
 * horizon an id, once seen, makes every later record with it a duplicate.
 *
 * An id leaves memory when the watermark reaches t + horizon (keyed.c): no
 * record that is not late can be its duplicate any more.  A record with an
 * event time below the watermark is late (an id it might duplicate may
 * have left), and is dropped and counted as late, as with windows.
 *
 * A projection (a stateless stage) runs through the same code without ids:
 * every record that passes the filter is kept.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/dedup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/memutils.h"

#include "dedup.h"

WeirDedup *
weir_dedup_create(WeirPlan *plan, WeirWindowStore *store, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir dedup", ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	WeirDedup  *d = palloc0(sizeof(WeirDedup));

	d->plan = plan;
	d->horizon = plan->retention;
	/* a projection keeps every record: no ids */
	if (plan->op == WEIR_OP_DEDUP)
		d->ids = weir_keyed_create(plan, store, 0, plan->state_size, plan->retention,
								   false, cxt);
	d->pending_cxt = AllocSetContextCreate(cxt, "weir dedup pending rows",
										   ALLOCSET_DEFAULT_SIZES);
	d->column_types = palloc(sizeof(WeirColumn) * Max(plan->ncolumns, 1));
	for (int i = 0; i < plan->ncolumns; i++)
		weir_column_init(&d->column_types[i], plan->columns[i].type);
	MemoryContextSwitchTo(oldcxt);
	/* the arrays outlive each checkpoint's rows (their by-reference values: pending_cxt) */
	d->pending = weir_columns_like(d->column_types, plan->ncolumns, cxt);
	return d;
}

/* A record the state can no longer judge: an id it matches may have left. */
bool
weir_dedup_is_late(WeirDedup *d, TimestampTz t, TimestampTz watermark)
{
	return d->horizon > 0 && t < watermark;
}

/*
 * Judge one record; a kept one's column values join the pending sink rows.
 * Returns false if state memory ran out (store->out_of_memory).
 */
bool
weir_dedup_apply(WeirDedup *d, const char *id, uint32 idlen, uint32 idhash,
				 TimestampTz t, Datum *values, bool *nulls, bool *duplicate)
{
	bool		created = true;
	dsa_pointer dp = InvalidDsaPointer;
	MemoryContext oldcxt;

	if (d->ids)
	{
		dp = weir_keyed_enter(d->ids, id, idlen, idhash, t, &created);
		if (!DsaPointerIsValid(dp))
			return false;
	}
	if (created)
		*duplicate = false;
	else
	{
		WeirKeyedState *s = weir_keyed_state(d->ids, dp);

		*duplicate = d->horizon == 0 || s->t > t - d->horizon;
		if (t > s->t)
		{
			s->t = t;
			weir_keyed_touch(d->ids, dp);
		}
	}
	if (*duplicate)
		return true;

	oldcxt = MemoryContextSwitchTo(d->pending_cxt);
	for (int i = 0; i < d->plan->ncolumns; i++)
	{
		WeirColumnSpec *c = &d->plan->columns[i];

		weir_column_add(&d->pending[i],
						nulls[i] ? (Datum) 0 : datumCopy(values[i], c->typbyval, c->typlen),
						nulls[i]);
	}
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/* After a checkpoint committed the pending rows. */
void
weir_dedup_forget_pending(WeirDedup *d)
{
	MemoryContextReset(d->pending_cxt);
	weir_columns_clear(d->pending, d->plan->ncolumns);
}
