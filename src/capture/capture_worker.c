/*-------------------------------------------------------------------------
 *
 * capture_worker.c
 *	  A capture's background worker: started by the launcher, one per
 *	  enabled capture, it decodes its tables' changes and appends them to
 *	  their topics, exactly once.
 *
 * A local capture loops: decode a batch of whole transactions in a new
 * transaction (local_decoder.c), write their changes to the topics as the
 * capture's owner (capture_apply.c), set the capture's position in the
 * same transaction, commit, and only then let the slot confirm what was
 * read.  A remote capture does the same with changes received from
 * another server (remote_capture.c).
 *
 * The worker connects as the bootstrap superuser, which the slot needs,
 * and writes as the owner.  An error is recorded in weir.capture and the
 * worker exits; the launcher starts it again with back-off, except for
 * errors a restart cannot cure (a privilege lost, a column's type changed,
 * the slot invalidated, or gone after the capture wrote changes: a promoted
 * standby or a restored base backup has no slots), which stop the capture
 * until its owner starts it again (weir.start_capture).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/slot.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/transaction.h"
#include "capture/capture_apply.h"
#include "capture/capture_catalog.h"
#include "capture/capture_shmem.h"
#include "capture/capture_worker.h"
#include "capture/local_decoder.h"
#include "capture/remote_capture.h"

/* Bytes of messages per batch: a transaction's worth more at most */
#define CAPTURE_BATCH_BYTES (8 * 1024 * 1024)
/* How long a caught-up capture sleeps before looking at the WAL again */
#define CAPTURE_IDLE_MS 100

/* Errors after which the capture stops rather than restart in a loop */
static bool
capture_error_is_permanent(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION ||
		sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED;
}

/* The owner may still read what it captures (decoding bypasses GRANTs). */
static void
check_owner_rights(WeirCaptureRow *capture)
{
	for (int i = 0; i < capture->ntables; i++)
	{
		WeirCaptureTableRow *t = &capture->tables[i];

		if (!OidIsValid(t->relid) || t->dropped || get_rel_name(t->relid) == NULL)
			continue;
		if (pg_class_aclcheck(t->relid, capture->owner, ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the owner of capture \"%s\" may no longer read table \"%s\"",
							capture->name, get_rel_name(t->relid)),
					 errhint("Grant SELECT on the table to the capture's owner, then weir.start_capture().")));
	}
}

/*
 * Write a decoded batch in the current transaction, with the capture's new
 * position.  If a transaction of the batch cannot be written (a column's
 * type changed, a privilege was lost), the ones before it still are, in a
 * transaction of their own, before the error ends the worker: the capture
 * stops just before the change it cannot follow, not a batch earlier.
 */
