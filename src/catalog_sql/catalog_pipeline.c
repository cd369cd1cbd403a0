/*-------------------------------------------------------------------------
 *
 * catalog_pipeline.c
 *	  SQL on the pipeline catalog (weir.pipeline, weir.pipeline_position,
 *	  weir.checkpoints, weir.restores, weir.dead_letters) and on sinks.
 *
 * As in catalog.c, catalog statements run as the owner of the weir schema
 * with a pinned search_path.  Checkpoint statements take whole arrays and
 * unnest them, so a checkpoint is a fixed handful of statements whatever the
 * number of rows.  Sink statements run as the current user: the worker sets
 * it to the pipeline's owner before writing.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_pipeline.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"

/* the owner is the owner of the definition (definition_store.c) */
#define PIPELINE_COLUMNS \
	"id, name, coalesce((SELECT c.relowner FROM pg_catalog.pg_class c " \
	"WHERE c.oid = definition), 0), source, key, event_time, windowing, aggregates, filter, " \
	"out_of_orderness, allowed_lateness, idle_timeout, emit, sink, late_records, " \
	"checkpoint_interval, max_state_memory, definition, enabled, created_at, " \
	"operator, horizon, columns, ttl, right_source, right_key, right_event_time, " \
	"right_before, right_after, join_kind, status, names, nkeys, refresh_horizon, right_filter, " \
	"insert_only, checkpoint_column"

/* weir.pipeline.status, in WeirPipelineStatus order */
static const char *const status_names[] = {
	"stopped", "starting", "running", "failed", "out_of_memory"
};

StaticAssertDecl(lengthof(status_names) == WEIR_PIPELINE_OUT_OF_MEMORY + 1,
				 "status_names must match WeirPipelineStatus");

/* The text weir.pipeline.status holds for `status`. */
const char *
weir_pipeline_status_name(WeirPipelineStatus status)
{
	if ((int) status < 0 || (int) status >= (int) lengthof(status_names))
		elog(ERROR, "unrecognized pipeline status: %d", (int) status);
	return status_names[status];
}

WeirPipelineStatus
weir_pipeline_status_from_name(const char *name)
{
	for (int i = 0; i < (int) lengthof(status_names); i++)
		if (strcmp(name, status_names[i]) == 0)
			return (WeirPipelineStatus) i;
	elog(ERROR, "unrecognized pipeline status: \"%s\"", name);
	return WEIR_PIPELINE_STOPPED;	/* keep the compiler quiet */
}

/* Whether the table in catalog_pipeline.h allows `from` -> `to`. */
bool
weir_pipeline_status_allowed(WeirPipelineStatus from, WeirPipelineStatus to)
{
	switch (to)
	{
		case WEIR_PIPELINE_STARTING:	/* weir.start */
		case WEIR_PIPELINE_STOPPED: /* weir.stop */
			return true;
		case WEIR_PIPELINE_RUNNING:
		case WEIR_PIPELINE_FAILED:
			return from == WEIR_PIPELINE_STARTING || from == WEIR_PIPELINE_RUNNING ||
				from == WEIR_PIPELINE_FAILED;
		case WEIR_PIPELINE_OUT_OF_MEMORY:
			return from == WEIR_PIPELINE_STARTING || from == WEIR_PIPELINE_RUNNING;
	}
	return false;
}

