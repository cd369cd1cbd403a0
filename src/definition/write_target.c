/*-------------------------------------------------------------------------
 *
 * write_target.c
 *	  The tables a pipeline reads and writes for its owner, checked the same
 *	  way when it is created and each time its worker starts, and held in
 *	  shape by dependencies of its definition.
 *
 * A pipeline writes with its owner's rights into its sink (a table, or a
 * topic that chains pipelines) and its late-records table; it reads its
 * sources with low-level scans.  Each of those is a table a user controls,
 * so before any row moves:
 *	- sources: still topics of weir's shape, readable by the owner, and no
 *	  row-level security that applies to the owner (the scans would bypass
 *	  it: refused, as weir.read and weir.poll refuse);
 *	- written tables: plain or partitioned tables, not temporary, not in a
 *	  system or weir schema, not a source of the pipeline; every column weir
 *	  writes present with its type, every other column nullable or with a
 *	  default; the owner holds the privileges the writes need; a sink whose
 *	  rows are updated in place has an immediate unique index whose columns
 *	  are exactly its key.
 * Errors here are permanent for the worker (worker.c disables the pipeline
 * with the error as its status), so each says what to change.
 *
 * weir_depend_on_tables makes the definition's _RETURN rule depend on each
 * sink column weir writes, on the late-records table as a whole (a join's:
 * and on each of its columns, which do not follow a topic), on the
 * sources' part and pos columns and on their primary key: PostgreSQL then refuses ALTER COLUMN ... TYPE and DROP of
 * those ("used by a view or rule"), or drops the pipeline with CASCADE,
 * exactly as for a view's own columns.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/write_target.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "rewrite/rewriteSupport.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"
#include "definition/write_target.h"
#include "topic/topic.h"

static const char *
relname(Oid relid)
{
	char	   *name = get_rel_name(relid);

	return name ? name : "(dropped)";
}

/* Schemas whose tables weir never writes for a user. */
static bool
protected_namespace(Oid nsp)
{
	static const char *const weir_schemas[] = {"weir", "weir_pipelines", "information_schema"};

	if (IsCatalogNamespace(nsp) || IsToastNamespace(nsp))
		return true;
	for (int i = 0; i < lengthof(weir_schemas); i++)
		if (get_namespace_oid(weir_schemas[i], true) == nsp)
			return true;
	return false;
}

/*
 * No row-level security may apply to the owner on a table weir reads with
 * low-level scans (sources) or bulk-writes past the executor.
 */
static void
check_no_rls(Oid relid, Oid owner, const char *what)
{
	if (check_enable_rls(relid, owner, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s \"%s\" has row-level security enabled", what, relname(relid)),
				 errdetail("A pipeline reads every row of its sources; it cannot apply the policies of its owner."),
				 errhint("Disable row-level security on the topic, or have its owner (to whom it does not apply) own the pipeline.")));
}

void
weir_check_source(Oid source, Oid owner)
{
	Relation	rel = try_relation_open(source, AccessShareLock);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the source of the pipeline no longer exists")));
	(void) weir_topic_get(rel);
	table_close(rel, AccessShareLock);
	if (pg_class_aclcheck(source, owner, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read topic \"%s\"", relname(source)),
				 errhint("A pipeline reads with its owner's privileges.")));
	check_no_rls(source, owner, "topic");
}

/* What every table weir writes for a user must be, whatever its role. */
static void
check_table_kind(Relation rel, WeirPipelineRow *row, const char *what)
{
	Oid			relid = RelationGetRelid(rel);
	char		relkind = rel->rd_rel->relkind;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s \"%s\" is not a table", what, RelationGetRelationName(rel)),
				 errhint("Name a table, or a table that does not exist for weir to create.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s \"%s\" is a temporary table", what, RelationGetRelationName(rel)),
				 errdetail("The pipeline's worker writes from a session of its own, which cannot see it."),
				 errhint("Use a permanent or unlogged table.")));
	if (protected_namespace(RelationGetNamespace(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s \"%s\" is in schema \"%s\", which weir does not write for users",
						what, RelationGetRelationName(rel),
						get_namespace_name(RelationGetNamespace(rel))),
				 errhint("Use a table in a schema of your own.")));
	if (relid == row->source || relid == row->right_source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a pipeline cannot write to its own source"),
				 errhint("Chain pipelines through a second topic.")));
}