static void
write_batch(WeirCaptureRow *capture, Tuplestorestate *messages, WeirCaptureProgress *progress)
{
	XLogRecPtr	before = capture->position;
	TimestampTz before_time = capture->position_time;

	PG_TRY();
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		weir_capture_apply_messages(capture, messages, InvalidXLogRecPtr, progress);
		if (progress->transactions > 0)
			weir_catalog_capture_set_position(capture->id, progress->position,
											  progress->position_time);
		PopActiveSnapshot();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		XLogRecPtr	written = capture->position;	/* how far the batch got */
		WeirCaptureProgress again = {0};

		/* the error outlives the transaction it is aborting */
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		capture->position = before;
		capture->position_time = before_time;
		if (written > before)
		{
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			weir_capture_apply_messages(capture, messages, written, &again);
			weir_catalog_capture_set_position(capture->id, again.position, again.position_time);
			PopActiveSnapshot();
			CommitTransactionCommand();
			weir_local_confirm(written);
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
}

static void
run_local(WeirCaptureRow *capture, WeirCaptureSlot *slot)
{
	WeirLocalDecoder *d;
	Oid		   *tables = palloc(sizeof(Oid) * Max(capture->ntables, 1));
	int			ntables = 0;
	bool		exists;
	bool		invalidated;

	for (int i = 0; i < capture->ntables; i++)
		if (OidIsValid(capture->tables[i].relid))
			tables[ntables++] = capture->tables[i].relid;

	exists = weir_local_slot_exists(capture->slot_name, &invalidated);
	if (!exists && capture->position != InvalidXLogRecPtr)
	{
		/*
		 * A capture that has written changes had a slot: it is gone, as on a
		 * promoted standby or a restored base backup (slots are not
		 * replicated in PostgreSQL 15).  A new slot would start at the end
		 * of WAL, after changes never decoded.  42704 stops the capture.
		 */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("replication slot \"%s\" of capture \"%s\" does not exist",
						capture->slot_name, capture->name),
				 errdetail("The capture has written the changes up to %X/%X; a new slot would start at the end of WAL and miss the changes after that. Replication slots are not copied to a standby or a base backup.",
						   LSN_FORMAT_ARGS(capture->position)),
				 errhint("Drop the capture and create it again (its topics can stay), and bring the changes made to its tables since %X/%X over yourself.",
						 LSN_FORMAT_ARGS(capture->position))));
	}
	if (!exists)
	{
		/* a fresh transaction: creating a slot waits for running ones */
		pgstat_report_activity(STATE_RUNNING, "weir: creating the capture's replication slot");
		StartTransactionCommand();
		weir_local_slot_create(capture->slot_name);
		CommitTransactionCommand();
		ereport(LOG,
				(errmsg("weir capture \"%s\" created replication slot \"%s\"",
						capture->name, capture->slot_name)));
	}
	else if (invalidated)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication slot \"%s\" of capture \"%s\" has been invalidated",
						capture->slot_name, capture->name),
				 errdetail("The server removed WAL the slot still needed (max_slot_wal_keep_size); changes were lost."),
				 errhint("Drop the capture and create it again (its topics can stay).")));
	d = weir_local_decoder_start(capture->slot_name, tables, ntables);

	weir_transaction_begin();
	weir_catalog_capture_set_status(capture->id, WEIR_CAPTURE_RUNNING, NULL, false);
	weir_transaction_end();
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		WeirCaptureProgress progress = {0};
		bool		at_end;
		int			ntxns;
		XLogRecPtr	upto;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		ntxns = weir_local_decode(d, CAPTURE_BATCH_BYTES, &at_end);
		if (ntxns > 0)
		{
			pgstat_report_activity(STATE_RUNNING, "weir: capturing changes");
			write_batch(capture, weir_local_decoder_messages(d), &progress);
		}
		weir_local_decoder_done(d);
		CommitTransactionCommand();
		upto = weir_local_decoder_read_upto(d);
		weir_local_confirm(upto);
		weir_capture_note_progress(slot, upto, at_end, &progress);
		if (ntxns > 0)
			pgstat_report_activity(STATE_IDLE, NULL);
		if (at_end)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 CAPTURE_IDLE_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}

void
weir_capture_main(Datum main_arg)
{
	int32		id = DatumGetInt32(main_arg);
	Oid			dboid;
	WeirCaptureSlot *slot;
	WeirCaptureRow *volatile capture = NULL;	/* read after an error */
	int			holder;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	slot = weir_capture_shmem_claim(id, &holder);
	if (slot == NULL && holder != 0)
	{
		ereport(LOG,
				(errmsg("weir capture %d already has a worker (PID %d)", id, holder)));
		proc_exit(0);
	}

	PG_TRY();
	{
		if (slot == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many captures running"),
					 errhint("Raise weir.max_captures (and max_worker_processes) and restart the server.")));
		weir_transaction_begin();
		capture = MemoryContextAllocZero(TopMemoryContext, sizeof(WeirCaptureRow));
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
			bool		found = weir_catalog_capture_by_id(id, capture);

			MemoryContextSwitchTo(old);
			if (!found || !capture->enabled)
			{
				weir_transaction_end();
				proc_exit(0);
			}
		}
		check_owner_rights(capture);
		weir_transaction_end();

		if (capture->publication)
			weir_remote_capture_run(capture, slot);
		else
			run_local(capture, slot);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		const char *status = WEIR_CAPTURE_FAILED;
		bool		disable;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		RESUME_INTERRUPTS();
		disable = capture_error_is_permanent(edata->sqlerrcode);
		if (edata->sqlerrcode == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE &&
			capture && !capture->publication)
		{
			bool		invalidated;

			if (weir_local_slot_exists(capture->slot_name, &invalidated) && invalidated)
			{
				status = WEIR_CAPTURE_SLOT_INVALIDATED;
				disable = true;
			}
		}
		weir_transaction_begin();
		weir_catalog_capture_set_status(id, status, edata->message, disable);
		weir_transaction_end();
		if (disable)
		{
			ereport(WARNING,
					(errmsg("weir capture %d stopped: %s", id, edata->message)));
			proc_exit(0);
		}
		proc_exit(1);
	}
	PG_END_TRY();
}
