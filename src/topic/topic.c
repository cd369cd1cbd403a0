/*-------------------------------------------------------------------------
 *
 * topic.c
 *	  Topics: weir.create_topic() and friends, the producer trigger, and a
 *	  backend-local cache of what a topic table is.
 *
 * A topic is an ordinary table (part int, pos bigint, user columns...,
 * PRIMARY KEY (part, pos)) with two triggers, both ENABLE ALWAYS so that
 * session_replication_role cannot bypass them:
 *	- weir_produce, BEFORE INSERT FOR EACH ROW: picks the partition (given in
 *	  column part, or a hash of the key column, or the producing backend's
 *	  own partition when there is no key) and takes a position
 *	  (partition.c).  Any pos given by the producer is replaced.
 *	- weir_append_only, BEFORE UPDATE OR DELETE OR TRUNCATE FOR EACH
 *	  STATEMENT: refuses them, except for retention (weir_catalog_trimming).
 *	  Readers rely on committed rows never changing, and crash recovery on
 *	  the newest row of a partition never disappearing.
 *
 * The catalog row in weir.topic is the truth about which tables are topics;
 * the cache is filled from it and flushed by relcache invalidations.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "base/settings.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog.h"
#include "topic/partition.h"
#include "topic/topic.h"

static HTAB *topic_cache = NULL;

static void
topic_cache_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	WeirTopic  *topic;

	hash_seq_init(&status, topic_cache);
	while ((topic = hash_seq_search(&status)) != NULL)
	{
		if (relid == InvalidOid || topic->relid == relid)
			topic->valid = false;
	}
}

static void
ensure_topic_cache(void)
{
	HASHCTL		ctl;

	if (topic_cache)
		return;
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(WeirTopic);
	ctl.hcxt = TopMemoryContext;
	topic_cache = hash_create("weir topics", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(topic_cache_invalidate, (Datum) 0);
}

static Oid
index_am(Oid index_oid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(index_oid));
	Oid			am = InvalidOid;

	if (HeapTupleIsValid(tup))
	{
		am = ((Form_pg_class) GETSTRUCT(tup))->relam;
		ReleaseSysCache(tup);
	}
	return am;
}

/*
 * A topic's rows are read and numbered by position with low-level scans
 * that take attribute 1 as the partition (int4) and 2 as the position
 * (int8), through a btree primary key on exactly those with the default
 * operator classes.  Its owner may ALTER it; a table no longer of that
 * shape is refused here, before any scan, rather than misread.
 */
static void
check_topic_shape(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			index_oid;
	HeapTuple	tup;
	bool		fits = false;

	if (rel->rd_rel->relkind != RELKIND_RELATION || desc->natts < 2 ||
		TupleDescAttr(desc, WEIR_TOPIC_PART_ATTNUM - 1)->attisdropped ||
		TupleDescAttr(desc, WEIR_TOPIC_PART_ATTNUM - 1)->atttypid != INT4OID ||
		TupleDescAttr(desc, WEIR_TOPIC_POS_ATTNUM - 1)->attisdropped ||
		TupleDescAttr(desc, WEIR_TOPIC_POS_ATTNUM - 1)->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("topic \"%s\" no longer has the shape of a topic",
						RelationGetRelationName(rel)),
				 errdetail("A topic is a table whose first two columns are part integer and pos bigint."),
				 errhint("Undo the change to the table, or recreate the topic with weir.create_topic().")));
	(void) RelationGetIndexList(rel);	/* makes rd_pkindex valid */
	index_oid = rel->rd_pkindex;
	tup = OidIsValid(index_oid) ?
		SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid)) : NULL;
	if (tup && HeapTupleIsValid(tup))
	{
		Form_pg_index index = (Form_pg_index) GETSTRUCT(tup);
		bool		isnull;
		oidvector  *classes = (oidvector *) DatumGetPointer(SysCacheGetAttr(INDEXRELID, tup,
																		  Anum_pg_index_indclass,
																		  &isnull));

		fits = !isnull && index->indnatts == 2 && index->indnkeyatts == 2 &&
			index->indkey.values[0] == WEIR_TOPIC_PART_ATTNUM &&
			index->indkey.values[1] == WEIR_TOPIC_POS_ATTNUM &&
			index_am(index_oid) == BTREE_AM_OID &&
			classes->values[0] == GetDefaultOpClass(INT4OID, BTREE_AM_OID) &&
			classes->values[1] == GetDefaultOpClass(INT8OID, BTREE_AM_OID) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL);
		ReleaseSysCache(tup);
	}
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("topic \"%s\" has no primary key on (part, pos)",
						RelationGetRelationName(rel)),
				 errhint("Undo the change to the table, or recreate the topic with weir.create_topic().")));
}

