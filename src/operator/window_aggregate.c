/*-------------------------------------------------------------------------
 *
 * window_aggregate.c
 *	  The window aggregate operator: records into the aggregate states of
 *	  their key's tumbling, hopping or session windows; a window fires when
 *	  the watermark reaches its end (its row goes to the sink at the next
 *	  checkpoint), takes late records until the watermark passes its end +
 *	  allowed lateness (its row written again), and then leaves memory.
 *
 * The windows themselves and their firing are window.c's, their memory
 * and index the store's (store.c), their checkpoint chunks
 * window_chunks.c's.  This file is what the worker asks of them
 * (operator.h).
 *
 * Over a change topic (plan->retract; README "Change topics"), inserts and
 * updates add their row to its windows, before images and deletes take it
 * back (weir_agg_retract), and each window counts the rows it holds
 * (plan->rows_offset).  A window whose rows all went is no row of the
 * sink, as GROUP BY has no group without rows: it is not written, and its
 * row, if written already, is deleted.  A row taken back from a window
 * that does not hold one like it is refused (a dead letter): the change
 * topic does not match what was read (a before image without its row,
 * values that differ).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/window_aggregate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/timestamp.h"

#include "definition/aggregate.h"
#include "definition/change_topic.h"
#include "definition/key_image.h"
#include "operator/output.h"
#include "operator/window_aggregate.h"
#include "state/window.h"
#include "state/window_chunks.h"

typedef struct WindowOperator
{
	WeirWindows *windows;		/* the open windows, over the store */
	WeirWindowChunks chunks;	/* the windows' checkpoint chunks */
	int64		fired_since;	/* windows fired since the last checkpoint */
	int64		close_margin;	/* a window has closed for good when its end
								 * + this is at or below the watermark
								 * (weir_window_margin) */
} WindowOperator;

/* One row's arguments into a window's aggregate states. */
static inline void
accumulate(WeirPlan *plan, char *states, Datum *values, bool *nulls)
{
	for (int i = 0; i < plan->naggs; i++)
	{
		WeirAggSpec *agg = &plan->aggs[i];

		if (agg->kind == WEIR_AGG_GENERIC)
			weir_agg_generic_accum(agg, states, &values[agg->argoffset],
								   &nulls[agg->argoffset]);
		else
			weir_agg_accum(agg, states, values[agg->argoffset], nulls[agg->argoffset]);
	}
}

/* The rows a window holds (plan->retract), by its states. */
static inline int64 *
window_rows(WeirPlan *plan, char *states)
{
	return (int64 *) (states + plan->rows_offset);
}

/* One row's arguments taken back out of a window's aggregate states. */
static inline void
take_back(WeirPlan *plan, char *states, Datum *values, bool *nulls)
{
	for (int i = 0; i < plan->naggs; i++)
	{
		WeirAggSpec *agg = &plan->aggs[i];

		weir_agg_retract(agg, states, values[agg->argoffset], nulls[agg->argoffset]);
	}
	(*window_rows(plan, states))--;
}

/* Whether a window's states hold a row like this one, to take back. */
static inline bool
can_take_back(WeirPlan *plan, char *states, Datum *values, bool *nulls)
{
	if (*window_rows(plan, states) <= 0)
		return false;
	for (int i = 0; i < plan->naggs; i++)
	{
		WeirAggSpec *agg = &plan->aggs[i];

		if (!weir_agg_can_retract(agg, states, values[agg->argoffset], nulls[agg->argoffset]))
			return false;
	}
	return true;
}

/*
 * A before image or a delete (plan->retract): its row out of each window
 * it falls in that has not closed for good, all of them or none.
 */
static WeirApplied
window_take_back(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	WindowOperator *wo = op->state;
	WeirPlan   *plan = op->env.plan;
	WeirStore  *store = op->env.store;
	TimestampTz starts[WEIR_MAX_HOPS];
	WeirEntry  *wins[WEIR_MAX_HOPS];
	int			nstarts = weir_window_assign(&plan->windowing, r->t, starts, WEIR_MAX_HOPS);
	int			nwins = 0;

	for (int s = 0; s < nstarts; s++)
	{
		bool		created;
		dsa_pointer dp;

		if (starts[s] + plan->windowing.size + wo->close_margin <= watermark)
			continue;			/* this window has closed for good */
		dp = weir_store_find(store, starts[s], r->key, r->keylen, r->keyhash, false, &created);
		if (!DsaPointerIsValid(dp) ||
			!can_take_back(plan, weir_entry_states(store->root, weir_entry_at(store, dp)),
						   r->values, r->nulls))
		{
			op->refused = psprintf("change_op '%c' takes back a row that its window starting at %s does not hold",
								   r->op, timestamptz_to_str(starts[s]));
			return WEIR_REFUSED;
		}
		wins[nwins++] = weir_entry_at(store, dp);
	}
	for (int i = 0; i < nwins; i++)
	{
		take_back(plan, weir_entry_states(store->root, wins[i]), r->values, r->nulls);
		weir_entry_set_flags(wins[i], WEIR_ENTRY_DIRTY);
		if ((weir_entry_flags(wins[i]) & WEIR_ENTRY_FIRED) || op->env.emit_updates)
			weir_entry_set_flags(wins[i], WEIR_ENTRY_SINK_DIRTY);
	}
	return nwins > 0 ? WEIR_APPLIED : WEIR_LATE;
}

