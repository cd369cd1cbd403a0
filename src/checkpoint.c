/*-------------------------------------------------------------------------
 *
 * checkpoint.c
 *	  Writing a pipeline's checkpoint, and restoring from the last one.
 *
 * A checkpoint runs inside the worker's round transaction, so everything it
 * writes commits together with nothing else: the sink rows of the windows
 * fired or updated since the previous checkpoint, the windows whose state
 * changed (one chunk of weir.pipeline_chunk, window_chunks.c; keyed
 * operators: keyed.c), the positions and per-partition maximum event
 * times, the dead letters, and a weir.checkpoints row with the phase
 * timings.
 * After a crash, restoring that state and resuming after those positions
 * gives the sink and the state a run without the crash would have given.
 *
 * Phases (DESIGN.md §5): start delay = from the moment the checkpoint was
 * due to the worker reaching a batch boundary; sync = collecting what
 * changed into arrays (processing is stopped meanwhile); async = writing
 * them, up to the commit (the commit itself cannot be timed in the row it
 * commits).  Only the windows that changed are written, so a checkpoint's cost
 * follows what changed; from time to time a checkpoint writes them all and
 * the older chunks go (compaction).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "access/xact.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "aggregate.h"
#include "catalog_pipeline.h"
#include "clock.h"
#include "columns.h"
#include "dedup.h"
#include "join.h"
#include "lastvalue.h"
#include "sink.h"
#include "window_chunks.h"
#include "worker.h"

/* Key image (worker.c append_key) back to one Datum per key column. */
void
weir_checkpoint_decode_key(WeirPlan *plan, const char *image, Datum *values)
{
	const char *p = image;

	for (int i = 0; i < plan->nkeys; i++)
	{
		WeirKeySpec *k = &plan->keys[i];

		if (k->typbyval)
		{
			memcpy(&values[i], p, sizeof(Datum));
			p += sizeof(Datum);
		}
		else if (k->typlen > 0)
		{
			char	   *copy = palloc(k->typlen);

			memcpy(copy, p, k->typlen);
			values[i] = PointerGetDatum(copy);
			p += k->typlen;
		}
		else
		{
			uint32		len;

			memcpy(&len, p, sizeof(uint32));
			p += sizeof(uint32);
			values[i] = PointerGetDatum(weir_make_bytea(p, len));	/* any varlena */
			p += len;
		}
	}
}

/* Sink rows under construction: one WeirColumn per sink column. */
typedef struct SinkRows
{
	WeirPlan   *plan;
	WeirColumn	   *cols;
	int			ncols;
	Datum	   *keyvals;
} SinkRows;

static void
sink_rows_init(SinkRows *s, WeirPlan *plan)
{
	s->plan = plan;
	s->ncols = plan->nsinkcols;
	s->cols = palloc(sizeof(WeirColumn) * s->ncols);
	s->keyvals = palloc(sizeof(Datum) * Max(plan->nkeys, 1));
	for (int i = 0; i < s->ncols; i++)
		weir_column_init(&s->cols[i], plan->sinkcols[i].type);
}

/*
 * One sink row: the key image decoded, the window, and the aggregate values
 * (finals, nulls), or computed from `states` when finals is NULL.
 */
static void
sink_rows_add(SinkRows *s, const char *key, TimestampTz start, TimestampTz end,
			  char *states, Datum *finals, bool *nulls)
{
	WeirPlan   *plan = s->plan;
	int			c = 0;

	weir_checkpoint_decode_key(plan, key, s->keyvals);
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_add(&s->cols[c++], s->keyvals[i], false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(start), false);
	weir_column_add(&s->cols[c++], TimestampTzGetDatum(end), false);
	for (int i = 0; i < plan->naggs; i++)
	{
		bool		isnull;
		Datum		v;

		if (finals)
		{
			v = finals[i];
			isnull = nulls[i];
		}
		else
			v = weir_agg_final(&plan->aggs[i], states, &isnull);
		weir_column_add(&s->cols[c++], v, isnull);
	}
}