/*
 * What `rel` is as a topic, or NULL if it is not one.  The result lives in
 * TopMemoryContext until the next invalidation of the relation.
 */
WeirTopic *
weir_topic_lookup(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	WeirTopic  *topic;
	WeirTopicRow row;
	bool		found;

	ensure_topic_cache();
	topic = hash_search(topic_cache, &relid, HASH_FIND, NULL);
	if (topic && topic->valid)
		return topic;

	if (!weir_catalog_topic_by_relid(relid, &row))
	{
		if (topic)
			hash_search(topic_cache, &relid, HASH_REMOVE, NULL);
		return NULL;
	}

	check_topic_shape(rel);
	topic = hash_search(topic_cache, &relid, HASH_ENTER, &found);
	if (found && topic->slotnos && topic->partitions != row.partitions)
	{
		pfree(topic->slotnos);
		topic->slotnos = NULL;
	}
	else if (!found)
		topic->slotnos = NULL;
	topic->topic_id = row.id;
	topic->partitions = row.partitions;
	topic->key_attnum = InvalidAttrNumber;
	if (row.key_column)
	{
		Form_pg_attribute att;
		TypeCacheEntry *tce;

		topic->key_attnum = get_attnum(relid, row.key_column);
		if (topic->key_attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of topic \"%s\" does not exist",
							row.key_column, RelationGetRelationName(rel)),
					 errhint("Recreate the topic with weir.create_topic().")));
		att = TupleDescAttr(RelationGetDescr(rel), topic->key_attnum - 1);
		tce = lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
		if (!OidIsValid(tce->hash_extended_proc))
			elog(ERROR, "key type %u of topic %u has no extended hash function",
				 att->atttypid, relid);
		fmgr_info_copy(&topic->key_hash, &tce->hash_extended_proc_finfo,
					   TopMemoryContext);
		topic->key_collation = att->attcollation;
	}
	if (topic->slotnos == NULL)
	{
		topic->slotnos = MemoryContextAlloc(TopMemoryContext,
											sizeof(int) * row.partitions);
		for (int i = 0; i < row.partitions; i++)
			topic->slotnos[i] = -1;
	}
	topic->valid = true;
	return topic;
}

/* Like weir_topic_lookup(), but a table that is not a topic is an error. */
WeirTopic *
weir_topic_get(Relation rel)
{
	WeirTopic  *topic = weir_topic_lookup(rel);

	if (topic == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation \"%s\" is not a topic",
						RelationGetRelationName(rel)),
				 errhint("Create topics with weir.create_topic().")));
	return topic;
}

void
weir_topic_check_partition(WeirTopic *topic, Relation rel, int32 part)
{
	if (part < 0 || part >= topic->partitions)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d is out of range for topic \"%s\"",
						part, RelationGetRelationName(rel)),
				 errdetail_plural("The topic has %d partition, numbered 0 to %d.",
								  "The topic has %d partitions, numbered 0 to %d.",
								  topic->partitions,
								  topic->partitions, topic->partitions - 1)));
}