static char *
get_text(int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

static Datum
get_datum(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

static void
fill_pipeline_row(WeirPipelineRow *row, MemoryContext cxt)
{
	bool		isnull;
	Datum		d;
	MemoryContext oldcxt;

	row->id = DatumGetInt32(get_datum(1, &isnull));
	row->name = get_text(2, cxt);
	row->owner = DatumGetObjectId(get_datum(3, &isnull));
	row->source = DatumGetObjectId(get_datum(4, &isnull));
	row->key = get_text(5, cxt);
	row->event_time = get_text(6, cxt);
	d = get_datum(7, &isnull);
	oldcxt = MemoryContextSwitchTo(cxt);
	row->windowing = isnull ? (Datum) 0 : datumCopy(d, false, -1);
	MemoryContextSwitchTo(oldcxt);
	row->aggregates = get_text(8, cxt);
	row->filter = get_text(9, cxt);
	row->out_of_orderness = *DatumGetIntervalP(get_datum(10, &isnull));
	row->allowed_lateness = *DatumGetIntervalP(get_datum(11, &isnull));
	d = get_datum(12, &isnull);
	row->has_idle_timeout = !isnull;
	if (!isnull)
		row->idle_timeout = *DatumGetIntervalP(d);
	row->emit = get_text(13, cxt);
	row->sink = DatumGetObjectId(get_datum(14, &isnull));
	d = get_datum(15, &isnull);
	row->late_records = isnull ? InvalidOid : DatumGetObjectId(d);
	row->checkpoint_interval = *DatumGetIntervalP(get_datum(16, &isnull));
	row->max_state_memory = DatumGetInt64(get_datum(17, &isnull));
	row->definition = DatumGetObjectId(get_datum(18, &isnull));
	row->enabled = DatumGetBool(get_datum(19, &isnull));
	row->created_at = DatumGetTimestampTz(get_datum(20, &isnull));
	row->operator = get_text(21, cxt);
	d = get_datum(22, &isnull);
	row->has_horizon = !isnull;
	if (!isnull)
		row->horizon = *DatumGetIntervalP(d);
	row->columns = get_text(23, cxt);
	d = get_datum(24, &isnull);
	row->has_ttl = !isnull;
	if (!isnull)
		row->ttl = *DatumGetIntervalP(d);
	d = get_datum(25, &isnull);
	row->right_source = isnull ? InvalidOid : DatumGetObjectId(d);
	row->right_key = get_text(26, cxt);
	row->right_event_time = get_text(27, cxt);
	d = get_datum(28, &isnull);
	if (!isnull)
		row->right_before = *DatumGetIntervalP(d);
	d = get_datum(29, &isnull);
	if (!isnull)
		row->right_after = *DatumGetIntervalP(d);
	row->join_kind = get_text(30, cxt);
	row->status = weir_pipeline_status_from_name(get_text(31, cxt));
	row->names = NIL;
	d = get_datum(32, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *elemnulls;
		int			nelems;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &elemnulls, &nelems);
		oldcxt = MemoryContextSwitchTo(cxt);
		for (int i = 0; i < nelems; i++)
			row->names = lappend(row->names,
								 makeString(elemnulls[i] ? pstrdup("") : TextDatumGetCString(elems[i])));
		MemoryContextSwitchTo(oldcxt);
	}
	row->nkeys = DatumGetInt32(get_datum(33, &isnull));
	d = get_datum(34, &isnull);
	row->refresh_horizon = isnull || DatumGetBool(d);	/* null: not a dedup */
	row->right_filter = get_text(35, cxt);
	row->insert_only = DatumGetBool(get_datum(36, &isnull));
	row->checkpoint_column = get_text(37, cxt);
}

static bool
pipeline_where(const char *where, Oid type, Datum value, WeirPipelineRow *row)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	char	   *sql = psprintf("SELECT " PIPELINE_COLUMNS " FROM weir.pipeline WHERE %s", where);
	bool		found;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec(sql, 1, &type, &value, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
		fill_pipeline_row(row, cxt);
	weir_catalog_privileged_end(&p);
	return found;
}

bool
weir_catalog_pipeline_by_name(const char *name, WeirPipelineRow *row)
{
	return pipeline_where("name = $1", TEXTOID, CStringGetTextDatum(name), row);
}

bool
weir_catalog_pipeline_by_id(int32 id, WeirPipelineRow *row)
{
	return pipeline_where("id = $1", INT4OID, Int32GetDatum(id), row);
}

int32
weir_catalog_pipeline_insert(WeirPipelineRow *row)
{
	WeirCatalogPrivilege p;
	Oid			types[34] = {TEXTOID, OIDOID, OIDOID, TEXTOID, TEXTOID, InvalidOid,
		TEXTOID, TEXTOID, INTERVALOID, INTERVALOID, INTERVALOID, TEXTOID, OIDOID,
		OIDOID, INTERVALOID, INT8OID, TEXTARRAYOID, BOOLOID, TEXTOID, INTERVALOID, TEXTOID,
		INTERVALOID, OIDOID, TEXTOID, TEXTOID, INTERVALOID, INTERVALOID, TEXTOID, INT4OID, TEXTOID,
	BOOLOID, TEXTOID, BOOLOID, TEXTOID};
	Datum		values[34];
	char		nulls[34];
	Datum	   *names = palloc(sizeof(Datum) * Max(list_length(row->names), 1));
	ListCell   *lc;
	int			n = 0;
	bool		isnull;
	int32		id;

	memset(nulls, ' ', sizeof(nulls));
	foreach(lc, row->names)
		names[n++] = CStringGetTextDatum(strVal(lfirst(lc)));
	values[0] = CStringGetTextDatum(row->name);
	values[1] = ObjectIdGetDatum(row->definition);
	values[2] = ObjectIdGetDatum(row->source);
	if (row->key)
		values[3] = CStringGetTextDatum(row->key);
	else
		nulls[3] = 'n';
	if (row->event_time)
		values[4] = CStringGetTextDatum(row->event_time);
	else
		nulls[4] = 'n';
	values[5] = row->windowing;
	if (row->windowing == (Datum) 0)
		nulls[5] = 'n';
	if (row->aggregates)
		values[6] = CStringGetTextDatum(row->aggregates);
	else
		nulls[6] = 'n';
	if (row->filter)
		values[7] = CStringGetTextDatum(row->filter);
	else
		nulls[7] = 'n';
	values[8] = IntervalPGetDatum(&row->out_of_orderness);
	values[9] = IntervalPGetDatum(&row->allowed_lateness);
	if (row->has_idle_timeout)
		values[10] = IntervalPGetDatum(&row->idle_timeout);
	else
		nulls[10] = 'n';
	values[11] = CStringGetTextDatum(row->emit);
	values[12] = ObjectIdGetDatum(row->sink);
	if (OidIsValid(row->late_records))
		values[13] = ObjectIdGetDatum(row->late_records);
	else
		nulls[13] = 'n';
	values[14] = IntervalPGetDatum(&row->checkpoint_interval);
	values[15] = Int64GetDatum(row->max_state_memory);
	values[16] = PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
	values[17] = BoolGetDatum(row->enabled);
	values[18] = CStringGetTextDatum(row->operator);
	if (row->has_horizon)
		values[19] = IntervalPGetDatum(&row->horizon);
	else
		nulls[19] = 'n';
	if (row->columns)
		values[20] = CStringGetTextDatum(row->columns);
	else
		nulls[20] = 'n';
	if (row->has_ttl)
		values[21] = IntervalPGetDatum(&row->ttl);
	else
		nulls[21] = 'n';
	if (row->join_kind)
	{
		values[22] = ObjectIdGetDatum(row->right_source);
		values[23] = CStringGetTextDatum(row->right_key);
		values[24] = CStringGetTextDatum(row->right_event_time);
		values[25] = IntervalPGetDatum(&row->right_before);
		values[26] = IntervalPGetDatum(&row->right_after);
		values[27] = CStringGetTextDatum(row->join_kind);
	}
	else
		memset(nulls + 22, 'n', 6);
	values[28] = Int32GetDatum(row->nkeys);
	values[29] = CStringGetTextDatum(weir_pipeline_status_name(row->enabled ?
															   WEIR_PIPELINE_STARTING :
															   WEIR_PIPELINE_STOPPED));
	/* dedup's only: null for the other kinds */
	values[30] = BoolGetDatum(row->refresh_horizon);
	if (strcmp(row->operator, "dedup") != 0)
		nulls[30] = 'n';
	if (row->right_filter)
		values[31] = CStringGetTextDatum(row->right_filter);
	else
		nulls[31] = 'n';
	values[32] = BoolGetDatum(row->insert_only);
	if (row->checkpoint_column)
		values[33] = CStringGetTextDatum(row->checkpoint_column);
	else
		nulls[33] = 'n';

	weir_catalog_privileged_begin(&p);
	types[5] = DatumGetObjectId(DirectFunctionCall1(regtypein,
													CStringGetDatum("weir.windowing")));
	weir_catalog_exec("INSERT INTO weir.pipeline (name, definition, source, key, event_time, "
					  "windowing, aggregates, filter, out_of_orderness, allowed_lateness, "
					  "idle_timeout, emit, sink, late_records, checkpoint_interval, "
					  "max_state_memory, names, enabled, operator, horizon, columns, ttl, "
					  "right_source, right_key, right_event_time, right_before, right_after, join_kind, "
					  "nkeys, status, refresh_horizon, right_filter, insert_only, checkpoint_column) "
					  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
					  "$14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, "
					  "$29, $30, $31, $32, $33, $34) "
					  "RETURNING id",
					  34, types, values, nulls, SPI_OK_INSERT_RETURNING);
	id = DatumGetInt32(get_datum(1, &isnull));
	weir_catalog_privileged_end(&p);
	return id;
}

/*
 * weir.start (enabled) and weir.stop: starting or stopped from any status
 * (catalog_pipeline.h).
 */
void
weir_catalog_pipeline_set_enabled(int32 id, bool enabled)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, BOOLOID, TEXTOID};
	Datum		values[3];

	values[0] = Int32GetDatum(id);
	values[1] = BoolGetDatum(enabled);
	values[2] = CStringGetTextDatum(weir_pipeline_status_name(enabled ?
															  WEIR_PIPELINE_STARTING :
															  WEIR_PIPELINE_STOPPED));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.pipeline SET enabled = $2, status = $3, "
					  "last_error = CASE WHEN $2 THEN NULL ELSE last_error END "
					  "WHERE id = $1",
					  3, types, values, NULL, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/*
 * A worker's news about its pipeline: running, failed or out_of_memory,
 * with the error for last_error (NULL: none), and with `disable` the
 * pipeline disabled.  Applied only while the pipeline is enabled (and
 * exists): one that weir.stop disabled meanwhile keeps its status.  The
 * row is locked first, so the transition checked is the one made; a
 * transition catalog_pipeline.h does not allow is an error.  Whether the
 * status changed.  Needs a transaction.
 */