/*
 * Rows through the bulk path (sink.c), when the sink allows it: first
 * emissions inserted, rows already in the sink updated in place.  False:
 * not (all) done, SQL must.
 */
static bool
bulk_write(WeirWorker *w, SinkRows *rows, bool update)
{
	Datum	  **values;
	bool	  **nulls;

	/* checked at every checkpoint: a trigger added later must not be bypassed */
	if (w->sink_map == NULL)
		w->sink_map = MemoryContextAlloc(w->cxt, sizeof(int) * rows->ncols);
	if (!weir_sink_bulk_eligible(w->row.sink, w->plan, w->sink_map))
		return false;
	values = palloc(sizeof(Datum *) * rows->ncols);
	nulls = palloc(sizeof(bool *) * rows->ncols);
	for (int c = 0; c < rows->ncols; c++)
	{
		values[c] = rows->cols[c].values;
		nulls[c] = rows->cols[c].nulls;
	}
	if (update)
		return weir_sink_bulk_update(w->row.sink, w->plan, w->sink_map, rows->ncols,
									 values, nulls, rows->cols[0].n);
	weir_sink_bulk_insert(w->row.sink, w->plan, w->sink_map, rows->ncols, values,
						  nulls, rows->cols[0].n);
	return true;
}

/* Sink rows through SQL (INSERT, or upsert): one array per column. */
static void
run_sink_write(WeirWorker *w, SinkRows *rows, bool upsert)
{
	SPIPlanPtr *plan = upsert ? &w->sink_plan : &w->sink_insert_plan;
	Datum	   *arrays = palloc(sizeof(Datum) * rows->ncols);

	for (int c = 0; c < rows->ncols; c++)
		arrays[c] = weir_column_array(&rows->cols[c]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (*plan == NULL)
		*plan = weir_catalog_prepare_sink(w->plan, w->row.sink, upsert);
	weir_catalog_write_sink(*plan, arrays);
	SPI_finish();
}

/* A first emission of rows, for weir_sink_try_insert */
typedef struct SinkInsert
{
	WeirWorker *w;
	SinkRows   *rows;
} SinkInsert;

static void
sink_insert(void *arg)
{
	SinkInsert *si = (SinkInsert *) arg;

	if (!bulk_write(si->w, si->rows, false))
		run_sink_write(si->w, si->rows, false);
}

/*
 * Write sink rows, as the pipeline's owner (the current user).  Windows
 * emitted for the first time go in with a plain INSERT, much cheaper than
 * the upsert; if the sink already holds such a row (the pipeline was created
 * over an existing sink, or someone wrote to it), the INSERT, run in a
 * subtransaction, fails on the unique key and the rows are upserted instead.
 */
static void
write_sink_rows(WeirWorker *w, SinkRows *rows, bool upsert)
{
	SinkInsert	si = {w, rows};

	if (rows->cols[0].n == 0)
		return;
	if (upsert)
	{
		/* an upsert writes the same values again if the bulk update stopped */
		if (!bulk_write(w, rows, true))
			run_sink_write(w, rows, true);
	}
	else if (w->plan->nsinkkey == 0)
		sink_insert(&si);		/* rows without a key are only ever inserted */
	else if (!weir_sink_try_insert(sink_insert, &si))
		run_sink_write(w, rows, true);
	pg_atomic_fetch_add_u64(&w->slot->records_out, rows->cols[0].n);
}

/*
 * Delete sink rows by the sink's key (plan->nsinkkey columns, given as
 * column arrays), as the pipeline's owner: merged sessions, expired keys.
 */
static void
delete_sink_rows(WeirWorker *w, WeirColumn **key)
{
	Datum	   *arrays = palloc(sizeof(Datum) * w->plan->nsinkkey);

	for (int i = 0; i < w->plan->nsinkkey; i++)
		arrays[i] = weir_column_array(key[i]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (w->sink_delete_plan == NULL)
		w->sink_delete_plan = weir_catalog_prepare_sink_delete(w->plan, w->row.sink);
	weir_catalog_delete_sink(w->sink_delete_plan, arrays);
	SPI_finish();
}

static double
ms_since(TimestampTz from, TimestampTz to)
{
	return (double) (to - from) / 1000.0;
}

/* What a checkpoint of windows writes: collected in sync, written in async */
typedef struct WindowChanges
{
	SinkRows	sink;			/* rows already in the sink: upserted */
	SinkRows	fresh;			/* first emission of a window: inserted */
	WeirWindowChunkBuilder chunks;	/* the windows that changed, or all */
	WeirColumn *rkeys;			/* sink rows to retract: key columns */
	WeirColumn	rstarts;
} WindowChanges;

/* What a checkpoint wrote, for its weir.checkpoints row */
typedef struct CheckpointCounts
{
	int64		bytes;
	int64		sink_rows;
	int64		state_rows;
	int64		state_deletes;
} CheckpointCounts;

/* A window's current version into the checkpoint's chunks. */
static void
add_window_image(WeirWorker *w, WeirWindowChunkBuilder *cb, WeirWindow *win)
{
	WeirStoreRoot *root = w->store->root;
	bytea	   *image = weir_agg_states_image(w->plan, weir_window_states(root, win));

	weir_window_chunks_add(cb, win->data, win->keylen, win->start,
						   weir_window_end(root, w->plan, win),
						   (win->flags & WEIR_WINDOW_FIRED) != 0,
						   VARDATA(image), VARSIZE(image) - VARHDRSZ);
	pfree(image);
	win->flags |= WEIR_WINDOW_PERSISTED;
}

/*
 * Sync phase for windows: the changed windows' sink rows and chunk images,
 * and what the retired ones still owe.  Flags of the windows collected are
 * cleared here: if the commit fails, the worker exits and restores from
 * the previous checkpoint, so they are never trusted after a failure.
 */
static void
window_collect(WeirWorker *w, WindowChanges *c, CheckpointCounts *n)
{
	WeirPlan   *plan = w->plan;
	WeirStoreRoot *root = w->store->root;
	WeirWindowIter iter;
	WeirWindow *win;
	ListCell   *lc;
	int64		live_bytes = 0;

	sink_rows_init(&c->sink, plan);
	sink_rows_init(&c->fresh, plan);
	weir_window_chunks_begin(&c->chunks, w->lateness, false);
	c->rkeys = palloc(sizeof(WeirColumn) * plan->nkeys);
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_init(&c->rkeys[i], plan->keys[i].type);
	weir_column_init(&c->rstarts, TIMESTAMPTZOID);
	/*
	 * A session merged into another has not closed: a restore would bring
	 * its earlier versions back, so it is written as gone (closed windows a
	 * restore skips).  Before the windows' versions, which a restore reads
	 * after it, so that nothing written now is hidden.
	 */
	foreach(lc, w->store->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->merged && r->persisted)
			weir_window_chunks_add_gone(&c->chunks, r->key, r->keylen, r->start, r->end);
	}
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	weir_window_iter_init(&iter, w->store);
	while ((win = weir_window_iter_next(&iter)) != NULL)
	{
		TimestampTz end = weir_window_end(root, plan, win);
		char	   *states = weir_window_states(root, win);

		if (win->flags & WEIR_WINDOW_SINK_DIRTY)
		{
			sink_rows_add((win->flags & WEIR_WINDOW_EMITTED) ? &c->sink : &c->fresh,
						  win->data, win->start, end, states, NULL, NULL);
			win->flags &= ~WEIR_WINDOW_SINK_DIRTY;
			win->flags |= WEIR_WINDOW_EMITTED;
		}
		/* what its image would take (generic states: their fixed part) */
		live_bytes += WEIR_WINDOW_IMAGE_FIXED_BYTES + win->keylen + plan->state_size;
		if (win->flags & WEIR_WINDOW_DIRTY)
		{
			add_window_image(w, &c->chunks, win);
			win->flags &= ~WEIR_WINDOW_DIRTY;
		}
	}
	/*
	 * The chunks hold far more than the open windows: write them all anew
	 * (older chunks all go, so nothing needs to be written as gone).
	 */
	if (weir_window_chunks_compact_due(&w->window_chunks, &c->chunks, live_bytes))
	{
		weir_window_chunks_finish(&c->chunks);
		weir_window_chunks_begin(&c->chunks, w->lateness, true);
		weir_window_iter_init(&iter, w->store);
		while ((win = weir_window_iter_next(&iter)) != NULL)
			add_window_image(w, &c->chunks, win);
	}
	LWLockRelease(&w->slot->lock);
	foreach(lc, w->store->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->write_sink)
			sink_rows_add(r->emitted ? &c->sink : &c->fresh, r->key, r->start, r->end,
						  NULL, r->finals, r->final_nulls);
		if (r->retract_sink)
		{
			weir_checkpoint_decode_key(plan, r->key, c->sink.keyvals);
			for (int i = 0; i < plan->nkeys; i++)
				weir_column_add(&c->rkeys[i], c->sink.keyvals[i], false);
			weir_column_add(&c->rstarts, TimestampTzGetDatum(r->start), false);
		}
	}
	weir_window_chunks_finish(&c->chunks);
	n->sink_rows = c->sink.cols[0].n + c->fresh.cols[0].n;
	n->state_rows = c->chunks.total_entries;
	n->bytes = c->chunks.bytes;
}

