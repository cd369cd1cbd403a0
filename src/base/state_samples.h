/*-------------------------------------------------------------------------
 *
 * state_samples.h
 *	  What a pipeline's worker leaves in its shared slot for weir.state_stats
 *	  (pipeline/state_stats.c): a small ring of samples of its counters,
 *	  taken at most once per weir.state_stats_interval, from which a reader
 *	  computes rates over the last minutes, and two scalars of each round.
 *
 * Why samples in the slot, and not counting per record: the worker already
 * publishes its entries, bytes and records read once per round (worker.c
 * publish, under the slot's mutex); a sample is a copy of those few
 * numbers into the ring when the interval has passed, so the per-record
 * cost is nil and the per-round cost a clock read.  Everything that needs
 * the entries themselves (keys, entries per key, value sizes, the oldest
 * entry) is computed by the reader from the store under the slot's shared
 * lock, as weir.live_state copies it, and costs the worker nothing unless
 * someone asks.
 *
 * All fields are under the pipeline slot's mutex (shmem.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/state_samples.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_SAMPLES_H
#define WEIR_STATE_SAMPLES_H

#include "datatype/timestamp.h"

/* at the default interval (10 s), the ring spans five minutes */
#define WEIR_STATE_SAMPLES 30

typedef struct WeirStateSample
{
	TimestampTz at;				/* weir's clock (clock.c) */
	int64		records_in;		/* records read, cumulative */
	int64		entries;		/* entries in state (the slot's windows) */
	int64		bytes;			/* state bytes, in-worker ones included */
	int64		in_worker_bytes;	/* generic aggregate states in the
									 * worker's own memory */
	TimestampTz newest_event_time;	/* then; DT_NOBEGIN: none yet */
} WeirStateSample;

/*
 * The figures of the last walk over the store (state_stats.c), kept so
 * that readers walk it at most once a second whoever polls: a walk holds
 * the slot's lock shared, which the worker waits for.
 */
typedef struct WeirStateWalk
{
	TimestampTz at;				/* weir's clock; 0: none yet */
	int64		keys;
	int64		max_per_key;
	int64		entries;
	int64		entry_bytes;
	int64		value_max;
	double		value_sum;
	TimestampTz oldest;			/* DT_NOEND: no entry */
} WeirStateWalk;

typedef struct WeirStateSamples
{
	int32		n;				/* valid samples, up to WEIR_STATE_SAMPLES */
	int32		next;			/* where the next sample goes */
	TimestampTz newest_event_time;	/* the newest event time read, over
									 * every partition; DT_NOBEGIN: none */
	int64		in_worker_bytes;	/* of the last round */
	WeirStateSample ring[WEIR_STATE_SAMPLES];
	WeirStateWalk walk;			/* written by readers */
} WeirStateSamples;

#endif							/* WEIR_STATE_SAMPLES_H */
