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
 * Over a change topic (README "Change topics") each row has an operation.
 * Inserts and updates ('I', 'U') are rows as above; an update's before
 * image and a delete ('B', 'D') are rows too, in the same order, whose
 * newest makes the key deleted: its entry stays as a tombstone (keyed.h),
 * so that an older row read later does not bring it back, and its sink row
 * is deleted at the checkpoint.  A before image followed by the update of
 * the same key (the key did not change) is a delete and then a newer row:
 * the key is there again.  Without a ttl a tombstone leaves memory when the
 * watermark passes its time, so a row of a key that is not in memory and
 * is older than the watermark is late (with a ttl, as any key).  A delete
 * of a key not in memory deletes the sink's row anyway (a sink loaded with
 * a snapshot of the table stays right).  A truncate ('T', one per
 * partition) deletes every key whose newest row came from its partition.
 * An update's columns that keep the sink's value (unchanged TOASTed
 * values, reading.c) take the value the key's pending row has, if it has
 * one, else are written so that the sink keeps its value
 * (WEIR_PKG_SINK_UPSERT_KEEPING; a row not in the sink is inserted with
 * NULL there).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/last_value.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "definition/change_topic.h"
#include "definition/key_image.h"
#include "operator/keyed_ops.h"
#include "operator/last_value.h"
#include "operator/output.h"

typedef struct WeirLastValue
{
	WeirPlan   *plan;
	WeirKeyed  *keys;			/* one entry per key: its newest row's t, part, pos */
	int64		ttl;			/* us of event time; 0: keys are kept forever */
	bool		changes;		/* the source is a change topic */

	/* the newest row of each key changed since the last checkpoint */
	MemoryContext pending_cxt;
	int			npending;
	int			pending_cap;
	dsa_pointer *pending_entry; /* [pending_cap]: its key's entry */
	Datum	   *pending_values; /* [pending_cap * plan->ncolumns] */
	bool	   *pending_nulls;
	bool	   *pending_kept;	/* as pending_nulls: keeps the sink's value */
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
	lv->pending_kept = palloc(sizeof(bool) * lv->pending_cap * ncols);
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
		lv->pending_kept = repalloc_huge(lv->pending_kept,
										 sizeof(bool) * lv->pending_cap * ncols);
	}
	lv->pending_entry[lv->npending] = dp;
	for (int i = 0; i < ncols; i++)
	{
		/* none yet: a truncate's row has no values */
		lv->pending_nulls[lv->npending * ncols + i] = true;
		lv->pending_kept[lv->npending * ncols + i] = false;
	}
	return lv->npending++;
}

/*
 * A truncate of the table ('T'): every key whose newest row came from its
 * partition is deleted, as if by a delete at the truncate's position (and
 * at least its own time).  Rows of the partition are applied in position
 * order, so every such row is older.
 */