/* Async phase for windows; the sink as the pipeline's owner (current user). */
static void
window_write(WeirWorker *w, WindowChanges *c, CheckpointCounts *n)
{
	WeirPlan   *plan = w->plan;

	if (c->rstarts.n > 0)
	{
		WeirColumn **key = palloc(sizeof(WeirColumn *) * (plan->nkeys + 1));

		for (int i = 0; i < plan->nkeys; i++)
			key[i] = &c->rkeys[i];
		key[plan->nkeys] = &c->rstarts;
		delete_sink_rows(w, key);
	}
	write_sink_rows(w, &c->fresh, false);
	write_sink_rows(w, &c->sink, true);
	n->state_deletes = weir_window_chunks_write(&w->window_chunks, &c->chunks, w->row.id,
												w->watermark);
}

/* What a checkpoint of last values writes */
typedef struct LastValueChanges
{
	SinkRows	fresh;			/* keys new since the last checkpoint: inserted */
	SinkRows	changed;		/* keys whose row is in the sink: upserted */
	WeirColumn *gone;			/* keys that expired: their rows deleted */
	WeirKeyedCollected collected;
} LastValueChanges;

/*
 * Sync phase for last values: the newest row of each key that changed, the
 * keys that expired, and the changed entries' chunk.
 */
