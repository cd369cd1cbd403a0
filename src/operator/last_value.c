/*-------------------------------------------------------------------------
 *
 * last_value.c
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
 *	  src/operator/last_value.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/memutils.h"

#include "definition/key_image.h"
#include "operator/keyed_ops.h"
#include "operator/last_value.h"
#include "operator/output.h"

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
 * Offer one row to its key: it is dropped if it is not the newest (it lost
 * to a row already seen), late if its key may have expired already.
 */
static WeirApplied
last_value_apply(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	WeirLastValue *lv = op->state;
	bool		created;
	dsa_pointer dp;
	WeirKeyedState *s;
	MemoryContext oldcxt;
	int			ncols = lv->plan->ncolumns;
	int			row;

	if (lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(watermark) && r->t + lv->ttl <= watermark)
		return WEIR_LATE;
	dp = weir_keyed_enter(lv->keys, r->key, r->keylen, r->keyhash, r->t, &created);
	if (!DsaPointerIsValid(dp))
		return WEIR_NO_MEMORY;
	s = weir_keyed_state(lv->keys, dp);
	if (created)
		s->pending = -1;
	else if (!(r->t > s->t ||
			   (r->t == s->t && (r->part > s->part ||
								 (r->part == s->part && r->position > s->pos)))))
		return WEIR_DROPPED;	/* superseded */
	s->t = r->t;
	s->part = r->part;
	s->pos = r->position;
	weir_keyed_touch(lv->keys, dp);
	if (s->pending < 0)
		s->pending = new_pending(lv, dp);
	row = s->pending;

	oldcxt = MemoryContextSwitchTo(lv->pending_cxt);
	for (int i = 0; i < ncols; i++)
	{
		WeirColumnSpec *c = &lv->plan->columns[i];

		lv->pending_nulls[row * ncols + i] = r->nulls[i];
		lv->pending_values[row * ncols + i] = r->nulls[i] ? (Datum) 0 :
			datumCopy(r->values[i], c->typbyval, c->typlen);
	}
	MemoryContextSwitchTo(oldcxt);
	return WEIR_APPLIED;
}

/* Expired keys owe the sink a deletion. */
static bool
last_value_expire(WeirOperator *op, TimestampTz watermark)
{
	WeirLastValue *lv = op->state;

	return weir_keyed_expire(lv->keys, watermark) > 0;
}

/*
 * Sync phase: the newest row of each key that changed, the keys that
 * expired (their rows deleted first), and the changed entries' chunk.
 */