/* A record into each window it falls in that has not closed for good. */
static WeirApplied
window_apply(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	WindowOperator *wo = op->state;
	WeirPlan   *plan = op->env.plan;
	WeirStore  *store = op->env.store;
	TimestampTz starts[WEIR_MAX_HOPS];
	int			nstarts;
	bool		placed = false;

	if (plan->retract && weir_change_op_removes(r->op))
		return window_take_back(op, r, watermark);
	if (plan->windowing.kind == WEIR_WINDOW_SESSION)
	{
		WeirEntry  *win = weir_session_place(wo->windows, r->key, r->keylen, r->t,
											 watermark, op->env.lateness);

		if (win == NULL)
			return store->out_of_memory ? WEIR_NO_MEMORY : WEIR_LATE;
		accumulate(plan, weir_entry_states(store->root, win), r->values, r->nulls);
		if ((weir_entry_flags(win) & WEIR_ENTRY_FIRED) || op->env.emit_updates)
			weir_entry_set_flags(win, WEIR_ENTRY_SINK_DIRTY);
		return WEIR_APPLIED;
	}
	nstarts = weir_window_assign(&plan->windowing, r->t, starts, WEIR_MAX_HOPS);
	for (int s = 0; s < nstarts; s++)
	{
		TimestampTz end = starts[s] + plan->windowing.size;
		WeirEntry *win;
		bool		created;

		if (end + wo->close_margin <= watermark)
			continue;			/* this window has closed for good */
		win = weir_window_lookup_hashed(wo->windows, starts[s], end, r->key, r->keylen,
										r->keyhash, &created);
		if (win == NULL)
			return WEIR_NO_MEMORY;
		accumulate(plan, weir_entry_states(store->root, win), r->values, r->nulls);
		if (plan->retract)
			(*window_rows(plan, weir_entry_states(store->root, win)))++;
		weir_entry_set_flags(win, WEIR_ENTRY_DIRTY);
		if ((weir_entry_flags(win) & WEIR_ENTRY_FIRED) || op->env.emit_updates)
			weir_entry_set_flags(win, WEIR_ENTRY_SINK_DIRTY);
		placed = true;
	}
	return placed ? WEIR_APPLIED : WEIR_LATE;
}

/* Windows whose end the watermark reached fire; those past end + lateness leave. */
static bool
window_expire(WeirOperator *op, TimestampTz watermark)
{
	WindowOperator *wo = op->state;
	int64		fired = weir_window_fire(wo->windows, watermark, op->env.lateness,
										 op->env.emit_updates);

	wo->fired_since += fired;
	return fired > 0 || weir_window_owes_retired(wo->windows);
}

/* A window's current version into the checkpoint's chunks. */
static void
add_window_image(WeirOperator *op, WeirWindowChunkBuilder *cb, WeirEntry *win)
{
	WeirPlan   *plan = op->env.plan;
	WeirStoreRoot *root = op->env.store->root;
	bytea	   *image = weir_agg_states_image(plan, weir_entry_states(root, win));

	weir_window_chunks_add(cb, weir_entry_key(win), weir_entry_keylen(win), win->start,
						   weir_window_end(root, plan, win),
						   (weir_entry_flags(win) & WEIR_ENTRY_FIRED) != 0,
						   VARDATA(image), VARSIZE(image) - VARHDRSZ);
	pfree(image);
	weir_entry_set_flags(win, WEIR_ENTRY_PERSISTED);
}

/*
 * Sync phase: the changed windows' sink rows and chunk images, and what the
 * retired ones still owe, into the package (retractions, first emissions,
 * updates, chunks: the order they are written in).  Flags of the windows
 * collected are cleared here: if the checkpoint does not commit, the worker
 * exits and restores from the previous one, so they are never trusted
 * after a failure.
 */
