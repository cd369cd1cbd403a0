/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  SQL on weir's topic catalog (weir.topic, weir.consumer_position,
 *	  weir.topic_time_index) and on topic tables, and the means every
 *	  catalog file uses: running as weir's owner or as a role, and keeping
 *	  weir's SQL out of error contexts.
 *
 * Catalog statements run as the owner of the weir schema with search_path
 * pg_catalog, pg_temp (privileged_begin/end, act_as.c): the callers have already
 * checked the user's rights on the topic itself, and users get no write
 * access to the catalog.  Statements that create or drop a user's table run
 * as the user.  All values travel as typed SPI parameters; identifiers go
 * through quote_identifier.
 *
 * Every function here needs a transaction and may ereport.  Results are
 * copied into the caller's memory context before SPI_finish.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog_sql/catalog.h"

/* set while retention deletes consumed rows: the append-only trigger lets them go */
bool		weir_catalog_trimming = false;

/*
 * Run SQL inside SPI as `role` (act_as.c: restricted, search_path
 * pg_catalog, pg_temp).  Pair with weir_catalog_privileged_end.
 */
void
weir_catalog_as_role_begin(WeirCatalogPrivilege *p, Oid role)
{
	weir_act_as_begin(p, role);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/* The owner of schema `nspname` (weir's own schemas: the extension's owner). */
Oid
weir_namespace_owner(const char *nspname)
{
	Oid			nspid = get_namespace_oid(nspname, false);
	HeapTuple	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Catalog SQL: as the owner of the weir schema (see weir_catalog_as_role_begin). */
void
weir_catalog_privileged_begin(WeirCatalogPrivilege *p)
{
	weir_catalog_as_role_begin(p, weir_namespace_owner("weir"));
}

void
weir_catalog_privileged_end(WeirCatalogPrivilege *p)
{
	SPI_finish();
	weir_act_as_end(p);
}

/*
 * Rethrow the error being handled (in a PG_CATCH around an SPI call of
 * weir's own SQL) without that SQL: SPI adds 'SQL statement "..."' to the
 * context of every error, which would show users weir's internal
 * statements.  The context lines of the user's own code beneath it (a
 * trigger's function, a policy) and of the callers above are kept: weir's
 * line is the last 'SQL statement' one (contexts go innermost first, and
 * weir's statements are one line each).
 */
void
weir_catalog_rethrow_without_sql(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	edata->internalquery = NULL;
	edata->internalpos = 0;
	if (edata->context)
	{
		char	   *last = NULL;
		char	   *p = edata->context;

		while ((p = strstr(p, "SQL statement \"")) != NULL)
		{
			if (p == edata->context || p[-1] == '\n')
				last = p;
			p++;
		}
		if (last)
		{
			char	   *end = strchr(last, '\n');

			if (end)
				memmove(last, end + 1, strlen(end + 1) + 1);
			else
				*(last > edata->context ? last - 1 : last) = '\0';
			if (edata->context[0] == '\0')
				edata->context = NULL;
		}
	}
	ReThrowError(edata);
}

/* Run one statement; errors if it does not return `expect`. */
void
weir_catalog_exec(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
	int expect)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	}
	PG_CATCH();
	{
		weir_catalog_rethrow_without_sql(cxt);
	}
	PG_END_TRY();
	if (rc != expect)
		elog(ERROR, "weir's catalog statement returned %s, not %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expect));
}

/*
 * Run one read (SELECT) read-only: in the snapshot of the statement that
 * called us, as STABLE functions read.  Errors do not show the SQL.
 */
void
weir_catalog_exec_read_only(const char *sql, int nargs, Oid *types, Datum *values)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, types, values, NULL, true, 0);
	}
	PG_CATCH();
	{
		weir_catalog_rethrow_without_sql(cxt);
	}
	PG_END_TRY();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "weir's read returned %s, not SPI_OK_SELECT", SPI_result_code_string(rc));
}