static void
last_value_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark,
				   WeirCollected *n)
{
	WeirLastValue *lv = op->state;
	WeirPlan   *plan = lv->plan;
	int			ncols = plan->ncolumns;
	Datum	   *keyvals = palloc(sizeof(Datum) * plan->nkeys);
	ListCell   *lc;
	WeirSinkRows fresh;			/* keys new since the last checkpoint: inserted */
	WeirSinkRows changed;		/* keys whose row is in the sink: upserted */
	WeirColumn *gone;			/* keys that expired: their rows deleted */
	WeirColumn **gone_list;
	WeirKeyedCollected collected;

	weir_sink_rows_init(&fresh, plan);
	weir_sink_rows_init(&changed, plan);
	gone = palloc(sizeof(WeirColumn) * Max(plan->nkeys, 1));
	gone_list = palloc(sizeof(WeirColumn *) * Max(plan->nkeys, 1));
	for (int i = 0; i < plan->nkeys; i++)
	{
		weir_column_init(&gone[i], plan->keys[i].type);
		gone_list[i] = &gone[i];
	}
	LWLockAcquire(op->env.lock, LW_EXCLUSIVE);

	/*
	 * Every key expired by now goes in this checkpoint, sink row and all: a
	 * restore skips them (those that changed since the last checkpoint go
	 * right after it, and a restore deletes their rows: keyed.c).
	 */
	(void) weir_keyed_expire_exact(lv->keys, watermark);
	for (int r = 0; r < lv->npending; r++)
	{
		WeirEntry *win = weir_entry_at(op->env.store, lv->pending_entry[r]);
		WeirKeyedState *s = weir_keyed_state(lv->keys, lv->pending_entry[r]);
		WeirSinkRows *rows = (weir_entry_flags(win) & WEIR_ENTRY_EMITTED) ? &changed : &fresh;

		s->pending = -1;
		weir_key_image_decode(plan, weir_entry_key(win), keyvals);
		if (lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(watermark) && s->t + lv->ttl <= watermark)
		{
			/* expired already: its row goes (if it was written), not comes */
			if (weir_entry_flags(win) & WEIR_ENTRY_EMITTED)
				for (int i = 0; i < plan->nkeys; i++)
					weir_column_add(&gone[i], keyvals[i], false);
			weir_entry_clear_flags(win, WEIR_ENTRY_EMITTED);
			continue;
		}
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&rows->cols[i], keyvals[i], false);
		for (int i = 0; i < ncols; i++)
			weir_column_add(&rows->cols[plan->nkeys + i], lv->pending_values[r * ncols + i],
							lv->pending_nulls[r * ncols + i]);
		weir_entry_set_flags(win, WEIR_ENTRY_EMITTED);
	}
	weir_keyed_collect(lv->keys, watermark, &collected);
	LWLockRelease(op->env.lock);
	foreach(lc, lv->keys->removed)
	{
		bytea	   *key = lfirst(lc);

		weir_key_image_decode(plan, VARDATA(key), keyvals);
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&gone[i], keyvals[i], false);
	}
	weir_output_deletes(pkg, gone_list, plan->nkeys);
	weir_output_rows(op, pkg, WEIR_PKG_SINK_INSERT, &fresh);
	weir_output_rows(op, pkg, WEIR_PKG_SINK_UPSERT, &changed);
	weir_keyed_package(lv->keys, pkg, watermark, &collected);
	n->sink_rows = fresh.cols[0].n + changed.cols[0].n;
	n->state_rows = collected.entries;
	n->bytes = collected.bytes;
}

/*
 * The checkpoint committed the pending rows (their entries' pending were
 * reset) and the keys removed; what expired while waiting for it goes.
 */
static bool
last_value_after_checkpoint(WeirOperator *op)
{
	WeirLastValue *lv = op->state;

	MemoryContextReset(lv->pending_cxt);
	init_pending(lv);
	weir_keyed_forget_removed(lv->keys);
	(void) weir_keyed_after_checkpoint(lv->keys);
	return false;
}

static int64
last_value_pending_sink_rows(WeirOperator *op)
{
	WeirLastValue *lv = op->state;

	return lv->npending;
}

/*
 * A key's row is written again at every checkpoint it changed before, so
 * more checkpoints write more rows: not rows_once.
 */
static const WeirOperatorOps last_value_ops = {
	.state_noun = "keys",
	.rows_once = false,
	.worker_bound = true,
	.apply = last_value_apply,
	.expire = last_value_expire,
	.collect = last_value_collect,
	.after_checkpoint = last_value_after_checkpoint,
	.chunks_deleted = weir_keyed_ops_chunks_deleted,
	.restore = weir_keyed_ops_restore,
	.pending_sink_rows = last_value_pending_sink_rows,
	.held_entries = weir_keyed_ops_held_entries,
};

/* Per key: the newest row's event time, partition and position. */
Size
weir_last_value_entry_state(void)
{
	return sizeof(WeirKeyedState);
}

void
weir_last_value_operator_init(WeirOperator *op)
{
	WeirPlan   *plan = op->env.plan;
	MemoryContext cxt = AllocSetContextCreate(op->env.cxt, "weir last value",
											  ALLOCSET_DEFAULT_SIZES);
	WeirLastValue *lv = MemoryContextAllocZero(cxt, sizeof(WeirLastValue));

	lv->plan = plan;
	lv->ttl = plan->retention;
	/* keys that expire lose their sink row: keep them until the checkpoint */
	lv->keys = weir_keyed_create(plan, op->env.store, 0, weir_last_value_entry_state(),
								 plan->retention, true, cxt);
	lv->pending_cxt = AllocSetContextCreate(cxt, "weir last value pending rows",
											ALLOCSET_DEFAULT_SIZES);
	init_pending(lv);
	op->ops = &last_value_ops;
	op->keys = lv->keys;
	op->state = lv;
}