bool
weir_catalog_pipeline_set_status(int32 id, WeirPipelineStatus status, const char *error,
								 bool disable)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, TEXTOID, TEXTOID, BOOLOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		apply = false;

	if (status != WEIR_PIPELINE_RUNNING && status != WEIR_PIPELINE_FAILED &&
		status != WEIR_PIPELINE_OUT_OF_MEMORY)
		elog(ERROR, "pipeline status \"%s\" is not a worker's to set",
			 weir_pipeline_status_name(status));
	values[0] = Int32GetDatum(id);
	values[1] = CStringGetTextDatum(weir_pipeline_status_name(status));
	if (error)
		values[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	values[3] = BoolGetDatum(disable);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT status, enabled FROM weir.pipeline WHERE id = $1 FOR UPDATE",
					  1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		char	   *from = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		bool		isnull;
		Datum		enabled = get_datum(2, &isnull);

		apply = !isnull && DatumGetBool(enabled);
		if (apply && !weir_pipeline_status_allowed(weir_pipeline_status_from_name(from), status))
			elog(ERROR, "pipeline %d cannot go from status \"%s\" to \"%s\"",
				 id, from, weir_pipeline_status_name(status));
	}
	if (apply)
		weir_catalog_exec("UPDATE weir.pipeline SET status = $2, last_error = $3, "
						  "enabled = enabled AND NOT $4 WHERE id = $1",
						  4, types, values, nulls, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
	return apply;
}