static int64
get_int8(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
								  col, isnull);

	return *isnull ? 0 : DatumGetInt64(d);
}

static int32
get_int4(int row, int col, bool *isnull)
{
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
								  col, isnull);

	return *isnull ? 0 : DatumGetInt32(d);
}

static void
fill_topic_row(int row, WeirTopicRow *out, MemoryContext cxt)
{
	bool		isnull;
	Datum		d;

	out->id = get_int4(row, 1, &isnull);
	out->relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[row],
												SPI_tuptable->tupdesc, 2, &isnull));
	out->partitions = get_int4(row, 3, &isnull);
	d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 4, &isnull);
	out->key_column = isnull ? NULL :
		MemoryContextStrdup(cxt, NameStr(*DatumGetName(d)));
	d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 5, &isnull);
	out->has_retention = !isnull;
	if (!isnull)
		out->retention = *DatumGetIntervalP(d);
}

#define TOPIC_COLUMNS "id, relid, partitions, key_column, retention"

bool
weir_catalog_topic_by_relid(Oid relid, WeirTopicRow *row)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		found;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT " TOPIC_COLUMNS " FROM weir.topic WHERE relid = $1",
		1, types, values, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
		fill_topic_row(0, row, cxt);
	weir_catalog_privileged_end(&p);
	return found;
}

/* All topics of this database (List of WeirTopicRow *), ordered by id. */
List *
weir_catalog_topics(bool with_retention_only)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	List	   *result = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec(with_retention_only ?
		"SELECT " TOPIC_COLUMNS " FROM weir.topic WHERE retention IS NOT NULL ORDER BY id" :
		"SELECT " TOPIC_COLUMNS " FROM weir.topic ORDER BY id",
		0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		WeirTopicRow *row = MemoryContextAllocZero(cxt, sizeof(WeirTopicRow));
		MemoryContext oldcxt;

		fill_topic_row(i, row, cxt);
		oldcxt = MemoryContextSwitchTo(cxt);
		result = lappend(result, row);
		MemoryContextSwitchTo(oldcxt);
	}
	weir_catalog_privileged_end(&p);
	return result;
}

/*
 * Create the table of a new topic, as the calling user.  `columns` has been
 * checked to parse as a plain column list (topic.c); the newline keeps a
 * trailing comment in it from swallowing the primary key.
 */
void
weir_catalog_create_topic_table(const char *qualified_name, const char *columns)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "CREATE TABLE %s (part integer NOT NULL DEFAULT -1, pos bigint NOT NULL DEFAULT 0, %s\n, PRIMARY KEY (part, pos))",
					 qualified_name, columns);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "CREATE TRIGGER weir_produce BEFORE INSERT ON %s "
					 "FOR EACH ROW EXECUTE FUNCTION weir._produce()",
					 qualified_name);
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "CREATE TRIGGER weir_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON %s "
					 "FOR EACH STATEMENT EXECUTE FUNCTION weir._append_only()",
					 qualified_name);
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "ALTER TABLE %s ENABLE ALWAYS TRIGGER weir_produce, "
					 "ENABLE ALWAYS TRIGGER weir_append_only",
					 qualified_name);
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	SPI_finish();
}

int32
weir_catalog_topic_insert(Oid relid, int32 partitions, const char *key_column,
						  Interval *retention)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {OIDOID, INT4OID, NAMEOID, INTERVALOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		isnull;
	int32		id;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = Int32GetDatum(partitions);
	if (key_column)
		values[2] = DirectFunctionCall1(namein, CStringGetDatum(key_column));
	else
		nulls[2] = 'n';
	if (retention)
		values[3] = IntervalPGetDatum(retention);
	else
		nulls[3] = 'n';

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.topic (relid, partitions, key_column, retention) "
		"VALUES ($1, $2, $3, $4) RETURNING id",
		4, types, values, nulls, SPI_OK_INSERT_RETURNING);
	id = get_int4(0, 1, &isnull);
	weir_catalog_privileged_end(&p);
	return id;
}