int
weir_topic_partition_slotno(WeirTopic *topic, Relation rel, int32 part)
{
	Assert(part >= 0 && part < topic->partitions);
	if (topic->slotnos[part] < 0)
		topic->slotnos[part] = weir_partition_slotno(topic->topic_id, part, rel);
	else
	{
		/* slot numbers are cached; a stale one is looked up again */
		WeirPartitionSlot *slot = weir_shmem_slot(topic->slotnos[part]);

		if (slot->dboid != MyDatabaseId || slot->topic_id != topic->topic_id ||
			slot->part != part)
			topic->slotnos[part] = weir_partition_slotno(topic->topic_id, part, rel);
	}
	return topic->slotnos[part];
}

/*
 * A consistent look at partition `part` of a topic (partition.c), for
 * readers and views: from its shared counter, or on a hot standby, where
 * counters are not used, from the table.
 */
void
weir_topic_partition_info(WeirTopic *topic, Relation rel, int32 part,
						  WeirPartitionInfo *info)
{
	if (RecoveryInProgress())
		weir_partition_info_in_recovery(rel, part, info);
	else
		weir_partition_info(weir_topic_partition_slotno(topic, rel, part), info);
}

/*
 * The partition a new row goes to: its own part value if given, else a hash
 * of its key (part left at its default, -1, or NULL), else the producing
 * backend's partition (rows of one producer
 * stay together, and its transaction registers on one partition only).
 */
static int32
choose_partition(WeirTopic *topic, Relation rel, HeapTuple tuple)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		isnull;
	Datum		value;

	value = heap_getattr(tuple, WEIR_TOPIC_PART_ATTNUM, desc, &isnull);
	if (!isnull && DatumGetInt32(value) != -1)
	{
		int32		part = DatumGetInt32(value);

		weir_topic_check_partition(topic, rel, part);
		return part;
	}
	if (topic->key_attnum != InvalidAttrNumber)
	{
		uint64		hash;

		value = heap_getattr(tuple, topic->key_attnum, desc, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column \"%s\" of topic \"%s\" must not be null",
							NameStr(TupleDescAttr(desc, topic->key_attnum - 1)->attname),
							RelationGetRelationName(rel)),
					 errhint("Give the row a key, or name its partition in column \"part\".")));
		hash = DatumGetUInt64(FunctionCall2Coll(&topic->key_hash,
												topic->key_collation,
												value, UInt64GetDatum(0)));
		return (int32) (hash % (uint64) topic->partitions);
	}
	return (int32) ((uint32) MyProcPid % (uint32) topic->partitions);
}

/*
 * Write part and pos into a tuple in place, when it holds both as non-null
 * values (the columns default to -1 and 0, so rows from INSERT and COPY do).
 * They are the first two attributes, int4 at offset 0 and int8 at the next
 * 8-byte boundary, whatever follows; re-forming the whole tuple per row
 * would cost a deform and a form.  The executor materialized trigtuple for
 * us and will deform it afresh (ExecFetchSlotHeapTuple resets tts_nvalid).
 */
static bool
set_position_in_place(HeapTuple tuple, int32 part, int64 pos)
{
	HeapTupleHeader header = tuple->t_data;
	char	   *data;

	if (HeapTupleHasNulls(tuple) &&
		(att_isnull(WEIR_TOPIC_PART_ATTNUM - 1, header->t_bits) ||
		 att_isnull(WEIR_TOPIC_POS_ATTNUM - 1, header->t_bits)))
		return false;
	data = (char *) header + header->t_hoff;
	*(int32 *) data = part;
	*(int64 *) (data + sizeof(int64)) = pos;
	return true;
}

