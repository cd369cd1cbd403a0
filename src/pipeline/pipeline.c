/*-------------------------------------------------------------------------
 *
 * pipeline.c
 *	  SQL functions that define and control pipelines: weir.create_pipeline,
 *	  weir.start, weir.stop, weir.drop_pipeline, weir.checkpoint, the window
 *	  constructors and the function behind weir.pipelines.
 *
 * Definitions are validated completely at creation (definition.c) and the
 * sink is created or checked then, in the caller's transaction: a rolled
 * back create_pipeline leaves nothing behind.  Starting, stopping and
 * dropping only change the catalog; the launcher is woken when that commits
 * and starts or stops the worker.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/pipeline.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "base/act_as.h"
#include "base/clock.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog_pipeline.h"
#include "catalog_sql/catalog_restores.h"
#include "catalog_sql/catalog_remote_sink.h"
#include "definition/definition.h"
#include "definition/definition_parse.h"
#include "definition/definition_store.h"
#include "definition/pipeline_plan.h"
#include "definition/definition_restored.h"
#include "definition/write_target.h"
#include "sink/sink_remote.h"
#include "state/window.h"

static WeirPlan *plan_from_text(WeirPipelineRow *row, WeirDefinition **def);

/* --- window constructors ------------------------------------------------ */

/*
 * A weir.windowing value: (kind, size, slide, gap, merge_touching).  What a
 * kind does not use is null: merge_touching is set for sessions only.
 */
static Datum
make_windowing(FunctionCallInfo fcinfo, const char *kind, Interval *size,
			   Interval *slide, Interval *gap, bool merge_touching)
{
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5] = {false, !size, !slide, !gap, !gap};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(kind);
	values[1] = size ? IntervalPGetDatum(size) : (Datum) 0;
	values[2] = slide ? IntervalPGetDatum(slide) : (Datum) 0;
	values[3] = gap ? IntervalPGetDatum(gap) : (Datum) 0;
	values[4] = BoolGetDatum(merge_touching);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

PG_FUNCTION_INFO_V1(weir_tumbling);
Datum
weir_tumbling(PG_FUNCTION_ARGS)
{
	Interval   *size;

	weir_require_arg(fcinfo, 0, "size");
	size = PG_GETARG_INTERVAL_P(0);
	weir_duration_usecs(size, "window size", false);
	return make_windowing(fcinfo, "tumbling", size, size, NULL, false);
}

PG_FUNCTION_INFO_V1(weir_hopping);
Datum
weir_hopping(PG_FUNCTION_ARGS)
{
	Interval   *size;
	Interval   *slide;
	int64		size_us;
	int64		slide_us;

	weir_require_arg(fcinfo, 0, "size");
	weir_require_arg(fcinfo, 1, "slide");
	size = PG_GETARG_INTERVAL_P(0);
	slide = PG_GETARG_INTERVAL_P(1);
	size_us = weir_duration_usecs(size, "window size", false);
	slide_us = weir_duration_usecs(slide, "window slide", false);
	if (slide_us > size_us)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window slide must not be longer than the window size"),
				 errhint("For windows that do not overlap, use weir.tumbling().")));
	if ((size_us + slide_us - 1) / slide_us > WEIR_MAX_HOPS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a record would fall into more than %d hopping windows", WEIR_MAX_HOPS),
				 errhint("Use a longer slide.")));
	return make_windowing(fcinfo, "hopping", size, slide, NULL, false);
}

/* weir.session(gap, merge_touching): a null merge_touching is its default, false */
PG_FUNCTION_INFO_V1(weir_session);
Datum
weir_session(PG_FUNCTION_ARGS)
{
	Interval   *gap;
	bool		merge_touching;

	weir_require_arg(fcinfo, 0, "gap");
	gap = PG_GETARG_INTERVAL_P(0);
	weir_duration_usecs(gap, "session gap", false);
	merge_touching = PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	return make_windowing(fcinfo, "session", NULL, NULL, gap, merge_touching);
}

/* --- creating ------------------------------------------------------------- */

/*
 * Text argument `name`; NULL if null (or the function has no such
 * parameter), which is an error if `required`.
 */