static void
last_value_collect(WeirWorker *w, LastValueChanges *c, CheckpointCounts *n)
{
	WeirPlan   *plan = w->plan;
	WeirLastValue *lv = w->last_value;
	int			ncols = plan->ncolumns;
	Datum	   *keyvals = palloc(sizeof(Datum) * plan->nkeys);
	ListCell   *lc;

	sink_rows_init(&c->fresh, plan);
	sink_rows_init(&c->changed, plan);
	c->gone = palloc(sizeof(WeirColumn) * plan->nkeys);
	for (int i = 0; i < plan->nkeys; i++)
		weir_column_init(&c->gone[i], plan->keys[i].type);
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);

	/*
	 * Every key expired by now goes in this checkpoint, sink row and all: a
	 * restore skips them (those that changed since the last checkpoint go
	 * right after it, and a restore deletes their rows: keyed.c).
	 */
	(void) weir_keyed_expire_exact(lv->keys, w->watermark);
	for (int r = 0; r < lv->npending; r++)
	{
		WeirWindow *win = weir_window_at(w->store, lv->pending_entry[r]);
		WeirKeyedState *s = weir_keyed_state(lv->keys, lv->pending_entry[r]);
		SinkRows   *rows = (win->flags & WEIR_WINDOW_EMITTED) ? &c->changed : &c->fresh;

		s->pending = -1;
		weir_checkpoint_decode_key(plan, win->data, keyvals);
		if (lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(w->watermark) &&
			s->t + lv->ttl <= w->watermark)
		{
			/* expired already: its row goes (if it was written), not comes */
			if (win->flags & WEIR_WINDOW_EMITTED)
				for (int i = 0; i < plan->nkeys; i++)
					weir_column_add(&c->gone[i], keyvals[i], false);
			win->flags &= ~WEIR_WINDOW_EMITTED;
			continue;
		}
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&rows->cols[i], keyvals[i], false);
		for (int i = 0; i < ncols; i++)
			weir_column_add(&rows->cols[plan->nkeys + i], lv->pending_values[r * ncols + i],
							lv->pending_nulls[r * ncols + i]);
		win->flags |= WEIR_WINDOW_EMITTED;
	}
	weir_keyed_collect(lv->keys, w->watermark, &c->collected);
	LWLockRelease(&w->slot->lock);
	foreach(lc, lv->keys->removed)
	{
		bytea	   *key = lfirst(lc);

		weir_checkpoint_decode_key(plan, VARDATA(key), keyvals);
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&c->gone[i], keyvals[i], false);
	}
	n->sink_rows = c->fresh.cols[0].n + c->changed.cols[0].n;
	n->state_rows = c->collected.entries;
	n->state_deletes = list_length(lv->keys->removed);
	n->bytes = c->collected.bytes;
}

