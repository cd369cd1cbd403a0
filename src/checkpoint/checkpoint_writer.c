/*-------------------------------------------------------------------------
 *
 * checkpoint_writer.c
 *	  A pipeline's checkpoint writer: a second process that writes the
 *	  worker's checkpoints while the worker reads on.
 *
 * Writing a checkpoint (mostly the sink rows: a btree insertion each) would
 * stop the worker for as long as it takes.  So the worker only collects
 * what changed into a package (checkpoint_package.c: copies, so its state
 * moves on at once) and sends it over a shm_mq to this process, which
 * applies it in one transaction of its own, as the worker would
 * (checkpoint_apply.c), and commits.  One checkpoint is
 * in flight at a time: the worker collects the next only after the writer
 * has committed the last (it reads on meanwhile), so checkpoints commit in
 * order and the state chunks' numbering and sizes the worker keeps stay
 * right.
 *
 * Exactly-once does not change: a package is a whole checkpoint, committed
 * or not.  Whatever fails, the worker restarts from the last committed
 * checkpoint; what it had collected but not seen committed is redone.
 * Both processes fail together: an error in the writer is reported to the
 * worker, which fails with it; a worker that exits detaches from the
 * queue, and the writer writes what it had received whole and exits.
 *
 * One writer per pipeline at a time, and never a writer of an earlier
 * worker committing after a new worker restored: the writer holds a
 * session-level advisory lock on its pipeline (taken before it attaches to
 * the queue, so before anything is sent to it) for as long as it lives,
 * and a worker, before it restores, waits for that lock to be free.
 *
 * Shared state: WriterShared at the start of the DSM segment (its mutex
 * protects committed, result, failed, error), the shm_mq after it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/process_memory.h"
#include "base/progress.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/transaction.h"
#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_apply.h"
#include "checkpoint/checkpoint_counters.h"
#include "checkpoint/checkpoint_writer.h"
#include "definition/pipeline_plan.h"
#include "sink/sink_open.h"

/* The queue: a large checkpoint goes through it in pieces */
#define WRITER_QUEUE_BYTES (4 * 1024 * 1024)
/* idle this long, a writer gives the memory it kept back (process_memory.c) */
#define WRITER_IDLE_RELEASE_MS 1000

/* field4 of weir's advisory lock tags (SQL's advisory locks use 1 and 2) */
#define WRITER_LOCK_FIELD4 0x5752

typedef struct WriterShared
{
	slock_t		mutex;
	int32		pipeline_id;
	Oid			dboid;
	uint64		worker_generation;	/* the worker it writes for (shmem.h) */
	Latch	   *worker_latch;	/* set when a checkpoint commits or fails */
	int64		committed;		/* last checkpoint committed; under mutex */
	WeirCheckpointResult result;	/* of it; under mutex */
	bool		failed;			/* the writer failed; under mutex */
	int			sqlerrcode;		/* its error's; under mutex */
	char		error[512];		/* its error's message; under mutex */
} WriterShared;

#define WRITER_SHARED_BYTES MAXALIGN(sizeof(WriterShared))

struct WeirWriterLink
{
	dsm_segment *seg;
	WriterShared *shared;
	shm_mq_handle *mqh;
	BackgroundWorkerHandle *handle;
	int64		sent;			/* last checkpoint sent */
	int64		acked;			/* last commit the worker has taken in */
};

static void
writer_lock_tag(LOCKTAG *tag, int32 pipeline_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) pipeline_id, 0, WRITER_LOCK_FIELD4);
}

/*
 * Wait until no writer of an earlier worker of this pipeline is left (one
 * may still be committing the last checkpoint it received).  Needs a
 * transaction.
 */
