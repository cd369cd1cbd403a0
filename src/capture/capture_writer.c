/*-------------------------------------------------------------------------
 *
 * capture_writer.c
 *	  Appending captured changes to their topics, in the capture's
 *	  transaction.
 *
 * Each change becomes one topic row.  A topic as weir made it (no trigger
 * but weir's own, no row security, no CHECK constraint, NOT NULL only where
 * a change always has a value) gets its rows in batches, as COPY writes: the
 * writer takes each row's position itself (what the topic's BEFORE trigger
 * would do), then table_multi_insert and the index entries, a batch at a
 * time.  Any other topic (its owner added a trigger or a constraint) goes
 * through the executor's single-row insert (ExecSimpleRelationInsert, as
 * logical replication applies rows), so that the trigger fires and the
 * constraint holds.  The caller acts as the capture's owner.  The partition is a hash of the
 * row's key columns (the table's replica identity), so that all changes
 * of one row are in one partition, in commit order; a table without a key
 * writes partition 0.  A truncate is one row in every partition, so that
 * every reader of a partition sees it in order with that partition's rows.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/timestamp.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "capture/capture_writer.h"
#include "topic/partition.h"
#include "topic/topic.h"
#include "topic/topic_table.h"

static AttrNumber
topic_column(Relation rel, const char *name, Oid type, const char *table)
{
	AttrNumber	attnum = attnameAttNum(rel, name, false);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("topic \"%s\" of captured table \"%s\" has no column \"%s\"",
						RelationGetRelationName(rel), table, name),
				 errhint("Undo the change to the topic, or drop the capture and create it again.")));
	if (OidIsValid(type) && TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid != type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of topic \"%s\" is not of type %s",
						name, RelationGetRelationName(rel), format_type_be(type)),
				 errhint("Undo the change to the topic, or drop the capture and create it again.")));
	return attnum;
}

/*
 * Whether the topic's rows may skip the executor: it has only weir's own
 * triggers, no row security, no CHECK constraint and no generated column,
 * and NOT NULL only on part, pos and the change's own columns.
 */
static bool
may_batch(WeirCaptureTarget *t, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relrowsecurity)
		return false;
	if (desc->constr && (desc->constr->num_check > 0 || desc->constr->has_generated_stored))
		return false;
	if (rel->trigdesc)
		for (int i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			const char *name = rel->trigdesc->triggers[i].tgname;

			if (strcmp(name, "weir_produce") != 0 && strcmp(name, "weir_append_only") != 0)
				return false;
		}
	for (int a = 1; a <= desc->natts; a++)
		if (TupleDescAttr(desc, a - 1)->attnotnull &&
			a != WEIR_TOPIC_PART_ATTNUM && a != WEIR_TOPIC_POS_ATTNUM &&
			a != t->op_attnum && a != t->lsn_attnum && a != t->time_attnum)
			return false;
	return true;
}

/* Write a batched topic's pending rows: heap, then index entries. */
static void
flush_pending(WeirCaptureWriter *w, WeirCaptureTarget *t)
{
	if (t->npending == 0)
		return;
	table_multi_insert(t->rel, t->pending, t->npending, w->estate->es_output_cid, 0,
					   t->bistate);
	if (t->rri->ri_NumIndices > 0)
		for (int i = 0; i < t->npending; i++)
		{
			list_free(ExecInsertIndexTuples(t->rri, t->pending[i], w->estate, false, false,
											NULL, NIL));
			ResetPerTupleExprContext(w->estate);
		}
	for (int i = 0; i < t->npending; i++)
		ExecClearTuple(t->pending[i]);
	t->npending = 0;
}