/* Async phase for last values: deletions first, then the new rows. */
static void
last_value_write(WeirWorker *w, LastValueChanges *c)
{
	WeirPlan   *plan = w->plan;

	if (plan->nkeys > 0 && c->gone[0].n > 0)
	{
		WeirColumn **key = palloc(sizeof(WeirColumn *) * plan->nkeys);

		for (int i = 0; i < plan->nkeys; i++)
			key[i] = &c->gone[i];
		delete_sink_rows(w, key);
	}
	write_sink_rows(w, &c->fresh, false);
	write_sink_rows(w, &c->changed, true);
	weir_keyed_write(w->last_value->keys, w->row.id, w->watermark, &c->collected);
}

/* Positions, dead letters and late records: what every kind writes. */
static void
write_progress(WeirWorker *w, WeirColumn *parts, WeirColumn *positions,
			   WeirColumn *maxtimes)
{
	ListCell   *lc;

	weir_catalog_write_positions(w->row.id, weir_column_array(parts),
								 weir_column_array(positions), weir_column_array(maxtimes));
	/* dead letters, one statement per source (a join has two) */
	for (int s = 0; s < w->nsides && w->dead != NIL; s++)
	{
		WeirColumn	dparts, dpos, derr, drec;

		weir_column_init(&dparts, INT4OID);
		weir_column_init(&dpos, INT8OID);
		weir_column_init(&derr, TEXTOID);
		weir_column_init(&drec, JSONBOID);
		foreach(lc, w->dead)
		{
			WeirDeadLetter *d = lfirst(lc);

			if (d->source != w->sides[s].source)
				continue;
			weir_column_add(&dparts, Int32GetDatum(d->part), false);
			weir_column_add(&dpos, Int64GetDatum(d->position), false);
			weir_column_add(&derr, CStringGetTextDatum(d->error), false);
			weir_column_add(&drec, DirectFunctionCall1(jsonb_in, CStringGetDatum(d->record)), false);
		}
		if (dparts.n > 0)
			weir_catalog_write_dead_letters(w->row.id, w->sides[s].source,
											weir_column_array(&dparts),
											weir_column_array(&dpos), weir_column_array(&derr),
											weir_column_array(&drec));
	}
	list_free_deep(w->dead);
	w->dead = NIL;
	if (w->late != NIL)
	{
		WeirColumn	lparts, lpos;

		weir_column_init(&lparts, INT4OID);
		weir_column_init(&lpos, INT8OID);
		foreach(lc, w->late)
		{
			int64	   *late = lfirst(lc);

			weir_column_add(&lparts, Int32GetDatum((int32) late[0]), false);
			weir_column_add(&lpos, Int64GetDatum(late[1]), false);
		}
		weir_catalog_write_late(w->row.late_records, w->row.source, weir_column_array(&lparts),
								weir_column_array(&lpos), TimestampTzGetDatum(w->watermark));
		list_free_deep(w->late);
		w->late = NIL;
	}
}

