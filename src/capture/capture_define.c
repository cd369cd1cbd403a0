/*-------------------------------------------------------------------------
 *
 * capture_define.c
 *	  weir.create_capture, weir.drop_capture, weir.start_capture,
 *	  weir.stop_capture, and what dropping a captured table does.
 *
 * A capture binds, at creation, to its tables (named, or a publication's
 * at that moment) and creates one topic per table, owned by the caller:
 * <schema>.<capture>_<table>, whose columns are part, pos, change_op,
 * commit_lsn, commit_time, unchanged_columns and the table's own.  Its
 * replication slot is created by its worker in a fresh transaction (a
 * slot cannot be created by a transaction that has written); changes are
 * captured from then on.  Dropping the capture deletes its catalog rows;
 * the launcher then stops its worker and drops the slot, and drops any
 * slot of this database's captures that no capture owns any more, so that
 * no slot is left behind after a crash either.
 *
 * Capturing takes a replication slot, which holds WAL for the whole
 * server, and reads tables below their GRANTs, so it needs the REPLICATION
 * attribute (or superuser) and SELECT on every captured table.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/varlena.h"

#include "base/shmem.h"
#include "base/sql_args.h"
#include "capture/capture_catalog.h"
#include "capture/capture_topic.h"
#include "capture/capture_writer.h"
#include "capture/remote_define.h"
#include "catalog_sql/catalog.h"

static void
check_wal_level(void)
{
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("capturing changes needs wal_level \"logical\""),
				 errdetail("wal_level is \"%s\".", GetConfigOption("wal_level", false, false)),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
}

/* The columns of the table's replica identity (none: FULL without a key) */
static List *
key_columns(Relation rel)
{
	Oid			index = RelationGetReplicaIndex(rel);
	List	   *keys = NIL;
	Relation	irel;

	if (!OidIsValid(index))
	{
		/* FULL: partition by the primary key if there is one */
		(void) RelationGetIndexList(rel);
		index = rel->rd_pkindex;
	}
	if (!OidIsValid(index))
		return NIL;
	irel = relation_open(index, AccessShareLock);
	for (int i = 0; i < irel->rd_index->indnkeyatts; i++)
	{
		AttrNumber	a = irel->rd_index->indkey.values[i];

		if (a > 0)
			keys = lappend(keys, pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), a - 1)->attname)));
	}
	relation_close(irel, AccessShareLock);
	return keys;
}

/* Check table `relid` can be captured and describe it (without its topic). */
static WeirCaptureTableRow
describe_table(Oid relid)
{
	WeirCaptureTableRow t = {0};
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	const char *name = RelationGetRelationName(rel);
	char		ident = rel->rd_rel->relreplident;
	List	   *keys;
	ListCell   *lc;
	WeirTopicRow topic;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table that can be captured", name),
				 errdetail("Only ordinary tables are captured; a partitioned table's changes are its partitions'."),
				 errhint("Capture the partitions.")));
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is not logged, so its changes cannot be captured", name),
				 errhint("Captures read the WAL: use ALTER TABLE %s SET LOGGED.", name)));
	if (IsCatalogRelation(rel) || weir_catalog_topic_by_relid(relid, &topic) ||
		get_rel_namespace(relid) == get_namespace_oid("weir", false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" cannot be captured", name),
				 errdetail("System catalogs, weir's own tables and topics are not captured: a pipeline reads a topic directly.")));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, name);
	if (ident == REPLICA_IDENTITY_NOTHING ||
		(ident == REPLICA_IDENTITY_DEFAULT && !OidIsValid(RelationGetReplicaIndex(rel))))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no replica identity", name),
				 errdetail("Its updates and deletes would not say which row they changed."),
				 errhint("Give the table a primary key, or ALTER TABLE %s REPLICA IDENTITY FULL (or USING INDEX).",
						 name)));
	t.relid = relid;
	t.full_identity = ident == REPLICA_IDENTITY_FULL;
	t.columns = palloc(sizeof(char *) * Max(desc->natts, 1));
	t.attnums = palloc(sizeof(int16) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		weir_capture_check_column_name(NameStr(att->attname), name);
		t.columns[t.ncolumns] = pstrdup(NameStr(att->attname));
		t.attnums[t.ncolumns] = att->attnum;
		t.ncolumns++;
	}
	keys = key_columns(rel);
	t.nkeys = list_length(keys);
	t.key_columns = palloc(sizeof(char *) * Max(t.nkeys, 1));
	foreach(lc, keys)
		t.key_columns[foreach_current_index(lc)] = lfirst(lc);
	relation_close(rel, AccessShareLock);
	return t;
}