static char *
text_arg(const WeirSqlArgs *args, const char *name, bool required)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	int			i = weir_sql_arg(args, name, !required);

	if (i < 0 || PG_ARGISNULL(i))
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not be null", name)));
		return NULL;
	}
	return text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/*
 * Interval argument `name`, checked as a duration (positive, or with
 * allow_zero at least zero); NULL if null or not a parameter.
 */
static Interval *
interval_arg(const WeirSqlArgs *args, const char *name, bool allow_zero)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	int			i = weir_sql_arg(args, name, true);
	Interval   *v;

	if (i < 0 || PG_ARGISNULL(i))
		return NULL;
	v = PG_GETARG_INTERVAL_P(i);
	(void) weir_duration_usecs(v, name, allow_zero);
	return v;
}

static Oid
relation_if_exists(const char *name, RangeVar **rv)
{
	*rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	return RangeVarGetRelid(*rv, NoLock, true);
}

/*
 * Name, source and their checks: the first two parameters of every kind,
 * the only ones callers may give by position.  The source parameter is
 * `source_arg` ("source", a join's "left_source").
 */
static void
begin_create(const WeirSqlArgs *args, const char *source_arg, WeirPipelineRow *row)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	int			source = weir_sql_arg(args, source_arg, false);
	WeirPipelineRow existing;

	/* a remote sink's connection string: no error of this statement logs it */
	(void) weir_remote_sink_named(text_arg(args, "sink", false));
	(void) weir_shmem();
	/* only the launcher of weir.database starts workers */
	if (weir_database == NULL || strcmp(get_database_name(MyDatabaseId), weir_database) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipelines run only in database \"%s\"", weir_database ? weir_database : ""),
				 errdetail("This is database \"%s\".", get_database_name(MyDatabaseId)),
				 errhint("Create the pipeline in database \"%s\", or set weir.database and restart the server.",
						 weir_database ? weir_database : "")));
	memset(row, 0, sizeof(*row));
	row->refresh_horizon = true;	/* dedup's default; others do not use it */
	row->name = text_arg(args, "name", true);
	if (PG_ARGISNULL(source))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", source_arg)));
	row->source = PG_GETARG_OID(source);
	if (row->name[0] == '\0' || strlen(row->name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline name must be 1 to %d bytes long", NAMEDATALEN - 1),
				 errdetail("The name is %d bytes long.", (int) strlen(row->name)),
				 errhint("The name is also the name of its definition, a view: PostgreSQL's limit on names applies.")));
	if (weir_catalog_pipeline_by_name(row->name, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pipeline \"%s\" already exists", row->name),
				 errhint("Drop it with weir.drop_pipeline(), or choose another name.")));

	weir_check_source(row->source, GetUserId());
}

/*
 * The options every kind shares (those a kind does not declare take their
 * defaults), the sink (created with the right columns, or checked), the
 * late-records table, and the catalog row.
 */