static void
open_target(WeirCaptureTarget *t, const WeirCaptureTableRow *row, EState *estate, Index rti)
{
	Relation	rel = table_open(row->topic, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	WeirTopic  *topic = weir_topic_get(rel);

	t->table = row;
	t->table_name = OidIsValid(row->relid) ? get_rel_name(row->relid) : NULL;
	if (t->table_name == NULL)
		t->table_name = row->remote_table ? row->remote_table : psprintf("%u", row->relid);
	t->rel = rel;
	if (pg_class_aclcheck(row->topic, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the capture's owner may not insert into topic \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("Grant INSERT on the topic to the capture's owner.")));
	t->partitions = topic->partitions;
	t->op_attnum = topic_column(rel, WEIR_CHANGE_OP_COLUMN, CHAROID, t->table_name);
	t->lsn_attnum = topic_column(rel, WEIR_CHANGE_LSN_COLUMN, PG_LSNOID, t->table_name);
	t->time_attnum = topic_column(rel, WEIR_CHANGE_TIME_COLUMN, TIMESTAMPTZOID, t->table_name);
	t->unchanged_attnum = topic_column(rel, WEIR_CHANGE_UNCHANGED_COLUMN, NAMEARRAYOID,
									   t->table_name);
	t->column_attnums = palloc(sizeof(AttrNumber) * Max(row->ncolumns, 1));
	t->column_atts = palloc(sizeof(Form_pg_attribute) * Max(row->ncolumns, 1));
	for (int i = 0; i < row->ncolumns; i++)
	{
		t->column_attnums[i] = topic_column(rel, row->columns[i], InvalidOid, t->table_name);
		t->column_atts[i] = TupleDescAttr(desc, t->column_attnums[i] - 1);
	}
	t->key_index = palloc(sizeof(int) * Max(row->nkeys, 1));
	t->key_hash = palloc(sizeof(FmgrInfo) * Max(row->nkeys, 1));
	t->key_collation = palloc(sizeof(Oid) * Max(row->nkeys, 1));
	for (int k = 0; k < row->nkeys; k++)
	{
		Form_pg_attribute att;
		TypeCacheEntry *tce;

		t->key_index[k] = -1;
		for (int i = 0; i < row->ncolumns; i++)
			if (strcmp(row->columns[i], row->key_columns[k]) == 0)
				t->key_index[k] = i;
		if (t->key_index[k] < 0)
			elog(ERROR, "key column \"%s\" of captured table \"%s\" is not captured",
				 row->key_columns[k], t->table_name);
		att = t->column_atts[t->key_index[k]];
		tce = lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
		if (!OidIsValid(tce->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" of captured table \"%s\" has a type that cannot be hashed",
							row->key_columns[k], t->table_name)));
		fmgr_info_copy(&t->key_hash[k], &tce->hash_extended_proc_finfo, CurrentMemoryContext);
		t->key_collation[k] = att->attcollation;
	}

	t->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(t->rri, rel, rti, NULL, 0);
	ExecOpenIndices(t->rri, false);
	t->topic = topic;
	t->batched = may_batch(t, rel);
	if (t->batched)
	{
		t->pending = palloc(sizeof(TupleTableSlot *) * WEIR_CAPTURE_BATCH);
		for (int i = 0; i < WEIR_CAPTURE_BATCH; i++)
			t->pending[i] = table_slot_create(rel, NULL);
		t->npending = 0;
		t->bistate = GetBulkInsertState();
	}
	/*
	 * The table's own kind of slot: the topic's trigger writes part and pos
	 * into the tuple the slot materializes, in place (topic.c)
	 */
	t->slot = ExecInitExtraTupleSlot(estate, desc, table_slot_callbacks(rel));
}

/*
 * Open every topic of `capture` for writing; the caller is in a
 * transaction, acting as the capture's owner.
 */
WeirCaptureWriter *
weir_capture_writer_begin(const WeirCaptureRow *capture)
{
	WeirCaptureWriter *w = palloc0(sizeof(WeirCaptureWriter));
	List	   *rtable = NIL;

	w->estate = CreateExecutorState();
	for (int i = 0; i < capture->ntables; i++)
	{
		RangeTblEntry *rte = makeNode(RangeTblEntry);

		rte->rtekind = RTE_RELATION;
		rte->relid = capture->tables[i].topic;
		rte->relkind = RELKIND_RELATION;
		rte->rellockmode = RowExclusiveLock;
		rtable = lappend(rtable, rte);
	}
	ExecInitRangeTable(w->estate, rtable);
	w->estate->es_output_cid = GetCurrentCommandId(true);
	w->ntargets = capture->ntables;
	w->targets = palloc0(sizeof(WeirCaptureTarget) * Max(capture->ntables, 1));
	for (int i = 0; i < capture->ntables; i++)
		open_target(&w->targets[i], &capture->tables[i], w->estate, i + 1);
	AfterTriggerBeginQuery();
	return w;
}

static int32
row_partition(WeirCaptureTarget *t, Datum *values, bool *nulls)
{
	uint64		hash = 0;

	if (t->table->nkeys == 0 || t->partitions == 1)
		return 0;
	for (int k = 0; k < t->table->nkeys; k++)
	{
		int			i = t->key_index[k];

		/* replica identity columns are NOT NULL; a null hashes as 0 */
		if (!nulls[i])
			hash = hash_combine64(hash,
								  DatumGetUInt64(FunctionCall2Coll(&t->key_hash[k],
																   t->key_collation[k],
																   values[i],
																   UInt64GetDatum(0))));
		else
			hash = hash_combine64(hash, 0);
	}
	return (int32) (hash % (uint64) t->partitions);
}

static void
insert_row(WeirCaptureWriter *w, WeirCaptureTarget *t, int32 part, char op, XLogRecPtr lsn,
		   TimestampTz commit_time, Datum *values, bool *nulls, const bool *unchanged)
{
	TupleTableSlot *slot = t->batched ? t->pending[t->npending] : t->slot;
	TupleDesc	desc = RelationGetDescr(t->rel);
	Datum	   *names = NULL;
	int			nnames = 0;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * desc->natts);
	slot->tts_values[WEIR_TOPIC_PART_ATTNUM - 1] = Int32GetDatum(part);
	slot->tts_isnull[WEIR_TOPIC_PART_ATTNUM - 1] = false;
	slot->tts_values[WEIR_TOPIC_POS_ATTNUM - 1] = Int64GetDatum(0);
	slot->tts_isnull[WEIR_TOPIC_POS_ATTNUM - 1] = false;
	slot->tts_values[t->op_attnum - 1] = CharGetDatum(op);
	slot->tts_isnull[t->op_attnum - 1] = false;
	slot->tts_values[t->lsn_attnum - 1] = LSNGetDatum(lsn);
	slot->tts_isnull[t->lsn_attnum - 1] = false;
	slot->tts_values[t->time_attnum - 1] = TimestampTzGetDatum(commit_time);
	slot->tts_isnull[t->time_attnum - 1] = false;
	if (values)
	{
		for (int i = 0; i < t->table->ncolumns; i++)
		{
			AttrNumber	a = t->column_attnums[i];

			slot->tts_values[a - 1] = values[i];
			slot->tts_isnull[a - 1] = nulls[i];
			if (unchanged && unchanged[i])
			{
				if (names == NULL)
					names = palloc(sizeof(Datum) * t->table->ncolumns);
				names[nnames++] = DirectFunctionCall1(namein,
													  CStringGetDatum(t->table->columns[i]));
			}
		}
	}
	if (nnames > 0)
	{
		slot->tts_values[t->unchanged_attnum - 1] =
			PointerGetDatum(construct_array(names, nnames, NAMEOID, NAMEDATALEN, false,
											TYPALIGN_CHAR));
		slot->tts_isnull[t->unchanged_attnum - 1] = false;
	}
	ExecStoreVirtualTuple(slot);
	w->rows++;
	if (!t->batched)
	{
		ExecSimpleRelationInsert(t->rri, w->estate, slot);
		return;
	}
	/* what the topic's trigger does (topic.c), then keep the row */
	slot->tts_values[WEIR_TOPIC_POS_ATTNUM - 1] =
		Int64GetDatum(weir_partition_take_position(weir_topic_partition_slotno(t->topic, t->rel,
																				part)));
	ExecMaterializeSlot(slot);
	if (++t->npending == WEIR_CAPTURE_BATCH)
		flush_pending(w, t);
}

/* One change of table `table` (its index in the capture) */
void
weir_capture_writer_row(WeirCaptureWriter *w, int table, char op, XLogRecPtr lsn,
						TimestampTz commit_time, Datum *values, bool *nulls,
						const bool *unchanged)
{
	WeirCaptureTarget *t = &w->targets[table];

	insert_row(w, t, row_partition(t, values, nulls), op, lsn, commit_time,
			   values, nulls, unchanged);
	ResetPerTupleExprContext(w->estate);
}

/* A truncate of table `table`: a 'T' row in every partition */
void
weir_capture_writer_truncate(WeirCaptureWriter *w, int table, XLogRecPtr lsn,
							 TimestampTz commit_time)
{
	WeirCaptureTarget *t = &w->targets[table];

	for (int32 part = 0; part < t->partitions; part++)
		insert_row(w, t, part, WEIR_OP_TRUNCATE, lsn, commit_time, NULL, NULL, NULL);
	ResetPerTupleExprContext(w->estate);
}

void
weir_capture_writer_end(WeirCaptureWriter *w)
{
	for (int i = 0; i < w->ntargets; i++)
		flush_pending(w, &w->targets[i]);
	AfterTriggerEndQuery(w->estate);
	for (int i = 0; i < w->ntargets; i++)
	{
		WeirCaptureTarget *t = &w->targets[i];

		if (t->batched)
		{
			for (int k = 0; k < WEIR_CAPTURE_BATCH; k++)
				ExecDropSingleTupleTableSlot(t->pending[k]);
			FreeBulkInsertState(t->bistate);
		}
		ExecCloseIndices(w->targets[i].rri);
		table_close(w->targets[i].rel, NoLock);
	}
	ExecResetTupleTable(w->estate->es_tupleTable, false);
	FreeExecutorState(w->estate);
}