/* The name of the capture writing topic `topic` (src/capture/), or NULL. */
char *
weir_catalog_capture_writing(Oid topic)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			type = OIDOID;
	Datum		value = ObjectIdGetDatum(topic);
	char	   *name = NULL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT c.name FROM weir.capture_table t JOIN weir.capture c "
					  "ON c.id = t.capture_id WHERE t.topic = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		name = MemoryContextStrdup(cxt, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	weir_catalog_privileged_end(&p);
	return name;
}

/* The name of a pipeline reading or writing the relation, or NULL. */
char *
weir_catalog_pipeline_reading(Oid relid)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *name = NULL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT name FROM weir.pipeline WHERE source = $1 OR sink = $1 "
					  "OR late_records = $1 OR right_source = $1 ORDER BY name LIMIT 1",
					  1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		name = MemoryContextStrdup(cxt, SPI_getvalue(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 1));
	weir_catalog_privileged_end(&p);
	return name;
}

/* Forget a topic; returns its id, or 0 if the relation was not a topic. */
int32
weir_catalog_topic_delete(Oid relid)
{
	WeirCatalogPrivilege p;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		isnull;
	int32		id = 0;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.topic WHERE relid = $1 RETURNING id",
		1, types, values, NULL, SPI_OK_DELETE_RETURNING);
	if (SPI_processed == 1)
		id = get_int4(0, 1, &isnull);
	weir_catalog_privileged_end(&p);
	return id;
}

void
weir_catalog_topic_set_retention(Oid relid, Interval *retention)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {OIDOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(relid), PointerGetDatum(retention)};
	char		nulls[2] = {' ', retention ? ' ' : 'n'};

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.topic SET retention = $2 WHERE relid = $1",
		2, types, values, nulls, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/* DROP TABLE, as the calling user (who has been checked to own it). */
void
weir_catalog_drop_table(Oid relid)
{
	StringInfoData sql;
	char	   *nspname = get_namespace_name(get_rel_namespace(relid));
	char	   *relname = get_rel_name(relid);

	initStringInfo(&sql);
	appendStringInfo(&sql, "DROP TABLE %s",
					 quote_qualified_identifier(nspname, relname));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	SPI_finish();
}

/*
 * Committed rows per partition of a topic, as a palloc'd array, counted as
 * the current user (who may read the topic; policies that apply to them
 * apply here).
 */
int64 *
weir_catalog_count_rows(Oid relid, int32 partitions)
{
	MemoryContext cxt = CurrentMemoryContext;
	int64	   *counts = MemoryContextAllocZero(cxt, sizeof(int64) * partitions);
	StringInfoData sql;
	WeirCatalogPrivilege p;
	bool		isnull;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT part, count(*) FROM %s GROUP BY part",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	weir_catalog_as_role_begin(&p, GetUserId());
	weir_catalog_exec(sql.data, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int32		part = get_int4(i, 1, &isnull);

		if (part >= 0 && part < partitions)
			counts[part] = get_int8(i, 2, &isnull);
	}
	weir_catalog_privileged_end(&p);
	return counts;
}

/*
 * Lock a consumer's positions (creating them at 0 on first use) and return
 * them, one per partition.  The row locks serialise sessions of one consumer
 * until the caller's transaction ends; in READ COMMITTED a waiting session
 * then sees the positions its predecessor committed.
 */
