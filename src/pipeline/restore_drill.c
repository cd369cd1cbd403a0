/*-------------------------------------------------------------------------
 *
 * restore_drill.c
 *	  weir.restore_drill(pipeline): time a real restore of a pipeline's
 *	  latest checkpoint, made in the calling backend while the pipeline's
 *	  worker keeps running, and record it in weir.restores as a drill.
 *
 * The restore is the one weir.committed_state makes (state_scratch.c): the
 * chunks of the last checkpoint committed in the caller's snapshot, read
 * by the operator's own restore into a DSA area of this backend, limited by
 * the pipeline's max_state_memory; so it reads and rebuilds what a starting
 * worker would, but without the worker's other start-up work (its slot,
 * positions, counters).  The worker is neither stopped nor locked out: the
 * drill shares only the catalog with it, under MVCC.
 *
 * Who may drill: members of the pipeline's owner (42501 otherwise), as for
 * weir.alter_pipeline.  The restore runs as the owner (act_as.c:
 * restricted, search_path pg_catalog, pg_temp), since it may run the
 * owner's aggregate functions; the chunks are read and the row written as
 * weir's catalog owner (catalog_sql/), as a worker does.
 *
 * A drill longer than the pipeline's recovery_target raises a WARNING to
 * the caller; weir.pipelines flags it from the row (weir._recovery_status).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/restore_drill.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/act_as.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog_restores.h"
#include "definition/aggregate.h"
#include "definition/pipeline_plan.h"
#include "pipeline/state_scratch.h"

/*
 * The restore itself, timed: in a memory context of its own, deleted with
 * whatever the operator's restore kept in this process (generic aggregate
 * states), as weir.committed_state does.
 */
static double
timed_restore(WeirPipelineRow *row, WeirPlan *plan, WeirScratchState *scratch)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "weir restore drill",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext before = weir_agg_generic_parent_swap(cxt);
	MemoryContext caller = MemoryContextSwitchTo(cxt);
	TimestampTz started = GetCurrentTimestamp();
	double		ms;

	PG_TRY();
	{
		weir_state_restore_scratch(row, plan, scratch);
	}
	PG_FINALLY();
	{
		(void) weir_agg_generic_parent_swap(before);
		MemoryContextSwitchTo(caller);
	}
	PG_END_TRY();
	ms = (double) (GetCurrentTimestamp() - started) / 1000.0;
	dsa_detach(scratch->area);
	MemoryContextDelete(cxt);
	return ms;
}

/*
 * weir.restore_drill(pipeline text) RETURNS weir.restores
 */
PG_FUNCTION_INFO_V1(weir_restore_drill);
Datum
weir_restore_drill(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	WeirPipelineRow row;
	WeirScratchState scratch;
	WeirRestoreRecord rec;
	WeirActAs	as;
	WeirPlan   *plan;
	TupleDesc	desc;
	double		ms;

	/* it records its timings in weir.restores: fail before the work */
	PreventCommandDuringRecovery("weir.restore_drill()");
	row = weir_pipeline_for_owner(name);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "weir.restore_drill must return a row");
	weir_act_as_begin(&as, row.owner);
	plan = weir_pipeline_plan(&row);
	ms = timed_restore(&row, plan, &scratch);
	weir_act_as_end(&as);
	if (scratch.checkpoint_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no checkpoint to restore", name),
				 errhint("Start it with weir.start and take one with weir.checkpoint.")));
	weir_catalog_insert_restore(row.id, scratch.checkpoint_id, true, ms, scratch.bytes,
								scratch.entries, &rec);
	if (rec.target_ms >= 0 && ms > rec.target_ms)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("restore drill of pipeline \"%s\" took %.1f ms, over its recovery target of %g ms",
						name, ms, rec.target_ms),
				 errdetail("It restored checkpoint " INT64_FORMAT ": " INT64_FORMAT " bytes, " INT64_FORMAT " entries.",
						   scratch.checkpoint_id, scratch.bytes, scratch.entries),
				 errhint("See recovery_projection in weir.pipelines; a smaller state (a ttl, a horizon) restores faster.")));
	PG_RETURN_DATUM(heap_copy_tuple_as_datum(rec.tuple, BlessTupleDesc(desc)));
}
