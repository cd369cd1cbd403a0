/*-------------------------------------------------------------------------
 *
 * remote_sink_define.c
 *	  A remote sink's definition (sink => weir.remote_table(...)), checked
 *	  against the remote server at creation; its drop, which resolves its
 *	  prepared transactions there first; weir.abandon_remote_sink; what
 *	  weir.remote_sinks shows.
 *
 * At creation the remote table must have every sink column, of the same
 * type (by schema and name), and no other column it cannot fill; a
 * pipeline with a key needs a unique index on exactly its key columns
 * there (upserts match on it); two-phase needs max_prepared_transactions
 * above 0; idempotent needs a pipeline whose rows are a function of its
 * input, keyed (tumbling and hopping windows, last value, a projection
 * into a table with a unique key), and the fence table, which it creates.
 *
 * The connection string may hold a password: the creating statement holds
 * it too, so no error of that statement shows it in the server log
 * (emit_log_hook: hide_stmt), and it is stored where only weir reads it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/remote_sink_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_writer.h"
#include "definition/pipeline_plan.h"
#include "definition/write_target.h"
#include "sink/sink_remote.h"

/* Set while a statement that holds a connection string runs */
static bool statement_has_secret = false;
static bool callback_registered = false;
static emit_log_hook_type prev_emit_log_hook = NULL;

static void
hide_statement_hook(ErrorData *edata)
{
	if (statement_has_secret)
		edata->hide_stmt = true;
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

static void
forget_secret(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		statement_has_secret = false;
}

/* From _PG_init: errors of statements that hold a secret do not log them */
void
weir_remote_sink_install_hooks(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = hide_statement_hook;
}

static void
statement_holds_secret(void)
{
	if (!callback_registered)
	{
		RegisterXactCallback(forget_secret, NULL);
		callback_registered = true;
	}
	statement_has_secret = true;
}

/* Whether a sink argument names a remote table (weir.remote_table()) */
bool
weir_remote_sink_named(const char *sink)
{
	if (sink == NULL || strncmp(sink, WEIR_REMOTE_SINK_TOKEN, strlen(WEIR_REMOTE_SINK_TOKEN)) != 0)
		return false;
	statement_holds_secret();
	return true;
}

static char *
json_field(Jsonb *jb, const char *key)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&jb->root, key, strlen(key), NULL);

	if (v == NULL || v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the sink argument is not what weir.remote_table() returns"),
				 errhint("Pass sink => weir.remote_table(conninfo, 'schema.table').")));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* One row of text values; NULL where the remote gave NULL */
static PGresult *
remote_query(PGconn *conn, const char *sql, int nparams, const char *const *values,
			 const char *what)
{
	return weir_remote_link_exec(conn, sql, nparams, values, what);
}

/* Whether sink column type `type` is the remote's type (its schema and name) */
static bool
same_type(Oid type, const char *nspname, const char *typname)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	bool		same;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	same = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tup))->typname), typname) == 0 &&
		strcmp(get_namespace_name(((Form_pg_type) GETSTRUCT(tup))->typnamespace), nspname) == 0;
	ReleaseSysCache(tup);
	return same;
}

