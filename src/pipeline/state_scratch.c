/*-------------------------------------------------------------------------
 *
 * state_scratch.c
 *	  Restore the last checkpoint of a pipeline into a store of the calling
 *	  backend's own, by the operator's own restore, as a worker starting now
 *	  would: the path of weir.committed_state (state_view.c) and of
 *	  weir.restore_drill (restore_drill.c).
 *
 * The chunks and the watermark of the last checkpoint are read under the
 * caller's snapshot, so the state is the one that the sink's rows and the
 * source positions of that checkpoint go with, whatever the worker commits
 * meanwhile.  The store lives in a DSA area made for the call and limited
 * as the worker's area is (the pipeline's max_state_memory, and the
 * store's own slack): a checkpoint larger than that is refused (53400),
 * never allowed to exhaust this backend.  The worker's slot and area are
 * not touched.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_scratch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/atomics.h"

#include "base/shmem.h"
#include "base/sql_args.h"
#include "operator/operator.h"
#include "pipeline/state_scratch.h"

/*
 * Restore the last checkpoint of the pipeline `row` (whose plan is `plan`)
 * into *scratch.  In the caller's transaction and snapshot, as whoever the
 * caller acts as (the pipeline's owner: the restore may run its aggregates'
 * deserialisation).  Memory in CurrentMemoryContext and in the area, which
 * the caller detaches.  Can ereport: 53400 when the checkpoint does not fit
 * in max_state_memory.
 */
void
weir_state_restore_scratch(WeirPipelineRow *row, WeirPlan *plan, WeirScratchState *scratch)
{
	dsa_area   *area = dsa_create(weir_shmem()->state_tranche);
	pg_atomic_uint64 records_dead;
	WeirOperatorEnv env;
	WeirOperator *op;
	bool		owes_rows;

	scratch->area = area;
	scratch->checkpoint_id = weir_catalog_last_checkpoint_in_snapshot(row->id,
																	  &scratch->watermark);
	/* as the worker's area (worker.c setup) */
	dsa_set_size_limit(area, row->max_state_memory + row->max_state_memory / 4 + 4 * 1024 * 1024);
	pg_atomic_init_u64(&records_dead, 0);
	memset(&env, 0, sizeof(env));
	env.name = row->name;
	env.plan = plan;
	env.store = weir_store_create(area, row->max_state_memory,
								  weir_operator_entry_state(plan),
								  weir_operator_entry_end(plan), CurrentMemoryContext);
	env.sink = row->sink;
	env.records_dead = &records_dead;
	env.lateness = weir_interval_usecs(&row->allowed_lateness, "allowed_lateness");
	env.emit_updates = strcmp(row->emit, "updates") == 0;
	env.cxt = CurrentMemoryContext;
	op = weir_operator_create(&env);
	scratch->entries = op->ops->restore(op, row->id, scratch->watermark, &scratch->bytes,
										&owes_rows);
	if (env.store->out_of_memory)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("checkpoint of pipeline \"%s\" does not fit in its max_state_memory",
						row->name)));
	scratch->store = env.store;
}