/* BEFORE INSERT FOR EACH ROW trigger of every topic table. */
PG_FUNCTION_INFO_V1(weir_produce);
Datum
weir_produce(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	static WeirTopic *last_topic = NULL;	/* rows come in runs */
	Relation	rel;
	HeapTuple	tuple;
	WeirTopic  *topic;
	int32		part;
	int64		pos;
	int			cols[2] = {WEIR_TOPIC_PART_ATTNUM, WEIR_TOPIC_POS_ATTNUM};
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "weir_produce must be fired BEFORE INSERT FOR EACH ROW");

	rel = trigdata->tg_relation;
	tuple = trigdata->tg_trigtuple;
	if (last_topic && last_topic->valid && last_topic->relid == RelationGetRelid(rel))
		topic = last_topic;
	else
		topic = last_topic = weir_topic_get(rel);
	part = choose_partition(topic, rel, tuple);
	pos = weir_partition_take_position(weir_topic_partition_slotno(topic, rel, part));

	if (set_position_in_place(tuple, part, pos))
		return PointerGetDatum(tuple);
	values[0] = Int32GetDatum(part);
	values[1] = Int64GetDatum(pos);
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel),
													 2, cols, values, nulls));
}

/* BEFORE UPDATE OR DELETE OR TRUNCATE FOR EACH STATEMENT trigger. */
PG_FUNCTION_INFO_V1(weir_append_only);
Datum
weir_append_only(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const char *what;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "weir_append_only must be fired as a trigger");
	if (weir_catalog_trimming &&
		TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		return PointerGetDatum(NULL);

	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		what = "update";
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		what = "delete from";
	else
		what = "truncate";
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s topic \"%s\"", what,
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("Topics are append-only: consumers rely on committed rows never changing."),
			 errhint("Rows leave a topic through its retention (weir.alter_topic_retention) or with weir.drop_topic().")));
	return PointerGetDatum(NULL);
}

/*
 * Check the column list of weir.create_topic(): it must parse as the column
 * list of one plain CREATE TABLE, with types that exist and without names
 * weir reserves.  Returns the list of column names.
 */
static List *
check_columns(const char *columns)
{
	StringInfoData sql;
	List	   *raw;
	CreateStmt *stmt;
	List	   *names = NIL;
	ListCell   *lc;
	MemoryContext oldcxt = CurrentMemoryContext;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE weir_topic_columns (%s\n)", columns);
	PG_TRY();
	{
		raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("invalid column list for topic: %s", edata->message),
				 errdetail("Columns are given as in CREATE TABLE, for example 'customer int, amount numeric'.")));
	}
	PG_END_TRY();

	if (list_length(raw) != 1 ||
		!IsA(linitial_node(RawStmt, raw)->stmt, CreateStmt))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("invalid column list for topic"),
				 errdetail("Columns are given as in CREATE TABLE, for example 'customer int, amount numeric'.")));
	stmt = (CreateStmt *) linitial_node(RawStmt, raw)->stmt;
	if (stmt->inhRelations || stmt->partbound || stmt->partspec ||
		stmt->ofTypename || stmt->options || stmt->tablespacename ||
		stmt->accessMethod || stmt->oncommit != ONCOMMIT_NOOP)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("invalid column list for topic"),
				 errdetail("Only column definitions and CHECK constraints are allowed.")));
	if (stmt->tableElts == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a topic needs at least one column"),
				 errhint("Give columns as in CREATE TABLE, for example 'customer int, amount numeric'.")));

	foreach(lc, stmt->tableElts)
	{
		Node	   *elt = lfirst(lc);
		ColumnDef  *col;
		ListCell   *lc2;
		Type		type;

		if (IsA(elt, Constraint) && ((Constraint *) elt)->contype == CONSTR_CHECK)
			continue;
		if (!IsA(elt, ColumnDef))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("topic columns support only column definitions and CHECK constraints"),
					 errhint("Keys and unique constraints do not fit an append-only topic; use the key argument to route rows.")));
		col = (ColumnDef *) elt;
		if (strcmp(col->colname, "part") == 0 || strcmp(col->colname, "pos") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column name \"%s\" is reserved in topics", col->colname),
					 errdetail("weir adds the columns \"part\" and \"pos\" to every topic."),
					 errhint("Rename the column.")));
		foreach(lc2, col->constraints)
		{
			ConstrType	t = lfirst_node(Constraint, lc2)->contype;

			if (t != CONSTR_NOTNULL && t != CONSTR_NULL && t != CONSTR_DEFAULT &&
				t != CONSTR_CHECK)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("column \"%s\" of a topic can only have NOT NULL, DEFAULT and CHECK constraints",
								col->colname),
						 errhint("Keys and unique constraints do not fit an append-only topic; use the key argument to route rows.")));
		}
		type = LookupTypeName(NULL, col->typeName, NULL, false);
		if (type == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("type \"%s\" of column \"%s\" does not exist",
							TypeNameToString(col->typeName), col->colname),
					 errhint("Topic columns take any type known to the database: check its spelling, its schema and search_path.")));
		ReleaseSysCache(type);
		names = lappend(names, col->colname);
	}
	return names;
}