static int
sink_column(WeirPlan *plan, const char *name)
{
	for (int i = 0; i < plan->nsinkcols; i++)
		if (strcmp(plan->sinkcols[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * Only results that are a function of the input, upserted by a key, come
 * out exact when checkpoints are written again after a crash (the header
 * of sink_remote.c): not a deduplication (which copy is kept depends on
 * how partitions interleave), not a join (rows without a key), not session
 * windows (a session's start, part of its key, depends on what merged).
 */
static void
check_idempotent_kind(WeirPipelineRow *row, WeirPlan *plan)
{
	const char *why = NULL;

	if (plan->op == WEIR_OP_DEDUP)
		why = "which copy of a key a deduplication keeps depends on how its partitions were read";
	else if (plan->op == WEIR_OP_JOIN)
		why = "a join's rows have no key to upsert them by";
	else if (plan->op == WEIR_OP_WINDOW && plan->windowing.kind == WEIR_WINDOW_SESSION)
		why = "a session's start, part of its row's key, depends on what merged into it";
	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("an idempotent remote sink cannot be exact for pipeline \"%s\"", row->name),
				 errdetail("After a crash its rows are written again, and %s.", why),
				 errhint("Use commit => 'two_phase' (the default) in weir.remote_table().")));
}

/* The remote table's unique keys, each as its columns' names */
static List *
remote_unique_keys(PGconn *conn, const char *const *names, const char *what)
{
	PGresult   *res = remote_query(conn,
								   "SELECT pg_catalog.array_to_string(pg_catalog.array_agg(a.attname ORDER BY a.attname), ',') "
								   "FROM pg_catalog.pg_index i "
								   "JOIN pg_catalog.pg_class c ON c.oid = i.indrelid "
								   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
								   "JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
								   "WHERE n.nspname = $1 AND c.relname = $2 AND i.indisunique AND i.indimmediate "
								   "AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indisvalid "
								   "GROUP BY i.indexrelid",
								   2, names, what);
	List	   *keys = NIL;

	for (int r = 0; r < PQntuples(res); r++)
		keys = lappend(keys, pstrdup(PQgetvalue(res, r, 0)));
	PQclear(res);
	return keys;
}

/* Under C collation the remote sorts names as strcmp does */
static int
list_sort_strcmp(const ListCell *a, const ListCell *b)
{
	return strcmp((char *) lfirst(a), (char *) lfirst(b));
}

/* The sink columns `cols` as the remote lists an index's: sorted, comma-separated */
static char *
sorted_names(WeirPlan *plan, const int *cols, int n)
{
	List	   *l = NIL;
	StringInfoData s;
	ListCell   *lc;

	for (int i = 0; i < n; i++)
		l = lappend(l, plan->sinkcols[cols[i]].name);
	list_sort(l, list_sort_strcmp);
	initStringInfo(&s);
	foreach(lc, l)
		appendStringInfo(&s, "%s%s", s.len > 0 ? "," : "", (char *) lfirst(lc));
	return s.data;
}


/*
 * The remote table's columns against the sink's: each sink column there,
 * of the same type; no other column that an insert could not fill.
 */
static void
check_remote_columns(PGconn *conn, WeirPlan *plan, const char *const *names,
					 const char *qualified, const char *what)
{
	PGresult   *res = remote_query(conn,
								   "SELECT a.attname, tn.nspname, t.typname, "
								   "a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = '' "
								   "FROM pg_catalog.pg_attribute a "
								   "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
								   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
								   "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
								   "JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace "
								   "WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') "
								   "AND a.attnum > 0 AND NOT a.attisdropped",
								   2, names, what);
	int			n = PQntuples(res);
	bool	   *found = palloc0(sizeof(bool) * plan->nsinkcols);

	if (n == 0)
	{
		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the remote server has no table %s", qualified),
				 errhint("Create it there first, for example: %s",
						 weir_sink_definition(plan, qualified))));
	}
	for (int r = 0; r < n; r++)
	{
		const char *name = PQgetvalue(res, r, 0);
		int			c = sink_column(plan, name);

		if (c < 0)
		{
			if (strcmp(PQgetvalue(res, r, 3), "t") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("column \"%s\" of remote table %s is NOT NULL without a default, and the pipeline does not write it",
								name, qualified),
						 errhint("Give it a default there, or drop its NOT NULL.")));
			continue;
		}
		if (!same_type(plan->sinkcols[c].type, PQgetvalue(res, r, 1), PQgetvalue(res, r, 2)))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of remote table %s is of type %s.%s, the pipeline writes %s",
							name, qualified, PQgetvalue(res, r, 1), PQgetvalue(res, r, 2),
							format_type_be(plan->sinkcols[c].type)),
					 errhint("Make the remote column's type the sink column's.")));
		found[c] = true;
	}
	PQclear(res);
	for (int c = 0; c < plan->nsinkcols; c++)
		if (!found[c])
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("remote table %s has no column \"%s\", which the pipeline writes",
							qualified, plan->sinkcols[c].name),
					 errhint("The table needs: %s", weir_sink_definition(plan, qualified))));
}

