/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  A pipeline's background worker: restore, then read, aggregate, fire
 *	  and checkpoint until stopped.
 *
 * The worker connects as the bootstrap superuser (PostgreSQL 15 workers
 * cannot log in as a NOLOGIN role) and then acts as the pipeline's owner
 * (SetUserIdAndSecContext with SECURITY_RESTRICTED_OPERATION): user
 * expressions run, and the sink is written, with the owner's rights.
 *
 * Each round is one transaction: read up to WEIR_BATCH_ROWS rows from each
 * partition (below its stable bound, with a snapshot taken after it, as
 * every topic reader does) and evaluate filter, event time, keys and
 * arguments on each row (or take what the read-ahead process read and
 * evaluated, read_ahead.c); apply the records to the operator (operator.h)
 * under the pipeline slot's lock; advance the watermark and let the
 * operator expire what it passed.  When the checkpoint interval has passed,
 * weir.checkpoint() asks or rows pile up, the round collects a checkpoint
 * (checkpoint.c), which the checkpoint writer applies and commits in its
 * own transaction while the worker reads on (checkpoint_writer.c), or the
 * worker applies itself.  State lives in the pipeline's DSA area, which
 * is not WAL-logged: a crash loses only work that the next start redoes
 * from the last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/dead_letter.h"
#include "base/process_memory.h"
#include "base/progress.h"
#include "base/transaction.h"
#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_counters.h"
#include "checkpoint/checkpoint_writer.h"
#include "definition/aggregate.h"
#include "definition/definition.h"
#include "definition/definition_restored.h"
#include "definition/write_target.h"
#include "pipeline/checkpoint.h"
#include "pipeline/read_ahead.h"
#include "pipeline/skip.h"
#include "pipeline/state_image.h"
#include "pipeline/state_stats.h"
#include "pipeline/worker.h"
#include "sink/sink_open.h"

static WeirWorker *worker = NULL;

/*
 * A relation changed (ALTER TABLE, a policy, a grant...): before the next
 * record, the tables are checked again as at the start.  Dependencies of
 * the definition keep the columns it uses from changing type
 * (write_target.c); this catches the rest (row-level security enabled, a
 * privilege revoked, a NOT NULL column added).
 */
static volatile bool tables_changed = false;

static void
relation_changed(Datum arg, Oid relid)
{
	WeirWorker *w = worker;

	if (w == NULL || relid == InvalidOid || relid == w->in.row.source ||
		relid == w->in.row.right_source || relid == w->in.row.sink || relid == w->in.row.late_records)
		tables_changed = true;
}

static void stop_out_of_memory(WeirWorker *w) pg_attribute_noreturn();

static void
worker_detach(int code, Datum arg)
{
	WeirPipelineSlot *slot = (WeirPipelineSlot *) DatumGetPointer(arg);

	LWLockReleaseAll();
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->area = DSM_HANDLE_INVALID;
	slot->root = InvalidDsaPointer;
	slot->image = InvalidDsaPointer;	/* it goes with the area */
	slot->image_len = 0;
	LWLockRelease(&slot->lock);
	/* the slot goes back; waiters and the launcher are told */
	weir_shmem_release_pipeline(slot);
}

static void
worker_error_context(void *arg)
{
	WeirWorker *w = (WeirWorker *) arg;

	if (w->in.cur_part >= 0)
		errcontext("while processing pipeline \"%s\" at topic \"%s\" partition %d position " INT64_FORMAT,
				   w->in.row.name, w->in.side->src->name, w->in.cur_part, w->in.cur_pos);
	else
		errcontext("while processing pipeline \"%s\"", w->in.row.name);
}

static void
add_dead_letter(WeirWorker *w, int32 part, WeirEvalRow *r)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(w->in.cxt);
	WeirDeadLetter *d = palloc(sizeof(WeirDeadLetter));

	d->source = w->in.side->src->relid;
	d->part = part;
	d->position = r->position;
	d->error = pstrdup(r->error);
	d->record = r->record ? pstrdup(r->record) : NULL;
	w->dead = lappend(w->dead, d);
	MemoryContextSwitchTo(oldcxt);
	pg_atomic_fetch_add_u64(&w->slot->records_dead, 1);
}

/*
 * A record too late for state: counted, and kept if the pipeline asks.
 * `part` is the partition of the side being read, in its own topic's
 * numbering (not side->first + part).
 */
