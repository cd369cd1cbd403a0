/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  weir's fixed shared memory: launcher identity and partition slots.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SHMEM_H
#define WEIR_SHMEM_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

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

typedef struct WeirShmem
{
	LWLock	   *lock;			/* protects slot assignment and launcher_* */
	int			launcher_pid;	/* 0 when no launcher runs */
	Latch	   *launcher_latch; /* to wake the launcher */
	int			partition_tranche;	/* tranche id of the slots' locks */
	int			nslots;			/* weir.max_partitions */
	Size		slot_size;		/* bytes per slot, MAXALIGNed */
	char		slots[FLEXIBLE_ARRAY_MEMBER];
} WeirShmem;

extern void weir_shmem_install_hooks(void);
extern WeirShmem *weir_shmem(void);
extern WeirPartitionSlot *weir_shmem_slot(int slotno);
extern void weir_shmem_wake_launcher(void);

#endif							/* WEIR_SHMEM_H */