/*
 * What upserts and deletes match on: the pipeline's key, which a unique
 * index there must cover exactly; or, for an idempotent projection, the
 * columns of a unique index there that are all sink columns.
 */
static void
choose_key(PGconn *conn, WeirPlan *plan, WeirRemoteSinkRow *def, const char *const *names,
		   const char *qualified, const char *what)
{
	List	   *keys = remote_unique_keys(conn, names, what);
	int		   *cols = palloc(sizeof(int) * Max(plan->nsinkcols, 1));
	ListCell   *lc;

	if (plan->nsinkkey > 0)
	{
		char	   *want;

		for (int i = 0; i < plan->nsinkkey; i++)
			cols[i] = i;
		want = sorted_names(plan, cols, plan->nsinkkey);
		foreach(lc, keys)
			if (strcmp((char *) lfirst(lc), want) == 0)
				break;
		if (lc == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("remote table %s has no unique index on (%s), the pipeline's key", qualified, want),
					 errhint("Rows are upserted by their key: create one there, e.g. CREATE UNIQUE INDEX ON %s (%s).",
							 qualified, want)));
		def->nkey = plan->nsinkkey;
		def->key_columns = palloc(sizeof(char *) * def->nkey);
		for (int i = 0; i < def->nkey; i++)
			def->key_columns[i] = plan->sinkcols[i].name;
		return;
	}
	def->nkey = 0;
	def->key_columns = NULL;
	if (def->commit != WEIR_REMOTE_IDEMPOTENT)
		return;					/* rows without a key are inserted */
	foreach(lc, keys)
	{
		List	   *names_list;
		ListCell   *nc;
		bool		all = true;

		SplitIdentifierString(pstrdup(lfirst(lc)), ',', &names_list);
		foreach(nc, names_list)
			all &= sink_column(plan, lfirst(nc)) >= 0;
		if (!all)
			continue;
		def->nkey = list_length(names_list);
		def->key_columns = palloc(sizeof(char *) * def->nkey);
		foreach(nc, names_list)
			def->key_columns[foreach_current_index(nc)] = pstrdup(lfirst(nc));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
			 errmsg("an idempotent remote sink needs a unique index on some of the columns the pipeline writes"),
			 errdetail("Remote table %s has none: rows written again after a crash would be there twice.", qualified),
			 errhint("Create a unique index there on a column that identifies each row, or use commit => 'two_phase'.")));
}

/* Two-phase needs prepared transactions there */
static void
check_two_phase(PGconn *conn, const char *what)
{
	PGresult   *res = remote_query(conn, "SELECT pg_catalog.current_setting('max_prepared_transactions')::int",
								   0, NULL, what);
	bool		none = strcmp(PQgetvalue(res, 0, 0), "0") == 0;

	PQclear(res);
	if (none)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the remote server has max_prepared_transactions = 0"),
				 errdetail("A two-phase remote sink prepares a transaction there at each checkpoint."),
				 errhint("Set max_prepared_transactions above 0 there (it takes a restart), or use commit => 'idempotent' where it is exact.")));
}

/* Idempotent: the fence table beside the sink, made if missing */
static void
ensure_fence(PGconn *conn, const char *schema, const char *what)
{
	char	   *ddl = psprintf("CREATE TABLE IF NOT EXISTS %s.weir_sink_fence ("
							   "sink text PRIMARY KEY, checkpoint_id bigint NOT NULL, "
							   "applied_at timestamptz NOT NULL)", quote_identifier(schema));
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		weir_remote_link_command(conn, ddl, what);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("could not create the fence table of an idempotent remote sink: %s", edata->message),
				 errhint("Have it created there by a role that may: %s; and let the sink's role write it.", ddl)));
	}
	PG_END_TRY();
}