int64 *
weir_catalog_lock_consumer(int32 topic_id, const char *consumer, int32 partitions)
{
	MemoryContext cxt = CurrentMemoryContext;
	int64	   *positions = MemoryContextAllocZero(cxt, sizeof(int64) * partitions);
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, TEXTOID, INT4OID};
	Datum		values[3];
	bool		isnull;
	const char *select_sql =
		"SELECT part, pos FROM weir.consumer_position "
		"WHERE topic_id = $1 AND consumer = $2 ORDER BY part FOR UPDATE";

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(consumer);
	values[2] = Int32GetDatum(partitions);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec(select_sql, 2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed < (uint64) partitions)
	{
		weir_catalog_exec("INSERT INTO weir.consumer_position (topic_id, consumer, part, pos) "
			"SELECT $1, $2, g, 0 FROM generate_series(0, $3 - 1) g "
			"ON CONFLICT DO NOTHING",
			3, types, values, NULL, SPI_OK_INSERT);
		weir_catalog_exec(select_sql, 2, types, values, NULL, SPI_OK_SELECT);
	}
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int32		part = get_int4(i, 1, &isnull);

		if (part >= 0 && part < partitions)
			positions[part] = get_int8(i, 2, &isnull);
	}
	weir_catalog_privileged_end(&p);
	return positions;
}

void
weir_catalog_set_consumer_position(int32 topic_id, const char *consumer,
								   int32 part, int64 position)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, TEXTOID, INT4OID, INT8OID};
	Datum		values[4];

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(consumer);
	values[2] = Int32GetDatum(part);
	values[3] = Int64GetDatum(position);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.consumer_position (topic_id, consumer, part, pos) "
		"VALUES ($1, $2, $3, $4) ON CONFLICT (topic_id, consumer, part) "
		"DO UPDATE SET pos = excluded.pos, updated_at = now()",
		4, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

bool
weir_catalog_drop_consumer(int32 topic_id, const char *consumer)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	bool		found;

	values[0] = Int32GetDatum(topic_id);
	values[1] = CStringGetTextDatum(consumer);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.consumer_position WHERE topic_id = $1 AND consumer = $2",
		2, types, values, NULL, SPI_OK_DELETE);
	found = SPI_processed > 0;
	weir_catalog_privileged_end(&p);
	return found;
}

/* The lowest committed position of any consumer; false if none exists. */
bool
weir_catalog_min_consumer_position(int32 topic_id, int32 part, int64 *position)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		values[2] = {Int32GetDatum(topic_id), Int32GetDatum(part)};
	bool		isnull;

	weir_catalog_privileged_begin(&p);
	/*
	 * Consumers, and pipelines reading the topic (from 0 until they
	 * checkpoint): as their source, or as a join's right topic, whose
	 * partitions come after the left topic's in weir.pipeline_position.
	 */
	weir_catalog_exec("SELECT min(pos) FROM ("
					  "SELECT pos FROM weir.consumer_position WHERE topic_id = $1 AND part = $2 "
					  "UNION ALL "
					  "SELECT coalesce((SELECT pp.pos FROM weir.pipeline_position pp "
					  "                 WHERE pp.pipeline_id = p.id AND pp.part = $2), 0) "
					  "FROM weir.pipeline p JOIN weir.topic t ON t.relid = p.source "
					  "WHERE t.id = $1 "
					  "UNION ALL "
					  "SELECT coalesce((SELECT pp.pos FROM weir.pipeline_position pp "
					  "                 WHERE pp.pipeline_id = p.id AND pp.part = l.partitions + $2), 0) "
					  "FROM weir.pipeline p JOIN weir.topic t ON t.relid = p.right_source "
					  "JOIN weir.topic l ON l.relid = p.source "
					  "WHERE t.id = $1) c",
		2, types, values, NULL, SPI_OK_SELECT);
	*position = get_int8(0, 1, &isnull);
	weir_catalog_privileged_end(&p);
	return !isnull;
}

bool
weir_catalog_latest_sample(int32 topic_id, int32 part, int64 *position,
						   TimestampTz *at)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		values[2] = {Int32GetDatum(topic_id), Int32GetDatum(part)};
	bool		found;
	bool		isnull;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT pos, sampled_at FROM weir.topic_time_index "
		"WHERE topic_id = $1 AND part = $2 ORDER BY sampled_at DESC LIMIT 1",
		2, types, values, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
	{
		*position = get_int8(0, 1, &isnull);
		*at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 2, &isnull));
	}
	weir_catalog_privileged_end(&p);
	return found;
}

