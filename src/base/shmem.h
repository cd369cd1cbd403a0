/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  weir's fixed shared memory: launcher identity, partition slots and
 *	  pipeline slots.
 *
 * Locking contract
 * ----------------
 * Five kinds of lock guard this memory:
 *
 *	 WeirShmem.lock (LWLock, tranche "weir"): which slots are taken (a
 *		partition slot's dboid, topic_id, part, written also under the
 *		slot's lock, and read unlocked by partition.c's cache check; a
 *		pipeline slot's dboid, pipeline_id, generation, pid, latch,
 *		last_dboid), the helpers' bookkeeping (has_writer, has_reader,
 *		writers_yield) and the launcher's pid and latch.
 *	 WeirPartitionSlot.lock (LWLock, tranche "weir_partition"): a
 *		partition's registrations and initialisation (partition.c).
 *	 WeirPipelineSlot.lock (LWLock, tranche "weir_pipeline"): the worker's
 *		state store: the store in DSA, and area and root, which say where it
 *		is; and image, image_len and image_failed (a state image).  The
 *		worker holds it exclusively per batch, per firing and per
 *		checkpoint collection; weir.live_state holds it shared while it
 *		attaches and copies.
 *	 WeirPipelineSlot.mutex (spinlock): the slot's scalars (pid, latch,
 *		helpers' pids, watermark, checkpoint ids and tickets, counters of
 *		state, the watermark's holder, restart_now, state image requests,
 *		the progress of long steps) and, with WeirShmem.lock, who holds the
 *		slot.
 *	 WeirPipelineSlot.checkpoint_cv and WeirShmem.pipelines_cv (condition
 *		variables): no data of their own; see below for when they are
 *		broadcast.
 *
 * Fields that say who holds a pipeline slot (dboid, pipeline_id,
 * generation, pid, latch) change only with both WeirShmem.lock (exclusive)
 * and the slot's mutex held (weir_shmem_claim_pipeline,
 * weir_shmem_release_pipeline), so holding either one is enough to read
 * them.  Atomics (records_*, readers_waiting, next_position) need no lock.
 *
 * Order.  A process holds at most one LWLock of weir's at a time, except
 *
 *	 WeirShmem.lock -> WeirPartitionSlot.lock	(assigning and freeing
 *												 partition slots)
 *
 * and a spinlock is taken last, with nothing taken under it:
 *
 *	 WeirShmem.lock -> WeirPipelineSlot.mutex	(claiming, releasing and
 *												 looking up a worker)
 *	 WeirPipelineSlot.lock -> WeirPipelineSlot.mutex	(weir.live_state:
 *												 whose store it holds)
 *
 * Never the reverse of any.  WeirPipelineSlot.lock is never held with
 * WeirShmem.lock or a partition slot's lock; under it only the pipeline's
 * DSA area takes its own locks (tranche "weir_state") and dsa_attach its
 * DSM ones.  Two pipeline slots' locks or mutexes, or two partition slots'
 * locks, are never held at once.
 *
 * Condition variables are broadcast, and slept on, with no weir lock held:
 * ConditionVariableBroadcast takes the variable's spinlock (which may not
 * nest under another), and a sleeper holding an LWLock would keep others
 * waiting and its own interrupts off.  checkpoint_cv is broadcast when a
 * checkpoint of the slot's pipeline commits (weir_shmem_checkpoint_committed),
 * when its worker leaves the slot, and when the worker publishes a state
 * image (state_image.c); pipelines_cv when any worker claims
 * or leaves a pipeline slot.  A waiter calls ConditionVariablePrepareToSleep
 * before it looks at the condition, so no broadcast is lost between its
 * look and its sleep.
 *
 * Never held while calling out.  No spinlock across anything but a few
 * loads and stores (no palloc, no ereport, no SetLatch).  No weir LWLock
 * across SPI, catalog access, user code or a wait for another process: an
 * LWLock holds interrupts off (the holder cannot be cancelled or
 * terminated) and its waiters are invisible to the deadlock detector.  The
 * worker lets go of its slot's lock around aggregates' user functions
 * (aggregate.c) and for readers between records (worker.c), and restores
 * its state before it publishes where the state is, without the lock.  One
 * exception, bounded: a partition slot's lock is held across the one index
 * scan that rebuilds its counter (partition.c, once per slot per server
 * life); that scan takes only buffer locks, and the lock is taken under no
 * other.
 *
 * Identity.  A pipeline slot's generation is bumped when a worker claims it
 * and again when the worker leaves it (odd: held), and never reset, so
 * (slot, generation) names one worker's tenure.  Whoever remembers a worker
 * to ask later whether it is still the same (weir.checkpoint's ticket, a
 * read-ahead process, a checkpoint writer) remembers its generation, not
 * its pid: pids are reused, and a slot may be given back and taken by
 * another worker, of this pipeline or another, in between.  pid is kept
 * for display (weir.pipelines) and for the one-worker-per-pipeline check.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SHMEM_H