/*
 * A remote sink for the pipeline being created (`row`, whose plan is
 * `plan`), checked against the remote server.  Returns its catalog row,
 * to be recorded with weir_remote_sink_record once the pipeline has an id.
 */
WeirRemoteSinkRow *
weir_remote_sink_define(const char *sink, WeirPlan *plan, WeirPipelineRow *row)
{
	WeirRemoteSinkRow *def = palloc0(sizeof(WeirRemoteSinkRow));
	Jsonb	   *jb;
	char	   *commit;
	char	   *table;
	List	   *qualified;
	const char *names[2];
	char	   *what = psprintf("remote sink of pipeline \"%s\"", row->name);
	char	   *shown;
	PGconn	   *conn;

	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											CStringGetDatum(sink + strlen(WEIR_REMOTE_SINK_TOKEN))));
	def->conninfo = json_field(jb, "conninfo");
	table = json_field(jb, "table");
	commit = json_field(jb, "commit");
	if (strcmp(commit, "two_phase") == 0)
		def->commit = WEIR_REMOTE_TWO_PHASE;
	else if (strcmp(commit, "idempotent") == 0)
		def->commit = WEIR_REMOTE_IDEMPOTENT;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("commit must be 'two_phase' or 'idempotent', not '%s'", commit)));
	qualified = stringToQualifiedNameList(table);
	if (list_length(qualified) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("the remote table must be named with its schema: \"%s\"", table),
				 errhint("Write it as 'schema.table', for example 'public.%s'.",
						 strVal(llast(qualified)))));
	def->remote_schema = strVal(linitial(qualified));
	def->remote_table = strVal(lsecond(qualified));
	names[0] = def->remote_schema;
	names[1] = def->remote_table;
	shown = quote_qualified_identifier(def->remote_schema, def->remote_table);
	if (def->commit == WEIR_REMOTE_IDEMPOTENT)
		check_idempotent_kind(row, plan);

	conn = weir_remote_link_connect(def->conninfo, GetUserId(), what);
	PG_TRY();
	{
		if (def->commit == WEIR_REMOTE_TWO_PHASE)
			check_two_phase(conn, what);
		check_remote_columns(conn, plan, names, shown, what);
		choose_key(conn, plan, def, names, shown, what);
		if (def->commit == WEIR_REMOTE_IDEMPOTENT)
			ensure_fence(conn, def->remote_schema, what);
	}
	PG_FINALLY();
	{
		weir_remote_link_close(conn);
	}
	PG_END_TRY();
	return def;
}

/*
 * Record the remote sink of pipeline `id`: its transactions' prefix names
 * this server, database, pipeline and creation, so that no two pipelines
 * (here or on another server writing to the same remote) share one.
 */
void
weir_remote_sink_record(WeirRemoteSinkRow *def, int32 id)
{
	def->pipeline_id = id;
	def->owner = GetUserId();
	def->prefix = psprintf("weir_" UINT64_FORMAT "_%u_%d_" INT64_FORMAT "_",
						   GetSystemIdentifier(), MyDatabaseId, id,
						   (int64) GetCurrentTransactionStartTimestamp());
	weir_catalog_remote_sink_insert(def);
}

/*
 * Before pipeline `row` is dropped: its prepared transactions on the
 * remote resolved (a two-phase sink), which needs its worker gone.
 */
