/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Fixed shared memory of weir: the launcher's identity and the array of
 *	  topic partition slots.
 *
 * Sizes come from weir.max_partitions and MaxBackends (a slot holds one
 * producer registration per backend, since a backend runs one transaction at
 * a time and registers at most once per partition in it).  The whole struct
 * is rebuilt at every postmaster (re)initialisation: after a crash, counters
 * are rebuilt lazily from the topic tables (partition.c).
 *
 * Locks: WeirShmem.lock (the single LWLock of the named tranche "weir")
 * protects slot assignment and the launcher fields; each slot has its own
 * LWLock in tranche "weir_partition".  Order: WeirShmem.lock before a slot's
 * lock, never the reverse.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "datatype/timestamp.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "base/shmem.h"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static WeirShmem *weir_shared = NULL;

static Size
slot_size(void)
{
	return MAXALIGN(offsetof(WeirPartitionSlot, regs) +
					mul_size(MaxBackends, sizeof(WeirProducerReg)));
}

static Size
shmem_size(void)
{
	Size		size = add_size(MAXALIGN(offsetof(WeirShmem, slots)),
								mul_size(weir_max_partitions, slot_size()));

	return add_size(size, mul_size(weir_max_pipelines, sizeof(WeirPipelineSlot)));
}

static void
weir_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shmem_size());
	RequestNamedLWLockTranche("weir", 1);
}

static void
weir_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	weir_shared = ShmemInitStruct("weir shared state", shmem_size(), &found);
	if (!found)
	{
		memset(weir_shared, 0, offsetof(WeirShmem, slots));
		weir_shared->lock = &(GetNamedLWLockTranche("weir"))->lock;
		weir_shared->partition_tranche = LWLockNewTrancheId();
		weir_shared->pipeline_tranche = LWLockNewTrancheId();
		weir_shared->state_tranche = LWLockNewTrancheId();
		weir_shared->nslots = weir_max_partitions;
		weir_shared->slot_size = slot_size();
		for (int i = 0; i < weir_shared->nslots; i++)
		{
			WeirPartitionSlot *slot = weir_shmem_slot(i);

			LWLockInitialize(&slot->lock, weir_shared->partition_tranche);
			slot->dboid = InvalidOid;
			slot->topic_id = 0;
			slot->part = 0;
			slot->initialised = false;
			pg_atomic_init_u64(&slot->next_position, 1);
			slot->nregs = 0;
		}
		weir_shared->npipelines = weir_max_pipelines;
		weir_shared->pipelines = (WeirPipelineSlot *)
			(weir_shared->slots + (Size) weir_shared->nslots * weir_shared->slot_size);
		for (int i = 0; i < weir_shared->npipelines; i++)
		{
			WeirPipelineSlot *p = &weir_shared->pipelines[i];

			memset(p, 0, sizeof(*p));
			LWLockInitialize(&p->lock, weir_shared->pipeline_tranche);
			p->area = DSM_HANDLE_INVALID;
			p->root = InvalidDsaPointer;
			SpinLockInit(&p->mutex);
			pg_atomic_init_u64(&p->records_in, 0);
			pg_atomic_init_u64(&p->records_out, 0);
			pg_atomic_init_u64(&p->records_late, 0);
			pg_atomic_init_u64(&p->records_dead, 0);
			pg_atomic_init_u32(&p->readers_waiting, 0);
			pg_atomic_init_u64(&p->records_dropped, 0);
			p->watermark_holder = -1;
			p->restart_now = false;
			ConditionVariableInit(&p->checkpoint_cv);
		}
	}
	LWLockRelease(AddinShmemInitLock);

	/* every process that forks from here knows the tranche by name */
	LWLockRegisterTranche(weir_shared->partition_tranche, "weir_partition");
	LWLockRegisterTranche(weir_shared->pipeline_tranche, "weir_pipeline");
	LWLockRegisterTranche(weir_shared->state_tranche, "weir_state");
}

void
weir_shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = weir_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = weir_shmem_startup;
}

/*
 * The shared struct, or an error if this server did not preload weir (the
 * library was loaded into one backend only, so no shared memory exists).
 */
WeirShmem *
weir_shmem(void)
{
	if (weir_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("weir must be loaded via shared_preload_libraries"),
				 errhint("Add weir to shared_preload_libraries in postgresql.conf and restart the server.")));
	return weir_shared;
}

WeirPartitionSlot *
weir_shmem_slot(int slotno)
{
	Assert(slotno >= 0 && slotno < weir_shared->nslots);
	return (WeirPartitionSlot *) (weir_shared->slots +
								  (Size) slotno * weir_shared->slot_size);
}

