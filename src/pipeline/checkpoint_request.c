/*-------------------------------------------------------------------------
 *
 * checkpoint_request.c
 *	  weir.checkpoint(): have running pipelines take a checkpoint now and
 *	  wait for it, one pipeline or every chain of them.
 *
 * A request is a ticket in the pipeline's shared slot; the worker serves
 * the tickets it saw at the start of a round in which it caught up with
 * its sources, so the checkpoint that serves one covers every row
 * committed before it was taken.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/checkpoint_request.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/shmem.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/pipeline_plan.h"

/*
 * Milliseconds from now to `deadline`, rounded up (a sleep never ends
 * before it), at least 0; at most INT_MAX, what a latch wait takes (a
 * longer wait sleeps again).
 */
static long
ms_until(TimestampTz deadline)
{
	TimestampTz now = GetCurrentTimestamp();

	if (now >= deadline)
		return 0;
	return (long) Min((deadline - now + 999) / 1000, (TimestampTz) INT_MAX);
}

/*
 * Wait for the pipeline's worker (one just created or started may not have
 * it yet) and take a checkpoint ticket from it: its slot, with *generation
 * (which worker took the ticket) and *ticket.  Waits on WeirShmem's
 * pipelines_cv, broadcast whenever a worker claims or leaves a slot, until
 * the deadline.
 */
static WeirPipelineSlot *
wait_for_worker(WeirPipelineRow *row, const char *name, TimestampTz deadline,
				uint64 *generation, int64 *ticket)
{
	ConditionVariable *cv = &weir_shmem()->pipelines_cv;
	WeirPipelineSlot *slot;

	/* before looking: a claim after the look wakes the sleep below */
	ConditionVariablePrepareToSleep(cv);
	for (;;)
	{
		long		ms;

		slot = weir_shmem_checkpoint_ticket(row->id, generation, ticket);
		if (slot != NULL || !row->enabled)
			break;
		ms = ms_until(deadline);
		if (ms <= 0)
			break;
		(void) ConditionVariableTimedSleep(cv, ms, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" is not running", name),
				 errhint("Start it with weir.start(), and see weir.pipelines for its status.")));
	return slot;
}

/*
 * Wait until the worker of `generation` served `ticket`: true, with the
 * checkpoint's id; false if that worker left its slot first.  Waits on the
 * slot's checkpoint_cv, broadcast at each checkpoint and when the worker
 * leaves, until the deadline.
 */
static bool
ticket_served(WeirPipelineSlot *slot, uint64 generation, int64 ticket, TimestampTz deadline,
			  const char *name, int64 *checkpoint_id)
{
	bool		served_it = false;

	/* before looking: a broadcast after the look wakes the sleep below */
	ConditionVariablePrepareToSleep(&slot->checkpoint_cv);
	for (;;)
	{
		int64		served;
		uint64		now_generation;
		long		ms;

		SpinLockAcquire(&slot->mutex);
		served = slot->checkpoint_served;
		*checkpoint_id = slot->checkpoint_id;
		now_generation = slot->generation;
		SpinLockRelease(&slot->mutex);
		/* served by that worker, even if it has left since */
		if (weir_shmem_counters_of(now_generation, generation) && served >= ticket)
		{
			served_it = true;
			break;
		}
		if (now_generation != generation)
			break;
		ms = ms_until(deadline);
		if (ms <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("pipeline \"%s\" took no checkpoint within the timeout", name),
					 errhint("See lag_rows in weir.pipelines; pass a longer timeout.")));
		(void) ConditionVariableTimedSleep(&slot->checkpoint_cv, ms, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return served_it;
}

/*
 * Wait until the pipeline has processed every row committed before this
 * call and committed a checkpoint covering them; returns its id.  The
 * request is a ticket: the worker serves the tickets it saw at the start
 * of a round in which it caught up with its sources.
 */
static int64
checkpoint_one(WeirPipelineRow *row, const char *name, TimestampTz deadline)
{
	int64		checkpoint_id = 0;

	for (;;)
	{
		uint64		generation;
		int64		ticket;
		WeirPipelineSlot *slot = wait_for_worker(row, name, deadline, &generation, &ticket);

		if (ticket_served(slot, generation, ticket, deadline, name, &checkpoint_id))
			break;

		/*
		 * The worker that took the ticket is gone.  If the pipeline is still
		 * meant to run and did not fail, that worker was one a stop just
		 * before a start (or a restart) retired: its successor serves a new
		 * ticket, which covers the same rows and more.
		 */
		if (!weir_catalog_pipeline_by_id(row->id, row) || !row->enabled ||
			row->status == WEIR_PIPELINE_FAILED || row->status == WEIR_PIPELINE_OUT_OF_MEMORY)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("pipeline \"%s\" stopped before its checkpoint", name),
					 errhint("See status and last_error in weir.pipelines.")));
	}
	return checkpoint_id;
}