void
weir_writer_wait_for_predecessor(int32 pipeline_id)
{
	LOCKTAG		tag;

	writer_lock_tag(&tag, pipeline_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * Whether no writer of this pipeline is left, without waiting.  Needs a
 * transaction.
 */
bool
weir_writer_gone(int32 pipeline_id)
{
	LOCKTAG		tag;

	writer_lock_tag(&tag, pipeline_id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	LockRelease(&tag, ExclusiveLock, false);
	return true;
}

static void
release_writer(WeirPipelineSlot *slot)
{
	weir_shmem_release_helper(&slot->has_writer);
	SpinLockAcquire(&slot->mutex);
	slot->writer_pid = 0;
	SpinLockRelease(&slot->mutex);
}

/*
 * Start the pipeline's writer and connect to it.  NULL when writers are off
 * (weir.checkpoint_writer) or none can be started (no background worker
 * slot to spare beyond those of the launcher and of the workers of the
 * `pipelines` enabled pipelines: the worker then writes its checkpoints
 * itself, and says so).  Allocates in the worker's context; needs no
 * transaction.
 */
WeirWriterLink *
weir_writer_start(const WeirPipelineRow *row, WeirPipelineSlot *slot, int64 checkpoint_id,
				  int pipelines, MemoryContext cxt)
{
	MemoryContext oldcxt;
	WeirWriterLink *link;
	shm_mq	   *mq;
	pid_t		pid;

	if (!weir_checkpoint_writer)
		return NULL;
	if (!weir_shmem_reserve_helper(&slot->has_writer, pipelines))
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" writes its checkpoints itself: no background worker slot to spare for a checkpoint writer",
						row->name),
				 errhint("Raise max_worker_processes: a running pipeline takes two background workers, its worker and its checkpoint writer.")));
		return NULL;
	}
	oldcxt = MemoryContextSwitchTo(cxt);
	link = palloc0(sizeof(WeirWriterLink));
	link->seg = dsm_create(WRITER_SHARED_BYTES + WRITER_QUEUE_BYTES, 0);
	dsm_pin_mapping(link->seg);
	link->shared = dsm_segment_address(link->seg);
	memset(link->shared, 0, sizeof(WriterShared));
	SpinLockInit(&link->shared->mutex);
	link->shared->pipeline_id = row->id;
	link->shared->dboid = MyDatabaseId;
	link->shared->worker_generation = weir_shmem_pipeline_generation(slot);
	link->shared->worker_latch = &MyProc->procLatch;
	link->shared->committed = link->sent = link->acked = checkpoint_id;
	mq = shm_mq_create((char *) link->shared + WRITER_SHARED_BYTES, WRITER_QUEUE_BYTES);
	shm_mq_set_sender(mq, MyProc);

	if (!weir_shmem_register_helper("weir_checkpoint_writer_main", "weir checkpoint writer",
									row->name, link->seg, &link->handle) ||
		WaitForBackgroundWorkerStartup(link->handle, &pid) != BGWH_STARTED)
	{
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("weir pipeline \"%s\" could not start its checkpoint writer; its worker writes its checkpoints itself",
						row->name),
				 errhint("Raise max_worker_processes: a running pipeline takes two background workers, its worker and its checkpoint writer.")));
		dsm_detach(link->seg);
		release_writer(slot);
		MemoryContextSwitchTo(oldcxt);
		return NULL;
	}
	link->mqh = shm_mq_attach(mq, link->seg, link->handle);
	/* attached: it holds the pipeline's writer lock (see the header) */
	if (shm_mq_wait_for_attach(link->mqh) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint writer of pipeline \"%s\" exited at its start", row->name),
				 errhint("See the server log for why.")));
	/* weir.pipelines shows it */
	SpinLockAcquire(&slot->mutex);
	slot->writer_pid = pid;
	SpinLockRelease(&slot->mutex);
	MemoryContextSwitchTo(oldcxt);
	return link;
}

/*
 * Let the writer go (none may be in flight): it exits once it sees the
 * queue detached, and its slot serves a pipeline's worker.  The worker
 * writes its checkpoints itself from now on.
 */
void
weir_writer_stop(WeirWriterLink *link, WeirPipelineSlot *slot, const char *name)
{
	Assert(link->acked == link->sent);
	shm_mq_detach(link->mqh);
	dsm_detach(link->seg);
	release_writer(slot);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\" stopped its checkpoint writer to leave its background worker slot to a pipeline's worker",
					name),
			 errhint("Raise max_worker_processes: a running pipeline takes two background workers, its worker and its checkpoint writer.")));
	pfree(link);
}

/* Fail the worker with the writer's error, if it failed. */
static void
check_failed(WeirWriterLink *link)
{
	char		error[sizeof(link->shared->error)];
	bool		failed;
	int			sqlerrcode;

	SpinLockAcquire(&link->shared->mutex);
	failed = link->shared->failed;
	sqlerrcode = link->shared->sqlerrcode;
	memcpy(error, link->shared->error, sizeof(error));
	SpinLockRelease(&link->shared->mutex);
	/* the same error as when the worker wrote its checkpoints itself */
	if (failed)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("%s", error),
				 errdetail("The checkpoint writer failed writing checkpoint " INT64_FORMAT ".",
						   link->sent)));
}

