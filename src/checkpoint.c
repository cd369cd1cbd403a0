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
#include "catalog_chunk.h"
#include "catalog_pipeline.h"
#include "checkpoint_package.h"
#include "clock.h"
#include "columns.h"
#include "dedup.h"
#include "join.h"
#include "lastvalue.h"
#include "sink.h"
#include "sink_guard.h"
#include "sink_rows.h"
#include "window_chunks.h"
#include "write_target.h"
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

/*
 * Rows through the bulk path (sink.c), when the sink allows it: first
 * emissions inserted, rows already in the sink updated in place.  False:
 * not (all) done, SQL must.
 */
static bool
bulk_write(WeirWorker *w, WeirSinkRows *rows, bool update)
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
run_sink_write(WeirWorker *w, WeirSinkRows *rows, bool upsert)
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
	WeirSinkRows   *rows;
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
write_sink_rows(WeirWorker *w, WeirSinkRows *rows, bool upsert)
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

/* What a checkpoint wrote, for its weir.checkpoints row */
typedef struct CheckpointCounts
{
	int64		bytes;
	int64		sink_rows;
	int64		state_rows;
} CheckpointCounts;

/* A window's current version into the checkpoint's chunks. */
static void
add_window_image(WeirWorker *w, WeirWindowChunkBuilder *cb, WeirWindow *win)
{
	WeirStoreRoot *root = w->store->root;
	bytea	   *image = weir_agg_states_image(w->plan, weir_window_states(root, win));

	weir_window_chunks_add(cb, weir_window_key(win), weir_window_keylen(win), win->start,
						   weir_window_end(root, w->plan, win),
						   (weir_window_flags(win) & WEIR_WINDOW_FIRED) != 0,
						   VARDATA(image), VARSIZE(image) - VARHDRSZ);
	pfree(image);
	weir_window_set_flags(win, WEIR_WINDOW_PERSISTED);
}

/*
 * Sink rows into the package, when there are any, and the windows that
 * could not be rows as dead letters of the sink (no partition, no
 * position: a window is made of many records).
 */
static void
package_sink_rows(WeirWorker *w, WeirPackage *pkg, WeirPackageOpKind kind, WeirSinkRows *rows)
{
	ListCell   *lc;
	WeirColumn	d[4];

	if (rows->cols[0].n > 0)
		weir_package_add_columns(pkg, kind, InvalidOid, rows->cols, rows->ncols);
	if (rows->problems == NIL)
		return;
	weir_dead_letter_columns_init(d);
	foreach(lc, rows->problems)
	{
		WeirSinkProblem *p = lfirst(lc);

		weir_column_add(&d[0], (Datum) 0, true);
		weir_column_add(&d[1], (Datum) 0, true);
		weir_column_add(&d[2], CStringGetTextDatum(p->error), false);
		weir_column_add(&d[3], DirectFunctionCall1(jsonb_in, CStringGetDatum(p->record)), false);
		pg_atomic_fetch_add_u64(&w->slot->records_dead, 1);
	}
	weir_package_add_columns(pkg, WEIR_PKG_DEAD_LETTERS, w->row.sink, d, 4);
	list_free_deep(rows->problems);
	rows->problems = NIL;
}

/* Keys of sink rows to delete into the package, when there are any. */
static void
package_sink_deletes(WeirPackage *pkg, WeirColumn **key, int nkey)
{
	if (nkey > 0 && key[0]->n > 0)
		weir_package_add_column_list(pkg, WEIR_PKG_SINK_DELETE, key, nkey);
}

/*
 * Sync phase for windows: the changed windows' sink rows and chunk images,
 * and what the retired ones still owe, into the package (retractions, first
 * emissions, updates, chunks: the order they are written in).  Flags of the
 * windows collected are cleared here: if the checkpoint does not commit,
 * the worker exits and restores from the previous one, so they are never
 * trusted after a failure.
 */
