/*-------------------------------------------------------------------------
 *
 * remote_define.c
 *	  Defining a capture of another server's publication.
 *
 * weir.create_capture(name, publication => p, conninfo => c) connects to
 * the remote server once (remote_conn.c), checks its publication, reads
 * its tables as pgoutput will send them (non-dropped, non-generated
 * columns in attribute order, within the publication's column list), each
 * table's replica identity and key, and creates one topic per table here,
 * <topic_schema>.<capture>_<table>, with the same columns as a local
 * capture's.  Types are resolved here by the names the remote gives them
 * (format_type): a type missing here is an error.  Collations are the
 * types' defaults.  The default topic schema is where CREATE TABLE would
 * put a table now (the first existing schema of search_path).
 *
 * The remote slot is not created here but by the capture's worker
 * (remote_capture.c): changes are captured from the moment it has.  The
 * connection string is stored in weir.capture_connection, which only
 * weir's owner reads.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "capture/capture_catalog.h"
#include "capture/capture_topic.h"
#include "capture/remote_define.h"
#include "capture/remote_conn.h"

/* One table of the remote publication, as read from the remote */
typedef struct RemoteTable
{
	char	   *schema;
	char	   *name;
	char	   *qualified;		/* schema.name, unquoted: relation messages match it */
	char		replident;
	bool		has_key_index;
	int			ncolumns;
	char	  **columns;
	char	  **types;			/* format_type on the remote */
	int		   *key_pos;		/* position in the key index, from 1; 0: none */
	bool		wanted;
} RemoteTable;

/*
 * The publication's tables and their columns.  Key columns: the replica
 * identity index's, or the primary key's under DEFAULT and FULL.
 */
static List *
remote_tables_of(WalReceiverConn *conn, const char *capture, const char *publication)
{
	StringInfoData sql;
	WalRcvExecResult *res;
	TupleTableSlot *slot;
	List	   *tables = NIL;
	RemoteTable *cur = NULL;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = %s",
					 quote_literal_cstr(publication));
	res = weir_remote_query(conn, sql.data, 1, capture);
	if (tuplestore_tuple_count(res->tuplestore) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("publication \"%s\" does not exist on the remote server", publication),
				 errhint("Create it there (CREATE PUBLICATION %s FOR TABLE ...), or name another.",
						 quote_identifier(publication))));
	walrcv_clear_result(res);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT n.nspname, c.relname, c.relreplident::text, "
					 "       (i.indexrelid IS NOT NULL)::text, a.attname, "
					 "       pg_catalog.format_type(a.atttypid, a.atttypmod), "
					 "       coalesce((SELECT k.n FROM pg_catalog.unnest(i.indkey::int2[]) WITH ORDINALITY k(a, n) "
					 "                 WHERE k.a = a.attnum), 0)::text "
					 "FROM pg_catalog.pg_publication_tables pt "
					 "JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname "
					 "JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename "
					 "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
					 "     AND NOT a.attisdropped AND a.attgenerated = '' "
					 "LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND "
					 "     CASE c.relreplident WHEN 'i' THEN i.indisreplident "
					 "                         WHEN 'n' THEN false ELSE i.indisprimary END "
					 "WHERE pt.pubname = %s %s"
					 "ORDER BY n.nspname, c.relname, a.attnum",
					 quote_literal_cstr(publication),
					 walrcv_server_version(conn) >= 150000 ?
					 "AND (pt.attnames IS NULL OR a.attname = ANY (pt.attnames)) " : "");
	res = weir_remote_query(conn, sql.data, 7, capture);
	slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		char	   *schema = weir_remote_value(slot, 1);
		char	   *name = weir_remote_value(slot, 2);

		if (cur == NULL || strcmp(cur->schema, schema) != 0 || strcmp(cur->name, name) != 0)
		{
			cur = palloc0(sizeof(RemoteTable));
			cur->schema = schema;
			cur->name = name;
			cur->qualified = psprintf("%s.%s", schema, name);
			cur->replident = weir_remote_value(slot, 3)[0];
			cur->has_key_index = strcmp(weir_remote_value(slot, 4), "true") == 0;
			cur->columns = palloc(sizeof(char *) * MaxHeapAttributeNumber);
			cur->types = palloc(sizeof(char *) * MaxHeapAttributeNumber);
			cur->key_pos = palloc(sizeof(int) * MaxHeapAttributeNumber);
			tables = lappend(tables, cur);
		}
		cur->columns[cur->ncolumns] = weir_remote_value(slot, 5);
		cur->types[cur->ncolumns] = weir_remote_value(slot, 6);
		cur->key_pos[cur->ncolumns] = atoi(weir_remote_value(slot, 7));
		cur->ncolumns++;
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	return tables;
}