/*
 * Hand a package to the writer (none may be in flight).  Blocks only while
 * a package larger than the queue goes through it.
 */
void
weir_writer_send(WeirWriterLink *link, WeirPackage *pkg)
{
	shm_mq_result r;

	Assert(link->acked == link->sent);
	r = shm_mq_send(link->mqh, pkg->buf.len, pkg->buf.data, false, true);
	if (r != SHM_MQ_SUCCESS)
	{
		check_failed(link);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint writer exited"),
				 errhint("See the server log for why.")));
	}
	link->sent = weir_package_header(pkg)->checkpoint_id;
}

/* Whether the checkpoint in flight has committed; if so, *res is its result. */
static bool
sent_committed(WeirWriterLink *link, WeirCheckpointResult *res)
{
	int64		committed;

	SpinLockAcquire(&link->shared->mutex);
	committed = link->shared->committed;
	*res = link->shared->result;
	SpinLockRelease(&link->shared->mutex);
	if (committed != link->sent)
		return false;
	link->acked = committed;
	return true;
}

/*
 * Whether a checkpoint is in flight; COMMITTED (once per checkpoint, with
 * *res) when the one in flight has committed.  Raises the writer's error if
 * it failed, or an error if it exited with a checkpoint in flight.
 */
WeirWriterState
weir_writer_poll(WeirWriterLink *link, WeirCheckpointResult *res)
{
	pid_t		pid;

	if (link->acked == link->sent)
		return WEIR_WRITER_IDLE;
	if (sent_committed(link, res))
		return WEIR_WRITER_COMMITTED;
	check_failed(link);
	if (GetBackgroundWorkerPid(link->handle, &pid) == BGWH_STOPPED)
	{
		/* it may have committed just before it stopped */
		if (sent_committed(link, res))
			return WEIR_WRITER_COMMITTED;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint writer exited with checkpoint " INT64_FORMAT " in flight",
						link->sent),
				 errhint("See the server log for why.")));
	}
	return WEIR_WRITER_BUSY;
}

/* The writer's side ------------------------------------------------------- */

static WriterShared *writer_shared;
static WeirCheckpointTarget *writer;
static MemoryContext writer_cxt;	/* the writer's lifetime */
static char *writer_activity;	/* while it writes, in pg_stat_activity */

static void
writer_error_context(void *arg)
{
	WeirCheckpointTarget *t = (WeirCheckpointTarget *) arg;

	errcontext("while writing a checkpoint of pipeline \"%s\"", t->row.name);
}

/*
 * The pipeline as the writer needs it: its row, plan, slot and sink, acting
 * as its owner with search_path pg_catalog, pg_temp (weir_pipeline_act_as_owner:
 * sink rows are written as the owner, like the worker's).
 */
static WeirCheckpointTarget *
writer_setup(int32 id)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "weir checkpoint writer",
											  ALLOCSET_DEFAULT_SIZES);
	WeirCheckpointTarget *w = MemoryContextAllocZero(cxt, sizeof(WeirCheckpointTarget));
	LOCKTAG		tag;

	writer_cxt = cxt;
	weir_transaction_begin();
	MemoryContextSwitchTo(cxt);
	/* for as long as this process lives: see the header */
	writer_lock_tag(&tag, id);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	if (!weir_catalog_pipeline_by_id(id, &w->row))
		proc_exit(0);
	weir_pipeline_act_as_owner(&w->row);
	w->plan = weir_pipeline_plan(&w->row);
	w->slot = weir_shmem_pipeline(id, false);
	if (w->slot == NULL)
		proc_exit(0);
	/* a compaction it writes shows in weir.progress */
	weir_progress_attach(w->slot);
	w->sink = weir_sink_open(&w->row, w->plan, w->slot, cxt);
	writer_activity = psprintf("weir: writing a checkpoint of pipeline %s", w->row.name);
	weir_transaction_end();
	MemoryContextSwitchTo(cxt);
	return w;
}