/* Create the topic of local table `relid`, in its schema by default */
static Oid
create_table_topic(const char *capture, Oid relid, const WeirCaptureTableRow *t,
				   const char *topic_schema, int32 partitions, Datum retention,
				   bool has_retention)
{
	const char *schema = topic_schema ? topic_schema : get_namespace_name(get_rel_namespace(relid));
	Oid		   *types = palloc(sizeof(Oid) * Max(t->ncolumns, 1));
	int32	   *typmods = palloc(sizeof(int32) * Max(t->ncolumns, 1));
	Oid		   *collations = palloc(sizeof(Oid) * Max(t->ncolumns, 1));

	for (int i = 0; i < t->ncolumns; i++)
		get_atttypetypmodcoll(relid, t->attnums[i], &types[i], &typmods[i], &collations[i]);
	return weir_capture_create_topic(capture, get_rel_name(relid), schema, t, types, typmods,
									 collations, partitions, retention, has_retention);
}

/* The tables of local publication `pubname`, now */
static List *
publication_tables(const char *pubname)
{
	Publication *pub = GetPublicationByName(pubname, false);

	if (pub->alltables)
		return GetAllTablesPublicationRelations(false);
	return GetPublicationRelations(pub->oid, PUBLICATION_PART_LEAF);
}

static int32
create_local_capture(const char *name, List *relids, const char *topic_schema,
					 int32 partitions, Datum retention, bool has_retention)
{
	int32		id;
	ListCell   *lc;
	int			n = 0;
	WeirCaptureTableRow *tables = palloc(sizeof(WeirCaptureTableRow) * Max(list_length(relids), 1));

	check_wal_level();
	if (relids == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a capture needs at least one table"),
				 errhint("Name tables in tables, or a publication that has some.")));
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);

		for (int i = 0; i < n; i++)
			if (tables[i].relid == relid)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("table \"%s\" is named twice", get_rel_name(relid))));
		tables[n++] = describe_table(relid);
	}
	id = weir_catalog_capture_insert(name, GetUserId(), NULL, NULL);
	for (int i = 0; i < n; i++)
	{
		tables[i].topic = create_table_topic(name, tables[i].relid, &tables[i], topic_schema,
											 partitions, retention, has_retention);
		weir_catalog_capture_table_insert(id, &tables[i]);
	}
	return id;
}

/*
 * weir.create_capture(name, tables, publication, topic_schema, partitions,
 * retention, conninfo, remote_tables, start) -> integer
 */
