/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  Reading topic partitions by position through the primary key.
 *
 * Rows are read through the (part, pos) primary key with the low-level
 * index scan API: no SPI and no executor, since this is the path every
 * consumer and pipeline takes.  The caller supplies the snapshot; readers of
 * a partition must compute its stable bound (partition.c) *before* taking it.
 *
 * In position order (weir_reader_scan_each), an index scan fetches row after
 * row, locking a heap page for each.  A reader that can put rows in order
 * itself (the pipeline worker, by batch) takes weir_reader_scan_heap_order:
 * the index gives the TIDs of a position range as a bitmap, and each heap
 * page is then read once, under one lock, as PostgreSQL's bitmap heap scan
 * does, which reads a partition faster (bench/README.md).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/reader.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "topic/reader.h"
#include "topic/topic_table.h"

static Relation
open_position_index(Relation rel)
{
	Oid			indexoid;

	(void) RelationGetIndexList(rel);	/* makes rd_pkindex valid */
	indexoid = rel->rd_pkindex;
	if (!OidIsValid(indexoid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("topic \"%s\" has no primary key on (part, pos)",
						RelationGetRelationName(rel)),
				 errhint("Recreate the topic with weir.create_topic().")));
	return index_open(indexoid, AccessShareLock);
}

/* Scan keys on the primary key: partition `part`, after < pos <= upto. */
static void
position_range_keys(ScanKeyData *keys, int32 part, int64 after, int64 upto)
{
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(part));
	ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
	ScanKeyInit(&keys[2], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(upto));
}

static int64
slot_position(TupleTableSlot *slot)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, WEIR_TOPIC_POS_ATTNUM, &isnull);

	Assert(!isnull);
	return DatumGetInt64(d);
}

/*
 * The newest (or oldest) committed position of a partition, 0 if it is
 * empty.  Uses the latest snapshot, so it sees every committed row.
 */
int64
weir_reader_edge_position(Relation rel, int32 part, bool newest)
{
	Relation	index = open_position_index(rel);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ScanKeyData key;
	IndexScanDesc scan;
	int64		position = 0;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(part));
	scan = index_beginscan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, newest ? BackwardScanDirection : ForwardScanDirection, slot))
		position = slot_position(slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	index_close(index, AccessShareLock);
	return position;
}

/*
 * Call `callback` for each row of partition `part` with after < pos < bound,
 * in position order, at most max_rows of them, as seen by `snapshot`.  The
 * slot is valid only during the call.  Returns the number of rows;
 * *last_position is the position of the last one (unchanged when none).
 */
