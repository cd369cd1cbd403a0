/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The weir launcher: one static background worker, connected to the
 *	  database named by weir.database, doing weir's background work there.
 *
 * That work is: keeping one worker running per enabled pipeline (starting
 * them, restarting failed ones with back-off, stopping those disabled or
 * dropped), and topic retention (retention.c), once per
 * weir.launcher_naptime or when a backend wakes it after committing a
 * change to the pipelines.  The launcher publishes its PID and latch in shared
 * memory so that backends can wake it.  An error in one round is logged and
 * the next round starts afresh; the postmaster restarts a launcher that dies.
 * Until CREATE EXTENSION weir has run in weir.database, rounds do nothing.
 * With weir.start_pipelines off (a restored copy that must not act yet),
 * rounds run no pipeline or capture and touch no remote server; retention
 * goes on.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/slot.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "base/shmem.h"
#include "base/transaction.h"
#include "base/version.h"
#include "capture/capture_catalog.h"
#include "capture/local_decoder.h"
#include "capture/remote_slot_drop.h"
#include "sink/remote_sink_orphans.h"
#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "pipeline/launcher.h"
#include "topic/retention.h"

void
weir_launcher_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;	/* s; also the retry while weir.database is missing */
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "weir");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "weir_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "weir launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "weir launcher");
	RegisterBackgroundWorker(&worker);
}

static void
launcher_detach(int code, Datum arg)
{
	WeirShmem  *sh = weir_shmem();

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	if (sh->launcher_pid == MyProcPid)
	{
		sh->launcher_pid = 0;
		sh->launcher_latch = NULL;
	}
	LWLockRelease(sh->lock);
}

static void
launcher_attach(void)
{
	WeirShmem  *sh = weir_shmem();

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	sh->launcher_pid = MyProcPid;
	sh->launcher_latch = &MyProc->procLatch;
	LWLockRelease(sh->lock);
	before_shmem_exit(launcher_detach, 0);
}

/* After an error in a round: log it, abort, and carry on with the next. */
static void
recover(MemoryContext round_cxt)
{
	HOLD_INTERRUPTS();
	MemoryContextSwitchTo(round_cxt);
	EmitErrorReport();
	AbortOutOfAnyTransaction();
	FlushErrorState();
	RESUME_INTERRUPTS();
}

static void
start_transaction(const char *activity)
{
	weir_transaction_begin();
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
finish_transaction(void)
{
	weir_transaction_end();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Topics with a retention, copied into `cxt`; NIL if weir is not installed. */
static List *
topics_with_retention(MemoryContext cxt)
{
	List	   *topics = NIL;

	start_transaction("weir: listing topics");
	if (OidIsValid(get_extension_oid("weir", true)))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		topics = weir_catalog_topics(true);
		MemoryContextSwitchTo(oldcxt);
	}
	finish_transaction();
	return topics;
}

static void
retention_round(MemoryContext round_cxt)
{
	List	   *topics = topics_with_retention(round_cxt);
	ListCell   *lc;

	foreach(lc, topics)
	{
		WeirTopicRow *row = lfirst(lc);

		PG_TRY();
		{
			start_transaction("weir: retention");
			(void) weir_retention_trim_topic(row, true);
			finish_transaction();
		}
		PG_CATCH();
		{
			/* log, forget this round's work on the topic, carry on */
			recover(round_cxt);
		}
		PG_END_TRY();
	}
}

/* What the launcher knows of one pipeline's or capture's worker */
typedef enum ManagedKind
{
	MANAGED_PIPELINE,
	MANAGED_CAPTURE
} ManagedKind;

typedef struct Managed
{
	ManagedKind kind;
	int32		pipeline_id;	/* or the capture's id */
	BackgroundWorkerHandle *handle; /* NULL: not running */
	TimestampTz started_at;
	TimestampTz next_start;		/* back-off after failures */
	int			failures;
	bool		seen;			/* still enabled in this round */
} Managed;

static Managed *managed = NULL;
static int	nmanaged = 0;

static Managed *
managed_entry(ManagedKind kind, int32 id)
{
	for (int i = 0; i < nmanaged; i++)
		if (managed[i].kind == kind && managed[i].pipeline_id == id)
			return &managed[i];
	managed = managed ? repalloc(managed, sizeof(Managed) * (nmanaged + 1)) :
		MemoryContextAlloc(TopMemoryContext, sizeof(Managed));
	memset(&managed[nmanaged], 0, sizeof(Managed));
	managed[nmanaged].kind = kind;
	managed[nmanaged].pipeline_id = id;
	return &managed[nmanaged++];
}

static void
start_worker(Managed *m, TimestampTz now)
{
	BackgroundWorker worker;
	bool		ok;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher restarts */
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "weir");
	if (m->kind == MANAGED_CAPTURE)
	{
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "weir_capture_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "weir capture %d", m->pipeline_id);
		snprintf(worker.bgw_type, BGW_MAXLEN, "weir capture");
	}
	else
	{
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "weir_worker_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "weir worker for pipeline %d", m->pipeline_id);
		snprintf(worker.bgw_type, BGW_MAXLEN, "weir worker");
	}
	worker.bgw_main_arg = Int32GetDatum(m->pipeline_id);
	memcpy(worker.bgw_extra, &MyDatabaseId, sizeof(Oid));
	worker.bgw_notify_pid = MyProcPid;

	m->started_at = now;
	ok = RegisterDynamicBackgroundWorker(&worker, &m->handle);
	/* a pipeline's worker comes before any checkpoint writer (checkpoint_writer.c) */
	LWLockAcquire(weir_shmem()->lock, LW_EXCLUSIVE);
	weir_shmem()->writers_yield = !ok;
	LWLockRelease(weir_shmem()->lock);
	if (!ok)
	{
		m->handle = NULL;
		m->next_start = now + 5 * USECS_PER_SEC;
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a worker for weir %s %d",
						m->kind == MANAGED_CAPTURE ? "capture" : "pipeline", m->pipeline_id),
				 errhint("Raise max_worker_processes.")));
	}
}

