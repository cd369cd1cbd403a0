/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Fixed shared memory of weir: the launcher's identity, the array of
 *	  topic partition slots and the array of pipeline slots (shmem.h has
 *	  the locking contract).
 *
 * Sizes come from weir.max_partitions and MaxBackends (a slot holds one
 * producer registration per backend, since a backend runs one transaction at
 * a time and registers at most once per partition in it).  The whole struct
 * is rebuilt at every postmaster (re)initialisation: after a crash, counters
 * are rebuilt lazily from the topic tables (partition.c).
 *
 * Locks: WeirShmem.lock (the single LWLock of the named tranche "weir")
 * protects slot assignment and the launcher fields; each partition slot has
 * its own LWLock in tranche "weir_partition", each pipeline slot an LWLock
 * in tranche "weir_pipeline" and a spinlock.  The whole contract (what each
 * protects, the order, what is never held while calling out) is at the top
 * of shmem.h.  Pipeline slots are claimed and released here only, so that
 * who holds a slot changes in one place, under WeirShmem.lock and the
 * slot's mutex, with the generation bumped and waiters told.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
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
		ConditionVariableInit(&weir_shared->pipelines_cv);
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
			pg_atomic_init_u64(&p->dead_at_write, 0);
			pg_atomic_init_u32(&p->readers_waiting, 0);
			pg_atomic_init_u64(&p->records_dropped, 0);
			p->watermark_holder = -1;
			p->restart_now = false;
			p->generation = 0;
			p->last_dboid = InvalidOid;
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

/* The slot of pipeline `pipeline_id` of this database; caller holds sh->lock. */
static WeirPipelineSlot *
find_pipeline(WeirShmem *sh, int32 pipeline_id, WeirPipelineSlot **free_slot)
{
	Assert(LWLockHeldByMe(sh->lock));
	if (free_slot)
		*free_slot = NULL;
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *p = &sh->pipelines[i];

		if (p->dboid == MyDatabaseId && p->pipeline_id == pipeline_id)
			return p;
		if (free_slot && p->dboid == InvalidOid && *free_slot == NULL)
			*free_slot = p;
	}
	return NULL;
}

/*
 * The slot of a pipeline of this database, or NULL: a pipeline has one
 * while a worker holds it.  The slot may be released and taken by another
 * worker as soon as this returns: a caller that will look again later
 * remembers its generation (weir_shmem_pipeline_generation), or reads what
 * it needs in one go (weir_shmem_checkpoint_ticket).  With claim, the
 * calling process claims it as the pipeline's worker, as
 * weir_shmem_claim_pipeline does; NULL then also when another worker holds
 * it.
 */
WeirPipelineSlot *
weir_shmem_pipeline(int32 pipeline_id, bool claim)
{
	WeirShmem  *sh = weir_shmem();
	WeirPipelineSlot *found;
	int			holder;

	if (claim)
		return weir_shmem_claim_pipeline(pipeline_id, &holder);
	LWLockAcquire(sh->lock, LW_SHARED);
	found = find_pipeline(sh, pipeline_id, NULL);
	LWLockRelease(sh->lock);
	return found;
}

/*
 * Claim the pipeline's slot for the calling process, its worker: the
 * pipeline's slot, or a free one (reset).  NULL when another worker holds
 * it (*holder_pid: its pid; a launcher that restarted does not know its
 * predecessor's workers) or when all weir.max_pipelines slots are in use
 * (*holder_pid 0).  The generation is bumped and those waiting for a worker
 * (weir.checkpoint) are woken.  The caller registers a before_shmem_exit
 * callback that calls weir_shmem_release_pipeline.  Takes WeirShmem.lock,
 * then the slot's mutex; call it holding no weir lock.
 */