/* Mark the tables `remote_tables` names ("schema.table" or "table") */
static void
choose_tables(List *tables, ArrayType *remote_tables, const char *publication)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	ListCell   *lc;

	if (remote_tables == NULL)
	{
		foreach(lc, tables)
			((RemoteTable *) lfirst(lc))->wanted = true;
		return;
	}
	deconstruct_array(remote_tables, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *want;
		int			found = 0;

		if (nulls[i])
			continue;
		want = TextDatumGetCString(elems[i]);
		foreach(lc, tables)
		{
			RemoteTable *t = lfirst(lc);

			if (strcmp(t->qualified, want) == 0 ||
				(strchr(want, '.') == NULL && strcmp(t->name, want) == 0))
			{
				t->wanted = true;
				found++;
			}
		}
		if (found == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table \"%s\" is not in publication \"%s\" on the remote server",
							want, publication),
					 errhint("Name tables of the publication in remote_tables, as schema.table or table.")));
		if (found > 1)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_ALIAS),
					 errmsg("table name \"%s\" is ambiguous in publication \"%s\"", want, publication),
					 errhint("Qualify it with its schema in remote_tables.")));
	}
}

/* Check a remote table, resolve its types here, and describe it */
static WeirCaptureTableRow
describe_remote_table(RemoteTable *rt, Oid *types, int32 *typmods)
{
	WeirCaptureTableRow t = {0};

	if (rt->replident == REPLICA_IDENTITY_NOTHING ||
		(rt->replident == REPLICA_IDENTITY_DEFAULT && !rt->has_key_index) ||
		(rt->replident == REPLICA_IDENTITY_INDEX && !rt->has_key_index))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("remote table \"%s\" has no replica identity", rt->qualified),
				 errdetail("Its updates and deletes would not say which row they changed."),
				 errhint("On the remote server, give the table a primary key, or ALTER TABLE %s REPLICA IDENTITY FULL (or USING INDEX).",
						 rt->qualified)));
	t.relid = InvalidOid;
	t.remote_table = rt->qualified;
	t.full_identity = rt->replident == REPLICA_IDENTITY_FULL;
	t.ncolumns = rt->ncolumns;
	t.columns = rt->columns;
	t.attnums = NULL;
	t.key_columns = palloc(sizeof(char *) * Max(rt->ncolumns, 1));
	for (int i = 0; i < rt->ncolumns; i++)
	{
		weir_capture_check_column_name(rt->columns[i], rt->qualified);
		parseTypeString(rt->types[i], &types[i], &typmods[i], true);
		if (!OidIsValid(types[i]))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("type %s of column \"%s\" of remote table \"%s\" does not exist here",
							rt->types[i], rt->columns[i], rt->qualified),
					 errhint("Create the type in this database (with the same name and text form), or leave the column out of the publication's column list.")));
	}
	/* keys in the key index's order */
	for (int pos = 1; pos <= rt->ncolumns; pos++)
		for (int i = 0; i < rt->ncolumns; i++)
			if (rt->key_pos[i] == pos)
				t.key_columns[t.nkeys++] = rt->columns[i];
	return t;
}

/*
 * Create remote capture `name` of `publication` on the server `conninfo`
 * reaches, with one topic per table (all the publication's, or those of
 * `remote_tables`); returns its id.  Runs in the caller's transaction, as
 * the caller; ereports if the remote cannot be reached or described.
 */
int32
weir_remote_capture_create(const char *name, const char *publication, const char *conninfo,
						   ArrayType *remote_tables, const char *topic_schema, int32 partitions,
						   Datum retention, bool has_retention)
{
	WalReceiverConn *conn;
	List	   *tables = NIL;
	ListCell   *lc;
	int32		id;
	const char *schema;

	if (topic_schema)
		schema = topic_schema;
	else
		schema = get_namespace_name(RangeVarGetCreationNamespace(makeRangeVar(NULL, (char *) name, -1)));

	conn = weir_remote_connect(conninfo, "weir_create_capture", name);
	PG_TRY();
	{
		tables = remote_tables_of(conn, name, publication);
	}
	PG_FINALLY();
	{
		walrcv_disconnect(conn);
	}
	PG_END_TRY();

	choose_tables(tables, remote_tables, publication);
	foreach(lc, tables)
		if (((RemoteTable *) lfirst(lc))->wanted)
			break;
	if (lc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("publication \"%s\" on the remote server has no tables", publication),
				 errhint("Add tables to it (ALTER PUBLICATION ... ADD TABLE) there.")));

	id = weir_catalog_capture_insert(name, GetUserId(), publication, conninfo);
	foreach(lc, tables)
	{
		RemoteTable *rt = lfirst(lc);
		Oid		   *types;
		int32	   *typmods;
		WeirCaptureTableRow t;

		if (!rt->wanted)
			continue;
		types = palloc(sizeof(Oid) * Max(rt->ncolumns, 1));
		typmods = palloc(sizeof(int32) * Max(rt->ncolumns, 1));
		t = describe_remote_table(rt, types, typmods);
		t.topic = weir_capture_create_topic(name, rt->name, schema, &t, types, typmods, NULL,
											partitions, retention, has_retention);
		weir_catalog_capture_table_insert(id, &t);
	}
	return id;
}