/*
 * Every live column that is not written (written[attnum - 1] false) can be
 * left out of an INSERT: nullable, or with a default, identity or
 * generated value.
 */
static void
check_other_columns(Relation rel, const bool *written, const char *what)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped || written[a])
			continue;
		if (att->attnotnull && !att->atthasdef && !att->attidentity && !att->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("column \"%s\" of %s \"%s\" is NOT NULL without a default, and weir does not write it",
							NameStr(att->attname), what, RelationGetRelationName(rel)),
					 errhint("Give the column a default, or make it nullable.")));
	}
}

/* The column `name` of `rel`, of type `type`; marks it written. */
static AttrNumber
written_column(Relation rel, const char *name, Oid type, bool *written, const char *what)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), name);
	Oid			has;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s \"%s\" has no column \"%s\"", what, RelationGetRelationName(rel), name),
				 errhint("Let weir create the table (name a table that does not exist), or add the column.")));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("%s \"%s\" has no user column \"%s\"", what, RelationGetRelationName(rel), name)));
	has = TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid;
	if (has != type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s \"%s\" has type %s, the pipeline writes %s",
						name, what, RelationGetRelationName(rel), format_type_be(has),
						format_type_be(type))));
	if (TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attgenerated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("column \"%s\" of %s \"%s\" is generated", name, what,
						RelationGetRelationName(rel)),
				 errhint("weir writes this column; it cannot be generated.")));
	written[attnum - 1] = true;
	return attnum;
}

/*
 * Whether `rel` has an immediate, valid, total unique index on plain
 * columns whose key columns are exactly the sink's key columns (what ON
 * CONFLICT and the bulk path need), each once.
 */
static bool
has_key_index(Relation rel, WeirPlan *plan)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;
	int			nkey = plan->nsinkkey;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		fits;

		if (!HeapTupleIsValid(tup))
			continue;
		index = (Form_pg_index) GETSTRUCT(tup);
		fits = index->indisunique && index->indimmediate && index->indisvalid &&
			index->indnkeyatts == nkey &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL);
		/* nkey distinct key columns, each among the index's nkey columns */
		for (int i = 0; fits && i < nkey; i++)
		{
			AttrNumber	attnum = get_attnum(RelationGetRelid(rel), plan->sinkcols[i].name);
			bool		in_index = false;

			for (int k = 0; k < nkey; k++)
				if (index->indkey.values[k] == attnum)
					in_index = true;
			fits = in_index;
		}
		ReleaseSysCache(tup);
		if (fits)
			found = true;
	}
	list_free(indexes);
	return found;
}

/*
 * A topic as sink chains pipelines: the worker INSERTs each row into it in
 * the checkpoint transaction, through the topic's producer trigger, so the
 * next pipeline reads it only once that commits.  A topic is append-only,
 * so a window must emit exactly one row: emit 'final', no allowed lateness,
 * and no session windows (whose rows move).  Records kept by dedup are
 * emitted once each.
 */
static void
check_topic_sink(WeirPlan *plan, Relation rel, WeirPipelineRow *row, Oid owner)
{
	if (plan->op == WEIR_OP_LAST_VALUE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a last value cannot write to a topic"),
				 errdetail("Topics are append-only; a key's row is replaced each time it changes."),
				 errhint("Use a table as sink.")));
	if (plan->op == WEIR_OP_WINDOW &&
		(strcmp(row->emit, "final") != 0 ||
		 weir_interval_usecs(&row->allowed_lateness, "allowed_lateness") != 0 ||
		 plan->windowing.kind == WEIR_WINDOW_SESSION))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a topic sink takes exactly one row per window"),
				 errdetail("Topics are append-only; late updates, emit 'updates' and session windows would change rows already written."),
				 errhint("Use emit 'final', no allowed_lateness and tumbling or hopping windows, or a table as sink.")));
	if (pg_class_aclcheck(RelationGetRelid(rel), owner, ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to produce to topic \"%s\"", RelationGetRelationName(rel)),
				 errhint("The pipeline writes with its owner's privileges, which need INSERT on the topic.")));
}

