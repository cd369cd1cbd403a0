/*-------------------------------------------------------------------------
 *
 * checkpoint.c
 *	  A pipeline's checkpoint, as the worker takes it: the sync phase
 *	  (collect), what the worker learns from its commit, and the restore
 *	  from the last one.
 *
 * One checkpoint is one transaction (checkpoint_apply.c): the sink rows
 * the operator owes since the previous checkpoint, the state chunks that
 * changed, the positions and per-partition maximum event times, the dead
 * letters and late records, and a weir.checkpoints row with the phase
 * timings.  The worker collects it into a package (checkpoint_package.h)
 * while processing is stopped; the package is applied (checkpoint_apply.c)
 * by the checkpoint writer (checkpoint_writer.c) in a transaction of its
 * own while the worker reads on, or, without a writer, by the worker in its
 * round's transaction.  After a crash, restoring that
 * state and resuming after those positions gives the sink and the state a
 * run without the crash would have given.
 *
 * Phases (doc/design.md): start delay = from the moment the checkpoint was
 * due to the worker reaching a batch boundary; sync = collecting what
 * changed into the package (processing is stopped meanwhile); async =
 * applying it, up to the commit (the commit itself cannot be timed in the
 * row it commits).  Operators write only what changed, so a checkpoint's
 * cost follows what changed; from time to time a checkpoint writes all the
 * state and the older chunks go (compaction).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/checkpoint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/columns.h"
#include "base/dead_letter.h"
#include "base/progress.h"
#include "base/transaction.h"
#include "catalog_sql/catalog_chunk.h"
#include "catalog_sql/catalog_counters.h"
#include "catalog_sql/catalog_pipeline.h"
#include "catalog_sql/catalog_restores.h"
#include "checkpoint/checkpoint_apply.h"
#include "checkpoint/checkpoint_counters.h"
#include "checkpoint/checkpoint_package.h"
#include "pipeline/checkpoint.h"

/* Positions, dead letters and late records: what every kind writes. */
static void
progress_collect(WeirWorker *w, WeirPackage *pkg)
{
	WeirColumn	pos[3];
	ListCell   *lc;

	weir_column_init(&pos[0], INT4OID);
	weir_column_init(&pos[1], INT8OID);
	weir_column_init(&pos[2], TIMESTAMPTZOID);
	for (int p = 0; p < w->in.partitions; p++)
	{
		weir_column_add(&pos[0], Int32GetDatum(p), false);
		weir_column_add(&pos[1], Int64GetDatum(w->in.pos[p]), false);
		weir_column_add(&pos[2], TimestampTzGetDatum(w->in.max_event_time[p]),
						w->in.max_event_time[p] == DT_NOBEGIN);
	}
	weir_package_add_columns(pkg, WEIR_PKG_POSITIONS, InvalidOid, pos, 3);
	/* dead letters, one write per source (a join has two) */
	for (int s = 0; s < w->in.nsides && w->dead != NIL; s++)
	{
		WeirColumn	d[4];

		weir_dead_letter_columns_init(d);
		foreach(lc, w->dead)
		{
			WeirDeadLetter *dl = lfirst(lc);

			if (dl->source != w->in.sides[s].src->relid)
				continue;
			/* one the operator refused: read from its topic now */
			if (dl->record == NULL)
				dl->record = weir_catalog_topic_record(dl->source, dl->part, dl->position);
			weir_column_add(&d[0], Int32GetDatum(dl->part), false);
			weir_column_add(&d[1], Int64GetDatum(dl->position), false);
			weir_column_add(&d[2], CStringGetTextDatum(dl->error), false);
			weir_column_add(&d[3], dl->record ?
							DirectFunctionCall1(jsonb_in, CStringGetDatum(dl->record)) :
							(Datum) 0, dl->record == NULL);
		}
		if (d[0].n > 0)
			weir_package_add_columns(pkg, WEIR_PKG_DEAD_LETTERS, w->in.sides[s].src->relid, d, 4);
	}
	list_free_deep(w->dead);
	w->dead = NIL;
	/* late records, one write per source, as of this watermark */
	for (int s = 0; s < w->in.nsides && w->late != NIL; s++)
	{
		WeirColumn	l[2];

		weir_column_init(&l[0], INT4OID);
		weir_column_init(&l[1], INT8OID);
		foreach(lc, w->late)
		{
			WeirLateRecord *late = lfirst(lc);

			if (late->source != w->in.sides[s].src->relid)
				continue;
			weir_column_add(&l[0], Int32GetDatum(late->part), false);
			weir_column_add(&l[1], Int64GetDatum(late->position), false);
		}
		if (l[0].n > 0)
			weir_package_add_late(pkg, w->in.sides[s].src->relid, l, w->watermark);
	}
	list_free_deep(w->late);
	w->late = NIL;
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
	if (!weir_checkpoint_pipeline_exists(&w->in.row))
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" was dropped; its worker exits", w->in.row.name)));
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
	h->published = w->publishes_watermark && !TIMESTAMP_NOT_FINITE(w->watermark) ?
		w->watermark - w->op->rows_behind : DT_NOBEGIN;
	w->watermark_published = w->watermark;
	h->records_since = w->records_since;
	h->bytes = n.bytes;
	h->sink_rows = n.sink_rows;
	h->state_rows = n.state_rows;
	h->served = served;
	/* after the operator's collect: the dead letters of rows it computed count */
	weir_counters_of_worker(w->slot, &h->counters);
	w->records_since = 0;
	h->synced = weir_clock_now();
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
 * recorded in weir.restores (with a WARNING when longer than the
 * pipeline's recovery_target); the worker then follows what comes after
 * (restore_follow.c).
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
	WeirCounters counters;
	int64		counted_at;
	WeirRestoreRecord rec;

	weir_transaction_begin();
	MemoryContextSwitchTo(w->in.cxt);
	/* weir.progress: the totals are what the chunks hold (one cheap scan) */
	weir_catalog_chunks_size(w->in.row.id, &bytes, &entries);
	weir_progress_begin(WEIR_PROGRESS_RESTORE, WEIR_PHASE_LOADING_POSITIONS, bytes, entries);
	weir_catalog_load_positions(w->in.row.id, w->in.partitions, w->in.pos, w->in.max_event_time);
	w->checkpoint_id = weir_catalog_last_checkpoint(w->in.row.id, &watermark);
	/* written by the same transactions as the checkpoints: the same one */
	counted_at = weir_catalog_load_counters(w->in.row.id, &counters);
	if (counted_at != w->checkpoint_id)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("counters of pipeline \"%s\" are as of checkpoint " INT64_FORMAT ", not its last checkpoint " INT64_FORMAT,
						w->in.row.name, counted_at, w->checkpoint_id),
				 errdetail("weir.pipeline_counters is written in the transaction of each checkpoint."),
				 errhint("Drop and create the pipeline again.")));
	w->watermark = watermark;
	w->watermark_published = watermark;
	/* without the slot's lock: readers find the store once restored (worker.c) */
	weir_progress_phase(WEIR_PROGRESS_RESTORE, WEIR_PHASE_READING_CHUNKS);
	entries = w->op->ops->restore(w->op, w->in.row.id, watermark, &bytes, &owes_rows);
	if (owes_rows)
		w->changed = true;
	ms = (double) (GetCurrentTimestamp() - started) / 1000.0;
	weir_catalog_insert_restore(w->in.row.id, w->checkpoint_id, false, ms, bytes, entries, &rec);
	weir_transaction_end();
	weir_progress_end(WEIR_PROGRESS_RESTORE);
	/* the time to the first record and back to the rate are written later */
	weir_restore_follow_begin(&w->follow, rec.id, GetCurrentTimestamp(), rec.rate_before);
	MemoryContextSwitchTo(w->in.cxt);

	SpinLockAcquire(&w->slot->mutex);
	w->slot->checkpoint_id = w->checkpoint_id;
	w->slot->watermark = w->watermark;
	SpinLockRelease(&w->slot->mutex);
	/* what the worker reads from here on counts from the checkpoint's counts */
	weir_counters_restore(w->slot, &counters);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\" restored checkpoint " INT64_FORMAT " in %.1f ms: " INT64_FORMAT " %s, " INT64_FORMAT " bytes",
					w->in.row.name, w->checkpoint_id, ms, entries,
					w->op->ops->state_noun, bytes)));
	if (rec.target_ms >= 0 && ms > rec.target_ms)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("weir pipeline \"%s\" restored checkpoint " INT64_FORMAT " in %.1f ms, over its recovery target of %g ms",
						w->in.row.name, w->checkpoint_id, ms, rec.target_ms),
				 errhint("See recovery_projection in weir.pipelines; a smaller state (a ttl, a horizon) restores faster.")));
}