static void
window_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark, WeirCollected *n)
{
	WindowOperator *wo = op->state;
	WeirPlan   *plan = op->env.plan;
	WeirStore *store = op->env.store;
	WeirStoreRoot *root = store->root;
	WeirStoreIter iter;
	WeirEntry *win;
	ListCell   *lc;
	int64		live_bytes = 0;
	WeirSinkRows *sink = NULL;	/* rows already in the sink: upserted */
	WeirSinkRows *fresh = NULL; /* first emission of a window: inserted */
	WeirWindowChunkBuilder chunks;	/* the windows that changed, or all */
	WeirColumn *rkeys;			/* sink rows to retract: key columns */
	WeirColumn **retract;
	int64		close_margin = wo->close_margin;

	/* the rows of windows that left memory are there already */
	for (int emitted = 0; emitted < 2; emitted++)
	{
		WeirSinkRows *rows = wo->windows->retired_rows[emitted];

		if (rows == NULL)
		{
			rows = palloc(sizeof(WeirSinkRows));
			weir_sink_rows_init(rows, plan);
		}
		if (emitted)
			sink = rows;
		else
			fresh = rows;
	}
	weir_window_chunks_begin(&chunks, close_margin, false);
	rkeys = palloc(sizeof(WeirColumn) * (plan->nkeys + 1));
	retract = palloc(sizeof(WeirColumn *) * (plan->nkeys + 1));
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_init(&rkeys[i], plan->keys[i].type);
	weir_column_init(&rkeys[plan->nkeys], TIMESTAMPTZOID);
	for (int i = 0; i <= plan->nkeys; i++)
		retract[i] = &rkeys[i];

	/*
	 * A session merged into another has not closed: a restore would bring
	 * its earlier versions back, so it is written as gone (closed windows a
	 * restore skips).  Before the windows' versions, which a restore reads
	 * after it, so that nothing written now is hidden.
	 */
	foreach(lc, wo->windows->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->persisted)
			weir_window_chunks_add_gone(&chunks, r->key, r->keylen, r->start, r->end);
	}
	LWLockAcquire(op->env.lock, LW_EXCLUSIVE);
	weir_store_iter_init(&iter, store);
	while ((win = weir_store_iter_next(&iter)) != NULL)
	{
		TimestampTz end = weir_window_end(root, plan, win);
		char	   *states = weir_entry_states(root, win);

		if ((weir_entry_flags(win) & WEIR_ENTRY_SINK_DIRTY) && plan->retract &&
			*window_rows(plan, states) == 0)
		{
			/* every row went: no group, as in GROUP BY; a row written goes */
			if (weir_entry_flags(win) & WEIR_ENTRY_EMITTED)
			{
				weir_key_image_decode(plan, weir_entry_key(win), sink->keyvals);
				for (int i = 0; i < plan->nkeys; i++)
					weir_column_add(&rkeys[i], sink->keyvals[i], false);
				weir_column_add(&rkeys[plan->nkeys], TimestampTzGetDatum(win->start), false);
			}
			weir_entry_clear_flags(win, WEIR_ENTRY_SINK_DIRTY | WEIR_ENTRY_EMITTED);
		}
		else if (weir_entry_flags(win) & WEIR_ENTRY_SINK_DIRTY)
		{
			weir_sink_rows_add((weir_entry_flags(win) & WEIR_ENTRY_EMITTED) ? sink : fresh,
							   weir_entry_key(win), win->start, end, states);
			weir_entry_clear_flags(win, WEIR_ENTRY_SINK_DIRTY);
			weir_entry_set_flags(win, WEIR_ENTRY_EMITTED);
		}
		/* what its image would take (generic states: their fixed part) */
		live_bytes += WEIR_WINDOW_IMAGE_FIXED_BYTES + weir_entry_keylen(win) + plan->state_size;
		if (weir_entry_flags(win) & WEIR_ENTRY_DIRTY)
		{
			add_window_image(op, &chunks, win);
			weir_entry_clear_flags(win, WEIR_ENTRY_DIRTY);
		}
	}

	/*
	 * The chunks hold far more than the open windows: write them all anew
	 * (older chunks all go, so nothing needs to be written as gone).
	 */
	if (weir_window_chunks_compact_due(&wo->chunks, &chunks, live_bytes))
	{
		weir_window_chunks_finish(&chunks);
		weir_window_chunks_begin(&chunks, close_margin, true);
		weir_store_iter_init(&iter, store);
		while ((win = weir_store_iter_next(&iter)) != NULL)
			add_window_image(op, &chunks, win);
	}
	LWLockRelease(op->env.lock);
	foreach(lc, wo->windows->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->retract_sink)
		{
			weir_key_image_decode(plan, r->key, sink->keyvals);
			for (int i = 0; i < plan->nkeys; i++)
				weir_column_add(&rkeys[i], sink->keyvals[i], false);
			weir_column_add(&rkeys[plan->nkeys], TimestampTzGetDatum(r->start), false);
		}
	}
	weir_window_chunks_finish(&chunks);
	weir_output_deletes(pkg, retract, plan->nkeys + 1);
	/* into a topic: in the order the windows closed (store order is a hash's) */
	if (op->env.sink_is_topic)
		weir_sink_rows_sort_by_time(fresh);
	weir_output_rows(op, pkg, WEIR_PKG_SINK_INSERT, fresh);
	weir_output_rows(op, pkg, WEIR_PKG_SINK_UPSERT, sink);
	weir_window_chunks_package(&wo->chunks, &chunks, pkg, watermark);
	n->sink_rows = sink->cols[0].n + fresh->cols[0].n;
	n->state_rows = chunks.total_entries;
	n->bytes = chunks.bytes;
}