static void
check_sink_privileges(WeirPlan *plan, Relation rel, Oid owner)
{
	AclMode		needed = ACL_INSERT;

	if (plan->nsinkkey > 0)
		needed |= ACL_UPDATE;
	if ((plan->op == WEIR_OP_WINDOW && plan->windowing.kind == WEIR_WINDOW_SESSION) ||
		(plan->op == WEIR_OP_LAST_VALUE && plan->retention > 0))
		needed |= ACL_DELETE;
	if (pg_class_aclcheck(RelationGetRelid(rel), owner, needed) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write to sink \"%s\"", RelationGetRelationName(rel)),
				 errhint(plan->op == WEIR_OP_WINDOW ?
						 "The pipeline writes with its owner's privileges, which need INSERT and UPDATE on the sink (and DELETE for session windows, whose rows move when sessions merge)." :
						 plan->op == WEIR_OP_LAST_VALUE ?
						 "The pipeline writes with its owner's privileges, which need INSERT and UPDATE on the sink (and DELETE with a ttl, whose expired keys lose their rows)." :
						 "The pipeline writes with its owner's privileges, which need INSERT on the sink.")));
}

/*
 * A checkpoint column is a column of its own, not one the pipeline writes
 * its results to.
 */
void
weir_check_checkpoint_column_name(WeirPlan *plan, const char *name)
{
	for (int i = 0; i < plan->nsinkcols; i++)
		if (strcmp(plan->sinkcols[i].name, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("checkpoint_column \"%s\" is a column of the pipeline's results", name),
					 errhint("Name another column, of type bigint, for the checkpoint ids.")));
}

/*
 * The sink's checkpoint column (row->checkpoint_column): there, bigint,
 * not generated; marks it written.
 */
static void
check_checkpoint_column(WeirPlan *plan, Relation rel, const char *name, bool *written)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), name);
	Form_pg_attribute att;

	weir_check_checkpoint_column_name(plan, name);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("sink \"%s\" has no column \"%s\" for the checkpoint ids",
						RelationGetRelationName(rel), name),
				 errhint("Add it (ALTER TABLE %s ADD COLUMN %s bigint), or let weir create the sink.",
						 quote_identifier(RelationGetRelationName(rel)), quote_identifier(name))));
	att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	if (att->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("checkpoint column \"%s\" of sink \"%s\" has type %s, not bigint",
						name, RelationGetRelationName(rel), format_type_be(att->atttypid)),
				 errhint("Checkpoint ids are bigint: change the column's type, or name another column.")));
	if (att->attgenerated)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("column \"%s\" of sink \"%s\" is generated", name,
						RelationGetRelationName(rel)),
				 errhint("weir writes the checkpoint column; it cannot be generated.")));
	written[attnum - 1] = true;
}

void
weir_check_sink(WeirPlan *plan, WeirPipelineRow *row, Oid sink, Oid owner)
{
	Relation	rel = try_relation_open(sink, AccessShareLock);
	bool	   *written;
	bool		is_topic;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the sink of pipeline \"%s\" no longer exists", row->name)));
	check_table_kind(rel, row, "sink");
	written = palloc0(sizeof(bool) * Max(RelationGetDescr(rel)->natts, 1));
	is_topic = weir_topic_lookup(rel) != NULL;
	if (is_topic)
	{
		/* the producer trigger numbers the rows */
		written[WEIR_TOPIC_PART_ATTNUM - 1] = true;
		written[WEIR_TOPIC_POS_ATTNUM - 1] = true;
	}
	for (int i = 0; i < plan->nsinkcols; i++)
		(void) written_column(rel, plan->sinkcols[i].name, plan->sinkcols[i].type, written, "sink");
	if (row->checkpoint_column)
		check_checkpoint_column(plan, rel, row->checkpoint_column, written);
	check_other_columns(rel, written, "sink");
	if (is_topic)
		check_topic_sink(plan, rel, row, owner);
	else
	{
		if (plan->nsinkkey > 0 && !has_key_index(rel, plan))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg(plan->op == WEIR_OP_WINDOW ?
							"sink \"%s\" has no unique key on its key columns and window_start" :
							"sink \"%s\" has no unique key on its key columns",
							RelationGetRelationName(rel)),
					 errdetail("Rows already in the sink are updated in place, which needs that key; partial, deferrable and expression indexes do not count."),
					 errhint("Add a primary key, or let weir create the sink.")));
		check_sink_privileges(plan, rel, owner);
	}
	table_close(rel, AccessShareLock);
}