static int32
finish_create(const WeirSqlArgs *args, WeirPipelineRow *row, WeirDefinition *def,
			  WeirPlan *plan)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	char	   *sink_name;
	char	   *late_name;
	Oid			sink;
	WeirRemoteSinkRow *remote = NULL;
	RangeVar   *rv;
	Interval   *iv;
	int64		checkpoint_us;
	int			i;

	/* NULL out_of_orderness means none */
	iv = interval_arg(args, "out_of_orderness", true);
	if (iv)
		row->out_of_orderness = *iv;
	iv = interval_arg(args, "idle_timeout", false);
	row->has_idle_timeout = iv != NULL;
	if (iv)
		row->idle_timeout = *iv;
	iv = interval_arg(args, "checkpoint_interval", false);
	if (iv == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"checkpoint_interval\" must not be null")));
	checkpoint_us = weir_interval_usecs(iv, "checkpoint_interval");
	if (checkpoint_us < 10 * 1000 || checkpoint_us > USECS_PER_HOUR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint_interval must be between 10 milliseconds and 1 hour")));
	row->checkpoint_interval = *iv;
	i = weir_sql_arg(args, "max_state_memory", true);
	row->max_state_memory = i < 0 || PG_ARGISNULL(i) ?
		(int64) weir_default_max_state_memory * 1024 : PG_GETARG_INT64(i);
	if (row->max_state_memory < 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_state_memory must be at least 1MB (1048576 bytes)")));
	i = weir_sql_arg(args, "start", false);
	row->enabled = PG_ARGISNULL(i) ? true : PG_GETARG_BOOL(i);
	row->owner = GetUserId();

	sink_name = text_arg(args, "sink", false);
	if (sink_name == NULL)
		sink_name = row->name;
	row->checkpoint_column = text_arg(args, "checkpoint_column", false);
	if (row->checkpoint_column)
		weir_check_checkpoint_column_name(plan, row->checkpoint_column);
	if (weir_remote_sink_named(sink_name))
	{
		if (row->checkpoint_column)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a remote sink cannot have a checkpoint_column"),
					 errdetail("weir.sink_changes reads the sink table in this database."),
					 errhint("Readers of a remote table read it on its server; leave checkpoint_column out.")));
		/* a table of another server: no sink table here */
		remote = weir_remote_sink_define(sink_name, plan, row);
		row->sink = InvalidOid;
	}
	else
	{
		sink = relation_if_exists(sink_name, &rv);
		if (!OidIsValid(sink))
		{
			const char *qualified = quote_qualified_identifier(rv->schemaname, rv->relname);

			weir_catalog_run_ddl(weir_sink_definition(plan, qualified));
			/*
			 * A sink weir creates gets the checkpoint column and an index on
			 * it: readers (weir.sink_changes) look rows up by it.  An
			 * existing sink is the user's to index (README).
			 */
			if (row->checkpoint_column)
			{
				weir_catalog_run_ddl(psprintf("ALTER TABLE %s ADD COLUMN %s bigint NOT NULL",
											  qualified,
											  quote_identifier(row->checkpoint_column)));
				weir_catalog_run_ddl(psprintf("CREATE INDEX ON %s (%s)", qualified,
											  quote_identifier(row->checkpoint_column)));
			}
			sink = RangeVarGetRelid(rv, NoLock, false);
		}
		row->sink = sink;
		weir_check_sink(plan, row, sink, row->owner);
	}

	late_name = text_arg(args, "late_records", false);
	if (late_name)
	{
		Oid			late = relation_if_exists(late_name, &rv);

		if (!OidIsValid(late))
		{
			weir_catalog_run_ddl(weir_late_records_definition(row,
															  quote_qualified_identifier(rv->schemaname,
																						 rv->relname)));
			late = RangeVarGetRelid(rv, NoLock, false);
		}
		row->late_records = late;
		weir_check_late_records(row, late, row->owner);
	}

	/* bound: the definition is a view from now on (definition_store.c) */
	row->definition = weir_definition_store(def, row->name, row->owner);
	weir_depend_on_tables(row->definition, plan, row);
	row->names = def->names;
	row->nkeys = def->nkeys;
	row->id = weir_catalog_pipeline_insert(row);
	if (remote)
		weir_remote_sink_record(remote, row->id);
	if (row->enabled)
		weir_shmem_wake_launcher_at_commit();
	return row->id;
}

/*
 * weir.create_pipeline: a window aggregate, per key, or without key (NULL)
 * over all records in one group per window.  Its parameters, and every
 * kind's, are in weir--0.1.sql; they are read here by name.
 */
PG_FUNCTION_INFO_V1(weir_create_pipeline);
Datum
weir_create_pipeline(PG_FUNCTION_ARGS)
{
	WeirSqlArgs args;
	WeirPipelineRow row;
	WeirWindowing windowing;
	WeirPlan   *plan;
	WeirDefinition *def;
	Interval   *iv;
	int			i;

	weir_sql_args_init(&args, fcinfo);
	begin_create(&args, "source", &row);
	row.operator = "window";
	row.key = text_arg(&args, "key", false);
	row.event_time = text_arg(&args, "event_time", true);
	i = weir_sql_arg(&args, "windowing", false);
	if (PG_ARGISNULL(i))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"windowing\" must not be null"),
				 errhint("Pass weir.tumbling(size), weir.hopping(size, slide) or weir.session(gap).")));
	row.windowing = PG_GETARG_DATUM(i);
	row.aggregates = text_arg(&args, "aggregates", true);
	row.filter = text_arg(&args, "filter", false);
	i = weir_sql_arg(&args, "insert_only", false);
	row.insert_only = !PG_ARGISNULL(i) && PG_GETARG_BOOL(i);
	weir_definition_windowing(row.windowing, &windowing);
	plan = plan_from_text(&row, &def);

	iv = interval_arg(&args, "allowed_lateness", true);
	if (iv)
		row.allowed_lateness = *iv;
	row.emit = text_arg(&args, "emit", false);
	if (row.emit == NULL)
		row.emit = "final";
	if (strcmp(row.emit, "final") != 0 && strcmp(row.emit, "updates") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("emit must be 'final' or 'updates', not '%s'", row.emit)));
	PG_RETURN_INT32(finish_create(&args, &row, def, plan));
}