static void
window_collect(WeirWorker *w, WeirPackage *pkg, CheckpointCounts *n)
{
	WeirPlan   *plan = w->plan;
	WeirStoreRoot *root = w->store->root;
	WeirWindowIter iter;
	WeirWindow *win;
	ListCell   *lc;
	int64		live_bytes = 0;
	WeirSinkRows *sink;			/* rows already in the sink: upserted */
	WeirSinkRows *fresh;			/* first emission of a window: inserted */
	WeirWindowChunkBuilder chunks;	/* the windows that changed, or all */
	WeirColumn *rkeys;			/* sink rows to retract: key columns */
	WeirColumn **retract;

	/* the rows of windows that left memory are there already */
	for (int emitted = 0; emitted < 2; emitted++)
	{
		WeirSinkRows *rows = w->store->retired_rows[emitted];

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
	weir_window_chunks_begin(&chunks, w->lateness, false);
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
	foreach(lc, w->store->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->persisted)
			weir_window_chunks_add_gone(&chunks, r->key, r->keylen, r->start, r->end);
	}
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	weir_window_iter_init(&iter, w->store);
	while ((win = weir_window_iter_next(&iter)) != NULL)
	{
		TimestampTz end = weir_window_end(root, plan, win);
		char	   *states = weir_window_states(root, win);

		if (weir_window_flags(win) & WEIR_WINDOW_SINK_DIRTY)
		{
			weir_sink_rows_add((weir_window_flags(win) & WEIR_WINDOW_EMITTED) ? sink : fresh,
							   weir_window_key(win), win->start, end, states);
			weir_window_clear_flags(win, WEIR_WINDOW_SINK_DIRTY);
			weir_window_set_flags(win, WEIR_WINDOW_EMITTED);
		}
		/* what its image would take (generic states: their fixed part) */
		live_bytes += WEIR_WINDOW_IMAGE_FIXED_BYTES + weir_window_keylen(win) + plan->state_size;
		if (weir_window_flags(win) & WEIR_WINDOW_DIRTY)
		{
			add_window_image(w, &chunks, win);
			weir_window_clear_flags(win, WEIR_WINDOW_DIRTY);
		}
	}
	/*
	 * The chunks hold far more than the open windows: write them all anew
	 * (older chunks all go, so nothing needs to be written as gone).
	 */
	if (weir_window_chunks_compact_due(&w->window_chunks, &chunks, live_bytes))
	{
		weir_window_chunks_finish(&chunks);
		weir_window_chunks_begin(&chunks, w->lateness, true);
		weir_window_iter_init(&iter, w->store);
		while ((win = weir_window_iter_next(&iter)) != NULL)
			add_window_image(w, &chunks, win);
	}
	LWLockRelease(&w->slot->lock);
	foreach(lc, w->store->retired)
	{
		WeirRetired *r = lfirst(lc);

		if (r->retract_sink)
		{
			weir_checkpoint_decode_key(plan, r->key, sink->keyvals);
			for (int i = 0; i < plan->nkeys; i++)
				weir_column_add(&rkeys[i], sink->keyvals[i], false);
			weir_column_add(&rkeys[plan->nkeys], TimestampTzGetDatum(r->start), false);
		}
	}
	weir_window_chunks_finish(&chunks);
	package_sink_deletes(pkg, retract, plan->nkeys + 1);
	package_sink_rows(w, pkg, WEIR_PKG_SINK_INSERT, fresh);
	package_sink_rows(w, pkg, WEIR_PKG_SINK_UPSERT, sink);
	weir_window_chunks_package(&w->window_chunks, &chunks, pkg, w->watermark);
	n->sink_rows = sink->cols[0].n + fresh->cols[0].n;
	n->state_rows = chunks.total_entries;
	n->bytes = chunks.bytes;
}

/*
 * Sync phase for last values: the newest row of each key that changed, the
 * keys that expired (their rows deleted first), and the changed entries'
 * chunk.
 */
