/*-------------------------------------------------------------------------
 *
 * topic_read.c
 *	  weir.read() and weir.stable_position(): reading a partition from SQL.
 *
 * Both take a partition's stable bound (partition.c) before their snapshot,
 * as every reader must; weir.read() then reads below it (reader.c).  Also
 * the read limits of bench/, weir._scan_count() and
 * weir._scan_count_partitions().
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic_read.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "funcapi.h"
#include "utils/snapmgr.h"

#include "base/sql_args.h"
#include "topic/partition.h"
#include "topic/reader.h"
#include "topic/topic.h"
#include "topic/topic_read.h"

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
	Oid			relid = weir_topic_arg_relid(fcinfo, "weir.read");
	Relation	rel;
	WeirTopic  *topic;
	int32		part;
	int64		after;
	int32		max_rows;
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

	weir_topic_partition_info(topic, rel, part, &info);
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
	weir_topic_partition_info(topic, rel, part, &info);
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
