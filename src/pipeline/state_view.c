/*-------------------------------------------------------------------------
 *
 * state_view.c
 *	  weir.live_state(): the state of a running pipeline, read from its
 *	  worker's DSA area by another backend; weir.committed_state(): the
 *	  state of its last checkpoint, restored here from its chunks.  One row
 *	  shape for every operator (operator/state_view.h says what each
 *	  shows).
 *
 * Who may read.  The state is what the sink's rows are made of, so those
 * who may read the whole sink may read it: a caller with SELECT on the
 * sink table, which row level security does not filter for the caller; and
 * members of the pipeline's owner (superusers among them).  A join's
 * readers of the sink must also read both its topics (its state holds rows
 * the sink never shows).  A remote sink has no table here: only the
 * owner's members read its state.  What is
 * evaluated to show the state (key output functions, aggregate final
 * functions, deserialisation) runs as the pipeline's owner, restricted,
 * with search_path pg_catalog, pg_temp (act_as.c), whoever calls.
 *
 * Live state.  The reader attaches to the area whose handle the pipeline
 * slot publishes (once its worker has restored its checkpoint: until then,
 * and when no worker runs, no rows), holds the slot's lock shared (the
 * worker holds it exclusively while it applies records, fires windows or
 * collects a checkpoint, and lets readers in between records), copies the
 * entries as raw bytes, releases the lock, detaches, and only then decodes.
 * What it returns is consistent as of a point between two records; it may
 * be ahead of the last checkpoint.  State held in the worker's own memory
 * (generic aggregates) comes from an image the worker writes when asked,
 * between batches (state_image.c).
 *
 * Committed state.  The chunks and the watermark of the last checkpoint,
 * read under one snapshot, are restored into a store of this backend's own
 * (a DSA area made for the call, as large as the pipeline's
 * max_state_memory allows) by the operator's own restore, as a worker
 * starting now would (state_scratch.c, shared with weir.restore_drill),
 * then read as live state is.  So it is the state that
 * the sink's rows and the source positions of that checkpoint go with.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rls.h"

#include "base/act_as.h"
#include "base/shmem.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/aggregate.h"
#include "definition/pipeline_plan.h"
#include "operator/operator.h"
#include "operator/state_view.h"
#include "pipeline/state_image.h"
#include "pipeline/state_scratch.h"

/*
 * A join's state is both sides' buffered rows, most of which never reach
 * the sink (rows without a partner, in an inner join): a reader of the sink
 * who is not a member of the owner must also be able to read every row of
 * both topics.
 */
static void
check_may_read_join_sides(WeirPipelineRow *row, Oid user, const char *sink)
{
	Oid			sides[2] = {row->source, row->right_source};

	for (int i = 0; i < 2; i++)
	{
		char	   *topic;

		if (pg_class_aclcheck(sides[i], user, ACL_SELECT) == ACLCHECK_OK &&
			check_enable_rls(sides[i], InvalidOid, true) != RLS_ENABLED)
			continue;
		topic = quote_qualified_identifier(get_namespace_name(get_rel_namespace(sides[i])),
										   get_rel_name(sides[i]));
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the state of pipeline \"%s\"", row->name),
				 errdetail("The state of a join holds rows of both its topics that its sink %s may never show: its readers must also read every row of topic %s.",
						   sink, topic),
				 errhint("Ask for SELECT on %s (with no row level security applying to you), or for membership in role \"%s\".",
						 topic, GetUserNameFromId(row->owner, false))));
	}
}

/*
 * Whether the caller may read the pipeline's state: a member of its owner,
 * or (a sink table) one who may read every row of the sink.
 */
static void
check_may_read(WeirPipelineRow *row)
{
	Oid			user = GetUserId();
	char	   *sink;

	if (has_privs_of_role(user, row->owner))
		return;
	if (!OidIsValid(row->sink))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the state of pipeline \"%s\"", row->name),
				 errdetail("Its sink is remote: only members of its owner may read its state."),
				 errhint("Ask for membership in role \"%s\".",
						 GetUserNameFromId(row->owner, false))));
	sink = quote_qualified_identifier(get_namespace_name(get_rel_namespace(row->sink)),
									  get_rel_name(row->sink));
	if (pg_class_aclcheck(row->sink, user, ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(row->sink, InvalidOid, true) != RLS_ENABLED)
	{
		if (OidIsValid(row->right_source))
			check_may_read_join_sides(row, user, sink);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to read the state of pipeline \"%s\"", row->name),
			 errdetail("The state of a pipeline may be read by those who may read every row of its sink %s, and by members of its owner.",
					   sink),
			 errhint("Ask for SELECT on %s (with no row level security applying to you), or for membership in role \"%s\".",
					 sink, GetUserNameFromId(row->owner, false))));
}

/*
 * The plan of a pipeline the caller may read the state of, built as its
 * owner, who the caller acts as on return (act_as.c; pair with
 * weir_act_as_end): a superuser or a reader of the sink reading a user's
 * pipeline runs nothing of the user's with their own rights.
 */
static WeirPlan *
readable_pipeline_plan(const char *name, WeirPipelineRow *row, WeirActAs *as)
{
	if (!weir_catalog_pipeline_by_name(name, row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", name),
				 errhint("See weir.pipelines for the pipelines of this database.")));
	check_may_read(row);
	weir_act_as_begin(as, row->owner);
	return weir_pipeline_plan(row);
}