/*
 * A join's late-records table, one for both topics, whose columns differ:
 * which topic, the record's partition and position in it, the record as
 * JSON, then watermark and received_at as for the other kinds.
 */
typedef struct LateColumn
{
	const char *name;
	Oid			type;
	const char *declared;		/* as weir creates it */
} LateColumn;

static const LateColumn join_late_columns[] = {
	{"source", REGCLASSOID, "regclass NOT NULL"},
	{"part", INT4OID, "integer NOT NULL"},
	{"pos", INT8OID, "bigint NOT NULL"},
	{"record", JSONBOID, "jsonb NOT NULL"},
	{"watermark", TIMESTAMPTZOID, "timestamptz"},
	{"received_at", TIMESTAMPTZOID, "timestamptz"},
};

/* Whether `row`'s late records go to a table of the join's shape. */
static bool
late_records_as_json(const WeirPipelineRow *row)
{
	return OidIsValid(row->right_source);
}

/*
 * CREATE TABLE text of the late-records table `qualified` of `row`: the
 * source's columns (LIKE it) then watermark and received_at; a join's,
 * join_late_columns.
 */
char *
weir_late_records_definition(const WeirPipelineRow *row, const char *qualified)
{
	StringInfoData sql;

	initStringInfo(&sql);
	if (!late_records_as_json(row))
	{
		appendStringInfo(&sql, "CREATE TABLE %s (LIKE %s, watermark timestamptz, received_at timestamptz)",
						 qualified,
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(row->source)),
													get_rel_name(row->source)));
		return sql.data;
	}
	appendStringInfo(&sql, "CREATE TABLE %s (", qualified);
	for (int i = 0; i < lengthof(join_late_columns); i++)
		appendStringInfo(&sql, "%s%s %s", i > 0 ? ", " : "", join_late_columns[i].name,
						 join_late_columns[i].declared);
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

/*
 * The late-records table: each column of the source (same name and type),
 * then watermark and received_at (timestamptz); a join's has
 * join_late_columns instead.  weir_catalog_write_late names them.
 */
void
weir_check_late_records(WeirPipelineRow *row, Oid late, Oid owner)
{
	Relation	rel = try_relation_open(late, AccessShareLock);
	Relation	source;
	TupleDesc	desc;
	bool	   *written;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the late-records table of pipeline \"%s\" no longer exists", row->name)));
	check_table_kind(rel, row, "late-records table");
	if (late == row->sink)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("a pipeline's late records cannot go to its sink"),
				 errhint("Name another table for late_records, or one that does not exist.")));
	written = palloc0(sizeof(bool) * Max(RelationGetDescr(rel)->natts, 1));
	if (late_records_as_json(row))
	{
		for (int i = 0; i < lengthof(join_late_columns); i++)
			(void) written_column(rel, join_late_columns[i].name, join_late_columns[i].type,
								  written, "late-records table");
	}
	else
	{
		source = table_open(row->source, AccessShareLock);
		desc = RelationGetDescr(source);
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (!att->attisdropped)
				(void) written_column(rel, NameStr(att->attname), att->atttypid, written,
									  "late-records table");
		}
		table_close(source, AccessShareLock);
		(void) written_column(rel, "watermark", TIMESTAMPTZOID, written, "late-records table");
		(void) written_column(rel, "received_at", TIMESTAMPTZOID, written, "late-records table");
	}
	check_other_columns(rel, written, "late-records table");
	if (pg_class_aclcheck(late, owner, ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to write to late-records table \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("The pipeline writes with its owner's privileges, which need INSERT on it.")));
	table_close(rel, AccessShareLock);
}

/* Every check, as at a worker's start. */
void
weir_check_tables(WeirPlan *plan, WeirPipelineRow *row, Oid owner)
{
	weir_check_source(row->source, owner);
	if (OidIsValid(row->right_source))
		weir_check_source(row->right_source, owner);
	/* a remote sink (sink_remote.c) is checked by its writes there */
	if (OidIsValid(row->sink))
		weir_check_sink(plan, row, row->sink, owner);
	if (OidIsValid(row->late_records))
		weir_check_late_records(row, row->late_records, owner);
}

/* The definition's rule depends on column `attnum` of `relid` (0: the relation). */
static void
depend(const ObjectAddress *rule, Oid relid, AttrNumber attnum)
{
	ObjectAddress referenced;

	ObjectAddressSubSet(referenced, RelationRelationId, relid, attnum);
	recordDependencyOn(rule, &referenced, DEPENDENCY_NORMAL);
}