static void
record_late(WeirWorker *w, int32 part, WeirEvalRow *r)
{
	pg_atomic_fetch_add_u64(&w->slot->records_late, 1);
	if (OidIsValid(w->in.row.late_records))
	{
		/* keep the record: look it up again by position at checkpoint */
		MemoryContext oldcxt = MemoryContextSwitchTo(w->in.cxt);
		WeirLateRecord *late = palloc(sizeof(WeirLateRecord));

		late->source = w->in.side->src->relid;
		late->part = part;
		late->position = r->position;
		w->late = lappend(w->late, late);
		MemoryContextSwitchTo(oldcxt);
	}
}

/*
 * Keyed operators look each record's key up in a table too large for the
 * CPU's caches: its slot, its entry and what the entry points to (a join's
 * rows) are each a cache miss.  So a record's key is asked for in stages
 * (weir_keyed_prefetch) some records ahead of its turn: its slot
 * PREFETCH_AHEAD records ahead, its entry two thirds of that, what the entry
 * points to a third: far enough for a miss to come back (~0.1 us; a record's
 * work is a few tenths), near enough that what came is still in cache.
 */
#define PREFETCH_AHEAD 12

/*
 * Stage `stage` for record b; guesses[b % PREFETCH_AHEAD] carries the entry
 * stage 1 guessed to stage 2 (a third of PREFETCH_AHEAD records later).
 */
static inline void
prefetch_record(WeirKeyed *keys, WeirEvalRow *rows, int n, int b, int stage,
				dsa_pointer *guesses)
{
	dsa_pointer *guess = &guesses[b % PREFETCH_AHEAD];

	if (keys == NULL || b >= n)
		return;					/* keys: NULL for a projection */
	if (rows[b].kind != WEIR_ROW_OK)
		*guess = InvalidDsaPointer;
	else if (stage == 0)
		(void) weir_keyed_prefetch(keys, rows[b].keyhash, 0, InvalidDsaPointer);
	else
		*guess = weir_keyed_prefetch(keys, rows[b].keyhash, stage, *guess);
}

/*
 * Every YIELD_EVERY records of a batch, the worker lets go of its slot's
 * lock for a moment: interrupts are serviced (an LWLock holds them off),
 * and readers of weir.live_state waiting for the lock get it, rather than
 * waiting for the whole batch.  The store is consistent between records.
 */
#define YIELD_EVERY 256

static void
yield_slot_lock(WeirWorker *w)
{
	LWLockRelease(&w->slot->lock);
	CHECK_FOR_INTERRUPTS();
	/* a reader counts itself out once it holds the lock (live.c) */
	for (int i = 0; i < 100000 && pg_atomic_read_u32(&w->slot->readers_waiting) > 0; i++)
		pg_usleep(10);
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
}

/*
 * Apply the n evaluated rows of partition `part` of the current side to the
 * operator, record by record; dead letters, late records and each
 * partition's greatest event time are the worker's.  Stops early if state
 * memory ran out (the caller stops the pipeline).
 */