WeirPipelineSlot *
weir_shmem_claim_pipeline(int32 pipeline_id, int *holder_pid)
{
	WeirShmem  *sh = weir_shmem();
	WeirPipelineSlot *found;
	WeirPipelineSlot *free_slot;

	*holder_pid = 0;
	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	found = find_pipeline(sh, pipeline_id, &free_slot);
	if (found == NULL && free_slot != NULL)
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
		found->remote_pending = 0;
		found->remote_attempts = 0;
		found->remote_retry_at = 0;
		found->remote_error[0] = '\0';
		memset(found->progress, 0, sizeof(found->progress));
		SpinLockRelease(&found->mutex);
		pg_atomic_write_u64(&found->records_in, 0);
		pg_atomic_write_u64(&found->records_out, 0);
		pg_atomic_write_u64(&found->records_late, 0);
		pg_atomic_write_u64(&found->records_dead, 0);
		pg_atomic_write_u64(&found->dead_at_write, 0);
		pg_atomic_write_u32(&found->readers_waiting, 0);
		pg_atomic_write_u64(&found->records_dropped, 0);
	}
	if (found != NULL)
	{
		SpinLockAcquire(&found->mutex);
		if (found->pid != 0)
			*holder_pid = found->pid;
		else
		{
			Assert(found->generation % 2 == 0);
			found->generation++;
			found->image_requested = 0;
			found->image_served = 0;
			found->image_readers = 0;
			found->pid = MyProcPid;
			found->latch = &MyProc->procLatch;
			/* until its worker restores them, the view shows the committed ones */
			found->counters_restored = false;
			found->stats.n = 0;
			found->stats.next = 0;
			found->stats.newest_event_time = DT_NOBEGIN;
			found->stats.in_worker_bytes = 0;
			found->stats.walk.at = 0;
		}
		SpinLockRelease(&found->mutex);
		if (*holder_pid != 0)
			found = NULL;
	}
	LWLockRelease(sh->lock);
	if (found != NULL)
		ConditionVariableBroadcast(&sh->pipelines_cv);
	return found;
}

/*
 * The worker leaves its slot (from its before_shmem_exit callback): the
 * slot is free again, the generation bumped, its helpers' bookkeeping
 * cleared, and those waiting on the slot's checkpoints or for a worker are
 * woken, and the launcher.  The store must be unpublished already (area
 * and root, under the slot's lock).  restart_now stays for the launcher
 * (weir_shmem_take_restart_now).  Call it holding no weir lock.
 */
void
weir_shmem_release_pipeline(WeirPipelineSlot *slot)
{
	WeirShmem  *sh = weir_shmem();

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	slot->has_writer = false;
	slot->has_reader = false;
	SpinLockAcquire(&slot->mutex);
	Assert(slot->pid == MyProcPid && slot->generation % 2 == 1);
	slot->generation++;
	slot->pid = 0;
	slot->writer_pid = 0;		/* the writer exits with its worker */
	slot->reader_pid = 0;		/* and so does the read-ahead process */
	slot->latch = NULL;
	/* give the slot back: a pipeline without a worker needs none */
	slot->last_dboid = slot->dboid;
	slot->dboid = InvalidOid;
	SpinLockRelease(&slot->mutex);
	LWLockRelease(sh->lock);
	ConditionVariableBroadcast(&slot->checkpoint_cv);
	ConditionVariableBroadcast(&sh->pipelines_cv);
	weir_shmem_wake_launcher();
}

/*
 * The slot's generation: for its worker, its own, which stays until it
 * leaves; for others, which worker holds it now (see shmem.h).
 */
uint64
weir_shmem_pipeline_generation(WeirPipelineSlot *slot)
{
	uint64		generation;

	SpinLockAcquire(&slot->mutex);
	generation = slot->generation;
	SpinLockRelease(&slot->mutex);
	return generation;
}

/*
 * A reader of the worker's state store takes the slot's lock shared: the
 * worker, which holds it exclusively for a batch, lets it in within a few
 * hundred records when it sees readers_waiting (worker.c).
 */
void
weir_shmem_pipeline_lock_shared(WeirPipelineSlot *slot)
{
	pg_atomic_fetch_add_u32(&slot->readers_waiting, 1);
	LWLockAcquire(&slot->lock, LW_SHARED);
	pg_atomic_fetch_sub_u32(&slot->readers_waiting, 1);
}

/*
 * Whether a worker of pipeline `pipeline_id` of this database holds the
 * slot now.  With the slot's lock held, and the store published (area),
 * the store is that worker's: a worker unpublishes it, under that lock,
 * before it leaves.
 */
bool
weir_shmem_pipeline_is(WeirPipelineSlot *slot, int32 pipeline_id)
{
	bool		is;

	SpinLockAcquire(&slot->mutex);
	is = slot->dboid == MyDatabaseId && slot->pipeline_id == pipeline_id && slot->pid != 0;
	SpinLockRelease(&slot->mutex);
	return is;
}

/*
 * Take a weir.checkpoint() ticket from the pipeline's worker, if it has one
 * now: its slot, with *generation (the worker's) and *ticket; NULL if no
 * worker holds a slot for the pipeline.  The worker's latch is set, so that
 * an idle worker starts a round.  Looked up and taken under WeirShmem.lock,
 * so that the slot cannot change hands in between.
 */
