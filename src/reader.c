/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  Reading topic partitions by position, and weir.read().
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
 * does; reading a partition so was about 1.3x faster.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/reader.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "partition.h"
#include "reader.h"
#include "topic.h"
#include "weir.h"

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

/*
 * The topic table named by a polymorphic "topic" argument: its row type,
 * as in weir.read(NULL::orders, ...).
 */
Oid
weir_reader_topic_relid(FunctionCallInfo fcinfo, const char *fname)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Oid			relid = OidIsValid(argtype) ? typeOrDomainTypeRelid(argtype) : InvalidOid;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("argument \"topic\" of %s must be the row type of a topic", fname),
				 errhint("Pass a null of the topic's row type, as in %s(NULL::orders, ...).", fname)));
	return relid;
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

/*
 * weir.read(topic anyelement, partition int, after_position bigint,
 *			 max_rows int) RETURNS SETOF anyelement
 *
 * Rows of one partition after a position, below its stable bound: every row
 * returned is committed, and every committed row below the last one returned
 * has been returned by this or an earlier call from the same position.
 */
PG_FUNCTION_INFO_V1(weir_read);
Datum
weir_read(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = weir_reader_topic_relid(fcinfo, "weir.read");
	Relation	rel;
	WeirTopic  *topic;
	int32		part;
	int64		after;
	int32		max_rows;
	int			slotno;
	WeirPartitionInfo info;
	Snapshot	snapshot;
	int64		last = 0;

	weir_require_arg(fcinfo, 1, "partition");
	weir_require_arg(fcinfo, 2, "after_position");
	weir_require_arg(fcinfo, 3, "max_rows");
	part = PG_GETARG_INT32(1);
	after = PG_GETARG_INT64(2);
	max_rows = PG_GETARG_INT32(3);
	if (after < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("after_position must not be negative"),
				 errhint("Positions start at 1; pass 0 to read from the beginning.")));
	if (max_rows < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative")));

	rel = table_open(relid, AccessShareLock);
	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	weir_topic_check_partition(topic, rel, part);

	InitMaterializedSRF(fcinfo, 0);

	slotno = weir_topic_partition_slotno(topic, rel, part);
	weir_partition_info(slotno, &info);
	/* the snapshot must be taken after the bound: see partition.c */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	weir_reader_scan(rel, part, after, info.stable_bound, max_rows, snapshot,
					 rsinfo->setResult, &last);
	UnregisterSnapshot(snapshot);

	table_close(rel, NoLock);
	return (Datum) 0;
}

/*
 * weir.stable_position(topic regclass, partition int) RETURNS bigint
 *
 * The last position of a partition that is safe to read: every position up
 * to it belongs to a transaction that has ended.  A query that starts after
 * this call returned (in READ COMMITTED, a later statement) sees every
 * committed row up to it, so plain SQL can read
 *	  WHERE part = $1 AND pos > $after AND pos <= $stable
 * at the speed of an index range scan.
 */
PG_FUNCTION_INFO_V1(weir_stable_position);
Datum
weir_stable_position(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int32		part;
	Relation	rel;
	WeirTopic  *topic;
	WeirPartitionInfo info;

	weir_require_arg(fcinfo, 0, "topic");
	weir_require_arg(fcinfo, 1, "partition");
	relid = PG_GETARG_OID(0);
	part = PG_GETARG_INT32(1);
	rel = table_open(relid, AccessShareLock);
	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	weir_topic_check_partition(topic, rel, part);
	weir_partition_info(weir_topic_partition_slotno(topic, rel, part), &info);
	table_close(rel, NoLock);
	PG_RETURN_INT64(info.stable_bound - 1);
}

static void
count_only(void *arg, TupleTableSlot *slot, int64 position)
{
	/* the slot holds a fetched, visible row: that is the whole cost */
}

static void
count_only_part(void *arg, TupleTableSlot *slot, int32 part, int64 position)
{
	/* as count_only */
}

/*
 * weir._scan_count(topic regclass, partition int, after bigint, upto bigint,
 *					heap_order boolean)
 *
 * Rows of a partition with after < pos <= upto, read through the primary
 * key with the low-level scan API, and counted: row by row in position
 * order (weir_reader_scan_each, as weir.read and weir.poll read), or with
 * heap_order a heap page at a time (weir_reader_scan_heap_order, as a
 * pipeline worker reads).  bench/ uses both as read limits.
 */
PG_FUNCTION_INFO_V1(weir_scan_count);
Datum
weir_scan_count(PG_FUNCTION_ARGS)
{
	Relation	rel = table_open(PG_GETARG_OID(0), AccessShareLock);
	Snapshot	snapshot;
	int64		last = 0;
	int64		n;

	weir_reader_check_access(rel);
	(void) weir_topic_get(rel);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (PG_GETARG_BOOL(4))
	{
		WeirPositionRange range = {PG_GETARG_INT32(1), PG_GETARG_INT64(2), PG_GETARG_INT64(3), 0};

		n = weir_reader_scan_heap_order(rel, &range, 1, snapshot, WEIR_TOPIC_POS_ATTNUM,
										count_only_part, NULL);
	}
	else
		n = weir_reader_scan_each(rel, PG_GETARG_INT32(1), PG_GETARG_INT64(2),
								  PG_GETARG_INT64(3) + 1, PG_INT64_MAX, snapshot,
								  count_only, NULL, &last);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}

/*
 * weir._scan_count_partitions(topic regclass, after bigint, upto bigint)
 *
 * The rows with after < pos <= upto of every partition of a topic, read in
 * one pass over the heap pages that hold them, as a pipeline worker reads a
 * round, and counted.  bench/ uses it as the read limit of the way workers
 * read.
 */
PG_FUNCTION_INFO_V1(weir_scan_count_partitions);
Datum
weir_scan_count_partitions(PG_FUNCTION_ARGS)
{
	Relation	rel = table_open(PG_GETARG_OID(0), AccessShareLock);
	WeirTopic  *topic;
	WeirPositionRange *ranges;
	Snapshot	snapshot;
	int64		n;

	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	ranges = palloc(sizeof(WeirPositionRange) * topic->partitions);
	for (int p = 0; p < topic->partitions; p++)
	{
		ranges[p].part = p;
		ranges[p].after = PG_GETARG_INT64(1);
		ranges[p].upto = PG_GETARG_INT64(2);
		ranges[p].max_position = 0;
	}
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	n = weir_reader_scan_heap_order(rel, ranges, topic->partitions, snapshot,
									WEIR_TOPIC_POS_ATTNUM, count_only_part, NULL);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	PG_RETURN_INT64(n);
}