#define WEIR_SHMEM_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/dsa.h"

#include "base/state_samples.h"

/*
 * One producing transaction's claim on a partition: the lowest position it
 * holds there.  Readers may not pass it until the transaction has ended.
 */
typedef struct WeirProducerReg
{
	int64		position;		/* lowest position taken by the transaction */
	int			pgprocno;		/* the producing backend's PGPROC number */
	int			pid;			/* for weir.topic_partitions */
	TimestampTz since;			/* when the claim was made */
} WeirProducerReg;

/*
 * A partition of a topic, identified by (database, topic id, partition).
 *
 * next_position is handed out with an atomic fetch-add once a transaction
 * has registered on the partition; registering (taking the first position of
 * a transaction) happens under `lock`, so a reader holding `lock` sees either
 * the registration or a next_position that is not yet taken.
 */
typedef struct WeirPartitionSlot
{
	LWLock		lock;			/* protects all fields but next_position */
	Oid			dboid;			/* InvalidOid: slot is free */
	int32		topic_id;		/* weir.topic.id */
	int32		part;			/* partition number, 0-based */
	bool		initialised;	/* next_position rebuilt from the table */
	pg_atomic_uint64 next_position; /* next position to hand out */
	int			nregs;			/* valid entries in regs */
	WeirProducerReg regs[FLEXIBLE_ARRAY_MEMBER];	/* MaxBackends entries */
} WeirPartitionSlot;

/*
 * What a long step of a pipeline's processes is doing now, for
 * weir.progress (base/progress.c): one per kind of step (WeirProgressKind),
 * under the slot's mutex.  Updated at chunk or round granularity, never per
 * record.  pid 0: none in progress.
 */
typedef struct WeirProgress
{
	int			pid;			/* the process doing it; 0: none */
	int			phase;			/* WeirProgressPhase */
	TimestampTz started_at;
	int64		bytes_done;		/* bytes */
	int64		bytes_total;	/* bytes; -1: not known */
	int64		rows_done;		/* entries (restore, compaction) or records
								 * (catch-up) */
	int64		rows_total;		/* same unit; -1: not known */
} WeirProgress;

#define WEIR_PROGRESS_KINDS 3	/* restore, compaction, catch-up */

/*
 * A running pipeline's shared face: claimed by its worker, read by views and
 * by weir.checkpoint().  Scalars under `mutex`; counters are atomics; see
 * the locking contract at the top of this file.  When the worker leaves,
 * the slot is free again (dboid InvalidOid), but its checkpoint ids and
 * tickets stay as the worker left them until the next claim.
 */