/* A checkpoint committed: tell its waiters and the worker. */
static void
writer_committed(WeirCheckpointResult *res)
{
	SpinLockAcquire(&writer_shared->mutex);
	writer_shared->committed = res->checkpoint_id;
	writer_shared->result = *res;
	SpinLockRelease(&writer_shared->mutex);
	(void) weir_shmem_checkpoint_committed_for(writer->slot, writer_shared->worker_generation,
											   res->checkpoint_id, res->served);
	SetLatch(writer_shared->worker_latch);
}

/* Write one package, in a transaction of its own. */
static void
writer_write(const char *data, Size len)
{
	WeirCheckpointResult res;
	bool		written;

	pgstat_report_activity(STATE_RUNNING, writer_activity);
	weir_transaction_begin();
	written = weir_checkpoint_apply(writer, data, len, &res);
	weir_transaction_end();
	MemoryContextSwitchTo(writer_cxt);
	if (written)
	{
		weir_sink_committed(writer->sink);
		weir_counters_committed(writer->slot, &res.counters);
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	if (!written)
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" was dropped; its checkpoint writer exits",
						writer->row.name)));
		proc_exit(0);
	}
	writer_committed(&res);
}

void
weir_checkpoint_writer_main(Datum main_arg)
{
	dsm_segment *seg;
	shm_mq_handle *mqh;
	ErrorContextCallback errcallback;
	MemoryContext package_cxt;
	bool		memory_released = true;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		proc_exit(0);			/* its worker is gone already */
	writer_shared = dsm_segment_address(seg);
	BackgroundWorkerInitializeConnectionByOid(writer_shared->dboid, InvalidOid, 0);
	weir_memory_keep_freed();

	PG_TRY();
	{
		writer = writer_setup(writer_shared->pipeline_id);
		errcallback.callback = writer_error_context;
		errcallback.arg = writer;
		errcallback.previous = error_context_stack;
		error_context_stack = &errcallback;

		shm_mq_set_receiver((shm_mq *) ((char *) writer_shared + WRITER_SHARED_BYTES), MyProc);
		mqh = shm_mq_attach((shm_mq *) ((char *) writer_shared + WRITER_SHARED_BYTES), seg, NULL);
		package_cxt = AllocSetContextCreate(writer_cxt, "weir checkpoint package",
											ALLOCSET_DEFAULT_SIZES);
		for (;;)
		{
			Size		len;
			void	   *data;
			char	   *aligned;
			shm_mq_result res;

			CHECK_FOR_INTERRUPTS();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			res = shm_mq_receive(mqh, &len, &data, true);
			if (res == SHM_MQ_WOULD_BLOCK)
			{
				int			rc = WaitLatch(MyLatch,
										   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
										   WRITER_IDLE_RELEASE_MS, PG_WAIT_EXTENSION);

				ResetLatch(MyLatch);

				/*
				 * A worker that exited before it attached the queue (stopped
				 * while it started this process) never detaches it: the
				 * writer would wait for it, holding the pipeline's writer
				 * lock, and the next worker would wait for the writer.  Its
				 * slot's generation tells that it is gone.
				 */
				if (weir_shmem_pipeline_generation(writer->slot) !=
					writer_shared->worker_generation)
					break;
				/* memory kept for packages goes back when idle a while */
				if ((rc & WL_TIMEOUT) && !memory_released)
				{
					MemoryContextReset(package_cxt);
					weir_memory_release_freed();
					memory_released = true;
				}
				continue;
			}
			/* a worker that exited leaves its last whole package, then nothing */
			if (res != SHM_MQ_SUCCESS)
				break;
			memory_released = false;
			MemoryContextReset(package_cxt);
			aligned = data;
			if ((uintptr_t) data % MAXIMUM_ALIGNOF != 0)
			{
				aligned = MemoryContextAllocHuge(package_cxt, len);
				memcpy(aligned, data, len);
			}
			writer_write(aligned, len);
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		/* the worker fails with the same error, and says it */
		SpinLockAcquire(&writer_shared->mutex);
		writer_shared->failed = true;
		writer_shared->sqlerrcode = edata->sqlerrcode;
		strlcpy(writer_shared->error, edata->message, sizeof(writer_shared->error));
		SpinLockRelease(&writer_shared->mutex);
		SetLatch(writer_shared->worker_latch);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
	proc_exit(0);
}