static void
apply_rows(WeirWorker *w, int32 part, WeirEvalRow *rows, int n)
{
	WeirOperator *op = w->op;
	/* loaded once: the loop's stores could alias it for the compiler */
	WeirApplied (*apply) (WeirOperator *, const WeirRecord *, TimestampTz) = op->ops->apply;
	TimestampTz watermark = w->watermark;
	WeirKeyed  *keys = op->keys;
	int32		index = w->in.side->first + part;
	int64		dropped_rows = 0;
	dsa_pointer guesses[PREFETCH_AHEAD];
	WeirRecord	rec;

	rec.side = w->in.side - w->in.sides;
	rec.part = part;
	/* counted per batch: the counter is shared, a per-record atomic is not free */
	w->records_since += n;
	pg_atomic_fetch_add_u64(&w->slot->records_in, n);
	for (int b = 0; b < PREFETCH_AHEAD; b++)
	{
		prefetch_record(keys, rows, n, b, 0, guesses);
		if (b >= PREFETCH_AHEAD / 3)
			prefetch_record(keys, rows, n, b - PREFETCH_AHEAD / 3, 1, guesses);
		if (b >= 2 * PREFETCH_AHEAD / 3)
			prefetch_record(keys, rows, n, b - 2 * PREFETCH_AHEAD / 3, 2, guesses);
	}
	for (int b = 0; b < n; b++)
	{
		WeirEvalRow *r = &rows[b];

		prefetch_record(keys, rows, n, b + PREFETCH_AHEAD, 0, guesses);
		prefetch_record(keys, rows, n, b + 2 * PREFETCH_AHEAD / 3, 1, guesses);
		prefetch_record(keys, rows, n, b + PREFETCH_AHEAD / 3, 2, guesses);
		if (unlikely((b % YIELD_EVERY) == YIELD_EVERY - 1))
			yield_slot_lock(w);
		w->in.cur_pos = r->position;	/* for the error context */

		if (r->kind == WEIR_ROW_DEAD)
		{
			add_dead_letter(w, part, r);
			continue;
		}
		/* a projection has no event time; a chained source's is its writers' */
		if (r->t > w->in.max_event_time[index] && w->in.side->event_time_expr &&
			!w->in.side->chained)
			w->in.max_event_time[index] = r->t;
		if (r->kind == WEIR_ROW_FILTERED)
			continue;
		rec.position = r->position;
		rec.t = r->t;
		rec.op = r->op;
		rec.kept = r->kept ? &w->in.batch_kept[r->args * w->in.batch_stride] : NULL;
		rec.key = w->in.batch_keys.data + r->keyoff;
		rec.keylen = r->keylen;
		rec.keyhash = r->keyhash;
		rec.values = &w->in.batch_values[r->args * w->in.batch_stride];
		rec.nulls = &w->in.batch_nulls[r->args * w->in.batch_stride];
		switch (apply(op, &rec, watermark))
		{
			case WEIR_APPLIED:
				break;
			case WEIR_DROPPED:
				dropped_rows++;
				break;
			case WEIR_LATE:
				record_late(w, part, r);
				break;
			case WEIR_REFUSED:
				/* its record is read from the topic by the checkpoint */
				r->error = (char *) op->refused;
				r->record = NULL;
				add_dead_letter(w, part, r);
				break;
			case WEIR_NO_MEMORY:
				pg_atomic_fetch_add_u64(&w->slot->records_dropped, dropped_rows);
				return;
		}
	}
	pg_atomic_fetch_add_u64(&w->slot->records_dropped, dropped_rows);
}

/*
 * Apply the evaluated batch of the group (rd->group_first, rd->ngroup of
 * the current side) to state, partition after partition, and move the
 * partitions' positions past it: what becomes of a group the worker read
 * (weir_reading_round), or its read-ahead process did (read_ahead.c).
 * rd is the worker's own reading (w->in).
 */
static void
apply_group(WeirReading *rd, void *arg)
{
	WeirWorker *w = (WeirWorker *) arg;
	MemoryContext oldcxt;
	int32		first = w->in.group_first;
	int			n = w->in.ngroup;

	Assert(rd == &w->in);

	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	oldcxt = MemoryContextSwitchTo(w->in.batch_cxt);
	w->applying = true;
	for (int g = 0; g < n && !w->store->out_of_memory; g++)
	{
		int32		part = first + g;
		WeirEvalRow *rows = &w->in.batch[g * WEIR_BATCH_ROWS];
		int			nrows = w->in.group_nbatch[g];

		w->in.cur_part = part;		/* for the error context */
		w->in.cur_pos = w->in.ranges[g].max_position;
		apply_rows(w, part, rows, nrows);
	}
	w->applying = false;
	MemoryContextSwitchTo(oldcxt);
	LWLockRelease(&w->slot->lock);
	w->in.cur_part = -1;
	if (w->store->out_of_memory)
		stop_out_of_memory(w);
	for (int g = 0; g < n; g++)
		w->in.pos[w->in.side->first + first + g] = w->in.ranges[g].max_position;
}

/*
 * A source that pipelines write (a topic in a chain) has its writers'
 * watermark for the partitions as far as this pipeline has processed them:
 * it stands in for the greatest event time seen (advance_watermark), so
 * event time travels through a chain instead of being guessed again at
 * each stage.  A chained source is asked each round; one without writers
 * once a second, for a writer that comes (the query is not free, and a
 * round can take far less).
 */
#define CHAIN_RECHECK_USECS USECS_PER_SEC

