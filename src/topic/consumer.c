/*-------------------------------------------------------------------------
 *
 * consumer.c
 *	  Transactional consumers: weir.poll(), weir.seek(), weir.drop_consumer().
 *
 * A consumer's committed positions are rows of weir.consumer_position, one
 * per partition.  weir.poll() locks them (FOR UPDATE), reads the rows after
 * them below each partition's stable bound, and updates them, all in the
 * caller's transaction: a plain SQL consumer that does its work in the same
 * transaction is exactly-once, a rollback gives the rows back, and a second
 * session of the same consumer waits for the first and continues after it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/consumer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/sql_args.h"
#include "catalog_sql/catalog.h"
#include "topic/consumer.h"
#include "topic/partition.h"
#include "topic/reader.h"
#include "topic/topic.h"

static char *
consumer_name(FunctionCallInfo fcinfo, int argno)
{
	char	   *name;

	weir_require_arg(fcinfo, argno, "consumer");
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("consumer name must not be empty")));
	return name;
}

/*
 * weir.poll(topic anyelement, consumer text, max_rows int)
 *		RETURNS SETOF anyelement
 *
 * Up to max_rows rows after the consumer's positions.  Each partition first
 * gets an equal share of max_rows, then partitions with more rows fill what
 * the others left; rows of a partition come in position order.
 */
PG_FUNCTION_INFO_V1(weir_poll);
Datum
weir_poll(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = weir_topic_arg_relid(fcinfo, "weir.poll");
	char	   *consumer = consumer_name(fcinfo, 1);
	int32		max_rows;
	Relation	rel;
	WeirTopic  *topic;
	int64	   *positions;
	int64	   *bounds;
	int64	   *last;
	bool	   *exhausted;
	int64		remaining;
	int64		share;
	Snapshot	snapshot;

	weir_require_arg(fcinfo, 2, "max_rows");
	max_rows = PG_GETARG_INT32(2);
	if (max_rows < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must not be negative")));

	rel = table_open(relid, AccessShareLock);
	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	InitMaterializedSRF(fcinfo, 0);

	/* lock first: a second session of this consumer waits here */
	positions = weir_catalog_lock_consumer(topic->topic_id, consumer,
										   topic->partitions);
	bounds = palloc(sizeof(int64) * topic->partitions);
	last = palloc(sizeof(int64) * topic->partitions);
	exhausted = palloc0(sizeof(bool) * topic->partitions);
	for (int p = 0; p < topic->partitions; p++)
	{
		WeirPartitionInfo info;

		weir_topic_partition_info(topic, rel, p, &info);
		bounds[p] = info.stable_bound;
		last[p] = positions[p];
	}
	/* every bound is computed before the snapshot: see partition.c */
	snapshot = RegisterSnapshot(GetLatestSnapshot());

	remaining = max_rows;
	share = (max_rows + topic->partitions - 1) / topic->partitions;
	for (int round = 0; round < 2 && remaining > 0; round++)
	{
		for (int p = 0; p < topic->partitions && remaining > 0; p++)
		{
			int64		want = round == 0 ? Min(share, remaining) : remaining;
			int64		got;

			if (exhausted[p])
				continue;
			got = weir_reader_scan(rel, p, last[p], bounds[p], want, snapshot,
								   rsinfo->setResult, &last[p]);
			if (got < want)
				exhausted[p] = true;
			remaining -= got;
		}
	}
	UnregisterSnapshot(snapshot);

	for (int p = 0; p < topic->partitions; p++)
	{
		if (last[p] != positions[p])
			weir_catalog_set_consumer_position(topic->topic_id, consumer, p,
											   last[p]);
	}

	table_close(rel, NoLock);
	return (Datum) 0;
}

/*
 * weir.seek(topic regclass, consumer text, partition int, position bigint)
 *
 * Set a consumer's committed position: rows at or below it count as
 * consumed.  A position above the newest stable row is refused, since
 * positions above it may still be given to rows not yet committed.
 */
PG_FUNCTION_INFO_V1(weir_seek);
Datum
weir_seek(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *consumer = consumer_name(fcinfo, 1);
	int32		part = PG_GETARG_INT32(2);
	int64		position = PG_GETARG_INT64(3);
	Relation	rel;
	WeirTopic  *topic;
	WeirPartitionInfo info;
	int64		limit;

	rel = table_open(relid, AccessShareLock);
	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	weir_topic_check_partition(topic, rel, part);
	weir_topic_partition_info(topic, rel, part, &info);
	/* positions of aborted rows above the newest one may be handed out again */
	limit = Min(info.stable_bound - 1, weir_reader_edge_position(rel, part, true));
	if (position < 0 || position > limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("position " INT64_FORMAT " is out of range for partition %d of topic \"%s\"",
						position, part, RelationGetRelationName(rel)),
				 errdetail("Positions from 0 to " INT64_FORMAT ", the newest stable row, can be committed.",
						   limit),
				 errhint("See weir.topic_partitions for the stable position of each partition.")));

	/* take the lock a concurrent poll takes, then overwrite */
	(void) weir_catalog_lock_consumer(topic->topic_id, consumer, topic->partitions);
	weir_catalog_set_consumer_position(topic->topic_id, consumer, part, position);
	table_close(rel, NoLock);
	PG_RETURN_VOID();
}

/* weir.drop_consumer(topic regclass, consumer text) RETURNS boolean */
PG_FUNCTION_INFO_V1(weir_drop_consumer);
Datum
weir_drop_consumer(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *consumer;
	Relation	rel;
	WeirTopic  *topic;
	bool		found;

	weir_require_arg(fcinfo, 0, "topic");
	relid = PG_GETARG_OID(0);
	consumer = consumer_name(fcinfo, 1);
	rel = table_open(relid, AccessShareLock);
	weir_reader_check_access(rel);
	topic = weir_topic_get(rel);
	found = weir_catalog_drop_consumer(topic->topic_id, consumer);
	table_close(rel, NoLock);
	PG_RETURN_BOOL(found);
}
