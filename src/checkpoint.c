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
#include "operator.h"
#include "sink.h"
#include "sink_guard.h"
#include "sink_rows.h"
#include "window_chunks.h"
#include "write_target.h"
#include "worker.h"

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
	TimestampTz started = weir_clock_now();
	WeirCollected n = {0, 0, 0};
	WeirPackageHeader *h;

	/* a pipeline dropped (or replaced under the same id) ends its worker */
	if (!pipeline_exists(w))
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" was dropped; its worker exits", w->row.name)));
		proc_exit(0);
	}

	weir_package_begin(pkg);
	w->op->ops->collect(w->op, pkg, w->watermark, &n);
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
	w->op->ops->chunks_deleted(w->op, res->deleted_bytes[0]);
	if (res->sink_rows >= WEIR_SINK_ROWS_MEASURED)
		w->sink_row_us = res->write_us / res->sink_rows;
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
	int64		entries;
	bool		owes_rows;
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
	entries = w->op->ops->restore(w->op, w->row.id, watermark, &bytes, &owes_rows);
	LWLockRelease(&w->slot->lock);
	if (owes_rows)
		w->changed = true;
	ms = (double) (GetCurrentTimestamp() - started) / 1000.0;
	weir_catalog_write_restore(w->row.id, w->checkpoint_id, ms, bytes, entries);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(w->cxt);

	SpinLockAcquire(&w->slot->mutex);
	w->slot->checkpoint_id = w->checkpoint_id;
	w->slot->watermark = w->watermark;
	SpinLockRelease(&w->slot->mutex);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\" restored checkpoint " INT64_FORMAT " in %.1f ms: " INT64_FORMAT " %s, " INT64_FORMAT " bytes",
					w->row.name, w->checkpoint_id, ms, entries,
					w->op->ops->state_noun, bytes)));
}
