/*-------------------------------------------------------------------------
 *
 * pipeline_plan.c
 *	  A pipeline's catalog row as the processes that run it, and readers
 *	  of its state, need it: its operator kind, its plan (from the
 *	  definition stored at creation), acting as its owner, and the owner's
 *	  check of the management functions.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/pipeline_plan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition_store.h"
#include "definition/pipeline_plan.h"

/*
 * From here on, this background process acts as the pipeline's owner, in a
 * security-restricted operation with search_path pg_catalog, pg_temp:
 * expressions (bound at creation) run, and sinks are written, with the
 * owner's rights, and nothing on a search_path the owner or anyone else
 * controls is looked up by name (inlined SQL functions are parsed then).
 * Catalog writes switch to weir's owner (catalog.c).  For the worker, its
 * read-ahead process and its checkpoint writer alike.
 */
void
weir_pipeline_act_as_owner(WeirPipelineRow *row)
{
	SetUserIdAndSecContext(row->owner,
						   SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
}

WeirOperatorKind
weir_pipeline_operator(WeirPipelineRow *row)
{
	if (strcmp(row->operator, "join") == 0)
		return WEIR_OP_JOIN;
	if (strcmp(row->operator, "projection") == 0)
		return WEIR_OP_PROJECTION;
	if (strcmp(row->operator, "last_value") == 0)
		return WEIR_OP_LAST_VALUE;
	if (strcmp(row->operator, "dedup") == 0)
		return WEIR_OP_DEDUP;
	if (strcmp(row->operator, "window") == 0)
		return WEIR_OP_WINDOW;
	elog(ERROR, "unrecognized pipeline operator \"%s\"", row->operator);
	return WEIR_OP_WINDOW;		/* keep compiler quiet */
}

/* What a plan takes from the catalog row besides the definition. */
void
weir_pipeline_plan_options(WeirPipelineRow *row, WeirPlanOptions *o)
{
	memset(o, 0, sizeof(*o));
	if (weir_pipeline_operator(row) == WEIR_OP_WINDOW)
		weir_definition_windowing(row->windowing, &o->windowing);
	if (row->has_horizon)
		o->retention = weir_interval_usecs(&row->horizon, "horizon");
	o->refresh_horizon = row->refresh_horizon;
	o->insert_only = row->insert_only;
	if (row->has_ttl)
		o->retention = weir_interval_usecs(&row->ttl, "ttl");
	if (row->join_kind)
	{
		o->right_before = weir_interval_usecs(&row->right_before, "right_before");
		o->right_after = weir_interval_usecs(&row->right_after, "right_after");
		o->left_outer = strcmp(row->join_kind, "left") == 0;
	}
}

/*
 * The plan of a catalog row, from its stored definition (every process
 * that runs a pipeline, and readers of its state).  Needs a transaction.
 */
WeirPlan *
weir_pipeline_plan(WeirPipelineRow *row)
{
	WeirPlanOptions options;
	WeirDefinition *def;

	def = weir_definition_load(row->definition, weir_pipeline_operator(row), row->nkeys,
							   row->names, row->source, row->right_source);
	weir_pipeline_plan_options(row, &options);
	return weir_definition_plan(def, &options);
}

/* The catalog row of pipeline `name`, which the current user must own (or be a member of its owner). */
WeirPipelineRow
weir_pipeline_for_owner(const char *name)
{
	WeirPipelineRow row;

	if (!weir_catalog_pipeline_by_name(name, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", name),
				 errhint("See weir.pipelines for the pipelines of this database.")));
	if (!has_privs_of_role(GetUserId(), row.owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of pipeline \"%s\"", name)));
	return row;
}