/*
 * The running worker's entries into buf, and the watermark it published;
 * false if no worker has published its store (not running, or restoring).
 */
static bool
read_live(WeirPipelineRow *row, WeirPlan *plan, const WeirStateView *view, StringInfo buf,
		  TimestampTz *watermark)
{
	WeirPipelineSlot *slot = weir_shmem_pipeline(row->id, false);
	bool		in_process = view->state_in_process && view->state_in_process(plan);
	bool		found = false;
	char	   *image;
	Size		len;

	if (slot == NULL)
		return false;
	/* from inside the pipeline's own worker (a user function) */
	if (LWLockHeldByMe(&slot->lock))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the live state of pipeline \"%s\" cannot be read from inside its own worker",
						row->name)));
	weir_shmem_pipeline_lock_shared(slot);
	/* the slot may have changed hands since it was looked up */
	if (slot->area != DSM_HANDLE_INVALID && DsaPointerIsValid(slot->root) &&
		weir_shmem_pipeline_is(slot, row->id))
	{
		dsa_area   *area = dsa_attach(slot->area);
		WeirStoreRoot *root = dsa_get_address(area, slot->root);

		SpinLockAcquire(&slot->mutex);
		*watermark = slot->watermark;
		SpinLockRelease(&slot->mutex);
		/* the store is the one the plan describes (a pipeline may be replaced) */
		found = root->state_size == weir_operator_entry_state(plan);
		if (found && !in_process)
			weir_state_copy_store(view, area, root, buf);
		LWLockRelease(&slot->lock);
		dsa_detach(area);
	}
	else
		LWLockRelease(&slot->lock);
	if (!found || !in_process)
		return found;

	image = weir_state_image_request(slot, row->id, row->name, &len);
	if (image == NULL)
		return false;			/* the worker left meanwhile */
	appendBinaryStringInfo(buf, image, len);
	return true;
}

/*
 * The entries of the last checkpoint into buf, with its watermark: its
 * chunks restored into a store of this backend's own by the operator's
 * restore, then copied as live state is.  In the caller's transaction,
 * under its active snapshot.
 */
static void
read_committed(WeirPipelineRow *row, WeirPlan *plan, const WeirStateView *view,
			   StringInfo buf, TimestampTz *watermark)
{
	WeirScratchState scratch;

	weir_state_restore_scratch(row, plan, &scratch);
	*watermark = scratch.watermark;
	if (view->state_in_process && view->state_in_process(plan))
	{
		if (!view->image(scratch.store, plan, buf))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the committed state of pipeline \"%s\" is too large to show", row->name),
					 errdetail("A state view copies the whole state into one buffer of at most 1 GB."),
					 errhint("Use weir.pipelines and weir.checkpoints for its size and counts.")));
	}
	else
		weir_state_copy_store(view, scratch.area, scratch.store->root, buf);
	dsa_detach(scratch.area);
}

/* weir.live_state and weir.committed_state: one set of rows */
static void
state_rows(FunctionCallInfo fcinfo, bool live)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	WeirPipelineRow row;
	WeirPlan   *plan;
	const WeirStateView *view;
	WeirActAs	as;

	weir_require_arg(fcinfo, 0, "pipeline");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);
	plan = readable_pipeline_plan(name, &row, &as);
	/* a projection keeps no state */
	view = weir_operator_state_view(plan);
	if (view != NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "weir state view",
												  ALLOCSET_DEFAULT_SIZES);
		MemoryContext before = weir_agg_generic_parent_swap(cxt);

		/* generic states decoded here live in cxt, whatever happens */
		PG_TRY();
		{
			StringInfoData buf;
			TimestampTz watermark = DT_NOBEGIN;
			bool		found = true;

			initStringInfo(&buf);
			if (live)
				found = read_live(&row, plan, view, &buf, &watermark);
			else
				read_committed(&row, plan, view, &buf, &watermark);
			if (found)
			{
				WeirStateOut out;
				WeirStateCopy *copies;
				int64		n;

				copies = weir_state_copies(buf.data, buf.len, &n);
				out.rsinfo = rsinfo;
				out.operator = row.operator;
				out.plan = plan;
				out.lateness = weir_interval_usecs(&row.allowed_lateness, "allowed_lateness");
				out.watermark = watermark;
				out.keyvals = palloc(sizeof(Datum) * Max(plan->nkeys, 1));
				view->put(&out, copies, n);
			}
		}
		PG_FINALLY();
		{
			(void) weir_agg_generic_parent_swap(before);
		}
		PG_END_TRY();
		MemoryContextDelete(cxt);
	}
	weir_act_as_end(&as);
}

/*
 * weir.live_state(pipeline text, OUT operator text, OUT key text, OUT
 *		window_start timestamptz, OUT window_end timestamptz, OUT fired
 *		boolean, OUT event_time timestamptz, OUT expires_at timestamptz, OUT
 *		value jsonb) RETURNS SETOF record
 */
PG_FUNCTION_INFO_V1(weir_live_state);
Datum
weir_live_state(PG_FUNCTION_ARGS)
{
	state_rows(fcinfo, true);
	return (Datum) 0;
}

/* weir.committed_state(pipeline text, ...): as weir.live_state */
PG_FUNCTION_INFO_V1(weir_committed_state);
Datum
weir_committed_state(PG_FUNCTION_ARGS)
{
	state_rows(fcinfo, false);
	return (Datum) 0;
}
