/*-------------------------------------------------------------------------
 *
 * dedup.c
 *	  Deduplication: which records pass, and the rows they owe the sink.
 *
 * Semantics (README "Deduplication").  A record whose key was seen within
 * the horizon is a duplicate: there is an earlier record (read before it)
 * with the same key whose event time is later than the record's event time
 * minus the horizon.  Duplicates are dropped and counted; the others are
 * kept and go to the sink.  Each key keeps one state, its last sighting t:
 * the latest event time it was seen at, duplicates included, so a record
 * is a duplicate exactly when t > its event time - horizon.  Without a
 * horizon a key, once seen, makes every later record with it a duplicate.
 *
 * With refresh_horizon false, only kept records count as sightings: t is
 * the event time of the key's last kept record (its first sighting since it
 * last left), dropped copies leave it alone, and a record is a duplicate
 * exactly when that t > its event time - horizon.  A kept record's t is at
 * least the one before + horizon, so t only grows; a copy read after a
 * kept one with an earlier event time is always a duplicate.  The chunks
 * hold t as it is, so a restore brings back the same first sighting.
 *
 * A key leaves memory when the watermark reaches t + horizon (keyed.c): no
 * record that is not late can be its duplicate any more.  A record with an
 * event time below the watermark is late (a key it might duplicate may
 * have left), and is dropped and counted as late, as with windows.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/dedup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "operator/dedup.h"
#include "operator/keyed_ops.h"
#include "operator/output.h"

typedef struct WeirDedup
{
	WeirKeyed  *keys;			/* one entry per key; t: last seen (kept) at */
	int64		horizon;		/* us of event time; 0: keys are kept forever */
	bool		refresh;		/* dropped copies are sightings too */
	WeirKeptRows kept;			/* records kept since the last checkpoint */
} WeirDedup;

/*
 * Judge one record; a kept one's column values join the pending sink rows.
 * A record the state can no longer judge (a key it matches may have left)
 * is late.
 */
static WeirApplied
dedup_apply(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	WeirDedup  *d = op->state;
	bool		created;
	dsa_pointer dp;

	if (d->horizon > 0 && r->t < watermark)
		return WEIR_LATE;
	dp = weir_keyed_enter(d->keys, r->key, r->keylen, r->keyhash, r->t, &created);
	if (!DsaPointerIsValid(dp))
		return WEIR_NO_MEMORY;
	if (!created)
	{
		WeirKeyedState *s = weir_keyed_state(d->keys, dp);
		bool		duplicate = d->horizon == 0 || s->t > r->t - d->horizon;

		/* a kept record has r->t >= s->t + horizon: it always moves t */
		if (r->t > s->t && (d->refresh || !duplicate))
		{
			s->t = r->t;
			weir_keyed_touch(d->keys, dp);
		}
		if (duplicate)
			return WEIR_DROPPED;
	}
	weir_kept_rows_add(&d->kept, r->values, r->nulls);
	return WEIR_APPLIED;
}

/* Ids past their horizon leave (their chunks follow at the next checkpoint). */
static bool
dedup_expire(WeirOperator *op, TimestampTz watermark)
{
	WeirDedup  *d = op->state;

	(void) weir_keyed_expire(d->keys, watermark);
	return false;
}

/* Sync phase: the records kept, and the chunks of the keys that changed. */
static void
dedup_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark, WeirCollected *n)
{
	WeirDedup  *d = op->state;
	WeirKeyedCollected collected;

	LWLockAcquire(op->env.lock, LW_EXCLUSIVE);
	weir_keyed_collect(d->keys, watermark, &collected);
	LWLockRelease(op->env.lock);
	weir_output_kept(op, pkg, watermark, d->kept.pending, &collected, n);
}

static bool
dedup_after_checkpoint(WeirOperator *op)
{
	WeirDedup  *d = op->state;

	weir_kept_rows_forget(&d->kept);
	(void) weir_keyed_after_checkpoint(d->keys);
	return false;
}

static int64
dedup_pending_sink_rows(WeirOperator *op)
{
	WeirDedup  *d = op->state;

	return d->kept.pending[0].n;
}

static const WeirOperatorOps dedup_ops = {
	.state_noun = "keys",
	.rows_once = true,
	.worker_bound = true,
	.apply = dedup_apply,
	.expire = dedup_expire,
	.collect = dedup_collect,
	.after_checkpoint = dedup_after_checkpoint,
	.chunks_deleted = weir_keyed_ops_chunks_deleted,
	.restore = weir_keyed_ops_restore,
	.pending_sink_rows = dedup_pending_sink_rows,
	.held_entries = weir_keyed_ops_held_entries,
};

/*
 * Per key: the latest event time it was seen at, or without refresh_horizon
 * the event time of its last kept record (WeirKeyedState.t).
 */
Size
weir_dedup_entry_state(void)
{
	return sizeof(TimestampTz);
}

void
weir_dedup_operator_init(WeirOperator *op)
{
	WeirPlan   *plan = op->env.plan;
	MemoryContext cxt = AllocSetContextCreate(op->env.cxt, "weir dedup", ALLOCSET_DEFAULT_SIZES);
	WeirDedup  *d = MemoryContextAllocZero(cxt, sizeof(WeirDedup));

	d->horizon = plan->retention;
	d->refresh = plan->refresh_horizon;
	d->keys = weir_keyed_create(plan, op->env.store, 0, weir_dedup_entry_state(),
							   plan->retention, false, cxt);
	weir_kept_rows_init(&d->kept, plan, cxt);
	op->ops = &dedup_ops;
	op->keys = d->keys;
	op->state = d;
}
