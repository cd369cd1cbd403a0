/*-------------------------------------------------------------------------
 *
 * checkpoint_counters.c
 *	  A pipeline's counters (records in, out, late, dead, dropped),
 *	  cumulative across restarts and crashes, each record counted once.
 *
 * The live counters are atomics in the pipeline's slot (shmem.h), read by
 * weir.pipelines.  Shared memory does not outlive a crash, and after one a
 * worker reads again what came after its last checkpoint; so the counters
 * travel with the checkpoints:
 *
 *	- The worker bumps records_in, records_late, records_dead (the dead
 *	  letters it finds) and records_dropped as it applies records.  At a
 *	  checkpoint's sync phase, a batch boundary, it copies them into the
 *	  package's header (weir_counters_of_worker): they then count exactly
 *	  the records whose effects the checkpoint holds.
 *	- The checkpoint's writes count the sink rows written and the rows a
 *	  sink or the late-records table refused (dead letters too), and the
 *	  checkpoint's transaction writes weir.pipeline_counters: the worker's
 *	  absolute values from the header, and the previous row's records_out
 *	  and dead_at_write plus this checkpoint's (checkpoint_apply.c).  A
 *	  checkpoint that rolls back leaves nothing behind; the slot's
 *	  records_out and dead_at_write are set from the committed row after the
 *	  commit (weir_counters_committed), never bumped during the writes.
 *	- A starting worker (after a stop, an error or a crash) sets all of
 *	  them from the row of the checkpoint it restores
 *	  (weir_counters_restore), then reads from that checkpoint's positions:
 *	  what it reads again is counted once.
 *
 * Who writes what: the worker alone writes records_in, records_late,
 * records_dead and records_dropped; whoever commits checkpoints (the
 * worker, or its checkpoint writer) writes records_out and dead_at_write.
 * A starting worker writes all six before it reads or starts a writer, and
 * after the writer of its predecessor is gone (checkpoint_writer.c: the
 * writer's lock), so no two processes write one counter at once; readers
 * may see the counters of one checkpoint mixed with later ones, each
 * counter on its own is right.  Between a worker's claim of the slot and
 * its restore, the slot's counters are stale or zero (a new slot after a
 * crash): counters_restored, false meanwhile, tells weir.pipelines to show
 * the committed row instead.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_counters.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/spin.h"

#include "checkpoint/checkpoint_counters.h"

/*
 * The worker's counters now, at a batch boundary (records_out and
 * dead_at_write are the checkpoints' own: left 0).
 */
void
weir_counters_of_worker(WeirPipelineSlot *slot, WeirCounters *c)
{
	memset(c, 0, sizeof(*c));
	c->records_in = (int64) pg_atomic_read_u64(&slot->records_in);
	c->records_late = (int64) pg_atomic_read_u64(&slot->records_late);
	c->records_dead = (int64) pg_atomic_read_u64(&slot->records_dead);
	c->records_dropped = (int64) pg_atomic_read_u64(&slot->records_dropped);
}

/* A starting worker: all counters as of the checkpoint it restored. */
void
weir_counters_restore(WeirPipelineSlot *slot, const WeirCounters *c)
{
	pg_atomic_write_u64(&slot->records_in, (uint64) c->records_in);
	pg_atomic_write_u64(&slot->records_late, (uint64) c->records_late);
	pg_atomic_write_u64(&slot->records_dead, (uint64) c->records_dead);
	pg_atomic_write_u64(&slot->records_dropped, (uint64) c->records_dropped);
	pg_atomic_write_u64(&slot->records_out, (uint64) c->records_out);
	pg_atomic_write_u64(&slot->dead_at_write, (uint64) c->dead_at_write);
	/* the spinlock orders the writes above before the flag */
	SpinLockAcquire(&slot->mutex);
	slot->counters_restored = true;
	SpinLockRelease(&slot->mutex);
}

/*
 * After a checkpoint committed: the counters its writes keep, as
 * committed.  Call only once the commit is done.
 */
void
weir_counters_committed(WeirPipelineSlot *slot, const WeirCounters *c)
{
	pg_atomic_write_u64(&slot->records_out, (uint64) c->records_out);
	pg_atomic_write_u64(&slot->dead_at_write, (uint64) c->dead_at_write);
}