void
weir_catalog_pipeline_delete(int32 id)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.pipeline WHERE id = $1", 1, &type, &value,
					  NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

/*
 * Delete the pipeline whose definition is view `definition` (its view was
 * dropped: DROP OWNED, DROP ... CASCADE); whether there was one.
 */
bool
weir_catalog_pipeline_delete_by_definition(Oid definition)
{
	WeirCatalogPrivilege p;
	Oid			type = OIDOID;
	Datum		value = ObjectIdGetDatum(definition);
	bool		deleted;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.pipeline WHERE definition = $1", 1, &type, &value,
					  NULL, SPI_OK_DELETE);
	deleted = SPI_processed > 0;
	weir_catalog_privileged_end(&p);
	return deleted;
}

/* max_state_memory < 0 or checkpoint_interval NULL: unchanged */
void
weir_catalog_pipeline_alter(int32 id, int64 max_state_memory,
							Interval *checkpoint_interval)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT8OID, INTERVALOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int32GetDatum(id);
	values[1] = Int64GetDatum(max_state_memory);
	if (max_state_memory < 0)
		nulls[1] = 'n';
	values[2] = checkpoint_interval ? IntervalPGetDatum(checkpoint_interval) : (Datum) 0;
	if (!checkpoint_interval)
		nulls[2] = 'n';
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.pipeline SET "
					  "max_state_memory = coalesce($2, max_state_memory), "
					  "checkpoint_interval = coalesce($3, checkpoint_interval) "
					  "WHERE id = $1",
					  3, types, values, nulls, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/*
 * Late records into the pipeline's late-records table, copied from topic
 * `source` by position, as the current user (the pipeline's owner).  The
 * columns are named (write_target.c checked that the table has them, with
 * their types): each of the source's, then watermark and received_at; or,
 * as_record (a join's table, one for both topics), source, part, pos,
 * record (the row as jsonb), watermark and received_at.
 */
