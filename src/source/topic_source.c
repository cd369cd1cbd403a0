/*-------------------------------------------------------------------------
 *
 * topic_source.c
 *	  A topic, as a pipeline's source: a partition's bound is its stable
 *	  bound (topic/partition.c), its rows are read in heap order, a page
 *	  once for all the partitions of a scan (topic/reader.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/source/topic_source.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "utils/rel.h"

#include "source/topic_source.h"
#include "topic/partition.h"
#include "topic/topic.h"
#include "topic/topic_watermark.h"

typedef struct TopicSource
{
	WeirSource	source;			/* first: a WeirSource * is a TopicSource * */
	Relation	rel;			/* open during a round */
} TopicSource;

static void
topic_begin_round(WeirSource *src, int64 *bounds)
{
	TopicSource *ts = (TopicSource *) src;
	WeirTopic  *topic;

	ts->rel = table_open(src->relid, AccessShareLock);
	topic = weir_topic_get(ts->rel);
	for (int p = 0; p < src->partitions; p++)
	{
		WeirPartitionInfo info;

		weir_topic_partition_info(topic, ts->rel, p, &info);
		bounds[p] = info.stable_bound;
	}
}

static void
topic_scan(WeirSource *src, WeirPositionRange *ranges, int n, Snapshot snapshot,
		   AttrNumber natts, WeirPartRowCallback callback, void *arg)
{
	TopicSource *ts = (TopicSource *) src;

	/* the reader needs part and pos deformed too */
	(void) weir_reader_scan_heap_order(ts->rel, ranges, n, snapshot,
									   Max(natts, WEIR_TOPIC_POS_ATTNUM), callback, arg);
}

static void
topic_end_round(WeirSource *src)
{
	TopicSource *ts = (TopicSource *) src;

	table_close(ts->rel, AccessShareLock);
	ts->rel = NULL;
}

/* What the pipelines writing the topic published (topic_watermark.c). */
static bool
topic_watermarks(WeirSource *src, const int64 *pos, TimestampTz *watermark)
{
	return weir_topic_watermark_read(src->relid, src->partitions, pos, watermark);
}

static const WeirSourceOps topic_ops = {
	.begin_round = topic_begin_round,
	.scan = topic_scan,
	.end_round = topic_end_round,
	.watermarks = topic_watermarks,
};

/* The topic `relid` as a source, in cxt.  Needs a transaction. */
WeirSource *
weir_topic_source_open(Oid relid, MemoryContext cxt)
{
	TopicSource *ts = MemoryContextAllocZero(cxt, sizeof(TopicSource));
	Relation	rel = table_open(relid, AccessShareLock);

	ts->source.ops = &topic_ops;
	ts->source.relid = relid;
	ts->source.name = MemoryContextStrdup(cxt, RelationGetRelationName(rel));
	ts->source.partitions = weir_topic_get(rel)->partitions;
	table_close(rel, AccessShareLock);
	return &ts->source;
}