static int32
create_capture(FunctionCallInfo fcinfo)
{
	WeirSqlArgs args;
	char	   *name;
	char	   *publication;
	char	   *topic_schema;
	int32		partitions;
	bool		start;
	int32		id;
	WeirCaptureRow existing;
	int			a;

	(void) weir_shmem();
	weir_sql_args_init(&args, fcinfo);
	weir_require_arg(fcinfo, weir_sql_arg(&args, "name", false), "name");
	weir_require_arg(fcinfo, weir_sql_arg(&args, "partitions", false), "partitions");
	weir_require_arg(fcinfo, weir_sql_arg(&args, "start", false), "start");
	name = text_to_cstring(PG_GETARG_TEXT_PP(weir_sql_arg(&args, "name", false)));
	partitions = PG_GETARG_INT32(weir_sql_arg(&args, "partitions", false));
	start = PG_GETARG_BOOL(weir_sql_arg(&args, "start", false));
	a = weir_sql_arg(&args, "publication", false);
	publication = PG_ARGISNULL(a) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(a));
	a = weir_sql_arg(&args, "topic_schema", false);
	topic_schema = PG_ARGISNULL(a) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(a));

	weir_capture_check_can_capture();
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("a capture's name must not be empty")));
	if (weir_catalog_capture_by_name(name, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("capture \"%s\" already exists", name),
				 errhint("Choose another name, or drop it with weir.drop_capture().")));
	if (topic_schema)
		(void) get_namespace_oid(topic_schema, false);

	if (!weir_sql_arg_isnull(&args, "conninfo"))
	{
		if (publication == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a remote capture needs a publication on the remote server"),
					 errhint("Create a publication there (CREATE PUBLICATION ... FOR TABLE ...) and name it in publication.")));
		if (!weir_sql_arg_isnull(&args, "tables"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tables names local tables; a remote capture takes the tables of its publication"),
					 errhint("Leave tables out; remote_tables may choose among the publication's tables.")));
		id = weir_remote_capture_create(name, publication,
										text_to_cstring(PG_GETARG_TEXT_PP(weir_sql_arg(&args, "conninfo", false))),
										weir_sql_arg_isnull(&args, "remote_tables") ? NULL :
										PG_GETARG_ARRAYTYPE_P(weir_sql_arg(&args, "remote_tables", false)),
										topic_schema, partitions,
										PG_GETARG_DATUM(weir_sql_arg(&args, "retention", false)),
										!weir_sql_arg_isnull(&args, "retention"));
	}
	else
	{
		List	   *relids = NIL;

		if (!weir_sql_arg_isnull(&args, "remote_tables"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("remote_tables is for a remote capture"),
					 errhint("Give conninfo too, or name local tables in tables.")));
		if (!weir_sql_arg_isnull(&args, "tables") && publication)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("name tables or a publication, not both")));
		if (publication)
			relids = publication_tables(publication);
		else if (!weir_sql_arg_isnull(&args, "tables"))
		{
			ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(weir_sql_arg(&args, "tables", false));
			Datum	   *elems;
			bool	   *nulls;
			int			n;

			deconstruct_array(arr, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
							  &elems, &nulls, &n);
			for (int i = 0; i < n; i++)
				if (!nulls[i])
					relids = lappend_oid(relids, DatumGetObjectId(elems[i]));
		}
		id = create_local_capture(name, relids, topic_schema, partitions,
								  PG_GETARG_DATUM(weir_sql_arg(&args, "retention", false)),
								  !weir_sql_arg_isnull(&args, "retention"));
	}
	if (!start)
		weir_catalog_capture_set_enabled(id, false);
	weir_shmem_wake_launcher_at_commit();
	return id;
}

/*
 * weir.create_capture(...).  A call with a connection string keeps its
 * statement out of the server log when it fails (errhidestmt): the string
 * may hold a password, and the log would show the statement after the
 * error.  (log_statement, an administrator's setting, logs statements
 * before they run: README says to use a password file.)
 */
PG_FUNCTION_INFO_V1(weir_create_capture);
Datum
weir_create_capture(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirSqlArgs args;
	int32		id = 0;

	weir_sql_args_init(&args, fcinfo);
	if (weir_sql_arg_isnull(&args, "conninfo"))
		PG_RETURN_INT32(create_capture(fcinfo));
	PG_TRY();
	{
		id = create_capture(fcinfo);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		edata->hide_stmt = true;
		ReThrowError(edata);
	}
	PG_END_TRY();
	PG_RETURN_INT32(id);
}

static WeirCaptureRow
capture_for_owner(FunctionCallInfo fcinfo)
{
	WeirCaptureRow row;
	char	   *name;

	weir_require_arg(fcinfo, 0, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!weir_catalog_capture_by_name(name, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("capture \"%s\" does not exist", name),
				 errhint("weir.captures lists the captures.")));
	if (!has_privs_of_role(GetUserId(), row.owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of capture \"%s\"", name)));
	return row;
}

/* weir.drop_capture(name text) */
PG_FUNCTION_INFO_V1(weir_drop_capture);
Datum
weir_drop_capture(PG_FUNCTION_ARGS)
{
	WeirCaptureRow row = capture_for_owner(fcinfo);

	weir_catalog_capture_delete(row.id);
	/* the launcher stops the worker and drops the slot */
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(weir_start_capture);
Datum
weir_start_capture(PG_FUNCTION_ARGS)
{
	WeirCaptureRow row = capture_for_owner(fcinfo);

	weir_capture_check_can_capture();
	weir_catalog_capture_set_enabled(row.id, true);
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(weir_stop_capture);
Datum
weir_stop_capture(PG_FUNCTION_ARGS)
{
	WeirCaptureRow row = capture_for_owner(fcinfo);

	weir_catalog_capture_set_enabled(row.id, false);
	weir_shmem_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

/*
 * weir._forget_captured_table(relid oid), from the sql_drop event trigger:
 * the capture goes on with its other tables; weir.captures says which was
 * dropped.  Changes made before the drop are still captured (decoding
 * reads them with the catalog as it was).
 */
PG_FUNCTION_INFO_V1(weir_forget_captured_table);
Datum
weir_forget_captured_table(PG_FUNCTION_ARGS)
{
	(void) weir_catalog_capture_table_dropped(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}