static TimestampTz
deadline_arg(FunctionCallInfo fcinfo, int argno)
{
	weir_require_arg(fcinfo, argno, "timeout");
	return GetCurrentTimestamp() +
		weir_interval_usecs(PG_GETARG_INTERVAL_P(argno), "timeout");
}

/* weir.checkpoint(pipeline text, timeout interval) RETURNS bigint */
PG_FUNCTION_INFO_V1(weir_checkpoint);
Datum
weir_checkpoint(PG_FUNCTION_ARGS)
{
	char	   *name;
	WeirPipelineRow row;
	TimestampTz deadline;

	/* a standby runs no worker; its checkpoints come by replication */
	PreventCommandDuringRecovery("weir.checkpoint()");
	weir_require_arg(fcinfo, 0, "pipeline");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	deadline = deadline_arg(fcinfo, 1);
	row = weir_pipeline_for_owner(name);
	PG_RETURN_INT64(checkpoint_one(&row, name, deadline));
}

/*
 * weir.checkpoint(pipelines text[] DEFAULT NULL, timeout interval)
 *	 RETURNS TABLE (pipeline text, checkpoint_id bigint)
 *
 * Wait until everything committed before the call has gone through every
 * pipeline (or the ones named, and the chains that feed them) to its
 * sinks: a checkpoint of each, upstream first, each one's ticket taken
 * after the checkpoints of the pipelines that write its sources have
 * committed, so it covers what they wrote for rows committed before the
 * call (and the watermark they published with it).  Without names, the
 * running pipelines the caller owns (a superuser: all); with names, those
 * and every running pipeline upstream of them, which the caller must own
 * too.  A stopped pipeline named is an error.  Returns each pipeline with
 * its checkpoint, in the order taken.
 */
PG_FUNCTION_INFO_V1(weir_checkpoint_chain);
Datum
weir_checkpoint_chain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *names = PG_ARGISNULL(0) ? NULL : PG_GETARG_ARRAYTYPE_P(0);
	TimestampTz deadline = deadline_arg(fcinfo, 1);
	List	   *order;
	ListCell   *lc;

	PreventCommandDuringRecovery("weir.checkpoint()");
	InitMaterializedSRF(fcinfo, 0);
	if (names != NULL)
	{
		Datum	   *elems;
		bool	   *elem_nulls;
		int			n;

		deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, &elem_nulls, &n);
		for (int i = 0; i < n; i++)
		{
			if (elem_nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("pipelines must not contain NULL")));
			(void) weir_pipeline_for_owner(TextDatumGetCString(elems[i]));
		}
	}
	order = weir_catalog_checkpoint_order(names);
	foreach(lc, order)
	{
		char	   *name = lfirst(lc);
		WeirPipelineRow row;
		Datum		values[2];
		bool		nulls[2] = {false, false};

		if (!weir_catalog_pipeline_by_name(name, &row))
			continue;			/* dropped meanwhile */
		if (!has_privs_of_role(GetUserId(), row.owner))
		{
			/* others' pipelines are their owners' to checkpoint */
			if (names == NULL)
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be owner of pipeline \"%s\", upstream of the pipelines named", name),
					 errhint("Its owner can checkpoint it; weir.checkpoint() without names passes over the pipelines of other roles.")));
		}

		values[0] = CStringGetTextDatum(name);
		values[1] = Int64GetDatum(checkpoint_one(&row, name, deadline));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