static void
last_value_collect(WeirWorker *w, WeirPackage *pkg, CheckpointCounts *n)
{
	WeirPlan   *plan = w->plan;
	WeirLastValue *lv = w->last_value;
	int			ncols = plan->ncolumns;
	Datum	   *keyvals = palloc(sizeof(Datum) * plan->nkeys);
	ListCell   *lc;
	WeirSinkRows	fresh;			/* keys new since the last checkpoint: inserted */
	WeirSinkRows	changed;		/* keys whose row is in the sink: upserted */
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
		WeirSinkRows   *rows = (weir_window_flags(win) & WEIR_WINDOW_EMITTED) ? &changed : &fresh;

		s->pending = -1;
		weir_checkpoint_decode_key(plan, weir_window_key(win), keyvals);
		if (lv->ttl > 0 && !TIMESTAMP_NOT_FINITE(w->watermark) &&
			s->t + lv->ttl <= w->watermark)
		{
			/* expired already: its row goes (if it was written), not comes */
			if (weir_window_flags(win) & WEIR_WINDOW_EMITTED)
				for (int i = 0; i < plan->nkeys; i++)
					weir_column_add(&gone[i], keyvals[i], false);
			weir_window_clear_flags(win, WEIR_WINDOW_EMITTED);
			continue;
		}
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&rows->cols[i], keyvals[i], false);
		for (int i = 0; i < ncols; i++)
			weir_column_add(&rows->cols[plan->nkeys + i], lv->pending_values[r * ncols + i],
							lv->pending_nulls[r * ncols + i]);
		weir_window_set_flags(win, WEIR_WINDOW_EMITTED);
	}
	weir_keyed_collect(lv->keys, w->watermark, &collected);
	LWLockRelease(&w->slot->lock);
	foreach(lc, lv->keys->removed)
	{
		bytea	   *key = lfirst(lc);

		weir_checkpoint_decode_key(plan, VARDATA(key), keyvals);
		for (int i = 0; i < plan->nkeys; i++)
			weir_column_add(&gone[i], keyvals[i], false);
	}
	package_sink_deletes(pkg, gone_list, plan->nkeys);
	package_sink_rows(w, pkg, WEIR_PKG_SINK_INSERT, &fresh);
	package_sink_rows(w, pkg, WEIR_PKG_SINK_UPSERT, &changed);
	weir_keyed_package(lv->keys, pkg, w->watermark, &collected);
	n->sink_rows = fresh.cols[0].n + changed.cols[0].n;
	n->state_rows = collected.entries;
	n->bytes = collected.bytes;
}

/*
 * Sync phase for records passed on (dedup, projection, join pairs): the
 * rows kept, inserted, and the chunks of the keyed state, if any.
 */
static void
kept_collect(WeirWorker *w, WeirPackage *pkg, WeirColumn *pending, WeirKeyed *keyed,
			 CheckpointCounts *n)
{
	WeirKeyedCollected collected;

	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	if (w->join)
		weir_join_drain(w->join, w->watermark); /* rows that left go for real
												 * first (join.c) */
	if (keyed)
	{
		weir_keyed_collect(keyed, w->watermark, &collected);
		n->state_rows += collected.entries;
		n->bytes += collected.bytes;
	}
	LWLockRelease(&w->slot->lock);
	n->sink_rows = pending[0].n;
	if (pending[0].n > 0)
		weir_package_add_columns(pkg, WEIR_PKG_SINK_INSERT, InvalidOid, pending,
								 w->plan->nsinkcols);
	if (keyed)
		weir_keyed_package(keyed, pkg, w->watermark, &collected);
}

