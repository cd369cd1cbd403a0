/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The weir launcher: one static background worker, connected to the
 *	  database named by weir.database, doing weir's background work there.
 *
 * Today that work is topic retention (retention.c), once per
 * weir.launcher_naptime.  The launcher publishes its PID and latch in shared
 * memory so that backends can wake it.  An error in one round is logged and
 * the next round starts afresh; the postmaster restarts a launcher that dies.
 * Until CREATE EXTENSION weir has run in weir.database, rounds do nothing.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "launcher.h"
#include "retention.h"
#include "shmem.h"
#include "weir.h"

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

static void
start_transaction(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
finish_transaction(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
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
			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(round_cxt);
			EmitErrorReport();
			AbortOutOfAnyTransaction();
			FlushErrorState();
			RESUME_INTERRUPTS();
		}
		PG_END_TRY();
	}
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