static bool
string_in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	}
	return false;
}

static void
check_retention(Interval *retention)
{
	if (retention && (retention->month < 0 || retention->day < 0 ||
					  retention->time < 0 ||
					  (retention->month == 0 && retention->day == 0 &&
					   retention->time == 0)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be a positive interval"),
				 errhint("Pass NULL to keep rows forever.")));
}

/*
 * weir.create_topic(name text, columns text, partitions int, key text,
 *					 retention interval) RETURNS regclass
 */
PG_FUNCTION_INFO_V1(weir_create_topic);
Datum
weir_create_topic(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *columns;
	int32		partitions;
	char	   *key = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	Interval   *retention = PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4);
	RangeVar   *rv;
	List	   *colnames;
	Oid			relid;
	Relation	rel;
	int32		topic_id;

	(void) weir_shmem();		/* topics need weir's shared memory */

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name, columns and partitions of a topic must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	columns = text_to_cstring(PG_GETARG_TEXT_PP(1));
	partitions = PG_GETARG_INT32(2);

	if (partitions < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a topic needs at least one partition"),
				 errdetail("The topic was asked to have %d partitions.", partitions)));
	if (partitions > weir_max_partitions)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a topic cannot have more than %d partitions", weir_max_partitions),
				 errhint("Raise weir.max_partitions and restart the server.")));
	check_retention(retention);

	rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	(void) RangeVarGetCreationNamespace(rv);	/* the schema must exist */
	if (OidIsValid(RangeVarGetRelid(rv, NoLock, true)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", name),
				 errhint("Choose another name for the topic, or drop the existing relation first.")));
	colnames = check_columns(columns);
	if (key && !string_in_list(colnames, key))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("key column \"%s\" is not a column of the topic", key),
				 errhint("Name one of the columns given in columns; names are case-sensitive as stored (unquoted names are lower case).")));

	weir_catalog_create_topic_table(quote_qualified_identifier(rv->schemaname, rv->relname),
									columns);
	relid = RangeVarGetRelid(rv, AccessExclusiveLock, false);

	if (key)
	{
		AttrNumber	attnum = get_attnum(relid, key);
		TypeCacheEntry *tce = lookup_type_cache(get_atttype(relid, attnum),
												TYPECACHE_HASH_EXTENDED_PROC);

		if (!OidIsValid(tce->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" of type %s cannot be hashed", key,
							format_type_be(get_atttype(relid, attnum))),
					 errhint("Choose a key column of a type with a hash operator class, or name partitions explicitly.")));
	}

	topic_id = weir_catalog_topic_insert(relid, partitions, key, retention);
	if (weir_preloaded)
		weir_partition_forget_stale_topic(topic_id);

	/* warm the cache and check the result is the topic we meant */
	rel = table_open(relid, NoLock);
	(void) weir_topic_get(rel);
	table_close(rel, NoLock);

	PG_RETURN_OID(relid);
}