/* Positions, dead letters and late records: what every kind writes. */
static void
progress_collect(WeirWorker *w, WeirPackage *pkg)
{
	WeirColumn	pos[3];
	ListCell   *lc;

	weir_column_init(&pos[0], INT4OID);
	weir_column_init(&pos[1], INT8OID);
	weir_column_init(&pos[2], TIMESTAMPTZOID);
	for (int p = 0; p < w->partitions; p++)
	{
		weir_column_add(&pos[0], Int32GetDatum(p), false);
		weir_column_add(&pos[1], Int64GetDatum(w->pos[p]), false);
		weir_column_add(&pos[2], TimestampTzGetDatum(w->max_event_time[p]),
						w->max_event_time[p] == DT_NOBEGIN);
	}
	weir_package_add_columns(pkg, WEIR_PKG_POSITIONS, InvalidOid, pos, 3);
	/* dead letters, one write per source (a join has two) */
	for (int s = 0; s < w->nsides && w->dead != NIL; s++)
	{
		WeirColumn	d[4];

		weir_dead_letter_columns_init(d);
		foreach(lc, w->dead)
		{
			WeirDeadLetter *dl = lfirst(lc);

			if (dl->source != w->sides[s].source)
				continue;
			weir_column_add(&d[0], Int32GetDatum(dl->part), false);
			weir_column_add(&d[1], Int64GetDatum(dl->position), false);
			weir_column_add(&d[2], CStringGetTextDatum(dl->error), false);
			weir_column_add(&d[3], DirectFunctionCall1(jsonb_in, CStringGetDatum(dl->record)),
							false);
		}
		if (d[0].n > 0)
			weir_package_add_columns(pkg, WEIR_PKG_DEAD_LETTERS, w->sides[s].source, d, 4);
	}
	list_free_deep(w->dead);
	w->dead = NIL;
	if (w->late != NIL)
	{
		WeirColumn	l[2];

		weir_column_init(&l[0], INT4OID);
		weir_column_init(&l[1], INT8OID);
		foreach(lc, w->late)
		{
			int64	   *late = lfirst(lc);

			weir_column_add(&l[0], Int32GetDatum((int32) late[0]), false);
			weir_column_add(&l[1], Int64GetDatum(late[1]), false);
		}
		weir_package_add_late(pkg, w->row.late_records, l, w->watermark);
		list_free_deep(w->late);
		w->late = NIL;
	}
}

/* Whether the pipeline the worker runs is still there (not dropped or replaced). */
static bool
pipeline_exists(WeirWorker *w)
{
	WeirPipelineRow current;

	return weir_catalog_pipeline_by_id(w->row.id, &current) &&
		current.created_at == w->row.created_at;
}

/*
 * Sync phase: collect what changed since the last checkpoint into a
 * package (in the current memory context), numbered as the next
 * checkpoint.  Needs a transaction (the dead letters' JSON, the check that
 * the pipeline is still there).  `due` is when it was due (for the start
 * delay); `served` the weir.checkpoint() tickets it answers.
 */
void
weir_checkpoint_collect(WeirWorker *w, TimestampTz due, int64 served, WeirPackage *pkg)
{
	WeirPlan   *plan = w->plan;
	TimestampTz started = weir_clock_now();
	CheckpointCounts n = {0, 0, 0};
	WeirPackageHeader *h;

	/* a pipeline dropped (or replaced under the same id) ends its worker */
	if (!pipeline_exists(w))
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" was dropped; its worker exits", w->row.name)));
		proc_exit(0);
	}

	weir_package_begin(pkg);
	if (plan->op == WEIR_OP_DEDUP || plan->op == WEIR_OP_PROJECTION)
		kept_collect(w, pkg, w->dedup->pending, w->dedup->ids, &n);
	else if (plan->op == WEIR_OP_LAST_VALUE)
		last_value_collect(w, pkg, &n);
	else if (plan->op == WEIR_OP_JOIN)
		kept_collect(w, pkg, w->join->pending, w->join->keys, &n);
	else
		window_collect(w, pkg, &n);
	progress_collect(w, pkg);

	h = weir_package_header(pkg);
	h->checkpoint_id = ++w->checkpoint_id;
	h->due = due;
	h->started = started;
	h->watermark = w->watermark;
	h->records_since = w->records_since;
	h->bytes = n.bytes;
	h->sink_rows = n.sink_rows;
	h->state_rows = n.state_rows;
	h->served = served;
	w->records_since = 0;
	h->synced = weir_clock_now();
}