/*
 * Write a checkpoint inside the current transaction.  `due` is when it was
 * due (for the start delay).
 */
void
weir_checkpoint_write(WeirWorker *w, TimestampTz due)
{
	WeirPlan   *plan = w->plan;
	TimestampTz started = weir_clock_now();
	TimestampTz synced;
	WindowChanges changes;
	LastValueChanges last_values;
	WeirKeyedCollected sides[2];
	SinkRows	kept;			/* dedup: the records kept, inserted */
	WeirKeyedCollected collected;
	CheckpointCounts n = {0, 0, 0, 0};
	WeirColumn	parts, positions, maxtimes;
	TimestampTz written;

	/* a pipeline dropped (or replaced under the same id) ends its worker */
	{
		WeirPipelineRow current;

		if (!weir_catalog_pipeline_by_id(w->row.id, &current) ||
			current.created_at != w->row.created_at)
		{
			ereport(LOG,
					(errmsg("weir pipeline \"%s\" was dropped; its worker exits", w->row.name)));
			proc_exit(0);
		}
	}

	/* sync: collect what changed */
	if (plan->op == WEIR_OP_DEDUP || plan->op == WEIR_OP_PROJECTION)
	{
		kept.plan = plan;
		kept.ncols = plan->nsinkcols;
		kept.cols = w->dedup->pending;
		kept.keyvals = NULL;
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		if (w->dedup->ids)
			weir_keyed_collect(w->dedup->ids, w->watermark, &collected);
		else
			memset(&collected, 0, sizeof(collected));
		LWLockRelease(&w->slot->lock);
		n.sink_rows = kept.cols[0].n;
		n.state_rows = collected.entries;
		n.bytes = collected.bytes;
	}
	else if (plan->op == WEIR_OP_LAST_VALUE)
		last_value_collect(w, &last_values, &n);
	else if (plan->op == WEIR_OP_JOIN)
	{
		/* rows that left the buffers go for real first (join.c) */
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		weir_join_drain(w->join, w->watermark);
		for (int s = 0; s < 2; s++)
		{
			weir_keyed_collect(w->join->sides[s], w->watermark, &sides[s]);
			n.state_rows += sides[s].entries;
			n.bytes += sides[s].bytes;
		}
		LWLockRelease(&w->slot->lock);
		kept.plan = plan;
		kept.ncols = plan->nsinkcols;
		kept.cols = w->join->pending;
		kept.keyvals = NULL;
		n.sink_rows = kept.cols[0].n;
	}
	else
		window_collect(w, &changes, &n);
	weir_column_init(&parts, INT4OID);
	weir_column_init(&positions, INT8OID);
	weir_column_init(&maxtimes, TIMESTAMPTZOID);
	for (int p = 0; p < w->partitions; p++)
	{
		weir_column_add(&parts, Int32GetDatum(p), false);
		weir_column_add(&positions, Int64GetDatum(w->pos[p]), false);
		weir_column_add(&maxtimes, TimestampTzGetDatum(w->max_event_time[p]),
						w->max_event_time[p] == DT_NOBEGIN);
	}
	synced = weir_clock_now();

	/* async: write it all */
	if (plan->op == WEIR_OP_DEDUP || plan->op == WEIR_OP_PROJECTION)
	{
		write_sink_rows(w, &kept, false);
		if (w->dedup->ids)
		{
			weir_keyed_write(w->dedup->ids, w->row.id, w->watermark, &collected);
			n.state_deletes = collected.deleted_entries;
		}
	}
	else if (plan->op == WEIR_OP_LAST_VALUE)
		last_value_write(w, &last_values);
	else if (plan->op == WEIR_OP_JOIN)
	{
		write_sink_rows(w, &kept, false);
		for (int s = 0; s < 2; s++)
		{
			weir_keyed_write(w->join->sides[s], w->row.id, w->watermark, &sides[s]);
			n.state_deletes += sides[s].deleted_entries;
		}
	}
	else
		window_write(w, &changes, &n);
	write_progress(w, &parts, &positions, &maxtimes);
	w->checkpoint_id++;
	written = weir_clock_now();
	weir_catalog_write_checkpoint(w->row.id, w->checkpoint_id, due, w->watermark,
								  ms_since(due, started), ms_since(started, synced),
								  ms_since(synced, written), n.bytes,
								  n.sink_rows, n.state_rows, n.state_deletes,
								  w->records_since);
	w->records_since = 0;
	/* enough rows to say what one costs (the commit is not counted) */
	if (n.sink_rows >= WEIR_SINK_ROWS_MEASURED)
		w->sink_row_us = (double) (written - started) / n.sink_rows;
}

