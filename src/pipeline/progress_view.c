/*-------------------------------------------------------------------------
 *
 * progress_view.c
 *	  The function behind weir.progress: the long steps (restore,
 *	  compaction, catch-up) that the pipelines of this database have in
 *	  progress, as their processes report them in shared memory
 *	  (base/progress.c).
 *
 * Each slot's entries are copied under its mutex, a few loads, and the
 * tuples built after it is released.  An entry counts only while its
 * process is the slot's worker or checkpoint writer: one that ended in an
 * error left its entry behind.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/progress_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/progress.h"
#include "base/shmem.h"

#define PROGRESS_COLS 9

PG_FUNCTION_INFO_V1(weir_progress_state);
Datum
weir_progress_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WeirShmem  *sh = weir_shmem();

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *slot = &sh->pipelines[i];
		WeirProgress copy[WEIR_PROGRESS_KINDS];
		int32		id;
		int			pid;
		int			writer_pid;

		SpinLockAcquire(&slot->mutex);
		id = slot->dboid == MyDatabaseId ? slot->pipeline_id : 0;
		pid = slot->pid;
		writer_pid = slot->writer_pid;
		memcpy(copy, slot->progress, sizeof(copy));
		SpinLockRelease(&slot->mutex);
		if (id == 0 || pid == 0)
			continue;

		for (int k = 0; k < WEIR_PROGRESS_KINDS; k++)
		{
			WeirProgress *pr = &copy[k];
			Datum		values[PROGRESS_COLS];
			bool		nulls[PROGRESS_COLS];

			if (pr->pid == 0 || (pr->pid != pid && pr->pid != writer_pid))
				continue;
			memset(nulls, 0, sizeof(nulls));
			values[0] = Int32GetDatum(id);
			values[1] = Int32GetDatum(pr->pid);
			values[2] = CStringGetTextDatum(weir_progress_kind_name(k));
			values[3] = CStringGetTextDatum(weir_progress_phase_name(pr->phase));
			values[4] = TimestampTzGetDatum(pr->started_at);
			values[5] = Int64GetDatum(pr->bytes_done);
			values[6] = Int64GetDatum(pr->bytes_total);
			nulls[6] = pr->bytes_total < 0;
			/* a catch-up counts records only */
			nulls[5] = nulls[6];
			values[7] = Int64GetDatum(pr->rows_done);
			values[8] = Int64GetDatum(pr->rows_total);
			nulls[8] = pr->rows_total < 0;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