void
weir_remote_sink_drop(const WeirPipelineRow *row)
{
	WeirRemoteSinkRow def;
	WeirPipelineSlot *slot;
	char	   *what = psprintf("remote sink of pipeline \"%s\"", row->name);
	TimestampTz watermark;
	int64		last;
	PGconn	   *conn;
	MemoryContext cxt = CurrentMemoryContext;

	if (!weir_catalog_remote_sink(row->id, &def) || def.abandoned ||
		def.commit != WEIR_REMOTE_TWO_PHASE)
		return;
	statement_holds_secret();
	slot = weir_shmem_pipeline(row->id, false);
	if (slot != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("pipeline \"%s\" is running", row->name),
				 errdetail("Its remote sink's prepared transactions are resolved when it is dropped, which needs its worker gone."),
				 errhint("Stop it with weir.stop('%s'), wait until weir.pipelines shows it stopped, then drop it.",
						 row->name)));
	/* a writer of its last worker may still be committing */
	weir_writer_wait_for_predecessor(row->id);
	last = weir_catalog_last_checkpoint(row->id, &watermark);
	PG_TRY();
	{
		conn = weir_remote_link_connect(def.conninfo, row->owner, what);
		(void) weir_remote_sink_resolve(conn, def.prefix, last, what);
		weir_remote_link_close(conn);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("could not resolve the prepared transactions of the %s: %s", what, edata->message),
				 errhint("If the remote server is gone for good, weir.abandon_remote_sink('%s') lets the pipeline be dropped and says what to do there should it come back.",
						 row->name)));
	}
	PG_END_TRY();
}

/*
 * weir.abandon_remote_sink(pipeline text) RETURNS text: give up on a
 * remote server that is gone, so that the pipeline can be dropped; the
 * text says which of its prepared transactions there commit and which
 * roll back, should it come back.  The owner's, a stopped pipeline's.
 */
PG_FUNCTION_INFO_V1(weir_abandon_remote_sink);
Datum
weir_abandon_remote_sink(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row;
	WeirRemoteSinkRow def;
	TimestampTz watermark;
	int64		last;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"pipeline\" must not be null")));
	row = weir_pipeline_for_owner(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	if (!weir_catalog_remote_sink(row.id, &def))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("pipeline \"%s\" has no remote sink", row.name)));
	if (weir_shmem_pipeline(row.id, false) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("pipeline \"%s\" is running", row.name),
				 errhint("Stop it with weir.stop('%s') first.", row.name)));
	weir_writer_wait_for_predecessor(row.id);
	last = weir_catalog_last_checkpoint(row.id, &watermark);
	weir_catalog_remote_sink_abandon(row.id);
	if (def.commit != WEIR_REMOTE_TWO_PHASE)
		PG_RETURN_TEXT_P(cstring_to_text("The remote sink is idempotent: it leaves no transaction behind."));
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("On the remote server, in its database of this sink: "
											  "COMMIT PREPARED each transaction of SELECT gid FROM pg_prepared_xacts WHERE gid LIKE '%s%%' "
											  "whose number after the prefix is at most " INT64_FORMAT ", "
											  "and ROLLBACK PREPARED the others.",
											  def.prefix, last)));
}

/*
 * weir._remote_sink_state(): per running pipeline of this database whose
 * remote sink has trouble committing or connecting, what it is.
 */
PG_FUNCTION_INFO_V1(weir_remote_sink_state);
Datum
weir_remote_sink_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WeirShmem  *sh = weir_shmem();

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(sh->lock, LW_SHARED);
	for (int i = 0; i < sh->npipelines; i++)
	{
		WeirPipelineSlot *p = &sh->pipelines[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		char		error[sizeof(p->remote_error)];
		int64		pending;
		int32		attempts;
		TimestampTz retry_at;
		int32		id;

		SpinLockAcquire(&p->mutex);
		id = p->pipeline_id;
		pending = p->remote_pending;
		attempts = p->remote_attempts;
		retry_at = p->remote_retry_at;
		memcpy(error, p->remote_error, sizeof(error));
		if (p->dboid != MyDatabaseId || attempts == 0)
		{
			SpinLockRelease(&p->mutex);
			continue;
		}
		SpinLockRelease(&p->mutex);
		values[0] = Int32GetDatum(id);
		values[1] = Int64GetDatum(pending);
		nulls[1] = pending == 0;
		values[2] = Int32GetDatum(attempts);
		values[3] = TimestampTzGetDatum(retry_at);
		values[4] = CStringGetTextDatum(error);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(sh->lock);
	return (Datum) 0;
}