static void
depend_on_columns(const ObjectAddress *rule, Oid relid, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
	{
		AttrNumber	attnum = get_attnum(relid, names[i]);

		if (attnum > 0)
			depend(rule, relid, attnum);
	}
}

static void
depend_on_source(const ObjectAddress *rule, Oid source)
{
	Relation	rel = table_open(source, AccessShareLock);

	depend(rule, source, WEIR_TOPIC_PART_ATTNUM);
	depend(rule, source, WEIR_TOPIC_POS_ATTNUM);
	(void) RelationGetIndexList(rel);	/* makes rd_pkindex valid */
	if (OidIsValid(rel->rd_pkindex))
		depend(rule, rel->rd_pkindex, 0);
	table_close(rel, AccessShareLock);
}

/*
 * Record what the definition view `view` needs of the tables around it
 * (the header comment says why).  After the checks above.
 */
void
weir_depend_on_tables(Oid view, WeirPlan *plan, WeirPipelineRow *row)
{
	ObjectAddress rule;
	const char **names = palloc(sizeof(char *) * Max(plan->nsinkcols, 1));

	ObjectAddressSet(rule, RewriteRelationId, get_rewrite_oid(view, ViewSelectRuleName, false));
	depend_on_source(&rule, row->source);
	if (OidIsValid(row->right_source))
		depend_on_source(&rule, row->right_source);
	for (int i = 0; i < plan->nsinkcols; i++)
		names[i] = plan->sinkcols[i].name;
	if (OidIsValid(row->sink))
	{
		depend(&rule, row->sink, 0);
		depend_on_columns(&rule, row->sink, names, plan->nsinkcols);
		if (row->checkpoint_column)
			depend_on_columns(&rule, row->sink,
							  (const char *const *) &row->checkpoint_column, 1);
	}
	/*
	 * The late-records table mirrors every column of the topic, including
	 * those no definition uses, which may change: its columns are left free
	 * to follow them, and the checks (at start, on a change, before a
	 * write is blamed on a row) stop the pipeline while they differ.  A
	 * join's has columns of its own, which stay as a sink's do.
	 */
	if (OidIsValid(row->late_records))
	{
		depend(&rule, row->late_records, 0);
		if (late_records_as_json(row))
			for (int i = 0; i < lengthof(join_late_columns); i++)
				depend_on_columns(&rule, row->late_records, &join_late_columns[i].name, 1);
	}
}

/*
 * The sink as CREATE TABLE text: its columns and unique key.  A window
 * sink's key is (window_start, keys...): windows fire in the order of
 * time, so each checkpoint's new rows land at the right edge of that index
 * (PostgreSQL's rightmost-leaf fast path, pages filled), where with the
 * keys first they would land beside each key's earlier rows all over it,
 * splitting pages (a backlog's checkpoints took 1.9 us a row instead of
 * 1.2).  Lookups by key want an index of their own.
 */
char *
weir_sink_definition(WeirPlan *plan, const char *qualified)
{
	StringInfoData sql;
	int		   *keycol = palloc(sizeof(int) * Max(plan->nsinkkey, 1));

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", qualified);
	for (int i = 0; i < plan->nsinkcols; i++)
		appendStringInfo(&sql, "%s%s %s%s", i > 0 ? ", " : "",
						 quote_identifier(plan->sinkcols[i].name),
						 format_type_with_typemod(plan->sinkcols[i].type, plan->sinkcols[i].typmod),
						 plan->sinkcols[i].nullable ? "" : " NOT NULL");
	for (int i = 0; i < plan->nsinkkey; i++)
		keycol[i] = i;
	if (plan->op == WEIR_OP_WINDOW)
	{
		/* sink columns: keys..., window_start, ... */
		keycol[0] = plan->nkeys;
		for (int i = 0; i < plan->nkeys; i++)
			keycol[i + 1] = i;
	}
	for (int i = 0; i < plan->nsinkkey; i++)
		appendStringInfo(&sql, "%s%s", i == 0 ? ", PRIMARY KEY (" : ", ",
						 quote_identifier(plan->sinkcols[keycol[i]].name));
	appendStringInfoString(&sql, plan->nsinkkey > 0 ? "))" : ")");
	return sql.data;
}