/* weir.create_dedup's parameters that were renamed */
static const WeirRenamedArg dedup_renamed[] = {
	{"id", "key",
	"Call weir.create_dedup(..., key => ...): key means the same in every weir.create_* function."},
};

/*
 * weir.create_dedup and weir.create_last_value take the same arguments: a
 * key, its retention (horizon, ttl), columns and filter; dedup also
 * refresh_horizon.
 */
static int32
create_keyed(FunctionCallInfo fcinfo, bool dedup)
{
	const char *retention_arg = dedup ? "horizon" : "ttl";
	WeirSqlArgs args;
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirDefinition *def;
	Interval   *retention;

	weir_sql_args_init(&args, fcinfo);
	if (dedup)
		weir_sql_args_refuse_renamed(&args, dedup_renamed, lengthof(dedup_renamed));
	begin_create(&args, "source", &row);
	row.operator = dedup ? "dedup" : "last_value";
	row.key = text_arg(&args, "key", false);
	if (row.key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"key\" must not be null"),
				 errdetail(dedup ? "A deduplication compares records by their key." :
						   "A last value keeps the newest row of each key."),
				 errhint("Pass key => the expressions that identify a record, for example key => 'order_id'.")));
	row.event_time = text_arg(&args, "event_time", true);
	retention = interval_arg(&args, retention_arg, false);
	if (dedup)
	{
		row.has_horizon = retention != NULL;
		if (retention)
			row.horizon = *retention;
		/* null: the default */
		{
			int			r = weir_sql_arg(&args, "refresh_horizon", false);

			row.refresh_horizon = PG_ARGISNULL(r) || PG_GETARG_BOOL(r);
		}
		if (!row.refresh_horizon && retention == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("refresh_horizon false needs a horizon"),
					 errdetail("Without a horizon every key is kept forever and every later copy is dropped, so there is no horizon to refresh or not."),
					 errhint("Give a horizon, or leave refresh_horizon at its default, true.")));
	}
	else
	{
		row.has_ttl = retention != NULL;
		if (retention)
			row.ttl = *retention;
	}
	row.columns = text_arg(&args, "columns", false);
	row.filter = text_arg(&args, "filter", false);
	row.emit = dedup ? "final" : "updates";
	plan = plan_from_text(&row, &def);
	return finish_create(&args, &row, def, plan);
}

PG_FUNCTION_INFO_V1(weir_create_dedup);
Datum
weir_create_dedup(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(create_keyed(fcinfo, true));
}

PG_FUNCTION_INFO_V1(weir_create_last_value);
Datum
weir_create_last_value(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(create_keyed(fcinfo, false));
}

/* weir.create_projection: a stateless stage. */
PG_FUNCTION_INFO_V1(weir_create_projection);
Datum
weir_create_projection(PG_FUNCTION_ARGS)
{
	WeirSqlArgs args;
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirDefinition *def;

	weir_sql_args_init(&args, fcinfo);
	begin_create(&args, "source", &row);
	row.operator = "projection";
	row.columns = text_arg(&args, "columns", false);
	row.filter = text_arg(&args, "filter", false);
	row.emit = "final";
	plan = plan_from_text(&row, &def);
	PG_RETURN_INT32(finish_create(&args, &row, def, plan));
}

/* weir.create_join's parameters that were renamed */
static const WeirRenamedArg join_renamed[] = {
	{"left_time", "left_event_time",
	"Call weir.create_join(..., left_event_time => ...): event_time means the same in every weir.create_* function."},
	{"right_time", "right_event_time",
	"Call weir.create_join(..., right_event_time => ...): event_time means the same in every weir.create_* function."},
	{"lower", "right_after",
	"A right row r matches a left row l when r.t BETWEEN l.t - right_before AND l.t + right_after: call weir.create_join(..., right_after => <lower>, right_before => <upper>)."},
	{"upper", "right_before",
	"A right row r matches a left row l when r.t BETWEEN l.t - right_before AND l.t + right_after: call weir.create_join(..., right_before => <upper>, right_after => <lower>)."},
};