static WeirTopicRow
topic_row_for_owner(Oid relid)
{
	WeirTopicRow row;

	if (!weir_catalog_topic_by_relid(relid, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation \"%s\" is not a topic", get_rel_name(relid)),
				 errhint("Create topics with weir.create_topic().")));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	return row;
}

/* A capture's topic goes after its capture. */
static void
refuse_if_captured_into(Oid relid)
{
	char	   *capture = weir_catalog_capture_writing(relid);

	if (capture)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop a topic that capture \"%s\" writes", capture),
				 errhint("Drop the capture first with weir.drop_capture().")));
}

/* weir.drop_topic(topic regclass) */
PG_FUNCTION_INFO_V1(weir_drop_topic);
Datum
weir_drop_topic(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *reader;

	weir_require_arg(fcinfo, 0, "topic");
	relid = PG_GETARG_OID(0);
	(void) topic_row_for_owner(relid);
	reader = weir_catalog_pipeline_reading(relid);
	if (reader)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop topic \"%s\" because pipeline \"%s\" reads or writes it",
						get_rel_name(relid), reader),
				 errhint("Drop the pipeline first with weir.drop_pipeline().")));
	refuse_if_captured_into(relid);
	/* the sql_drop event trigger forgets the topic (weir_forget_topic) */
	weir_catalog_drop_table(relid);
	PG_RETURN_VOID();
}

/* weir.alter_topic_retention(topic regclass, retention interval) */
PG_FUNCTION_INFO_V1(weir_alter_topic_retention);
Datum
weir_alter_topic_retention(PG_FUNCTION_ARGS)
{
	Interval   *retention = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);
	Oid			relid;

	weir_require_arg(fcinfo, 0, "topic");
	relid = PG_GETARG_OID(0);
	check_retention(retention);
	(void) topic_row_for_owner(relid);
	weir_catalog_topic_set_retention(relid, retention);
	PG_RETURN_VOID();
}

/*
 * weir._forget_topic(relid oid), called by the sql_drop event trigger for
 * every dropped table: a table a pipeline reads (its topic) or writes (its
 * sink, its late records) cannot go; a topic's catalog rows are deleted
 * (consumers and time index go by cascade) and its partition slots are
 * freed at commit.
 */
PG_FUNCTION_INFO_V1(weir_forget_topic);
Datum
weir_forget_topic(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *reader = weir_catalog_pipeline_reading(relid);
	int32		topic_id;

	if (reader)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop a table that pipeline \"%s\" reads or writes", reader),
				 errhint("Drop the pipeline first with weir.drop_pipeline().")));
	refuse_if_captured_into(relid);
	topic_id = weir_catalog_topic_delete(relid);

	if (topic_id > 0 && weir_preloaded)
		weir_partition_forget_topic_at_commit(topic_id);
	PG_RETURN_VOID();
}

/*
 * AFTER INSERT FOR EACH ROW trigger of weir.topic.  A topic's partition
 * slots are found by database and topic id; its positions are rebuilt from
 * the table by the first user of a free slot.  weir.create_topic frees the
 * slots a dropped topic of the same id left, and so must a restore, which
 * inserts weir.topic's rows itself: pg_restore --clean into the same
 * database (DROP EXTENSION weir leaves the slots of its topics, and the
 * restored topics have their ids) would otherwise hand out positions from
 * the old counters, which may be below the restored rows'.
 */
PG_FUNCTION_INFO_V1(weir_topic_row_added);
Datum
weir_topic_row_added(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	bool		isnull;
	Datum		id;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "weir_topic_row_added must be fired AFTER INSERT FOR EACH ROW");
	id = heap_getattr(trigdata->tg_trigtuple, 1,
					  RelationGetDescr(trigdata->tg_relation), &isnull);
	if (!isnull && weir_preloaded)
		weir_partition_forget_stale_topic(DatumGetInt32(id));
	return PointerGetDatum(NULL);
}