/* Set the launcher's latch, if a launcher is running. */
void
weir_shmem_wake_launcher(void)
{
	Latch	   *latch = NULL;

	if (weir_shared == NULL)
		return;
	LWLockAcquire(weir_shared->lock, LW_SHARED);
	if (weir_shared->launcher_pid != 0)
		latch = weir_shared->launcher_latch;
	LWLockRelease(weir_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * The slot of a pipeline of this database, or NULL.  With claim, a free
 * slot is taken (by the pipeline's worker) if the pipeline has none; NULL
 * then means all weir.max_pipelines slots are in use.
 */
WeirPipelineSlot *
weir_shmem_pipeline(int32 pipeline_id, bool claim)
{
	WeirShmem  *sh = weir_shmem();
	WeirPipelineSlot *found = NULL;
	WeirPipelineSlot *free_slot = NULL;

	LWLockAcquire(sh->lock, claim ? LW_EXCLUSIVE : LW_SHARED);
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *p = &sh->pipelines[i];

		if (p->dboid == MyDatabaseId && p->pipeline_id == pipeline_id)
		{
			found = p;
			break;
		}
		if (p->dboid == InvalidOid && free_slot == NULL)
			free_slot = p;
	}
	if (found == NULL && claim && free_slot != NULL)
	{
		found = free_slot;
		SpinLockAcquire(&found->mutex);
		found->dboid = MyDatabaseId;
		found->pipeline_id = pipeline_id;
		found->pid = 0;
		found->has_writer = false;
		found->has_reader = false;
		found->reader_pid = 0;
		found->writer_pid = 0;
		found->latch = NULL;
		found->watermark = DT_NOBEGIN;
		found->checkpoint_id = 0;
		found->checkpoint_at = 0;
		found->checkpoint_requested = 0;
		found->checkpoint_served = 0;
		found->windows = 0;
		found->state_bytes = 0;
		found->lag_rows = 0;
		found->watermark_holder = -1;
		found->restart_now = false;
		SpinLockRelease(&found->mutex);
		pg_atomic_write_u64(&found->records_in, 0);
		pg_atomic_write_u64(&found->records_out, 0);
		pg_atomic_write_u64(&found->records_late, 0);
		pg_atomic_write_u64(&found->records_dead, 0);
		pg_atomic_write_u32(&found->readers_waiting, 0);
		pg_atomic_write_u64(&found->records_dropped, 0);
	}
	LWLockRelease(sh->lock);
	return found;
}

/*
 * A checkpoint of the pipeline committed, answering weir.checkpoint()
 * tickets up to `served`: tell its waiters.  Called by whichever process
 * committed it (the worker, or its checkpoint writer).
 */
void
weir_shmem_checkpoint_committed(WeirPipelineSlot *slot, int64 checkpoint_id, int64 served)
{
	SpinLockAcquire(&slot->mutex);
	slot->checkpoint_id = checkpoint_id;
	slot->checkpoint_at = GetCurrentTimestamp();
	slot->checkpoint_served = Max(slot->checkpoint_served, served);
	SpinLockRelease(&slot->mutex);
	ConditionVariableBroadcast(&slot->checkpoint_cv);
}

/*
 * Whether a helper of a pipeline's worker (its checkpoint writer, its
 * read-ahead process) may take a background worker slot: never one that
 * the launcher and the workers of the `pipelines` enabled pipelines need (a
 * pipeline that does not run at all is far worse than one whose worker does
 * everything itself), nor while the launcher wants slots back.  If so, the
 * slot is counted: *has_helper (has_writer or has_reader of a pipeline slot)
 * is set.
 */
bool
weir_shmem_reserve_helper(bool *has_helper, int pipelines)
{
	WeirShmem  *sh = weir_shmem();
	int			helpers = 0;
	bool		ok;

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sh->npipelines; i++)
		helpers += (sh->pipelines[i].has_writer ? 1 : 0) + (sh->pipelines[i].has_reader ? 1 : 0);
	ok = !sh->writers_yield && 1 + pipelines + helpers + 1 <= max_worker_processes;
	if (ok)
		*has_helper = true;
	LWLockRelease(sh->lock);
	return ok;
}

void
weir_shmem_release_helper(bool *has_helper)
{
	LWLockAcquire(weir_shmem()->lock, LW_EXCLUSIVE);
	*has_helper = false;
	LWLockRelease(weir_shmem()->lock);
}

/*
 * Whether the launcher wants background worker slots back: it could not
 * start a pipeline's worker, and workers come first.  Helpers (checkpoint
 * writers, read-ahead processes) then give theirs back.
 */
bool
weir_shmem_helpers_should_yield(void)
{
	WeirShmem  *sh = weir_shmem();
	bool		yield;

	LWLockAcquire(sh->lock, LW_SHARED);
	yield = sh->writers_yield;
	LWLockRelease(sh->lock);
	return yield;
}
