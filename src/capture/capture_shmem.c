/*-------------------------------------------------------------------------
 *
 * capture_shmem.c
 *	  One slot of shared memory per running capture (weir.max_captures),
 *	  and weir._capture_state(), which weir.captures reads.
 *
 * A worker claims its capture's slot at start and frees it when it exits
 * (a crash resets all shared memory).  A second worker for the same capture
 * finds the slot held and leaves: two decoders of one slot would fail on
 * the slot anyway, but this says why.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "capture/capture_shmem.h"

typedef struct WeirCaptureShmem
{
	int			nslots;
	WeirCaptureSlot slots[FLEXIBLE_ARRAY_MEMBER];
} WeirCaptureShmem;

static WeirCaptureShmem *capture_shmem = NULL;
static shmem_request_hook_type prev_request_hook = NULL;
static shmem_startup_hook_type prev_startup_hook = NULL;

static Size
capture_shmem_size(void)
{
	return add_size(offsetof(WeirCaptureShmem, slots),
					mul_size(weir_max_captures, sizeof(WeirCaptureSlot)));
}

static void
capture_shmem_request(void)
{
	if (prev_request_hook)
		prev_request_hook();
	RequestAddinShmemSpace(capture_shmem_size());
}

static void
capture_shmem_startup(void)
{
	bool		found;

	if (prev_startup_hook)
		prev_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	capture_shmem = ShmemInitStruct("weir captures", capture_shmem_size(), &found);
	if (!found)
	{
		capture_shmem->nslots = weir_max_captures;
		for (int i = 0; i < capture_shmem->nslots; i++)
		{
			memset(&capture_shmem->slots[i], 0, sizeof(WeirCaptureSlot));
			SpinLockInit(&capture_shmem->slots[i].mutex);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

void
weir_capture_shmem_install_hooks(void)
{
	prev_request_hook = shmem_request_hook;
	shmem_request_hook = capture_shmem_request;
	prev_startup_hook = shmem_startup_hook;
	shmem_startup_hook = capture_shmem_startup;
}

static void
capture_slot_release(int code, Datum arg)
{
	WeirCaptureSlot *slot = (WeirCaptureSlot *) DatumGetPointer(arg);

	SpinLockAcquire(&slot->mutex);
	if (slot->pid == MyProcPid)
	{
		slot->pid = 0;
		slot->dboid = InvalidOid;
	}
	SpinLockRelease(&slot->mutex);
}

/*
 * Claim capture `capture_id`'s slot for this process, reset, released when
 * it exits.  NULL when another process holds it (*holder_pid: its pid) or
 * when every slot is taken (*holder_pid 0).
 */
WeirCaptureSlot *
weir_capture_shmem_claim(int32 capture_id, int *holder_pid)
{
	WeirCaptureSlot *free_slot = NULL;

	*holder_pid = 0;
	if (capture_shmem == NULL)
		elog(ERROR, "weir's capture shared memory is not set up");
	for (int i = 0; i < capture_shmem->nslots; i++)
	{
		WeirCaptureSlot *slot = &capture_shmem->slots[i];
		bool		taken = false;

		SpinLockAcquire(&slot->mutex);
		if (slot->dboid == MyDatabaseId && slot->capture_id == capture_id && slot->pid != 0)
			*holder_pid = slot->pid;
		else if (free_slot == NULL && slot->pid == 0)
		{
			/* taken under the spinlock, so that two claimers never share one */
			slot->pid = MyProcPid;
			slot->dboid = MyDatabaseId;
			slot->capture_id = capture_id;
			taken = true;
		}
		SpinLockRelease(&slot->mutex);
		if (*holder_pid != 0)
		{
			if (free_slot)
				capture_slot_release(0, PointerGetDatum(free_slot));
			return NULL;
		}
		if (taken)
			free_slot = slot;
	}
	if (free_slot == NULL)
		return NULL;
	SpinLockAcquire(&free_slot->mutex);
	free_slot->received_lsn = InvalidXLogRecPtr;
	free_slot->caught_up = false;
	free_slot->caught_up_at = 0;
	free_slot->changes = 0;
	free_slot->transactions = 0;
	free_slot->connects = 0;
	free_slot->next_connect_at = 0;
	SpinLockRelease(&free_slot->mutex);
	before_shmem_exit(capture_slot_release, PointerGetDatum(free_slot));
	return free_slot;
}

/* A worker notes what it has read and written (weir.captures shows it). */
void
weir_capture_note_progress(WeirCaptureSlot *slot, XLogRecPtr received, bool caught_up,
						   const WeirCaptureProgress *progress)
{
	SpinLockAcquire(&slot->mutex);
	if (received > slot->received_lsn)
		slot->received_lsn = received;
	if (caught_up && !slot->caught_up)
		slot->caught_up_at = GetCurrentTimestamp();
	slot->caught_up = caught_up;
	slot->changes += progress->rows;
	slot->transactions += progress->transactions;
	SpinLockRelease(&slot->mutex);
}

/* Whether capture `capture_id` of this database has a worker. */
bool
weir_capture_shmem_running(int32 capture_id)
{
	bool		running = false;

	if (capture_shmem == NULL)
		return false;
	for (int i = 0; i < capture_shmem->nslots && !running; i++)
	{
		WeirCaptureSlot *slot = &capture_shmem->slots[i];

		SpinLockAcquire(&slot->mutex);
		running = slot->pid != 0 && slot->dboid == MyDatabaseId && slot->capture_id == capture_id;
		SpinLockRelease(&slot->mutex);
	}
	return running;
}

/* weir._capture_state(): one row per running capture of this database. */
PG_FUNCTION_INFO_V1(weir_capture_state);
Datum
weir_capture_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (capture_shmem == NULL)
		return (Datum) 0;
	for (int i = 0; i < capture_shmem->nslots; i++)
	{
		WeirCaptureSlot *slot = &capture_shmem->slots[i];
		WeirCaptureSlot copy;
		Datum		values[9];
		bool		nulls[9] = {0};

		SpinLockAcquire(&slot->mutex);
		copy = *slot;
		SpinLockRelease(&slot->mutex);
		if (copy.pid == 0 || copy.dboid != MyDatabaseId)
			continue;
		values[0] = Int32GetDatum(copy.capture_id);
		values[1] = Int32GetDatum(copy.pid);
		values[2] = LSNGetDatum(copy.received_lsn);
		nulls[2] = XLogRecPtrIsInvalid(copy.received_lsn);
		values[3] = BoolGetDatum(copy.caught_up);
		values[4] = TimestampTzGetDatum(copy.caught_up_at);
		nulls[4] = copy.caught_up_at == 0;
		values[5] = Int64GetDatum(copy.changes);
		values[6] = Int64GetDatum(copy.transactions);
		values[7] = Int64GetDatum(copy.connects);
		values[8] = TimestampTzGetDatum(copy.next_connect_at);
		nulls[8] = copy.next_connect_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