/* What a guarded write (sink_guard.c) needs to write a set of rows again. */
typedef struct GuardedSinkWrite
{
	WeirWorker *w;
	int			ncols;
	bool		upsert;
	int64		watermark;		/* late records */
} GuardedSinkWrite;

static void
guarded_sink_rows(void *arg, WeirColumn *cols)
{
	GuardedSinkWrite *g = arg;
	WeirSinkRows rows = {g->w->plan, cols, g->ncols, NULL};

	write_sink_rows(g->w, &rows, g->upsert);
}

static void
guarded_sink_deletes(void *arg, WeirColumn *cols)
{
	GuardedSinkWrite *g = arg;
	WeirColumn **key = palloc(sizeof(WeirColumn *) * g->ncols);

	for (int i = 0; i < g->ncols; i++)
		key[i] = &cols[i];
	delete_sink_rows(g->w, key);
}

static void
recheck_sink(void *arg)
{
	GuardedSinkWrite *g = arg;

	weir_check_sink(g->w->plan, &g->w->row, g->w->row.sink, g->w->row.owner);
}

static void
recheck_late_records(void *arg)
{
	GuardedSinkWrite *g = arg;

	weir_check_late_records(&g->w->row, g->w->row.late_records, g->w->row.owner);
}

static void
guarded_late(void *arg, WeirColumn *cols)
{
	GuardedSinkWrite *g = arg;

	weir_catalog_write_late(g->w->row.late_records, g->w->row.source,
							weir_column_array(&cols[0]), weir_column_array(&cols[1]),
							TimestampTzGetDatum(g->watermark));
}

/* The sink, as a guarded write's target: dead letters keyed by its columns. */
static WeirGuardTarget
sink_target(WeirWorker *w)
{
	WeirGuardTarget t;
	const char **names = palloc(sizeof(char *) * Max(w->plan->nsinkcols, 1));

	for (int i = 0; i < w->plan->nsinkcols; i++)
		names[i] = w->plan->sinkcols[i].name;
	t.relid = w->row.sink;
	t.what = psprintf("sink \"%s\"", get_rel_name(w->row.sink));
	t.positions = false;
	t.names = names;
	t.recheck = recheck_sink;
	return t;
}

/*
 * Async phase: do the writes of a package, and its weir.checkpoints row,
 * in the current transaction, as the pipeline's owner (the sink) and as
 * weir (its catalog).  `w` needs only the pipeline's row, plan and slot:
 * the checkpoint writer has no more.  What the worker learns from the
 * commit goes to *res.  A pipeline dropped meanwhile gets nothing written:
 * false.
 */