typedef struct WeirPipelineSlot
{
	LWLock		lock;			/* the worker holds it exclusively while it
								 * changes its state store; readers of the
								 * store hold it shared */
	pg_atomic_uint32 readers_waiting;	/* readers about to take `lock`: the
										 * worker lets them in within a few
										 * hundred records (worker.c) */
	dsa_handle	area;			/* the worker's state area, under lock */
	dsa_pointer root;			/* its WeirStoreRoot, under lock */
	slock_t		mutex;
	Oid			dboid;			/* InvalidOid: free (WeirShmem.lock and
								 * mutex) */
	int32		pipeline_id;	/* (WeirShmem.lock and mutex) */
	uint64		generation;		/* bumped when a worker claims the slot and
								 * when it leaves: odd while held; never
								 * reset (WeirShmem.lock and mutex) */
	Oid			last_dboid;		/* dboid of the worker that left last, for
								 * its restart_now (WeirShmem.lock) */
	int			pid;			/* worker, for display; 0 when none
								 * (WeirShmem.lock and mutex) */
	bool		has_writer;		/* its worker runs a checkpoint writer (under
								 * WeirShmem.lock) */
	int			writer_pid;		/* that writer, once connected; 0: none */
	bool		has_reader;		/* its worker runs a read-ahead process
								 * (under WeirShmem.lock) */
	int			reader_pid;		/* that process, once started; 0: none */
	Latch	   *latch;			/* the worker's (WeirShmem.lock and mutex) */
	TimestampTz watermark;		/* DT_NOBEGIN until the first one */
	int64		checkpoint_id;	/* last committed */
	TimestampTz checkpoint_at;	/* when it committed */
	int64		checkpoint_requested;	/* requests made (a counter) */
	int64		checkpoint_served;	/* requests covered by a committed checkpoint */
	int64		windows;		/* open windows */
	int64		state_bytes;	/* bytes */
	int64		lag_rows;		/* positions behind the stable positions */
	/*
	 * Counters, cumulative across restarts: a starting worker sets them to
	 * its last checkpoint's (weir.pipeline_counters), the worker bumps the
	 * first four as it reads, and the two that checkpoints write are set
	 * to their committed values after each commit (checkpoint_apply.c).
	 */
	pg_atomic_uint64 records_in;	/* records read (worker) */
	pg_atomic_uint64 records_late;	/* (worker) */
	pg_atomic_uint64 records_dead;	/* dead letters the worker found */
	pg_atomic_uint64 records_dropped;	/* duplicates (dedup; worker) */
	pg_atomic_uint64 records_out;	/* sink rows committed */
	pg_atomic_uint64 dead_at_write; /* rows a sink or the late-records
									 * table refused, committed as dead
									 * letters */
	bool		counters_restored;	/* the worker holding the slot has set
									 * the counters from its checkpoint
									 * (under mutex) */
	/* why the watermark does not move, under mutex */
	int32		watermark_holder;	/* partition holding it back; -1: none */
	Oid			holder_source;	/* the topic of that partition */
	TimestampTz holder_data_at; /* when that partition last had data */
	bool		holder_has_time;	/* whether it has shown an event time */
	bool		holder_chained; /* its time is its writers' published watermark */
	TimestampTz holder_moved_at;	/* chained: when that last moved */
	TimestampTz latest_data_at; /* when any partition last had data */
	bool		has_idle_timeout;
	bool		restart_now;	/* the worker exits to restore and go on:
								 * no back-off (launcher.c), under mutex;
								 * kept after it leaves, for the launcher */
	ConditionVariable checkpoint_cv;	/* broadcast after each checkpoint and
										 * when the worker leaves */
	/*
	 * weir.live_state of state the worker holds in its own memory: it
	 * writes an image of it when asked (pipeline/state_image.c)
	 */
	uint64		image_requested;	/* requests made (a counter), under mutex */
	uint64		image_served;	/* requests the image published covers,
								 * under mutex */
	int32		image_readers;	/* readers that asked and are not done with
								 * it, under mutex */
	dsa_pointer image;			/* in the worker's area; Invalid: none (under
								 * lock) */
	Size		image_len;		/* bytes (under lock) */
	bool		image_failed;	/* the last could not be made: its area was
								 * full (under lock) */
	/* its remote sink's commit (sink_remote.c), under mutex */
	int64		remote_pending; /* a checkpoint committed here whose remote
								 * transaction is not yet committed; 0: none */
	int32		remote_attempts;	/* failed attempts at it, or at the link */
	TimestampTz remote_retry_at;	/* the next one */
	char		remote_error[256];	/* the last failure's message */
	/* long steps in progress (base/progress.c), under mutex */
	WeirProgress progress[WEIR_PROGRESS_KINDS];
	/* for weir.state_stats (state_samples.h), under mutex; reset at claim */
	WeirStateSamples stats;
} WeirPipelineSlot;

