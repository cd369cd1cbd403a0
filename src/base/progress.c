/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  What a long step of a pipeline's processes is doing now, in the
 *	  style of pg_stat_progress_*: a restore (a starting worker reading its
 *	  checkpoint's chunks), a compaction (a checkpoint that rewrites the
 *	  whole state and deletes the older chunks) and a catch-up (a worker
 *	  reading a backlog of at least WEIR_CATCH_UP_ROWS records).
 *
 * A process attaches to its pipeline's slot once (the worker after it
 * claims the slot, a checkpoint writer when it starts); a backend that
 * restores a checkpoint for weir.committed_state attaches to none, and its
 * calls here do nothing.  Each kind of step has its own entry in the slot
 * (WeirPipelineSlot.progress), so a compaction written by the worker while
 * it catches up does not hide the catch-up.  The entries are written under
 * the slot's mutex, a few stores each, at chunk or round granularity, never
 * per record: a restore or compaction once per chunk, a catch-up once per
 * reading round.  An entry whose process ended without finishing (an
 * error) is left as it was; the view shows only entries whose pid is the
 * slot's worker or writer, and claiming the slot clears them.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/progress.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "base/progress.h"
#include "base/settings.h"

/* The slot this process reports in; NULL: none (its calls do nothing). */
static WeirPipelineSlot *progress_slot = NULL;

/* The pipeline slot this process reports its long steps in. */
void
weir_progress_attach(WeirPipelineSlot *slot)
{
	progress_slot = slot;
}

/*
 * Start a step of `kind` by this process, in `phase`, with its totals (-1:
 * not known).  Replaces what the entry held.
 */
void
weir_progress_begin(WeirProgressKind kind, WeirProgressPhase phase, int64 bytes_total,
					int64 rows_total)
{
	WeirProgress *pr;
	TimestampTz now = GetCurrentTimestamp();

	if (progress_slot == NULL)
		return;
	pr = &progress_slot->progress[kind];
	SpinLockAcquire(&progress_slot->mutex);
	pr->pid = MyProcPid;
	pr->phase = phase;
	pr->started_at = now;
	pr->bytes_done = 0;
	pr->bytes_total = bytes_total;
	pr->rows_done = 0;
	pr->rows_total = rows_total;
	SpinLockRelease(&progress_slot->mutex);
}

/*
 * Whether this process has a step of `kind` in progress.  Read without the
 * mutex: an entry's pid is set only by the process that runs the step (and
 * cleared by it, or by a claim of the slot, when no such process is left),
 * so this process's own answer cannot change under it.
 */
static bool
mine(WeirProgressKind kind)
{
	return progress_slot != NULL && progress_slot->progress[kind].pid == MyProcPid;
}

/* The step of `kind` this process runs moves on to `phase`. */
void
weir_progress_phase(WeirProgressKind kind, WeirProgressPhase phase)
{
	if (!mine(kind))
		return;
	SpinLockAcquire(&progress_slot->mutex);
	progress_slot->progress[kind].phase = phase;
	SpinLockRelease(&progress_slot->mutex);
}

/*
 * One more chunk of the step of `kind` this process runs: `bytes` and
 * `rows` more done.  For tests, weir.fault_point = 'restore_chunk_slow'
 * (or 'compaction_chunk_slow') makes a restore (a compaction) wait a second
 * after each chunk, so that a test sees it in progress (regress test
 * progress, test/t/024_checkpoint_symptoms.pl); the wait is on the latch,
 * so the process still answers signals.
 */
void
weir_progress_advance(WeirProgressKind kind, int64 bytes, int64 rows)
{
	if (!mine(kind))
		return;
	SpinLockAcquire(&progress_slot->mutex);
	progress_slot->progress[kind].bytes_done += bytes;
	progress_slot->progress[kind].rows_done += rows;
	SpinLockRelease(&progress_slot->mutex);
	if ((kind == WEIR_PROGRESS_RESTORE && weir_fault_point_is("restore_chunk_slow")) ||
		(kind == WEIR_PROGRESS_COMPACTION && weir_fault_point_is("compaction_chunk_slow")))
	{
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The step of `kind` this process ran is done: it leaves the view. */
void
weir_progress_end(WeirProgressKind kind)
{
	if (!mine(kind))
		return;
	SpinLockAcquire(&progress_slot->mutex);
	progress_slot->progress[kind].pid = 0;
	SpinLockRelease(&progress_slot->mutex);
}

/*
 * After a reading round of the worker: `records` read in it, `lag_rows`
 * still behind the stable positions.  A backlog of WEIR_CATCH_UP_ROWS or
 * more starts a catch-up; its total is what it has read plus what is still
 * behind (producers may add to it meanwhile), and it ends when the worker
 * has caught up.
 */
void
weir_progress_round(int64 records, int64 lag_rows)
{
	WeirProgress *pr;

	if (progress_slot == NULL)
		return;
	pr = &progress_slot->progress[WEIR_PROGRESS_CATCH_UP];
	if (!mine(WEIR_PROGRESS_CATCH_UP))
	{
		if (lag_rows >= WEIR_CATCH_UP_ROWS)
			weir_progress_begin(WEIR_PROGRESS_CATCH_UP, WEIR_PHASE_READING_BACKLOG, -1,
								lag_rows);
		return;
	}
	if (lag_rows == 0)
	{
		weir_progress_end(WEIR_PROGRESS_CATCH_UP);
		return;
	}
	SpinLockAcquire(&progress_slot->mutex);
	pr->rows_done += records;
	pr->rows_total = pr->rows_done + lag_rows;
	SpinLockRelease(&progress_slot->mutex);
}

const char *
weir_progress_kind_name(int kind)
{
	switch (kind)
	{
		case WEIR_PROGRESS_RESTORE:
			return "restore";
		case WEIR_PROGRESS_COMPACTION:
			return "compaction";
		case WEIR_PROGRESS_CATCH_UP:
			return "catch-up";
	}
	elog(ERROR, "unrecognized progress kind: %d", kind);
	return NULL;				/* keep compiler quiet */
}

const char *
weir_progress_phase_name(int phase)
{
	switch (phase)
	{
		case WEIR_PHASE_LOADING_POSITIONS:
			return "loading positions";
		case WEIR_PHASE_READING_CHUNKS:
			return "reading chunks";
		case WEIR_PHASE_WRITING_CHUNKS:
			return "writing chunks";
		case WEIR_PHASE_DELETING_CHUNKS:
			return "deleting older chunks";
		case WEIR_PHASE_READING_BACKLOG:
			return "reading backlog";
	}
	elog(ERROR, "unrecognized progress phase: %d", phase);
	return NULL;				/* keep compiler quiet */
}