void
weir_catalog_write_late(Oid late_table, Oid source, Datum parts, Datum positions,
						Datum watermark, bool as_record)
{
	char	   *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(late_table)),
												  get_rel_name(late_table));
	char	   *source_name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
														 get_rel_name(source));
	Relation	rel = table_open(source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData into;
	StringInfoData from;
	Oid			types[4] = {INT4ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID, REGCLASSOID};
	Datum		values[4] = {parts, positions, watermark, ObjectIdGetDatum(source)};

	initStringInfo(&into);
	initStringInfo(&from);
	if (as_record)
	{
		appendStringInfoString(&into, "source, part, pos, record, ");
		appendStringInfoString(&from, "$4, t.part, t.pos, pg_catalog.to_jsonb(t.*), ");
	}
	for (int a = 0; a < desc->natts && !as_record; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		appendStringInfo(&into, "%s, ", quote_identifier(NameStr(att->attname)));
		appendStringInfo(&from, "t.%s, ", quote_identifier(NameStr(att->attname)));
	}
	table_close(rel, AccessShareLock);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec(psprintf("INSERT INTO %s (%swatermark, received_at) "
							   "SELECT %s$3, now() FROM %s t "
							   "JOIN unnest($1, $2) AS l(part, pos) ON t.part = l.part AND t.pos = l.pos",
							   name, into.data, from.data, source_name),
					  4, types, values, NULL, SPI_OK_INSERT);
	SPI_finish();
}

/*
 * The record of topic `source` at partition `part`, position `pos`, as
 * JSON text in the caller's memory context; NULL if it is gone (retention
 * passed it).  Read as the current user (a worker: the pipeline's owner,
 * who may read its sources).  Needs a transaction.
 */
char *
weir_catalog_topic_record(Oid source, int32 part, int64 pos)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
												  get_rel_name(source));
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		values[2] = {Int32GetDatum(part), Int64GetDatum(pos)};
	char	   *record = NULL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec(psprintf("SELECT pg_catalog.to_jsonb(t.*)::text FROM ONLY %s t "
							   "WHERE t.part = $1 AND t.pos = $2", name),
					  2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v)
			record = MemoryContextStrdup(cxt, v);
	}
	SPI_finish();
	return record;
}