/*
 * A bound of the join window (right_before, right_after) into *bound: a
 * duration, at least zero, so that the window always holds l.t; NULL
 * means zero.
 */
static void
join_bound(const WeirSqlArgs *args, const char *name, Interval *bound)
{
	FunctionCallInfo fcinfo = args->fcinfo;
	int			i = weir_sql_arg(args, name, false);

	if (PG_ARGISNULL(i))
		return;
	*bound = *PG_GETARG_INTERVAL_P(i);
	if (weir_interval_usecs(bound, name) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a non-negative interval", name),
				 errdetail("A right row r matches a left row l when r.t BETWEEN l.t - right_before AND l.t + right_after, a window that holds l.t."),
				 errhint("For right rows at or after the left row only, pass right_before => '0'; at or before it only, right_after => '0'.")));
}

/* weir.create_join: an interval join of two topics. */
PG_FUNCTION_INFO_V1(weir_create_join);
Datum
weir_create_join(PG_FUNCTION_ARGS)
{
	WeirSqlArgs args;
	WeirPipelineRow row;
	WeirPlan   *plan;
	WeirDefinition *def;
	int			i;

	weir_sql_args_init(&args, fcinfo);
	weir_sql_args_refuse_renamed(&args, join_renamed, lengthof(join_renamed));
	begin_create(&args, "left_source", &row);
	row.operator = "join";
	i = weir_sql_arg(&args, "right_source", false);
	if (PG_ARGISNULL(i))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"right_source\" must not be null")));
	row.right_source = PG_GETARG_OID(i);
	weir_check_source(row.right_source, GetUserId());
	if (row.right_source == row.source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a join needs two different topics"),
				 errhint("To join a topic with itself, copy it into a second topic with weir.create_projection().")));
	row.key = text_arg(&args, "left_key", true);
	row.right_key = text_arg(&args, "right_key", true);
	row.event_time = text_arg(&args, "left_event_time", true);
	row.right_event_time = text_arg(&args, "right_event_time", true);
	join_bound(&args, "right_before", &row.right_before);
	join_bound(&args, "right_after", &row.right_after);
	row.join_kind = text_arg(&args, "kind", false);
	if (row.join_kind == NULL)
		row.join_kind = "inner";
	if (strcmp(row.join_kind, "inner") != 0 && strcmp(row.join_kind, "left") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be 'inner' or 'left', not '%s'", row.join_kind)));
	row.columns = text_arg(&args, "columns", false);
	/* each over its own topic; weir.pipeline.filter holds the left's */
	row.filter = text_arg(&args, "left_filter", false);
	row.right_filter = text_arg(&args, "right_filter", false);
	row.emit = "final";
	plan = plan_from_text(&row, &def);
	PG_RETURN_INT32(finish_create(&args, &row, def, plan));
}

/* At creation: the definition's text parsed and bound, and its plan. */
static WeirPlan *
plan_from_text(WeirPipelineRow *row, WeirDefinition **def)
{
	WeirDefinitionText text;
	WeirPlanOptions options;

	memset(&text, 0, sizeof(text));
	text.op = weir_pipeline_operator(row);
	text.source = row->source;
	text.right_source = row->right_source;
	text.key = row->key;
	text.right_key = row->right_key;
	text.event_time = row->event_time;
	text.right_event_time = row->right_event_time;
	text.aggregates = row->aggregates;
	text.columns = row->columns;
	text.filter = row->filter;
	text.right_filter = row->right_filter;
	text.insert_only = row->insert_only;
	*def = weir_definition_parse(&text);
	weir_pipeline_plan_options(row, &options);
	return weir_definition_plan(*def, &options);
}

/* --- controlling -------------------------------------------------------- */

