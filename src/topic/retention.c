/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  Deleting topic rows that every consumer has passed and that are older
 *	  than the topic's retention.
 *
 * Rows carry no timestamp (producers should not pay for one).  Instead the
 * launcher samples each partition's head position into weir.topic_time_index
 * every weir.time_index_interval: a sample (position P, time T) says every
 * row with pos <= P was produced before T.  A partition may then be trimmed
 * up to the newest sample older than now - retention, but never past
 *	- the lowest committed position of any consumer (weir.consumer_position),
 *	- the stable bound (rows of open transactions must not outlive retention
 *	  by committing after it ran),
 *	- the newest row minus one: the newest row is what rebuilds the
 *	  partition's counter after a crash, so positions are never reused.
 * Deletes go in ranges of weir.retention_batch_size positions; the launcher
 * commits after each, so producers (who take no conflicting lock anyway) and
 * vacuum see short transactions.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/retention.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/settings.h"
#include "base/transaction.h"
#include "catalog_sql/catalog.h"
#include "topic/partition.h"
#include "topic/reader.h"
#include "topic/retention.h"
#include "topic/topic.h"

typedef struct TrimRange
{
	int64		from;			/* oldest row still in the partition */
	int64		to;				/* delete up to and including this */
} TrimRange;

/* What may be deleted from one partition now; from > to when nothing. */
static TrimRange
plan_partition(WeirTopic *topic, WeirTopicRow *row, Relation rel, int32 part,
			   TimestampTz now)
{
	TrimRange	range = {1, 0};
	WeirPartitionInfo info;
	int64		head;
	int64		sample_pos;
	TimestampTz sample_at;
	int64		bound;
	int64		consumed;
	TimestampTz cutoff;

	weir_topic_partition_info(topic, rel, part, &info);
	head = info.next_position - 1;
	if (head > 0 &&
		(!weir_catalog_latest_sample(topic->topic_id, part, &sample_pos, &sample_at) ||
		 (sample_pos < head &&
		  now - sample_at >= (TimestampTz) weir_time_index_interval * 1000)))
		weir_catalog_add_sample(topic->topic_id, part, head, now);

	cutoff = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
													 TimestampTzGetDatum(now),
													 IntervalPGetDatum(&row->retention)));
	bound = weir_catalog_retention_bound(topic->topic_id, part, cutoff);
	bound = Min(bound, info.stable_bound - 1);
	if (weir_catalog_min_consumer_position(topic->topic_id, part, &consumed))
		bound = Min(bound, consumed);
	bound = Min(bound, weir_reader_edge_position(rel, part, true) - 1);
	if (bound <= 0)
		return range;
	range.from = weir_reader_edge_position(rel, part, false);
	if (range.from == 0)
		return range;
	range.to = bound;
	return range;
}

/*
 * Apply a topic's retention.  With own_transactions (the launcher), the
 * caller has a transaction open with an active snapshot, and each batch is
 * committed; otherwise everything happens in the caller's transaction.
 * Returns the number of rows deleted.
 */
int64
weir_retention_trim_topic(WeirTopicRow *row, bool own_transactions)
{
	Relation	rel;
	WeirTopic  *topic;
	TrimRange  *ranges;
	int32		partitions;
	int32		topic_id;
	TimestampTz now = weir_clock_now();
	int64		deleted = 0;

	if (!row->has_retention)
		return 0;
	rel = try_table_open(row->relid, AccessShareLock);
	if (rel == NULL)
		return 0;
	topic = weir_topic_lookup(rel);
	if (topic == NULL)
	{
		table_close(rel, AccessShareLock);
		return 0;
	}
	partitions = topic->partitions;
	topic_id = topic->topic_id;
	ranges = palloc(sizeof(TrimRange) * partitions);
	for (int p = 0; p < partitions; p++)
		ranges[p] = plan_partition(topic, row, rel, p, now);
	table_close(rel, AccessShareLock);

	for (int p = 0; p < partitions; p++)
	{
		int64		lo = ranges[p].from;

		if (lo > ranges[p].to)
			continue;
		while (lo <= ranges[p].to)
		{
			int64		hi = Min(ranges[p].to, lo + weir_retention_batch_size - 1);

			CHECK_FOR_INTERRUPTS();
			deleted += weir_catalog_delete_rows(row->relid, p, lo, hi);
			lo = hi + 1;
			if (own_transactions)
			{
				weir_transaction_end();
				weir_transaction_begin();
			}
		}
		weir_catalog_forget_samples(topic_id, p, ranges[p].to);
	}
	if (deleted > 0)
		ereport(DEBUG1,
				(errmsg_internal("weir retention deleted " INT64_FORMAT " rows from topic \"%s\"",
								 deleted, get_rel_name(row->relid))));
	return deleted;
}

/*
 * weir.run_retention(topic regclass DEFAULT NULL) RETURNS bigint
 *
 * Apply retention now, in the caller's transaction, to one topic or to every
 * topic with a retention that the caller owns.
 */
PG_FUNCTION_INFO_V1(weir_run_retention);
Datum
weir_run_retention(PG_FUNCTION_ARGS)
{
	List	   *topics = weir_catalog_topics(true);
	ListCell   *lc;
	int64		deleted = 0;
	bool		found = false;

	/* retention deletes and samples: the primary's work, replayed here */
	PreventCommandDuringRecovery("weir.run_retention()");
	(void) weir_shmem();
	foreach(lc, topics)
	{
		WeirTopicRow *row = lfirst(lc);

		if (!PG_ARGISNULL(0) && row->relid != PG_GETARG_OID(0))
			continue;
		found = true;
		if (!pg_class_ownercheck(row->relid, GetUserId()))
		{
			if (PG_ARGISNULL(0))
				continue;
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(row->relid));
		}
		deleted += weir_retention_trim_topic(row, false);
	}
	if (!PG_ARGISNULL(0) && !found)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not a topic with a retention",
						get_rel_name(PG_GETARG_OID(0))),
				 errhint("Set one with weir.alter_topic_retention().")));
	PG_RETURN_INT64(deleted);
}
