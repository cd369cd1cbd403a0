/*-------------------------------------------------------------------------
 *
 * state_stats.c
 *	  weir._state_stats(pipeline_id, operator), behind the view
 *	  weir.state_stats: what a running pipeline's state holds and how fast
 *	  it grows.
 *
 * Two sources, chosen so that the worker's cost per record stays nil:
 *
 *	 Rates come from samples the worker copies into its slot at most once
 *	 per weir.state_stats_interval (state_samples.h), from the figures it
 *	 publishes each round anyway (worker.c publish); the reader compares the
 *	 oldest sample of the ring with the slot's figures now.  With
 *	 weir.track_state_stats off the worker takes none (not even the clock
 *	 read), and the rates are NULL.
 *
 *	 Figures that need the entries (keys, entries per key, value sizes, the
 *	 oldest entry's event time, what the entries need in bytes) are
 *	 computed here, from the store in the worker's DSA area, under the
 *	 pipeline slot's lock held shared, as weir.live_state copies it
 *	 (pipeline/state_view.c): the walk only copies a hash of each entry's
 *	 key and a few numbers; sorting and counting come after the lock.  The
 *	 worker pays only the wait for that lock (it lets readers in between
 *	 records), and only while someone reads.
 *
 * What is not in shared memory: generic aggregates' states live in the
 * worker's own memory (definition/aggregate.c).  Their total, which the
 * worker measures each round, is in_worker_bytes; value_bytes_max counts
 * only what an entry holds in shared memory, value_bytes_mean adds the
 * in-worker total shared out over the entries.  Asking the worker for each
 * state (as live_state asks for an image) would cost it a serialisation of
 * its whole state per call: not for a statistics view.
 *
 * No key and no value is shown, and nothing of the owner's runs (no
 * output or final function): only counts, sizes and times.  So the view
 * follows weir.pipelines, which shows the same kind of figures to all.
 *
 * Locks: the pipeline slot's lock (shared) then its mutex, as live_state
 * (shmem.h); the DSA area's own locks under it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_stats.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/shmem.h"
#include "operator/join_rows.h"
#include "pipeline/state_stats.h"
#include "state/store.h"

bool		weir_track_state_stats = true;
static int	state_stats_interval = 10000;	/* ms */

/* when this worker took its last sample (a worker serves one pipeline) */
static TimestampTz last_sample_at = 0;