bool
weir_checkpoint_execute(WeirWorker *w, const char *data, Size len, WeirCheckpointResult *res)
{
	WeirPackageReader r;
	const WeirPackageHeader *h = weir_package_read_begin(&r, data, len);
	const WeirPackageOp *op;
	int			maxcols = Max(w->plan->nsinkcols, 4);
	WeirColumn *cols = palloc(sizeof(WeirColumn) * maxcols);
	List	   *chunks;
	int64		state_deletes = 0;
	TimestampTz written;

	memset(res, 0, sizeof(*res));
	if (!pipeline_exists(w))
		return false;
	while ((op = weir_package_read_op(&r, cols, maxcols, &chunks)) != NULL)
	{
		switch ((WeirPackageOpKind) op->kind)
		{
			case WEIR_PKG_SINK_DELETE:
				{
					GuardedSinkWrite g = {w, op->ncols, false, 0};
					WeirGuardTarget t = sink_target(w);

					weir_guarded_write(w, cols, op->ncols, guarded_sink_deletes, &g, &t);
					break;
				}
			case WEIR_PKG_SINK_INSERT:
			case WEIR_PKG_SINK_UPSERT:
				{
					GuardedSinkWrite g = {w, op->ncols, op->kind == WEIR_PKG_SINK_UPSERT, 0};
					WeirGuardTarget t = sink_target(w);

					weir_guarded_write(w, cols, op->ncols, guarded_sink_rows, &g, &t);
					break;
				}
			case WEIR_PKG_CHUNKS:
				{
					int64		deleted_bytes;

					state_deletes += weir_catalog_apply_chunks(w->row.id, op->space, chunks,
															   op->first_chunk, op->compacted,
															   op->watermark, &deleted_bytes);
					if (op->space >= 0 && op->space < WEIR_CHECKPOINT_SPACES)
						res->deleted_bytes[op->space] += deleted_bytes;
					break;
				}
			case WEIR_PKG_POSITIONS:
				weir_catalog_write_positions(w->row.id, weir_column_array(&cols[0]),
											 weir_column_array(&cols[1]),
											 weir_column_array(&cols[2]));
				break;
			case WEIR_PKG_DEAD_LETTERS:
				weir_catalog_write_dead_letters(w->row.id, op->oid,
												weir_column_array(&cols[0]),
												weir_column_array(&cols[1]),
												weir_column_array(&cols[2]),
												weir_column_array(&cols[3]));
				break;
			case WEIR_PKG_LATE:
				{
					GuardedSinkWrite g = {w, 2, false, op->watermark};
					WeirGuardTarget t = {w->row.source, NULL, true, NULL, recheck_late_records};

					t.what = psprintf("late-records table \"%s\"", get_rel_name(op->oid));
					weir_guarded_write(w, cols, 2, guarded_late, &g, &t);
					break;
				}
			default:
				elog(ERROR, "unrecognized checkpoint package write: %d", op->kind);
		}
	}
	written = weir_clock_now();
	weir_catalog_write_checkpoint(w->row.id, h->checkpoint_id, h->due, h->watermark,
								  ms_since(h->due, h->started), ms_since(h->started, h->synced),
								  ms_since(h->synced, written), h->bytes,
								  h->sink_rows, h->state_rows, state_deletes,
								  h->records_since);
	res->checkpoint_id = h->checkpoint_id;
	res->served = h->served;
	res->sink_rows = h->sink_rows;
	res->write_us = (double) (written - h->synced);
	return true;
}

/*
 * What the worker learns from a committed checkpoint: the chunks' bytes
 * that went, and what a sink row cost to write (when it wrote enough to
 * tell).
 */
void
weir_checkpoint_committed(WeirWorker *w, const WeirCheckpointResult *res)
{
	if (w->last_value)
		weir_keyed_chunks_deleted(w->last_value->keys, res->deleted_bytes[0]);
	else if (w->dedup && w->dedup->ids)
		weir_keyed_chunks_deleted(w->dedup->ids, res->deleted_bytes[0]);
	else if (w->join)
		weir_keyed_chunks_deleted(w->join->keys, res->deleted_bytes[0]);
	else if (w->plan->op == WEIR_OP_WINDOW)
		weir_window_chunks_deleted(&w->window_chunks, res->deleted_bytes[0]);
	if (res->sink_rows >= WEIR_SINK_ROWS_MEASURED)
		w->sink_row_us = res->write_us / res->sink_rows;
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
	weir_window_reset_flags(win, WEIR_WINDOW_PERSISTED |
							(fired ? WEIR_WINDOW_FIRED | WEIR_WINDOW_EMITTED : 0) |
							(w->emit_updates ? WEIR_WINDOW_EMITTED : 0));
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
	/* without the slot's lock: readers find the store once restored (worker.c) */
	if (w->plan->op == WEIR_OP_PROJECTION)
		windows = bytes = 0;
	else if (w->plan->op == WEIR_OP_DEDUP)
		windows = weir_keyed_restore(w->dedup->ids, w->row.id, watermark, &bytes);
	else if (w->plan->op == WEIR_OP_LAST_VALUE)
		windows = weir_keyed_restore(w->last_value->keys, w->row.id, watermark, &bytes);
	else if (w->plan->op == WEIR_OP_JOIN)
		windows = weir_keyed_restore(w->join->keys, w->row.id, watermark, &bytes);
	else
		windows = weir_window_chunks_restore(&w->window_chunks, w->row.id, watermark,
											 w->lateness, restore_window, w, &bytes);
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