WeirPipelineSlot *
weir_shmem_checkpoint_ticket(int32 pipeline_id, uint64 *generation, int64 *ticket)
{
	WeirShmem  *sh = weir_shmem();
	WeirPipelineSlot *slot;
	Latch	   *latch = NULL;

	LWLockAcquire(sh->lock, LW_SHARED);
	slot = find_pipeline(sh, pipeline_id, NULL);
	if (slot)
	{
		SpinLockAcquire(&slot->mutex);
		Assert(slot->pid != 0 && slot->generation % 2 == 1);
		*generation = slot->generation;
		*ticket = ++slot->checkpoint_requested;
		latch = slot->latch;
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(sh->lock);
	if (latch)
		SetLatch(latch);
	return slot;
}

/*
 * Whether the last worker of the pipeline to leave its slot asked to be
 * started again at once (restart_now: it moves past a record, skip.c); the
 * request is taken.  Called by the launcher once the worker has exited,
 * which has given its slot back: the slot is found by the database and
 * pipeline it last served, unless a worker claimed it since (which resets
 * the request).
 */
bool
weir_shmem_take_restart_now(int32 pipeline_id)
{
	WeirShmem  *sh = weir_shmem();
	bool		restart_now = false;

	LWLockAcquire(sh->lock, LW_SHARED);
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *p = &sh->pipelines[i];

		if (p->pipeline_id != pipeline_id ||
			(p->dboid != MyDatabaseId &&
			 (p->dboid != InvalidOid || p->last_dboid != MyDatabaseId)))
			continue;
		SpinLockAcquire(&p->mutex);
		restart_now |= p->restart_now;
		p->restart_now = false;
		SpinLockRelease(&p->mutex);
	}
	LWLockRelease(sh->lock);
	return restart_now;
}

/*
 * A checkpoint of the pipeline committed, answering weir.checkpoint()
 * tickets up to `served`: tell its waiters.  Called by the worker that
 * holds the slot, when it committed the checkpoint itself.
 */
void
weir_shmem_checkpoint_committed(WeirPipelineSlot *slot, int64 checkpoint_id, int64 served)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&slot->mutex);
	Assert(slot->pid == MyProcPid);
	slot->checkpoint_id = checkpoint_id;
	slot->checkpoint_at = now;
	slot->checkpoint_served = Max(slot->checkpoint_served, served);
	SpinLockRelease(&slot->mutex);
	ConditionVariableBroadcast(&slot->checkpoint_cv);
}

/*
 * The same, from a process that committed a checkpoint for the worker of
 * `generation` (its checkpoint writer, which may commit the last package
 * after its worker left): told only while the slot's counters are still
 * that worker's (weir_shmem_counters_of).  A slot claimed since serves
 * another worker, of this pipeline or another, whose tickets these are
 * not; callers holding the old worker's tickets take new ones from its
 * successor (pipeline.c).  Whether it was told.
 */
bool
weir_shmem_checkpoint_committed_for(WeirPipelineSlot *slot, uint64 generation,
									int64 checkpoint_id, int64 served)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		same;

	SpinLockAcquire(&slot->mutex);
	same = weir_shmem_counters_of(slot->generation, generation);
	if (same)
	{
		slot->checkpoint_id = checkpoint_id;
		slot->checkpoint_at = now;
		slot->checkpoint_served = Max(slot->checkpoint_served, served);
	}
	SpinLockRelease(&slot->mutex);
	if (same)
		ConditionVariableBroadcast(&slot->checkpoint_cv);
	return same;
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
 * Register a pipeline worker's helper process (a checkpoint writer, a
 * read-ahead process): `function` of this library, which gets the handle of
 * `seg` (what the two share) and tells its worker when it exits; it is
 * never restarted (its worker starts another, or does without).  False if
 * no background worker slot was free.  The caller waits for it to start.
 */
bool
weir_shmem_register_helper(const char *function, const char *type, const char *pipeline,
						   dsm_segment *seg, BackgroundWorkerHandle **handle)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "weir");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "%s for pipeline %s", type, pipeline);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "%s", type);
	bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	bgw.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&bgw, handle);
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

static bool wake_registered = false;
static bool wake_at_commit = false;

static void
wake_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_at_commit)
		weir_shmem_wake_launcher();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_at_commit = false;
}

/* The launcher acts on catalog changes once they are committed. */
void
weir_shmem_wake_launcher_at_commit(void)
{
	if (!wake_registered)
	{
		RegisterXactCallback(wake_callback, NULL);
		wake_registered = true;
	}
	wake_at_commit = true;
}