void
weir_state_stats_define_gucs(void)
{
	DefineCustomBoolVariable("weir.track_state_stats",
							 "Whether pipeline workers sample their state's figures for weir.state_stats.",
							 "Off: weir.state_stats shows no rates and weir.explain_state cannot tell growth; the figures read from the state itself remain.",
							 &weir_track_state_stats,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("weir.state_stats_interval",
							"How often a pipeline worker samples its state's figures for weir.state_stats.",
							"The rates of weir.state_stats are over the last 30 samples.",
							&state_stats_interval,
							10000, 10, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * The time of the sample the worker's round should take now, or 0 when
 * none is due (tracking off, or the interval has not passed).  Worker only.
 */
TimestampTz
weir_state_stats_sample_due(WeirPipelineSlot *slot)
{
	TimestampTz now;

	if (!weir_track_state_stats)
		return 0;
	now = weir_clock_now();
	if (last_sample_at != 0 &&
		now - last_sample_at < (TimestampTz) state_stats_interval * 1000)
		return 0;
	last_sample_at = now;
	return now;
}

/*
 * The round's figures into the slot, and a sample into the ring when
 * sample_at is not 0.  The caller (the worker) holds the slot's mutex: only
 * stores here.
 */
void
weir_state_stats_note(WeirStateSamples *stats, TimestampTz sample_at,
					  TimestampTz newest_event_time, int64 records_in, int64 entries,
					  int64 bytes, int64 in_worker_bytes)
{
	WeirStateSample *s;

	stats->newest_event_time = newest_event_time;
	stats->in_worker_bytes = in_worker_bytes;
	if (sample_at == 0)
		return;
	s = &stats->ring[stats->next];
	s->at = sample_at;
	s->records_in = records_in;
	s->entries = entries;
	s->bytes = bytes;
	s->in_worker_bytes = in_worker_bytes;
	s->newest_event_time = newest_event_time;
	stats->next = (stats->next + 1) % WEIR_STATE_SAMPLES;
	if (stats->n < WEIR_STATE_SAMPLES)
		stats->n++;
}

/* One store entry as the walk copies it */
typedef struct EntryFigures
{
	uint64		key_hash;
	int64		entries;		/* 1, or a join key's buffered rows */
} EntryFigures;

/* What the walk found */
typedef struct StoreFigures
{
	EntryFigures *each;			/* [nstore] */
	int64		nstore;			/* store entries */
	int64		entries;		/* entries (a join's: rows) */
	int64		entry_bytes;	/* what they need */
	int64		value_max;		/* bytes of one value in shared memory */
	double		value_sum;
	TimestampTz oldest;			/* DT_NOEND: none */
} StoreFigures;

/* A value of `bytes`, and an entry of event time t */
static inline void
count_value(StoreFigures *f, int64 bytes, TimestampTz t)
{
	f->entries++;
	f->value_max = Max(f->value_max, bytes);
	f->value_sum += bytes;
	f->oldest = Min(f->oldest, t);
}

/*
 * Walk a store: the caller holds the pipeline slot's lock shared (the
 * store cannot change) with `area` attached.  Copies only; may ereport
 * (out of memory for `each`), which releases the lock.
 */
static void
walk_store(dsa_area *area, WeirStoreRoot *root, const char *operator, StoreFigures *f)
{
	dsa_pointer *slots = dsa_get_address(area, root->slots);
	bool		join = strcmp(operator, "join") == 0;
	bool		keyed = strcmp(operator, "dedup") == 0 || strcmp(operator, "last_value") == 0;
	uint32		seen = 0;

	f->each = palloc_extended(sizeof(EntryFigures) * ((Size) root->used + 1),
							  MCXT_ALLOC_HUGE);
	/* a store that is not what the operator keeps (cannot happen) is not read */
	if ((join && root->state_size < sizeof(WeirJoinKeyState)) ||
		(keyed && root->state_size < sizeof(TimestampTz)))
		return;
	for (uint32 i = 0; i < root->capacity && seen < root->used; i++)
	{
		WeirEntry  *w;
		char	   *states;
		EntryFigures *e;

		/* 0: empty, 1: deleted (store.h) */
		if (slots[i] == InvalidDsaPointer || slots[i] == (dsa_pointer) 1)
			continue;
		seen++;
		w = dsa_get_address(area, slots[i] & WEIR_SLOT_PTR_MASK);
		states = weir_entry_states(root, w);
		e = &f->each[f->nstore++];
		e->key_hash = hash_bytes_extended((const unsigned char *) weir_entry_key(w),
										  (int) weir_entry_keylen(w), 0);
		e->entries = 1;
		f->entry_bytes += (states - (char *) w) + root->state_size;
		if (join)
		{
			WeirJoinKeyState *s = (WeirJoinKeyState *) states;
			int64		before = f->entries;

			for (int side = 0; side < 2; side++)
				for (dsa_pointer dp = s->rows[side]; DsaPointerIsValid(dp);)
				{
					WeirJoinRow *row = dsa_get_address(area, dp);

					count_value(f, row->len, row->t);
					f->entry_bytes += offsetof(WeirJoinRow, values) + row->len;
					dp = row->next;
				}
			e->entries = f->entries - before;
		}
		else if (keyed)
		{
			TimestampTz t;

			memcpy(&t, states, sizeof(TimestampTz));
			count_value(f, root->state_size, t);
		}
		else
			count_value(f, root->state_size, w->start);
	}
}

static int
cmp_key_hash(const void *a, const void *b)
{
	uint64		x = ((const EntryFigures *) a)->key_hash;
	uint64		y = ((const EntryFigures *) b)->key_hash;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Keys (distinct key hashes: 64 bits, so that two keys counted as one is
 * not to be expected below billions) and the most entries of one key.
 */
static void
count_keys(StoreFigures *f, int64 *keys, int64 *max_per_key)
{
	int64		run = 0;

	*keys = 0;
	*max_per_key = 0;
	if (f->nstore == 0)
		return;
	qsort(f->each, f->nstore, sizeof(EntryFigures), cmp_key_hash);
	for (int64 i = 0; i < f->nstore; i++)
	{
		if (i == 0 || f->each[i].key_hash != f->each[i - 1].key_hash)
		{
			(*keys)++;
			run = 0;
		}
		run += f->each[i].entries;
		*max_per_key = Max(*max_per_key, run);
	}
}

/*
 * The walk over the store of pipeline `id`'s running worker (walk false:
 * only whether there is one); false when no worker has published a store
 * (not running, or still restoring).
 */
static bool
read_store(WeirPipelineSlot *slot, int32 id, const char *operator, bool walk,
		   StoreFigures *f)
{
	bool		found = false;

	/* from inside the pipeline's own worker (a user function) */
	if (LWLockHeldByMe(&slot->lock))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the state of a pipeline cannot be measured from inside its own worker")));
	weir_shmem_pipeline_lock_shared(slot);
	/* the slot may have changed hands since it was looked up */
	if (slot->area != DSM_HANDLE_INVALID && DsaPointerIsValid(slot->root) &&
		weir_shmem_pipeline_is(slot, id))
	{
		dsa_area   *area = dsa_attach(slot->area);

		if (walk && strcmp(operator, "projection") != 0)
			walk_store(area, dsa_get_address(area, slot->root), operator, f);
		found = true;
		LWLockRelease(&slot->lock);
		dsa_detach(area);
	}
	else
		LWLockRelease(&slot->lock);
	return found;
}

/* per second, over `us` microseconds */
static inline double
per_second(double delta, TimestampTz us)
{
	return delta * USECS_PER_SEC / (double) us;
}

#define STATE_STATS_COLS 20

/* how long the figures of one walk serve every reader */
#define WALK_REUSE_US USECS_PER_SEC

/*
 * weir._state_stats(pipeline_id integer, operator text): one row while a
 * worker of the pipeline runs in this database and has published its
 * store; none otherwise.  Columns as the view weir.state_stats.
 */
PG_FUNCTION_INFO_V1(weir_state_stats);
Datum
weir_state_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		id = PG_GETARG_INT32(0);
	char	   *operator = text_to_cstring(PG_GETARG_TEXT_PP(1));
	WeirPipelineSlot *slot;
	StoreFigures f;
	WeirStateSamples stats;
	TimestampTz watermark;
	int64		entries_now;
	int64		bytes_now;
	int64		records_now;
	TimestampTz now;
	int64		keys;
	int64		max_per_key;
	WeirStateWalk walked;
	bool		fresh;
	Datum		values[STATE_STATS_COLS];
	bool		nulls[STATE_STATS_COLS];

	InitMaterializedSRF(fcinfo, 0);
	slot = weir_shmem_pipeline(id, false);
	if (slot == NULL)
		return (Datum) 0;
	memset(&f, 0, sizeof(f));
	f.oldest = DT_NOEND;
	/*
	 * A walk of the last second is reused: any role may read this view,
	 * and polling it must not keep the worker waiting for the lock.
	 */
	SpinLockAcquire(&slot->mutex);
	walked = slot->stats.walk;
	SpinLockRelease(&slot->mutex);
	fresh = walked.at != 0 && weir_clock_now() - walked.at < WALK_REUSE_US;
	if (!read_store(slot, id, operator, !fresh, &f))
		return (Datum) 0;
	if (fresh)
	{
		keys = walked.keys;
		max_per_key = walked.max_per_key;
		f.entries = walked.entries;
		f.entry_bytes = walked.entry_bytes;
		f.value_max = walked.value_max;
		f.value_sum = walked.value_sum;
		f.oldest = walked.oldest;
	}
	else
	{
		count_keys(&f, &keys, &max_per_key);
		walked.at = weir_clock_now();
		walked.keys = keys;
		walked.max_per_key = max_per_key;
		walked.entries = f.entries;
		walked.entry_bytes = f.entry_bytes;
		walked.value_max = f.value_max;
		walked.value_sum = f.value_sum;
		walked.oldest = f.oldest;
	}
	/* the figures of the worker's last round, and its samples */
	SpinLockAcquire(&slot->mutex);
	/* the slot may have changed hands since the walk */
	if (!fresh && slot->dboid == MyDatabaseId && slot->pipeline_id == id && slot->pid != 0)
		slot->stats.walk = walked;
	watermark = slot->watermark;
	entries_now = slot->windows;
	bytes_now = slot->state_bytes;
	stats = slot->stats;
	SpinLockRelease(&slot->mutex);
	records_now = (int64) pg_atomic_read_u64(&slot->records_in);
	now = weir_clock_now();

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum(keys);
	values[1] = Int64GetDatum(f.entries);
	values[2] = Int64GetDatum(max_per_key);
	values[3] = Float8GetDatum(keys > 0 ? (double) f.entries / keys : 0.0);
	nulls[3] = keys == 0;
	nulls[2] = keys == 0;
	values[4] = Int64GetDatum(bytes_now);
	values[5] = Int64GetDatum(f.entry_bytes);
	values[6] = Int64GetDatum(stats.in_worker_bytes);
	values[7] = Int64GetDatum(f.value_max);
	nulls[7] = f.entries == 0;
	/* generic states: their in-worker total shared out over the entries */
	values[8] = Float8GetDatum(f.entries > 0 ?
							   (f.value_sum + stats.in_worker_bytes) / f.entries : 0.0);
	nulls[8] = f.entries == 0;
	values[9] = TimestampTzGetDatum(f.oldest);
	nulls[9] = f.entries == 0;
	values[10] = TimestampTzGetDatum(watermark);
	nulls[10] = TIMESTAMP_NOT_FINITE(watermark);
	values[11] = TimestampTzGetDatum(stats.newest_event_time);
	nulls[11] = TIMESTAMP_NOT_FINITE(stats.newest_event_time);
	for (int c = 12; c <= 17; c++)
		nulls[c] = true;
	if (stats.n > 0)
	{
		/* the oldest sample of the ring against the slot's figures now */
		WeirStateSample *oldest = &stats.ring[stats.n < WEIR_STATE_SAMPLES ? 0 : stats.next];
		TimestampTz span = now - oldest->at;

		if (span > 0)
		{
			values[12] = Float8GetDatum(per_second(records_now - oldest->records_in, span));
			values[13] = Float8GetDatum(per_second(entries_now - oldest->entries, span));
			values[14] = Float8GetDatum(per_second(bytes_now - oldest->bytes, span));
			values[16] = IntervalPGetDatum(DatumGetIntervalP(
															 DirectFunctionCall2(timestamp_mi,
																				 TimestampTzGetDatum(now),
																				 TimestampTzGetDatum(oldest->at))));
			nulls[12] = nulls[13] = nulls[14] = nulls[16] = false;
		}
		/*
		 * How fast one entry's in-worker state grows: from the oldest
		 * sample that had entries, per entry, to now.
		 */
		for (int k = 0; k < stats.n; k++)
		{
			int			at = stats.n < WEIR_STATE_SAMPLES ? k : (stats.next + k) % WEIR_STATE_SAMPLES;
			WeirStateSample *s = &stats.ring[at];

			if (s->entries <= 0 || now - s->at <= 0 || entries_now <= 0)
				continue;
			values[15] = Float8GetDatum(per_second((double) stats.in_worker_bytes / entries_now -
												   (double) s->in_worker_bytes / s->entries,
												   now - s->at));
			values[17] = Float8GetDatum((double) s->in_worker_bytes / s->entries);
			nulls[15] = nulls[17] = false;
			break;
		}
	}
	values[18] = TimestampTzGetDatum(now);
	nulls[18] = false;
	/*
	 * Records per second of event time: what bounds state kept for a span
	 * of event time (a dedup horizon, a ttl, a join bound), whether the
	 * worker reads live records or a backlog.  From the oldest sample that
	 * had an event time to the newest event time now.
	 */
	nulls[19] = true;
	for (int k = 0; k < stats.n; k++)
	{
		int			at = stats.n < WEIR_STATE_SAMPLES ? k : (stats.next + k) % WEIR_STATE_SAMPLES;
		WeirStateSample *s = &stats.ring[at];

		if (TIMESTAMP_NOT_FINITE(s->newest_event_time))
			continue;
		if (!TIMESTAMP_NOT_FINITE(stats.newest_event_time) &&
			stats.newest_event_time > s->newest_event_time)
		{
			values[19] = Float8GetDatum(per_second(records_now - s->records_in,
												   stats.newest_event_time - s->newest_event_time));
			nulls[19] = false;
		}
		break;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
