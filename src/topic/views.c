/*-------------------------------------------------------------------------
 *
 * views.c
 *	  Set-returning functions behind weir's views.
 *
 * weir._topic_partition_state() joins what shared memory knows about each
 * partition (next position, registered producers) with the catalog.  Values
 * of one partition are read under its lock, so they are consistent with each
 * other; different partitions are read one after the other.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/views.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

#include "catalog_sql/catalog.h"
#include "topic/partition.h"
#include "topic/topic.h"
#include "topic/views.h"

#define PARTITION_STATE_COLS 10

PG_FUNCTION_INFO_V1(weir_topic_partition_state);
Datum
weir_topic_partition_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		with_rows = PG_GETARG_BOOL(0);
	List	   *topics;
	ListCell   *lc;

	(void) weir_shmem();
	InitMaterializedSRF(fcinfo, 0);
	topics = weir_catalog_topics(false);
	foreach(lc, topics)
	{
		WeirTopicRow *row = lfirst(lc);
		Relation	rel = try_table_open(row->relid, AccessShareLock);
		WeirTopic  *topic;
		int64	   *counts = NULL;

		if (rel == NULL)
			continue;
		topic = weir_topic_lookup(rel);
		if (topic == NULL)
		{
			table_close(rel, AccessShareLock);
			continue;
		}
		if (with_rows &&
			pg_class_aclcheck(row->relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
			counts = weir_catalog_count_rows(row->relid, topic->partitions);

		for (int p = 0; p < topic->partitions; p++)
		{
			Datum		values[PARTITION_STATE_COLS];
			bool		nulls[PARTITION_STATE_COLS];
			WeirPartitionInfo info;

			weir_topic_partition_info(topic, rel, p, &info);
			memset(nulls, 0, sizeof(nulls));
			values[0] = Int32GetDatum(topic->topic_id);
			values[1] = ObjectIdGetDatum(row->relid);
			values[2] = Int32GetDatum(p);
			values[3] = Int64GetDatum(info.next_position - 1);
			values[4] = Int64GetDatum(info.stable_bound - 1);
			values[5] = Int32GetDatum(info.open_producers);
			if (info.open_producers > 0)
			{
				values[6] = Int32GetDatum(info.oldest.pid);
				values[7] = Int64GetDatum(info.oldest.position);
				values[8] = TimestampTzGetDatum(info.oldest.since);
			}
			else
				nulls[6] = nulls[7] = nulls[8] = true;
			if (counts)
				values[9] = Int64GetDatum(counts[p]);
			else
				nulls[9] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
		table_close(rel, AccessShareLock);
	}
	return (Datum) 0;
}