/* Ids of the pipelines that should run, as a List of ints. */
List *
weir_catalog_enabled_pipelines(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	List	   *ids = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT id FROM weir.pipeline WHERE enabled ORDER BY id",
					  0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		ids = lappend_int(ids, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc,
														   1, &isnull)));
		MemoryContextSwitchTo(oldcxt);
	}
	weir_catalog_privileged_end(&p);
	return ids;
}

/* A DDL statement built by weir from checked parts, run as the caller. */
void
weir_catalog_run_ddl(const char *sql)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec(sql, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	SPI_finish();
}

void
weir_catalog_load_positions(int32 id, int32 partitions, int64 *pos,
							TimestampTz *max_event_time)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);

	for (int i = 0; i < partitions; i++)
	{
		pos[i] = 0;
		max_event_time[i] = DT_NOBEGIN;
	}
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT part, pos, max_event_time FROM weir.pipeline_position "
					  "WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		part = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		d;

		if (part < 0 || part >= partitions)
			continue;
		pos[part] = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull)
			max_event_time[part] = DatumGetTimestampTz(d);
	}
	weir_catalog_privileged_end(&p);
}

/*
 * The id and watermark of a pipeline's last checkpoint; 0 if none.
 * in_snapshot: read-only, as the active snapshot sees it (below).
 */
static int64
last_checkpoint(int32 id, TimestampTz *watermark, bool in_snapshot)
{
	static const char *sql = "SELECT id, watermark FROM weir.checkpoints WHERE pipeline_id = $1 "
		"ORDER BY id DESC LIMIT 1";
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);
	int64		checkpoint_id = 0;

	*watermark = DT_NOBEGIN;
	weir_catalog_privileged_begin(&p);
	if (in_snapshot)
		weir_catalog_exec_read_only(sql, 1, &type, &value);
	else
		weir_catalog_exec(sql, 1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d;

		checkpoint_id = DatumGetInt64(get_datum(1, &isnull));
		d = get_datum(2, &isnull);
		if (!isnull)
			*watermark = DatumGetTimestampTz(d);
	}
	weir_catalog_privileged_end(&p);
	return checkpoint_id;
}

int64
weir_catalog_last_checkpoint(int32 id, TimestampTz *watermark)
{
	return last_checkpoint(id, watermark, false);
}

/*
 * weir_catalog_last_checkpoint as the active snapshot sees it, as
 * weir_catalog_load_chunks reads chunks (a read-only cursor): read under
 * one snapshot, the record and the chunks are those of one checkpoint
 * (the state views; a checkpoint may commit in between), and the reads of
 * weir.sink_changes agree.
 */
int64
weir_catalog_last_checkpoint_in_snapshot(int32 id, TimestampTz *watermark)
{
	return last_checkpoint(id, watermark, true);
}

void
weir_catalog_write_positions(int32 id, Datum parts, Datum positions,
							 Datum max_event_times)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, INT4ARRAYOID, INT8ARRAYOID, TIMESTAMPTZARRAYOID};
	Datum		values[4] = {Int32GetDatum(id), parts, positions, max_event_times};

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_position "
					  "SELECT $1, * FROM unnest($2, $3, $4) "
					  "ON CONFLICT (pipeline_id, part) DO UPDATE "
					  "SET pos = EXCLUDED.pos, max_event_time = EXCLUDED.max_event_time",
					  4, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