static void
restore_window(void *arg, const char *key, uint32 keylen, TimestampTz start,
			   TimestampTz end, bool fired, const char *state, uint32 statelen)
{
	WeirWorker *w = (WeirWorker *) arg;
	WeirWindow *win;
	bool		created;

	win = weir_window_lookup(w->store, start, end, key, keylen, &created);
	if (win == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("checkpoint of pipeline \"%s\" does not fit in its max_state_memory", w->row.name),
				 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
	if (!created ||
		!weir_agg_states_restore(w->plan, weir_window_states(w->store->root, win),
								 state, statelen))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint of pipeline \"%s\": bad window state",
						w->row.name),
				 errhint("Drop and recreate the pipeline to rebuild its state from the topic.")));
	/*
	 * A restored window has a row in the sink if it fired, or if the pipeline
	 * emits updates (written at an earlier checkpoint); otherwise its first
	 * row is still to come, as an INSERT (which a topic sink needs).
	 */
	win->flags = WEIR_WINDOW_PERSISTED |
		(fired ? WEIR_WINDOW_FIRED | WEIR_WINDOW_EMITTED : 0) |
		(w->emit_updates ? WEIR_WINDOW_EMITTED : 0);
}

/*
 * Load the last checkpoint: open windows, positions, watermark.  Timed and
 * recorded in weir.restores.
 */
void
weir_checkpoint_restore(WeirWorker *w)
{
	TimestampTz started = GetCurrentTimestamp();
	int64		bytes;
	int64		windows;
	TimestampTz watermark;
	double		ms;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	MemoryContextSwitchTo(w->cxt);
	weir_catalog_load_positions(w->row.id, w->partitions, w->pos, w->max_event_time);
	w->checkpoint_id = weir_catalog_last_checkpoint(w->row.id, &watermark);
	w->watermark = watermark;
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	if (w->plan->op == WEIR_OP_PROJECTION)
		windows = bytes = 0;
	else if (w->plan->op == WEIR_OP_DEDUP)
		windows = weir_keyed_restore(w->dedup->ids, w->row.id, watermark, &bytes);
	else if (w->plan->op == WEIR_OP_LAST_VALUE)
		windows = weir_keyed_restore(w->last_value->keys, w->row.id, watermark, &bytes);
	else if (w->plan->op == WEIR_OP_JOIN)
	{
		int64		right_bytes;

		windows = weir_keyed_restore(w->join->sides[0], w->row.id, watermark, &bytes);
		windows += weir_keyed_restore(w->join->sides[1], w->row.id, watermark, &right_bytes);
		bytes += right_bytes;
	}
	else
		windows = weir_window_chunks_restore(&w->window_chunks, w->row.id, watermark,
											 w->lateness, restore_window, w, &bytes);
	LWLockRelease(&w->slot->lock);
	ms = (double) (GetCurrentTimestamp() - started) / 1000.0;
	weir_catalog_write_restore(w->row.id, w->checkpoint_id, ms, bytes, windows);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(w->cxt);

	SpinLockAcquire(&w->slot->mutex);
	w->slot->checkpoint_id = w->checkpoint_id;
	w->slot->watermark = w->watermark;
	SpinLockRelease(&w->slot->mutex);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\" restored checkpoint " INT64_FORMAT " in %.1f ms: " INT64_FORMAT " %s, " INT64_FORMAT " bytes",
					w->row.name, w->checkpoint_id, ms, windows,
					w->plan->op == WEIR_OP_WINDOW ? "windows" :
					w->plan->op == WEIR_OP_DEDUP ? "ids" : "keys", bytes)));
}