/* Back-off after a worker's failure: 1 s doubling to 60 s. */
static void
note_exit(Managed *m, TimestampTz now)
{
	/*
	 * A worker that moves past a record (skip.c) asks for no back-off.  It
	 * has given its slot back by now: the request outlives that.
	 */
	if (m->kind == MANAGED_PIPELINE && weir_shmem_take_restart_now(m->pipeline_id))
	{
		m->next_start = now;
		pfree(m->handle);
		m->handle = NULL;
		return;
	}
	if (now - m->started_at > 60 * USECS_PER_SEC)
		m->failures = 0;
	m->failures++;
	m->next_start = now + Min((int64) 1 << Min(m->failures - 1, 6), 60) * USECS_PER_SEC;
	pfree(m->handle);
	m->handle = NULL;
}

/*
 * Drop the slots of this database's captures that no capture owns any
 * more (dropped, or created by a worker whose capture was then dropped),
 * unless a process still holds one: a capture's slot never outlives it.
 */
static void
drop_orphan_slots(List *owned)
{
	char		prefix[NAMEDATALEN];
	List	   *orphans = NIL;
	ListCell   *lc;

	snprintf(prefix, sizeof(prefix), "weir_capture_%u_", MyDatabaseId);
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *slot = &ReplicationSlotCtl->replication_slots[i];
		bool		mine = false;

		if (!slot->in_use || slot->active_pid != 0 ||
			strncmp(NameStr(slot->data.name), prefix, strlen(prefix)) != 0)
			continue;
		foreach(lc, owned)
			if (strcmp(lfirst(lc), NameStr(slot->data.name)) == 0)
				mine = true;
		if (!mine)
			orphans = lappend(orphans, pstrdup(NameStr(slot->data.name)));
	}
	LWLockRelease(ReplicationSlotControlLock);
	foreach(lc, orphans)
	{
		weir_local_slot_drop(lfirst(lc));
		ereport(LOG,
				(errmsg("weir dropped replication slot \"%s\": its capture is gone",
						(char *) lfirst(lc))));
	}
}

static void
pipelines_round(void)
{
	List	   *ids = NIL;
	List	   *capture_ids = NIL;
	List	   *slot_names = NIL;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	bool		installed;

	start_transaction("weir: pipelines");
	installed = OidIsValid(get_extension_oid("weir", true));
	/*
	 * weir.start_pipelines = off (a restored copy that must not act): no
	 * worker runs, and those running are stopped below as if disabled;
	 * nothing is done on remote servers either.
	 */
	if (installed && weir_start_pipelines)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		ids = weir_catalog_enabled_pipelines();
		capture_ids = weir_catalog_enabled_captures();
		MemoryContextSwitchTo(oldcxt);
		/* a library newer than the database's weir: say so, once */
		weir_version_note_installed(weir_database);
		slot_names = weir_catalog_capture_slot_names();
	}
	finish_transaction();

	for (int i = 0; i < nmanaged; i++)
		managed[i].seen = false;
	for (int kind = MANAGED_PIPELINE; kind <= MANAGED_CAPTURE; kind++)
		foreach(lc, kind == MANAGED_PIPELINE ? ids : capture_ids)
		{
			Managed    *m = managed_entry(kind, lfirst_int(lc));
			pid_t		pid;

			m->seen = true;
			if (m->handle && GetBackgroundWorkerPid(m->handle, &pid) == BGWH_STOPPED)
				note_exit(m, now);
			if (m->handle == NULL && now >= m->next_start)
				start_worker(m, now);
		}
	for (int i = 0; i < nmanaged; i++)
	{
		if (managed[i].seen)
			continue;
		if (managed[i].handle)
		{
			TerminateBackgroundWorker(managed[i].handle);
			pfree(managed[i].handle);
		}
		managed[i] = managed[--nmanaged];
		i--;
	}
	if (installed && weir_start_pipelines)
	{
		start_transaction("weir: dropping the slots of dropped captures");
		drop_orphan_slots(slot_names);
		finish_transaction();
		weir_remote_drop_slots();
		weir_remote_sink_resolve_orphans();
	}
	list_free(ids);
	list_free(capture_ids);
}

void
weir_launcher_main(Datum main_arg)
{
	MemoryContext round_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(weir_database, NULL, 0);
	launcher_attach();
	ereport(LOG,
			(errmsg("weir launcher started in database \"%s\"", weir_database)));

	round_cxt = AllocSetContextCreate(TopMemoryContext, "weir launcher round",
									  ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextSwitchTo(round_cxt);
		PG_TRY();
		{
			pipelines_round();
		}
		PG_CATCH();
		{
			recover(round_cxt);
		}
		PG_END_TRY();
		retention_round(round_cxt);
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(round_cxt);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 weir_launcher_naptime,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