void
weir_catalog_write_checkpoint(int32 id, int64 checkpoint_id, TimestampTz started_at,
							  TimestampTz watermark, double start_delay_ms,
							  double sync_ms, double async_ms, int64 bytes,
							  int64 sink_rows, int64 state_rows,
							  int64 state_deletes, int64 records_in)
{
	WeirCatalogPrivilege p;
	Oid			types[12] = {INT4OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, INT8OID, INT8OID, INT8OID, INT8OID,
	INT8OID};
	Datum		values[12];
	char		nulls[12];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int32GetDatum(id);
	values[1] = Int64GetDatum(checkpoint_id);
	values[2] = TimestampTzGetDatum(started_at);
	values[3] = TimestampTzGetDatum(watermark);
	if (TIMESTAMP_NOT_FINITE(watermark))
		nulls[3] = 'n';
	values[4] = Float8GetDatum(start_delay_ms);
	values[5] = Float8GetDatum(sync_ms);
	values[6] = Float8GetDatum(async_ms);
	values[7] = Int64GetDatum(bytes);
	values[8] = Int64GetDatum(sink_rows);
	values[9] = Int64GetDatum(state_rows);
	values[10] = Int64GetDatum(state_deletes);
	values[11] = Int64GetDatum(records_in);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.checkpoints (pipeline_id, id, started_at, "
					  "committed_at, watermark, start_delay_ms, sync_ms, async_ms, bytes, "
					  "sink_rows, state_rows, state_deletes, records_in) "
					  "VALUES ($1, $2, $3, clock_timestamp(), $4, $5, $6, "
					  "$7, "
					  "$8, $9, $10, $11, $12)",
					  12, types, values, nulls, SPI_OK_INSERT);
	/* keep the last 1000 checkpoints of a pipeline as history */
	weir_catalog_exec("DELETE FROM weir.checkpoints WHERE pipeline_id = $1 AND id <= $2 - 1000",
					  2, types, values, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

void
weir_catalog_write_dead_letters(int32 id, Oid source, Datum parts, Datum positions,
								Datum errors, Datum records)
{
	WeirCatalogPrivilege p;
	Oid			types[6] = {INT4OID, OIDOID, INT4ARRAYOID, INT8ARRAYOID,
	TEXTARRAYOID, JSONBARRAYOID};
	Datum		values[6] = {Int32GetDatum(id), ObjectIdGetDatum(source), parts,
	positions, errors, records};

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.dead_letters (pipeline_id, source, partition, "
					  "position, error, record) "
					  "SELECT $1, $2, * FROM unnest($3, $4, $5, $6)",
					  6, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/*
 * The pipelines a chain checkpoint goes through, in the order it takes
 * them: every running pipeline of the database (names NULL), or the ones
 * named and every running pipeline upstream of them (one whose sink is
 * their source, and so on); upstream first, by the length of the longest
 * chain that leads to each.  Names must exist.
 */
List *
weir_catalog_checkpoint_order(ArrayType *names)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1] = {PointerGetDatum(names)};
	char		nulls[1] = {names ? ' ' : 'n'};
	List	   *result = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("WITH RECURSIVE "
					  "edge AS (SELECT u.id AS up, d.id AS down FROM weir.pipeline u "
					  "  JOIN weir.pipeline d ON u.sink IN (d.source, d.right_source) AND u.id <> d.id), "
					  "wanted(id, path) AS ("
					  "  SELECT id, ARRAY[id] FROM weir.pipeline "
					  "   WHERE $1 IS NULL OR name = ANY ($1) "
					  "  UNION ALL "
					  "  SELECT e.up, w.path || e.up FROM wanted w JOIN edge e ON e.down = w.id "
					  "   WHERE e.up <> ALL (w.path)), "
					  "depth(id, d, path) AS ("
					  "  SELECT id, 0, ARRAY[id] FROM weir.pipeline "
					  "  UNION ALL "
					  "  SELECT e.down, depth.d + 1, depth.path || e.down FROM depth JOIN edge e ON e.up = depth.id "
					  "   WHERE e.down <> ALL (depth.path)) "
					  "SELECT p.name FROM weir.pipeline p "
					  " JOIN (SELECT id, max(d) AS d FROM depth GROUP BY id) dp ON dp.id = p.id "
					  "WHERE p.id IN (SELECT id FROM wanted) "
					  "  AND (p.enabled OR ($1 IS NOT NULL AND p.name = ANY ($1))) "
					  "ORDER BY dp.d, p.name",
					  1, types, values, nulls, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		result = lappend(result, pstrdup(name));
		MemoryContextSwitchTo(oldcxt);
	}
	weir_catalog_privileged_end(&p);
	return result;
}
