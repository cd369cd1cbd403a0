/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  weir's fixed shared memory: launcher identity and partition slots.
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
#include "storage/latch.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/dsa.h"

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
 * A running pipeline's shared face: claimed by its worker, read by views and
 * by weir.checkpoint().  Scalars under `mutex`; counters are atomics.
 */
typedef struct WeirPipelineSlot
{
	LWLock		lock;			/* the worker holds it exclusively while it
								 * changes its window store; readers of the
								 * store hold it shared */
	pg_atomic_uint32 readers_waiting;	/* readers about to take `lock`: the
										 * worker lets them in within a few
										 * hundred records (worker.c) */
	dsa_handle	area;			/* the worker's state area, under lock */
	dsa_pointer root;			/* its WeirStoreRoot, under lock */
	slock_t		mutex;
	Oid			dboid;			/* InvalidOid: free */
	int32		pipeline_id;
	int			pid;			/* worker; 0 when none */
	bool		has_writer;		/* its worker runs a checkpoint writer (under
								 * WeirShmem.lock) */
	int			writer_pid;		/* that writer, once connected; 0: none */
	bool		has_reader;		/* its worker runs a read-ahead process
								 * (under WeirShmem.lock) */
	int			reader_pid;		/* that process, once started; 0: none */
	Latch	   *latch;			/* the worker's */
	TimestampTz watermark;		/* DT_NOBEGIN until the first one */
	int64		checkpoint_id;	/* last committed */
	TimestampTz checkpoint_at;	/* when it committed */
	int64		checkpoint_requested;	/* requests made (a counter) */
	int64		checkpoint_served;	/* requests covered by a committed checkpoint */
	int64		windows;		/* open windows */
	int64		state_bytes;	/* bytes */
	int64		lag_rows;		/* positions behind the stable positions */
	pg_atomic_uint64 records_in;
	pg_atomic_uint64 records_out;	/* sink rows written */
	pg_atomic_uint64 records_late;
	pg_atomic_uint64 records_dead;
	pg_atomic_uint64 records_dropped;	/* duplicates (dedup) */
	/* why the watermark does not move, under mutex */
	int32		watermark_holder;	/* partition holding it back; -1: none */
	Oid			holder_source;	/* the topic of that partition */
	TimestampTz holder_data_at; /* when that partition last had data */
	bool		holder_has_time;	/* whether it has shown an event time */
	TimestampTz latest_data_at; /* when any partition last had data */
	bool		has_idle_timeout;
	bool		restart_now;	/* the worker exits to restore and go on:
								 * no back-off (launcher.c), under mutex */
	ConditionVariable checkpoint_cv;	/* broadcast after each checkpoint */
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
	WeirPipelineSlot *pipelines;	/* [npipelines], after the slots */
	char		slots[FLEXIBLE_ARRAY_MEMBER];
} WeirShmem;

extern void weir_shmem_install_hooks(void);
extern WeirShmem *weir_shmem(void);
extern WeirPartitionSlot *weir_shmem_slot(int slotno);
extern void weir_shmem_wake_launcher(void);
extern WeirPipelineSlot *weir_shmem_pipeline(int32 pipeline_id, bool claim);
extern bool weir_shmem_reserve_helper(bool *has_helper, int pipelines);
extern void weir_shmem_release_helper(bool *has_helper);
extern bool weir_shmem_helpers_should_yield(void);
extern void weir_shmem_checkpoint_committed(WeirPipelineSlot *slot, int64 checkpoint_id,
											int64 served);

#endif							/* WEIR_SHMEM_H */