static bool
window_after_checkpoint(WeirOperator *op)
{
	WindowOperator *wo = op->state;

	weir_window_forget_retired(wo->windows);
	wo->fired_since = 0;
	return false;
}

static void
window_chunks_deleted(WeirOperator *op, int64 bytes)
{
	WindowOperator *wo = op->state;

	weir_window_chunks_deleted(&wo->chunks, bytes);
}

static void
restore_window(void *arg, const char *key, uint32 keylen, TimestampTz start,
			   TimestampTz end, bool fired, const char *state, uint32 statelen)
{
	WeirOperator *op = (WeirOperator *) arg;
	WindowOperator *wo = op->state;
	WeirStore  *store = op->env.store;
	WeirEntry  *win;
	bool		created;

	win = weir_window_lookup(wo->windows, start, end, key, keylen, &created);
	if (win == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("checkpoint of pipeline \"%s\" does not fit in its max_state_memory",
						op->env.name),
				 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
	if (!created ||
		!weir_agg_states_restore(op->env.plan, weir_entry_states(store->root, win),
								 state, statelen))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint of pipeline \"%s\": bad window state",
						op->env.name),
				 errhint("Drop and recreate the pipeline to rebuild its state from the topic.")));

	/*
	 * A restored window has a row in the sink if it fired, or if the pipeline
	 * emits updates (written at an earlier checkpoint); otherwise its first
	 * row is still to come, as an INSERT (which a topic sink needs).
	 */
	weir_entry_reset_flags(win, WEIR_ENTRY_PERSISTED |
							(fired ? WEIR_ENTRY_FIRED | WEIR_ENTRY_EMITTED : 0) |
							(op->env.emit_updates ? WEIR_ENTRY_EMITTED : 0));
}

static int64
window_restore(WeirOperator *op, int32 pipeline_id, TimestampTz watermark, int64 *bytes,
				bool *owes_rows)
{
	WindowOperator *wo = op->state;

	*owes_rows = false;
	return weir_window_chunks_restore(&wo->chunks, pipeline_id, watermark,
									  wo->close_margin, restore_window, op, bytes);
}

/*
 * Sink rows the next checkpoint will write, about: the windows fired since
 * the last one (late updates and 'updates' emission not counted).
 */
static int64
window_pending_sink_rows(WeirOperator *op)
{
	WindowOperator *wo = op->state;

	return wo->fired_since;
}

static int64
window_held_entries(WeirOperator *op)
{
	return 0;
}

static const WeirOperatorOps window_ops = {
	.state_noun = "windows",
	.rows_once = true,
	.worker_bound = false,
	.apply = window_apply,
	.expire = window_expire,
	.collect = window_collect,
	.after_checkpoint = window_after_checkpoint,
	.chunks_deleted = window_chunks_deleted,
	.restore = window_restore,
	.pending_sink_rows = window_pending_sink_rows,
	.held_entries = window_held_entries,
};

void
weir_window_operator_init(WeirOperator *op)
{
	WindowOperator *wo = MemoryContextAllocZero(op->env.cxt, sizeof(WindowOperator));

	op->ops = &window_ops;
	op->keys = NULL;
	wo->windows = weir_windows_create(op->env.store, op->env.plan, op->env.cxt);
	wo->close_margin = weir_window_margin(&op->env.plan->windowing, op->env.lateness);
	op->state = wo;
}