typedef struct WeirShmem
{
	LWLock	   *lock;			/* protects slot assignment and launcher_* */
	int			launcher_pid;	/* 0 when no launcher runs */
	Latch	   *launcher_latch; /* to wake the launcher */
	int			partition_tranche;	/* tranche id of the slots' locks */
	int			pipeline_tranche;	/* tranche id of pipeline slot locks */
	int			state_tranche;	/* tranche id of pipelines' DSA areas */
	int			nslots;			/* weir.max_partitions */
	Size		slot_size;		/* bytes per slot, MAXALIGNed */
	int			npipelines;		/* weir.max_pipelines */
	bool		writers_yield;	/* the launcher could not start a worker:
								 * helpers (checkpoint writers, read-ahead
								 * processes) give their background worker
								 * slots back (under lock) */
	ConditionVariable pipelines_cv; /* broadcast when a worker claims or
									 * leaves a pipeline slot */
	WeirPipelineSlot *pipelines;	/* [npipelines], after the slots */
	char		slots[FLEXIBLE_ARRAY_MEMBER];
} WeirShmem;

/*
 * Whether a pipeline slot whose generation is now `now` still holds the
 * checkpoint ids and tickets of the worker of `generation`: it holds the
 * slot, or it has left it and no worker has claimed it since (a claim
 * resets them).
 */
static inline bool
weir_shmem_counters_of(uint64 now, uint64 generation)
{
	return now == generation || now == generation + 1;
}

extern void weir_shmem_install_hooks(void);
extern WeirShmem *weir_shmem(void);
extern WeirPartitionSlot *weir_shmem_slot(int slotno);
extern void weir_shmem_wake_launcher(void);
extern void weir_shmem_wake_launcher_at_commit(void);
extern WeirPipelineSlot *weir_shmem_pipeline(int32 pipeline_id, bool claim);
extern WeirPipelineSlot *weir_shmem_claim_pipeline(int32 pipeline_id, int *holder_pid);
extern void weir_shmem_release_pipeline(WeirPipelineSlot *slot);
extern uint64 weir_shmem_pipeline_generation(WeirPipelineSlot *slot);
extern bool weir_shmem_pipeline_is(WeirPipelineSlot *slot, int32 pipeline_id);
extern void weir_shmem_pipeline_lock_shared(WeirPipelineSlot *slot);
extern WeirPipelineSlot *weir_shmem_checkpoint_ticket(int32 pipeline_id, uint64 *generation,
													  int64 *ticket);
extern bool weir_shmem_take_restart_now(int32 pipeline_id);
extern bool weir_shmem_reserve_helper(bool *has_helper, int pipelines);
extern void weir_shmem_release_helper(bool *has_helper);
struct BackgroundWorkerHandle;
struct dsm_segment;
extern bool weir_shmem_register_helper(const char *function, const char *type,
									   const char *pipeline, struct dsm_segment *seg,
									   struct BackgroundWorkerHandle **handle);
extern bool weir_shmem_helpers_should_yield(void);
extern void weir_shmem_checkpoint_committed(WeirPipelineSlot *slot, int64 checkpoint_id,
											int64 served);
extern bool weir_shmem_checkpoint_committed_for(WeirPipelineSlot *slot, uint64 generation,
												int64 checkpoint_id, int64 served);

#endif							/* WEIR_SHMEM_H */