static WeirApplied
truncate_partition(WeirLastValue *lv, WeirOperator *op, const WeirRecord *r)
{
	WeirStoreIter iter;
	WeirEntry  *w;

	weir_store_iter_init(&iter, op->env.store);
	while ((w = weir_store_iter_next(&iter)) != NULL)
	{
		dsa_pointer dp = iter.current;
		WeirKeyedState *s = weir_keyed_state(lv->keys, dp);

		if (s->part != r->part || (s->flags & WEIR_KEYED_DELETED))
			continue;
		s->t = Max(s->t, r->t);
		s->pos = r->position;
		weir_keyed_touch(lv->keys, dp);
		weir_keyed_set_deleted(lv->keys, dp, true);
		if (s->pending < 0)
			s->pending = new_pending(lv, dp);
	}
	return WEIR_APPLIED;
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
	bool		removes = weir_change_op_removes(r->op);
	bool		had_row;
	dsa_pointer dp;
	WeirKeyedState *s;
	MemoryContext oldcxt;
	int			ncols = lv->plan->ncolumns;
	int			row;

	if (r->op == WEIR_CHANGE_OP_TRUNCATE)
		return truncate_partition(lv, op, r);
	if (lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(watermark) && r->t + lv->ttl <= watermark)
		return WEIR_LATE;
	/*
	 * Without a ttl, a deleted key that left memory (a tombstone) was older
	 * than the watermark, so a row that is too may be older than it (with a
	 * ttl, tombstones stay as long as keys: the test above is enough).
	 */
	if (lv->changes && lv->ttl == 0 && !TIMESTAMP_NOT_FINITE(watermark) && r->t < watermark &&
		!DsaPointerIsValid(weir_store_find(op->env.store, lv->keys->space, r->key, r->keylen, r->keyhash,
										   false, &created)))
		return WEIR_LATE;
	dp = weir_keyed_enter(lv->keys, r->key, r->keylen, r->keyhash, r->t, &created);
	if (!DsaPointerIsValid(dp))
		return WEIR_NO_MEMORY;
	s = weir_keyed_state(lv->keys, dp);
	if (created)
	{
		s->pending = -1;
		/* the sink may hold a row of a key weir has not seen: it goes */
		if (removes)
			weir_entry_set_flags(weir_entry_at(op->env.store, dp), WEIR_ENTRY_EMITTED);
	}
	else if (!(r->t > s->t ||
			   (r->t == s->t && (r->part > s->part ||
								 (r->part == s->part && r->position > s->pos)))))
		return WEIR_DROPPED;	/* superseded */
	s->t = r->t;
	s->part = r->part;
	s->pos = r->position;
	weir_keyed_touch(lv->keys, dp);
	if (lv->changes)
		weir_keyed_set_deleted(lv->keys, dp, removes);
	had_row = s->pending >= 0;
	if (!had_row)
		s->pending = new_pending(lv, dp);
	row = s->pending;

	/*
	 * Its values (a removal's too: an update that follows it may keep some
	 * of them); a column an update left unchanged keeps what the pending
	 * row has, or else the sink's value.
	 */
	oldcxt = MemoryContextSwitchTo(lv->pending_cxt);
	for (int i = 0; i < ncols; i++)
	{
		WeirColumnSpec *c = &lv->plan->columns[i];
		int			at = row * ncols + i;

		if (r->kept && r->kept[i])
		{
			if (!had_row)
				lv->pending_kept[at] = true;
			continue;
		}
		lv->pending_kept[at] = false;
		lv->pending_nulls[at] = r->nulls[i];
		lv->pending_values[at] = r->nulls[i] ? (Datum) 0 :
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
 * Rows some of whose columns keep the sink's value: the sink's columns,
 * then a text of a character per sink column, 'k' for those
 * (WEIR_PKG_SINK_UPSERT_KEEPING).
 */
static WeirColumn *
keeping_columns(WeirPlan *plan)
{
	WeirColumn *cols = palloc(sizeof(WeirColumn) * (plan->nsinkcols + 1));

	for (int i = 0; i < plan->nsinkcols; i++)
		weir_column_init(&cols[i], plan->sinkcols[i].type);
	weir_column_init(&cols[plan->nsinkcols], TEXTOID);
	return cols;
}

/*
 * Sync phase: the newest row of each key that changed, the keys that
 * expired or were deleted (their rows deleted first), and the changed
 * entries' chunk.
 */
static void
last_value_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark,
				   WeirCollected *n)
{
	WeirLastValue *lv = op->state;
	WeirPlan   *plan = lv->plan;
	int			ncols = plan->ncolumns;
	Datum	   *keyvals = palloc(sizeof(Datum) * plan->nkeys);
	char	   *kept = palloc(plan->nsinkcols + 1);
	ListCell   *lc;
	WeirSinkRows fresh;			/* keys new since the last checkpoint: inserted */
	WeirSinkRows changed;		/* keys whose row is in the sink: upserted */
	WeirColumn *keeping;		/* rows keeping some of the sink's values */
	WeirColumn *gone;			/* keys that expired or were deleted: their
								 * rows deleted */
	WeirColumn **gone_list;
	WeirKeyedCollected collected;

	weir_sink_rows_init(&fresh, plan);
	weir_sink_rows_init(&changed, plan);
	keeping = keeping_columns(plan);
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
		bool		keeps = false;

		s->pending = -1;
		weir_key_image_decode(plan, weir_entry_key(win), keyvals);
		if ((lv->changes && (s->flags & WEIR_KEYED_DELETED)) ||
			(lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(watermark) && s->t + lv->ttl <= watermark))
		{
			/* deleted, or expired already: its row goes (if it was written), not comes */
			if (weir_entry_flags(win) & WEIR_ENTRY_EMITTED)
				for (int i = 0; i < plan->nkeys; i++)
					weir_column_add(&gone[i], keyvals[i], false);
			weir_entry_clear_flags(win, WEIR_ENTRY_EMITTED);
			continue;
		}
		for (int i = 0; i < ncols; i++)
			keeps |= lv->pending_kept[r * ncols + i];
		if (keeps)
		{
			/* whether in the sink or not: the upsert that keeps inserts too */
			for (int i = 0; i < plan->nkeys; i++)
			{
				weir_column_add(&keeping[i], keyvals[i], false);
				kept[i] = '.';
			}
			for (int i = 0; i < ncols; i++)
			{
				weir_column_add(&keeping[plan->nkeys + i], lv->pending_values[r * ncols + i],
								lv->pending_nulls[r * ncols + i] ||
								lv->pending_kept[r * ncols + i]);
				kept[plan->nkeys + i] = lv->pending_kept[r * ncols + i] ? 'k' : '.';
			}
			kept[plan->nsinkcols] = '\0';
			weir_column_add(&keeping[plan->nsinkcols], CStringGetTextDatum(kept), false);
			weir_entry_set_flags(win, WEIR_ENTRY_EMITTED);
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
	if (keeping[0].n > 0)
		weir_package_add_columns(pkg, WEIR_PKG_SINK_UPSERT_KEEPING, InvalidOid, keeping,
								 plan->nsinkcols + 1);
	weir_keyed_package(lv->keys, pkg, watermark, &collected);
	n->sink_rows = fresh.cols[0].n + changed.cols[0].n + keeping[0].n;
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

/*
 * Per key: the newest row's event time, partition and position; over a
 * change topic also its flags (a tombstone: keyed.h).  Over an ordinary
 * topic the layout chunks had before change topics.
 */
Size
weir_last_value_entry_state(WeirPlan *plan)
{
	return plan->change_op ? sizeof(WeirKeyedState) : WEIR_KEYED_STATE_PLAIN;
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
	lv->changes = plan->change_op != NULL;
	/* keys that expire lose their sink row: keep them until the checkpoint */
	lv->keys = weir_keyed_create(plan, op->env.store, 0, weir_last_value_entry_state(plan),
								 plan->retention, true, cxt);
	lv->keys->tombstones = lv->changes;
	lv->pending_cxt = AllocSetContextCreate(cxt, "weir last value pending rows",
											ALLOCSET_DEFAULT_SIZES);
	init_pending(lv);
	op->ops = &last_value_ops;
	op->keys = lv->keys;
	op->state = lv;
}