void
weir_catalog_add_sample(int32 topic_id, int32 part, int64 position,
						TimestampTz at)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, INT4OID, INT8OID, TIMESTAMPTZOID};
	Datum		values[4];

	values[0] = Int32GetDatum(topic_id);
	values[1] = Int32GetDatum(part);
	values[2] = Int64GetDatum(position);
	values[3] = TimestampTzGetDatum(at);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.topic_time_index (topic_id, part, pos, sampled_at) "
		"VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
		4, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/* Highest sampled position produced at or before cutoff, 0 if none. */
int64
weir_catalog_retention_bound(int32 topic_id, int32 part, TimestampTz cutoff)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT4OID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull;
	int64		bound;

	values[0] = Int32GetDatum(topic_id);
	values[1] = Int32GetDatum(part);
	values[2] = TimestampTzGetDatum(cutoff);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT max(pos) FROM weir.topic_time_index "
		"WHERE topic_id = $1 AND part = $2 AND sampled_at <= $3",
		3, types, values, NULL, SPI_OK_SELECT);
	bound = get_int8(0, 1, &isnull);
	weir_catalog_privileged_end(&p);
	return bound;
}

/* Samples at or below a trimmed position are of no further use. */
void
weir_catalog_forget_samples(int32 topic_id, int32 part, int64 upto_position)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT4OID, INT8OID};
	Datum		values[3];

	values[0] = Int32GetDatum(topic_id);
	values[1] = Int32GetDatum(part);
	values[2] = Int64GetDatum(upto_position);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.topic_time_index "
		"WHERE topic_id = $1 AND part = $2 AND pos <= $3",
		3, types, values, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

static Oid
relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Retention's delete of the rows from_position..to_position of a partition,
 * as the topic's owner (what a trigger or rule of theirs runs has their
 * rights, not the launcher's); the append-only trigger lets it through
 * while weir_catalog_trimming is set.
 */
int64
weir_catalog_delete_rows(Oid relid, int32 part, int64 from_position,
						 int64 to_position)
{
	StringInfoData sql;
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT8OID, INT8OID};
	Datum		values[3];
	int64		deleted;

	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s WHERE part = $1 AND pos >= $2 AND pos <= $3",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	values[0] = Int32GetDatum(part);
	values[1] = Int64GetDatum(from_position);
	values[2] = Int64GetDatum(to_position);

	weir_catalog_as_role_begin(&p, relation_owner(relid));
	weir_catalog_trimming = true;
	PG_TRY();
	{
		weir_catalog_exec(sql.data, 3, types, values, NULL, SPI_OK_DELETE);
	}
	PG_FINALLY();
	{
		weir_catalog_trimming = false;
	}
	PG_END_TRY();
	deleted = (int64) SPI_processed;
	weir_catalog_privileged_end(&p);
	return deleted;
}

/* SPI_prepare of weir's SQL; errors do not show it (weir_catalog_rethrow_without_sql). */
SPIPlanPtr
weir_catalog_prepare_hiding_sql(const char *sql, int nargs, Oid *types)
{
	MemoryContext cxt = CurrentMemoryContext;
	SPIPlanPtr volatile prepared = NULL;

	PG_TRY();
	{
		prepared = SPI_prepare(sql, nargs, types);
	}
	PG_CATCH();
	{
		weir_catalog_rethrow_without_sql(cxt);
	}
	PG_END_TRY();
	if (prepared == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	return prepared;
}

/* SPI_execute_plan of a plan prepared so, errors without its SQL. */
int
weir_catalog_execute_hiding_sql(SPIPlanPtr plan, Datum *arrays)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_plan(plan, arrays, NULL, false, 0);
	}
	PG_CATCH();
	{
		weir_catalog_rethrow_without_sql(cxt);
	}
	PG_END_TRY();
	return rc;
}