static void
take_published_watermarks(WeirWorker *w, TimestampTz now)
{
	TimestampTz *before = w->chain_before;

	for (int s = 0; s < w->in.nsides; s++)
	{
		WeirSide   *side = &w->in.sides[s];

		if (side->event_time_expr == NULL)
			continue;			/* a projection has no watermark */
		if (!side->chained && side->chain_checked_at != 0 &&
			now - side->chain_checked_at < CHAIN_RECHECK_USECS)
			continue;
		side->chain_checked_at = now;
		memcpy(before, &w->in.max_event_time[side->first],
			   sizeof(TimestampTz) * side->src->partitions);
		side->chained = side->src->ops->watermarks(side->src, &w->in.pos[side->first],
												   &w->in.max_event_time[side->first]);
		/* for weir.pipelines: since when a partition's writers hold it */
		for (int p = 0; p < side->src->partitions; p++)
		{
			int			i = side->first + p;

			if (w->chain_moved_at[i] == 0 || w->in.max_event_time[i] != before[p])
				w->chain_moved_at[i] = now;
		}
	}
}

/* The pipeline watermark: min over non-idle partitions, never decreasing. */
static void
advance_watermark(WeirWorker *w, TimestampTz now)
{
	TimestampTz candidate = DT_NOEND;
	bool		any = false;

	w->watermark_holder = -1;
	for (int p = 0; p < w->in.partitions; p++)
	{
		if (w->idle_timeout > 0 && now - w->in.last_data_at[p] > w->idle_timeout)
			continue;
		any = true;
		if (w->in.max_event_time[p] == DT_NOBEGIN)
		{
			w->watermark_holder = p;	/* a live partition with no time yet */
			return;
		}
		if (w->in.max_event_time[p] - w->out_of_orderness < candidate)
		{
			candidate = w->in.max_event_time[p] - w->out_of_orderness;
			w->watermark_holder = p;
		}
	}
	if (any && candidate != DT_NOEND && candidate > w->watermark)
		w->watermark = candidate;
}

static void
publish(WeirWorker *w, int64 lag)
{
	/* with the expired entries that wait for the checkpoint: memory they hold */
	int64		entries = w->store->root->used + w->op->ops->held_entries(w->op);
	TimestampTz newest = DT_NOBEGIN;
	/* a sample for weir.state_stats is due (state_stats.c): one clock read */
	TimestampTz sample_at = weir_state_stats_sample_due(w->slot);

	for (int p = 0; p < w->in.partitions; p++)
		newest = Max(newest, w->in.max_event_time[p]);
	SpinLockAcquire(&w->slot->mutex);
	w->slot->watermark = w->watermark;
	w->slot->windows = entries;
	w->slot->state_bytes = w->store->root->bytes + w->local_bytes;
	w->slot->lag_rows = lag;
	w->slot->watermark_holder = -1;
	w->slot->has_idle_timeout = w->idle_timeout > 0;
	w->slot->latest_data_at = 0;
	for (int p = 0; p < w->in.partitions; p++)
		w->slot->latest_data_at = Max(w->slot->latest_data_at, w->in.last_data_at[p]);
	if (w->watermark_holder >= 0)
	{
		/* in its own topic's numbering (a join numbers on over two) */
		int			s = w->in.nsides > 1 && w->watermark_holder >= w->in.sides[1].first ? 1 : 0;

		w->slot->watermark_holder = w->watermark_holder - w->in.sides[s].first;
		w->slot->holder_source = w->in.sides[s].src->relid;
		w->slot->holder_data_at = w->in.last_data_at[w->watermark_holder];
		w->slot->holder_has_time = w->in.max_event_time[w->watermark_holder] != DT_NOBEGIN;
		w->slot->holder_chained = w->in.sides[s].chained;
		w->slot->holder_moved_at = w->chain_moved_at[w->watermark_holder];
	}
	weir_state_stats_note(&w->slot->stats, sample_at, newest,
						  (int64) pg_atomic_read_u64(&w->slot->records_in), entries,
						  w->slot->state_bytes, w->local_bytes);
	SpinLockRelease(&w->slot->mutex);
}

/* Checkpoint tickets taken so far by weir.checkpoint() callers. */
static int64
checkpoint_tickets(WeirWorker *w)
{
	int64		requested;

	SpinLockAcquire(&w->slot->mutex);
	requested = w->slot->checkpoint_requested;
	SpinLockRelease(&w->slot->mutex);
	return requested;
}

/*
 * State reached max_state_memory: stop with a clear status.  Nothing since
 * the last checkpoint is committed, so positions stay where the committed
 * state is, and raising the limit and starting again resumes from there.
 */