int64
weir_reader_scan_each(Relation rel, int32 part, int64 after, int64 bound,
					  int64 max_rows, Snapshot snapshot, WeirRowCallback callback,
					  void *arg, int64 *last_position)
{
	Relation	index;
	TupleTableSlot *slot;
	ScanKeyData keys[3];
	IndexScanDesc scan;
	int64		nrows = 0;

	if (max_rows <= 0 || after + 1 >= bound)
		return 0;

	index = open_position_index(rel);
	slot = table_slot_create(rel, NULL);
	position_range_keys(keys, part, after, bound - 1);
	scan = index_beginscan(rel, index, snapshot, 3, 0);
	index_rescan(scan, keys, 3, NULL, 0);
	while (nrows < max_rows &&
		   index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		int64		position = slot_position(slot);

		callback(arg, slot, position);
		*last_position = position;
		nrows++;
		if ((nrows & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	return nrows;
}

/*
 * The rows of the position ranges `ranges` (each: a partition, after < pos
 * <= upto; one range per partition), visible to `snapshot`, in the order of
 * the heap: every heap page holding a row of any range is read once, under
 * one lock.  Producers of different partitions (and concurrent producers of
 * one) interleave their rows across pages, so rows come in neither
 * partition nor position order.  Returns how many rows; ranges[i].max_position
 * is the largest position read in range i (unchanged when none).  The
 * slot's first `deform` columns (at least the partition and position) are
 * deformed before the callback, all at once.
 */
int64
weir_reader_scan_heap_order(Relation rel, WeirPositionRange *ranges, int nranges,
							Snapshot snapshot, AttrNumber deform,
							WeirPartRowCallback callback, void *arg)
{
	Relation	index;
	TupleTableSlot *slot;
	ScanKeyData keys[3];
	IndexScanDesc iscan;
	TableScanDesc hscan;
	TIDBitmap  *tbm;
	TBMIterator *iterator;
	TBMIterateResult *tbmres;
	int64		nrows = 0;
	int			last_range = 0;

	index = open_position_index(rel);
	slot = table_slot_create(rel, NULL);
	/* a round's TIDs fit exactly: pages go lossy only past work_mem */
	tbm = tbm_create(work_mem * 1024L, NULL);
	iscan = index_beginscan_bitmap(index, snapshot, 3);
	for (int i = 0; i < nranges; i++)
	{
		if (ranges[i].after >= ranges[i].upto)
			continue;
		position_range_keys(keys, ranges[i].part, ranges[i].after, ranges[i].upto);
		index_rescan(iscan, keys, 3, NULL, 0);
		(void) index_getbitmap(iscan, tbm);
	}
	index_endscan(iscan);

	hscan = table_beginscan_bm(rel, snapshot, 0, NULL);
	iterator = tbm_begin_iterate(tbm);
	while ((tbmres = tbm_iterate(iterator)) != NULL)
	{
		if (!table_scan_bitmap_next_block(hscan, tbmres))
			continue;
		while (table_scan_bitmap_next_tuple(hscan, tbmres, slot))
		{
			int32		part;
			int64		position;
			WeirPositionRange *range;

			/* one deforming for the position and the callback's columns */
			slot_getsomeattrs(slot, deform);
			part = DatumGetInt32(slot->tts_values[WEIR_TOPIC_PART_ATTNUM - 1]);
			position = DatumGetInt64(slot->tts_values[WEIR_TOPIC_POS_ATTNUM - 1]);

			/* rows of a partition come in runs: try the last one's range first */
			if (ranges[last_range].part != part)
			{
				int			i;

				for (i = 0; i < nranges && ranges[i].part != part; i++)
					;
				if (i == nranges)
				{
					Assert(tbmres->recheck);
					continue;	/* a lossy page's row of another partition */
				}
				last_range = i;
			}
			range = &ranges[last_range];
			/* a lossy page has every visible row of the page: check them */
			if (tbmres->recheck && (position <= range->after || position > range->upto))
				continue;
			callback(arg, slot, part, position);
			if (position > range->max_position)
				range->max_position = position;
			nrows++;
			if ((nrows & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}
	tbm_end_iterate(iterator);
	table_endscan(hscan);
	tbm_free(tbm);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	return nrows;
}

static void
put_in_tuplestore(void *arg, TupleTableSlot *slot, int64 position)
{
	tuplestore_puttupleslot((Tuplestorestate *) arg, slot);
}

/* weir_reader_scan_each() into a tuplestore (weir.read, weir.poll). */
int64
weir_reader_scan(Relation rel, int32 part, int64 after, int64 bound,
				 int64 max_rows, Snapshot snapshot, Tuplestorestate *out,
				 int64 *last_position)
{
	return weir_reader_scan_each(rel, part, after, bound, max_rows, snapshot,
								 put_in_tuplestore, out, last_position);
}

/* Readers need SELECT on the topic; row-level security cannot be honoured. */
void
weir_reader_check_access(Relation rel)
{
	AclResult	aclresult;

	aclresult = pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read topic \"%s\" with row-level security enabled",
						RelationGetRelationName(rel)),
				 errhint("Disable row-level security on the topic table, or read it with a role that bypasses it.")));
}