/* The pipeline name every management function takes first. */
static char *
pipeline_arg(FunctionCallInfo fcinfo)
{
	weir_require_arg(fcinfo, 0, "pipeline");
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

PG_FUNCTION_INFO_V1(weir_start);
Datum
weir_start(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row = weir_pipeline_for_owner(pipeline_arg(fcinfo));
	WeirActAs	as;
	WeirPlan   *plan;

	/*
	 * What the worker checks first, checked here too, as the owner: a
	 * pipeline that cannot run says why now, with its SQLSTATE, rather
	 * than in last_error a moment later.
	 */
	weir_act_as_begin(&as, row.owner);
	plan = weir_pipeline_plan(&row);
	weir_check_tables(plan, &row, row.owner);
	weir_definition_depend_again(plan, &row);
	weir_act_as_end(&as);

	weir_catalog_pipeline_set_enabled(row.id, true);
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(weir_stop);
Datum
weir_stop(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row = weir_pipeline_for_owner(pipeline_arg(fcinfo));

	weir_catalog_pipeline_set_enabled(row.id, false);
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(weir_drop_pipeline);
Datum
weir_drop_pipeline(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row = weir_pipeline_for_owner(pipeline_arg(fcinfo));

	/* a remote sink's prepared transactions there are resolved first */
	if (!OidIsValid(row.sink))
		weir_remote_sink_drop(&row);
	weir_catalog_pipeline_delete(row.id);
	/* resolved above: the launcher has nothing left to do for it */
	if (!OidIsValid(row.sink))
		weir_catalog_remote_sink_resolved(row.id);
	weir_definition_drop(row.definition);
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

/*
 * weir._forget_definition(view oid), called by the sql_drop event trigger
 * for every dropped view of schema weir_pipelines: a definition goes with
 * what it depends on (DROP ... CASCADE) or with its owner's objects (DROP
 * OWNED), and its pipeline with it; the launcher stops the worker.
 */
PG_FUNCTION_INFO_V1(weir_forget_definition);
Datum
weir_forget_definition(PG_FUNCTION_ARGS)
{
	if (weir_catalog_pipeline_delete_by_definition(PG_GETARG_OID(0)))
		weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

/*
 * weir.alter_pipeline(pipeline text, max_state_memory bigint,
 *					   checkpoint_interval interval, recovery_target interval)
 *
 * Change a pipeline's limits; NULL leaves a setting as it is.  A running
 * worker picks the change up when it is restarted: stop and start it.  The
 * recovery target applies at once (it is read when a restore or drill is
 * recorded, and by weir.pipelines); 0 removes it.
 */
PG_FUNCTION_INFO_V1(weir_alter_pipeline);
Datum
weir_alter_pipeline(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row;
	int64		max_state_memory = -1;
	Interval   *checkpoint_interval = NULL;

	row = weir_pipeline_for_owner(pipeline_arg(fcinfo));
	if (!PG_ARGISNULL(1))
	{
		max_state_memory = PG_GETARG_INT64(1);
		if (max_state_memory < 1024 * 1024)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_state_memory must be at least 1MB (1048576 bytes)")));
	}
	if (!PG_ARGISNULL(2))
	{
		int64		us;

		checkpoint_interval = PG_GETARG_INTERVAL_P(2);
		us = weir_interval_usecs(checkpoint_interval, "checkpoint_interval");
		if (us < 10 * 1000 || us > USECS_PER_HOUR)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("checkpoint_interval must be between 10 milliseconds and 1 hour")));
	}
	if (!PG_ARGISNULL(3) &&
		weir_interval_usecs(PG_GETARG_INTERVAL_P(3), "recovery_target") < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("recovery_target must not be negative"),
				 errhint("Give 0 to remove the recovery target.")));
	weir_catalog_pipeline_alter(row.id, max_state_memory, checkpoint_interval);
	if (!PG_ARGISNULL(3))
		weir_catalog_pipeline_set_recovery_target(row.id, PG_GETARG_INTERVAL_P(3));
	PG_RETURN_VOID();
}

#define PIPELINE_STATE_COLS 16

/* a partition silent this long while holding the watermark back is named */
#define WATERMARK_STALL_USECS (10 * USECS_PER_SEC)

PG_FUNCTION_INFO_V1(weir_pipeline_state);
Datum
weir_pipeline_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WeirShmem  *sh = weir_shmem();

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *p = &sh->pipelines[i];
		Datum		values[PIPELINE_STATE_COLS];
		bool		nulls[PIPELINE_STATE_COLS];
		int32		id;
		int			pid;
		int			writer_pid;
		int			reader_pid;
		TimestampTz watermark;
		int64		checkpoint_id;
		TimestampTz checkpoint_at;
		int64		windows;
		int64		state_bytes;
		int64		lag;
		int32		holder;
		Oid			holder_source;
		TimestampTz holder_data_at;
		bool		holder_has_time;
		bool		holder_chained;
		TimestampTz holder_moved_at;
		TimestampTz latest_data_at;
		bool		has_idle_timeout;
		bool		counters_restored;

		SpinLockAcquire(&p->mutex);
		id = p->dboid == MyDatabaseId ? p->pipeline_id : 0;
		pid = p->pid;
		writer_pid = p->writer_pid;
		reader_pid = p->reader_pid;
		watermark = p->watermark;
		checkpoint_id = p->checkpoint_id;
		checkpoint_at = p->checkpoint_at;
		windows = p->windows;
		state_bytes = p->state_bytes;
		lag = p->lag_rows;
		holder = p->watermark_holder;
		holder_source = p->holder_source;
		holder_data_at = p->holder_data_at;
		holder_has_time = p->holder_has_time;
		holder_chained = p->holder_chained;
		holder_moved_at = p->holder_moved_at;
		latest_data_at = p->latest_data_at;
		has_idle_timeout = p->has_idle_timeout;
		counters_restored = p->counters_restored;
		SpinLockRelease(&p->mutex);
		if (id == 0 || pid == 0)
			continue;

		memset(nulls, 0, sizeof(nulls));
		values[0] = Int32GetDatum(id);
		values[1] = Int32GetDatum(pid);
		values[2] = TimestampTzGetDatum(watermark);
		nulls[2] = TIMESTAMP_NOT_FINITE(watermark);
		values[3] = Int64GetDatum(checkpoint_id);
		nulls[3] = checkpoint_id == 0;
		values[4] = TimestampTzGetDatum(checkpoint_at);
		nulls[4] = checkpoint_id == 0;
		values[5] = Int64GetDatum(windows);
		values[6] = Int64GetDatum(state_bytes);
		values[7] = Int64GetDatum(lag);
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&p->records_in));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&p->records_out));
		values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&p->records_late));
		values[11] = Int64GetDatum((int64) (pg_atomic_read_u64(&p->records_dead) +
											pg_atomic_read_u64(&p->dead_at_write)));
		values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&p->records_dropped));
		/* not yet restored: weir.pipelines shows the committed counters */
		for (int c = 8; c <= 12; c++)
			nulls[c] = !counters_restored;
		values[14] = Int32GetDatum(writer_pid);
		nulls[14] = writer_pid == 0;
		values[15] = Int32GetDatum(reader_pid);
		nulls[15] = reader_pid == 0;
		nulls[13] = true;
		/*
		 * Say plainly why state that waits for the watermark stays: a
		 * partition has been silent for a while, others had data after it,
		 * and it holds the watermark back.
		 */
		if (holder >= 0 && holder_chained)
		{
			/*
			 * A topic that pipelines write: its time is theirs, and a
			 * stopped or lagging writer holds this pipeline while records
			 * arrive (topic_watermark.c).
			 */
			if (latest_data_at > holder_moved_at &&
				weir_clock_now() - holder_moved_at > WATERMARK_STALL_USECS)
			{
				char	   *topic = get_rel_name(holder_source);

				values[13] = CStringGetTextDatum(psprintf("watermark stalled: the pipelines writing %s have not moved their watermark for its partition %d since %s while records arrive (see weir.topic_watermark); a stopped or lagging upstream pipeline holds this one, and state waiting for the watermark stays, and grows while records arrive",
														  topic ? quote_identifier(topic) : "?",
														  holder, timestamptz_to_str(holder_moved_at)));
				nulls[13] = false;
			}
		}
		else if (holder >= 0 && latest_data_at > holder_data_at &&
				 weir_clock_now() - holder_data_at > WATERMARK_STALL_USECS)
		{
			char	   *topic = get_rel_name(holder_source);

			values[13] = CStringGetTextDatum(psprintf("watermark stalled: partition %d of %s has had no data since %s while others have, and %s (%s); state waiting for the watermark stays, and grows while records arrive",
													  holder, topic ? quote_identifier(topic) : "?",
													  timestamptz_to_str(holder_data_at),
													  holder_has_time ? "holds it back" :
													  "has shown no event time yet",
													  has_idle_timeout ? "idle_timeout not reached yet" :
													  "no idle_timeout"));
			nulls[13] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