static void
stop_out_of_memory(WeirWorker *w)
{
	char	   *msg;

	/* in the worker's context: the abort below frees the round's memory */
	msg = MemoryContextStrdup(w->in.cxt,
							  psprintf("state of pipeline \"%s\" reached its limit of " INT64_FORMAT " bytes (max_state_memory)",
									   w->in.row.name, w->in.row.max_state_memory));
	AbortCurrentTransaction();
	weir_transaction_begin();
	(void) weir_catalog_pipeline_set_status(w->in.row.id, WEIR_PIPELINE_OUT_OF_MEMORY, msg, true);
	weir_transaction_end();
	ereport(LOG,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("%s", msg),
			 errdetail("The pipeline is stopped at its last checkpoint, " INT64_FORMAT ".", w->checkpoint_id),
			 errhint("Raise max_state_memory of the pipeline and start it with weir.start().")));
	proc_exit(0);
}

/*
 * Whether the sink rows waiting are reason enough for a checkpoint now
 * (the operator's pending_sink_rows, at the cost a sink row was last
 * measured to have).  Reading a backlog, windows fire or records pass far
 * faster than a checkpoint writes their rows: a checkpoint then comes as
 * soon as the rows waiting would take half the interval to write, so that
 * checkpoints keep the interval instead of growing with the backlog (each
 * one's results committed within about an interval of being computed).
 *
 * An eighth of the interval instead of half, while a backlog is read with
 * a checkpoint writer: the writer then writes one checkpoint while the
 * worker computes the next, and the last checkpoint of a backlog, which
 * the worker only waits for, stays small.  Not less than an eighth: each
 * checkpoint has fixed costs (a commit, the state chunk, and the sync
 * phase, when the worker stops and walks every open window).  Only while
 * the last sync phase took under an eighth of the interval, or the worker
 * would be stopped most of its time.  And only for operators whose every
 * row is written once however often checkpoints come (rows_once): a last
 * value's row per changed key, or an open window's current values (emit
 * 'updates'), would be written again at every checkpoint.
 */
static bool
sink_rows_due(WeirWorker *w, bool caught_up)
{
	bool		rows_once = w->op->ops->rows_once && !w->emit_updates;
	int64		share = 2;

	if (!caught_up && rows_once && w->writer &&
		w->last_sync_us * 8 < w->checkpoint_interval)
		share = 8;

	return w->op->ops->pending_sink_rows(w->op) * w->sink_row_us >=
		w->checkpoint_interval / share;
}

/*
 * Whether the checkpoint writer still writes the last checkpoint; what a
 * committed one tells the worker is taken in here.
 */
static bool
writer_busy(WeirWorker *w)
{
	WeirCheckpointResult res;

	if (w->writer == NULL)
		return false;
	switch (weir_writer_poll(w->writer, &res))
	{
		case WEIR_WRITER_IDLE:
			return false;
		case WEIR_WRITER_COMMITTED:
			weir_checkpoint_committed(w, &res);
			return false;
		case WEIR_WRITER_BUSY:
			break;
	}
	return true;
}

static void
run(WeirWorker *w)
{
	int64		served = 0;

	for (;;)
	{
		TimestampTz now;
		int64		got;
		int64		lag = 0;
		int64		tickets;
		bool		caught_up;
		bool		checkpoint;
		bool		in_flight;
		TimestampTz checkpoint_started = 0;
		WeirCheckpointResult res;	/* of a checkpoint written here */
		bool		applied = false;	/* here, and the pipeline still there */

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* a commit or a failure of the writer is taken in first */
		in_flight = writer_busy(w);
		/* a pipeline without a worker needs its helpers' slots more */
		if ((w->writer || w->read_ahead) && weir_shmem_helpers_should_yield())
		{
			if (w->writer && !in_flight)
			{
				weir_writer_stop(w->writer, w->slot, w->in.row.name);
				w->writer = NULL;
			}
			if (w->read_ahead)
			{
				weir_read_ahead_stop(w->read_ahead,
									 "to leave its background worker slot to a pipeline's worker");
				w->read_ahead = NULL;
			}
		}
		now = weir_clock_now();
		weir_transaction_begin();
		if (tables_changed)
		{
			tables_changed = false;
			weir_check_tables(w->in.plan, &w->in.row, w->in.row.owner);
		}
		if (w->read_ahead)
		{
			WeirReadAheadRound round;

			/* the process's round end says which tickets it covers */
			pgstat_report_activity(STATE_RUNNING, "weir: applying what was read ahead");
			got = weir_read_ahead_round(w->read_ahead, now, w->next_checkpoint, served,
										in_flight, &round);
			if (round.stopped)
				w->read_ahead = NULL;
			tickets = round.tickets;
			lag = round.lag;
			caught_up = round.caught_up;
		}
		else
		{
			/* tickets taken before this round's bounds are covered by it */
			tickets = checkpoint_tickets(w);
			pgstat_report_activity(STATE_RUNNING, "weir: reading");
			got = weir_reading_round(&w->in, now, &lag, &caught_up, apply_group, w);
		}
		w->store->backlog = !caught_up;
		take_published_watermarks(w, now);
		advance_watermark(w, now);
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		if (w->op->ops->expire(w->op, w->watermark))
			w->changed = true;
		LWLockRelease(&w->slot->lock);
		/* between batches: an image of state for weir.live_state, if asked */
		weir_state_image_serve(w->slot, w->area, w->store, w->in.plan);
		/* readers of the topic it writes wait for its watermark */
		if (w->publishes_watermark && w->watermark > w->watermark_published)
			w->changed = true;

		/* generic-aggregate states live in this process: they count too */
		if (w->in.plan->has_generic)
		{
			w->local_bytes = weir_agg_generic_bytes();
			if (w->store->root->bytes + w->local_bytes > w->in.row.max_state_memory)
				stop_out_of_memory(w);
		}
		if (got > 0)
			w->changed = true;

		/*
		 * Due, with something to write; or asked for, once caught up; or
		 * early, when state is past half its limit and a checkpoint would
		 * free some (keys that expired but changed since the last one wait
		 * for it: while a backlog is read, that can be most of the state).
		 */
		checkpoint = (now >= w->next_checkpoint && w->changed) ||
			(tickets > served && caught_up) ||
			(w->changed && w->store->root->bytes > w->in.row.max_state_memory / 2 &&
			 w->op->ops->held_entries(w->op) > 0) ||
			(w->changed && sink_rows_due(w, caught_up));
		/* one checkpoint in flight: the next waits for the writer, reading on */
		if (checkpoint && in_flight)
			checkpoint = false;
		if (checkpoint)
		{
			WeirPackage pkg;

			pgstat_report_activity(STATE_RUNNING, "weir: checkpoint");
			checkpoint_started = weir_clock_now();
			weir_checkpoint_collect(w, Min(w->next_checkpoint, now),
									caught_up ? tickets : served, &pkg);
			w->last_sync_us = weir_clock_now() - checkpoint_started;
			if (w->writer)
				weir_writer_send(w->writer, &pkg);
			else
			{
				applied = weir_checkpoint_apply(w->target, pkg.buf.data, pkg.buf.len, &res);
				weir_checkpoint_committed(w, &res);
			}
			pfree(pkg.buf.data);
		}
		/* the first record and the old rate after the restore, once known */
		weir_restore_follow_round(&w->follow, got, caught_up);
		weir_transaction_end();
		if (checkpoint && w->writer == NULL)
		{
			weir_sink_committed(w->target->sink);
			if (applied)
				weir_counters_committed(w->slot, &res.counters);
		}
		if (checkpoint)
		{
			/* what expired while waiting for this checkpoint goes now */
			LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
			w->changed = w->op->ops->after_checkpoint(w->op);
			LWLockRelease(&w->slot->lock);
			if (caught_up)
				served = tickets;
			publish(w, lag);	/* what waiters read next is this round's */
			if (w->writer == NULL)	/* a writer says so when it commits */
				weir_shmem_checkpoint_committed(w->slot, w->checkpoint_id, served);
		}
		/*
		 * As Flink's: the interval runs from the start of one checkpoint to
		 * the next, with a pause after each of a quarter interval or the
		 * checkpoint's own duration, whichever is longer, so that long
		 * checkpoints (a backlog's) do not follow each other back to back.
		 */
		if (checkpoint)
		{
			TimestampTz done = weir_clock_now();

			/* a long checkpoint earns as long a pause: at most half the time */
			w->next_checkpoint = Max(checkpoint_started + w->checkpoint_interval,
									 done + Max(w->checkpoint_interval / 4,
												done - checkpoint_started));
		}
		else if (now >= w->next_checkpoint)
			w->next_checkpoint = now + w->checkpoint_interval;	/* nothing changed */
		publish(w, lag);
		weir_progress_round(got, caught_up ? 0 : lag);
		pgstat_report_activity(STATE_IDLE, NULL);

		/* memory kept for the next busy spell goes back when idle a while */
		if (got > 0)
		{
			w->idle_since = 0;
			w->memory_released = false;
		}
		else if (w->idle_since == 0)
			w->idle_since = now;
		else if (!w->memory_released && !in_flight &&
				 now - w->idle_since >= w->checkpoint_interval)
		{
			weir_memory_release_freed();
			w->memory_released = true;
		}

		/*
		 * idle; or a checkpoint asked for waits for the one in flight (with
		 * a read-ahead process, its round waited already)
		 */
		if (got == 0 && w->read_ahead == NULL &&
			(checkpoint_tickets(w) == served || in_flight))
		{
			long		wait_ms = (w->next_checkpoint - weir_clock_now()) / 1000;

			wait_ms = Max(Min(wait_ms, 1000), 1);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}

static WeirWorker *
setup(int32 id, WeirPipelineSlot *slot)
{
	WeirWorker *w;
	WeirOperatorEnv env;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "weir worker",
											  ALLOCSET_DEFAULT_SIZES);

	weir_memory_keep_freed();
	w = MemoryContextAllocZero(cxt, sizeof(WeirWorker));
	weir_reading_setup(&w->in, id, cxt);
	w->slot = slot;
	weir_transaction_begin();
	MemoryContextSwitchTo(w->in.cxt);
	/* a definition restored by pg_restore lost its dependencies */
	weir_definition_depend_again(w->in.plan, &w->in.row);
	w->out_of_orderness = weir_interval_usecs(&w->in.row.out_of_orderness, "out_of_orderness");
	w->lateness = weir_interval_usecs(&w->in.row.allowed_lateness, "allowed_lateness");
	w->idle_timeout = w->in.row.has_idle_timeout ?
		weir_interval_usecs(&w->in.row.idle_timeout, "idle_timeout") : 0;
	w->checkpoint_interval = weir_interval_usecs(&w->in.row.checkpoint_interval, "checkpoint_interval");
	w->sink_row_us = WEIR_SINK_ROW_US_DEFAULT;
	w->emit_updates = strcmp(w->in.row.emit, "updates") == 0;
	w->watermark = DT_NOBEGIN;
	w->watermark_holder = -1;
	w->area = dsa_create(weir_shmem()->state_tranche);
	dsa_pin_mapping(w->area);
	/* a hard stop a little above the accounted limit, for safety */
	dsa_set_size_limit(w->area, w->in.row.max_state_memory + w->in.row.max_state_memory / 4 + 4 * 1024 * 1024);
	w->store = weir_store_create(w->area, w->in.row.max_state_memory,
								 weir_operator_entry_state(w->in.plan),
								 weir_operator_entry_end(w->in.plan), w->in.cxt);
	env.name = w->in.row.name;
	env.plan = w->in.plan;
	env.store = w->store;
	env.lock = &w->slot->lock;
	env.sink = w->in.row.sink;
	env.records_dead = &w->slot->records_dead;
	env.lateness = w->lateness;
	env.emit_updates = w->emit_updates;
	{
		WeirTopicRow sink_topic;

		env.sink_is_topic = weir_catalog_topic_by_relid(w->in.row.sink, &sink_topic);
	}
	env.cxt = w->in.cxt;
	w->op = weir_operator_create(&env);
	w->target = palloc0(sizeof(WeirCheckpointTarget));
	w->target->row = w->in.row;
	w->target->plan = w->in.plan;
	w->target->slot = slot;
	w->target->sink = weir_sink_open(&w->target->row, w->in.plan, slot, w->in.cxt);
	/* a projection has no watermark: it never has one to publish */
	w->publishes_watermark = env.sink_is_topic;
	w->watermark_published = DT_NOBEGIN;
	w->chain_moved_at = palloc0(sizeof(TimestampTz) * w->in.partitions);
	w->chain_before = palloc(sizeof(TimestampTz) * w->in.partitions);
	weir_transaction_end();
	MemoryContextSwitchTo(w->in.cxt);
	return w;
}

/*
 * Errors a restart cannot cure: the definition or the tables around it no
 * longer fit (write_target.c), the owner lost a privilege, or the last
 * checkpoint cannot be restored (chunks of a state format this build does
 * not read, or of values whose types have new OIDs since, as after
 * pg_restore: catalog_chunk.c, 0A000; a checkpoint that does not decode,
 * XX001): each restart would read the same committed rows again.  The
 * pipeline is disabled with the error as its status, not restarted in a
 * loop; its owner fixes the cause and calls weir.start().
 */
static bool
error_is_permanent(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION ||
		sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED ||
		sqlerrcode == ERRCODE_UNDEFINED_OBJECT ||
		sqlerrcode == ERRCODE_DATA_CORRUPTED;
}

/*
 * The error as weir.pipelines shows it: with the record the worker was at,
 * if any, which weir.skip() can move past.
 */
static const char *
failure_message(ErrorData *edata)
{
	WeirWorker *w = worker;

	if (w == NULL || w->in.cur_part < 0 || w->in.side == NULL || w->in.side->src == NULL)
		return edata->message;
	return psprintf("%s (at topic \"%s\" partition %d position " INT64_FORMAT ")",
					edata->message, w->in.side->src->name, w->in.cur_part, w->in.cur_pos);
}

void
weir_worker_main(Datum main_arg)
{
	int32		id = DatumGetInt32(main_arg);
	Oid			dboid;
	WeirPipelineSlot *slot;
	ErrorContextCallback errcallback;
	int			pipelines;
	int			holder;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	PG_TRY();
	{
		slot = weir_shmem_claim_pipeline(id, &holder);
		if (slot == NULL && holder != 0)
		{
			/* a launcher that restarted does not know its predecessor's workers */
			ereport(LOG,
					(errmsg("weir pipeline %d already has a worker (PID %d)", id, holder)));
			proc_exit(0);
		}
		if (slot == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many pipelines running"),
					 errhint("Raise weir.max_pipelines (and max_worker_processes) and restart the server.")));
		before_shmem_exit(worker_detach, PointerGetDatum(slot));
		/* its restore, compactions and catch-ups show in weir.progress */
		weir_progress_attach(slot);

		CacheRegisterRelcacheCallback(relation_changed, (Datum) 0);
		weir_agg_set_user_code_lock(&slot->lock);
		worker = setup(id, slot);
		errcallback.callback = worker_error_context;
		errcallback.arg = worker;
		errcallback.previous = error_context_stack;
		error_context_stack = &errcallback;

		/* an earlier worker's writer may still be committing */
		weir_transaction_begin();
		weir_writer_wait_for_predecessor(id);
		weir_transaction_end();
		weir_checkpoint_restore(worker);
		/* restored: weir.live_state may read the store from now on */
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->area = dsa_get_handle(worker->area);
		slot->root = worker->store->root_dp;
		LWLockRelease(&slot->lock);
		weir_transaction_begin();
		pipelines = list_length(weir_catalog_enabled_pipelines());
		weir_transaction_end();
		worker->writer = weir_writer_start(&worker->in.row, worker->slot, worker->checkpoint_id,
										   pipelines, worker->in.cxt);
		worker->read_ahead = weir_read_ahead_start(&worker->in, worker->slot, pipelines,
												   worker->op->ops->worker_bound,
												   apply_group, worker);
		worker->next_checkpoint = weir_clock_now() + worker->checkpoint_interval;
		weir_transaction_begin();
		(void) weir_catalog_pipeline_set_status(id, WEIR_PIPELINE_RUNNING, NULL, false);
		weir_transaction_end();
		run(worker);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		RESUME_INTERRUPTS();
		/*
		 * A generic aggregate's transition function that raised on a record
		 * while it was applied: that record cannot be processed.  State may
		 * hold part of it, so the worker restores its last checkpoint (it
		 * exits, and is started again at once) and moves past the record,
		 * a dead letter with this error (skip.c).
		 */
		if (worker && worker->applying && worker->in.plan->has_generic &&
			worker->in.cur_part >= 0 && weir_error_is_about_data(edata->sqlerrcode))
		{
			weir_transaction_begin();
			weir_skip_after_failure(id, worker->in.side->src->relid, worker->in.cur_part,
									worker->in.cur_pos, edata->message);
			weir_transaction_end();
			SpinLockAcquire(&worker->slot->mutex);
			worker->slot->restart_now = true;
			SpinLockRelease(&worker->slot->mutex);
			ereport(LOG,
					(errmsg("weir pipeline %d moves past topic \"%s\" partition %d position " INT64_FORMAT ", a dead letter, and restores its last checkpoint",
							id, worker->in.side->src->name, worker->in.cur_part, worker->in.cur_pos)));
			proc_exit(1);
		}
		/* record why, so that weir.pipelines can say it, and where */
		weir_transaction_begin();
		(void) weir_catalog_pipeline_set_status(id, WEIR_PIPELINE_FAILED, failure_message(edata),
												error_is_permanent(edata->sqlerrcode));
		weir_transaction_end();
		proc_exit(1);
	}
	PG_END_TRY();
}
