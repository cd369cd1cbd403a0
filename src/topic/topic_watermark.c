/*-------------------------------------------------------------------------
 *
 * topic_watermark.c
 *	  Watermarks that travel with the data through chains of pipelines.
 *
 * A pipeline whose sink is a topic (its "writer") promises, at each
 * checkpoint, that no row it writes later has an event time below its
 * watermark.  It writes that promise into weir.topic_watermark in the
 * checkpoint's own transaction, for every partition of the topic, with the
 * partition's last position handed out so far: every row the writer has
 * written is at or below it.  A pipeline reading the topic may take the
 * watermark for a partition once it has processed the partition up to that
 * position, and not before: rows below it may still be on their way
 * (positions are taken before commit, and a reader only reads below the
 * last stable position).  So a reader never sees a row of the writer after
 * a watermark that the row is below, whatever order the rows of one
 * checkpoint come in and however far one partition of the writer's input
 * ran ahead: a chain of any depth has no lateness its first stage did not
 * have.
 *
 * A topic written by several pipelines has, per partition, the least of
 * their watermarks; a writer that has published nothing yet holds the
 * partition back.  Projections keep no event time and publish nothing; a
 * topic written only by projections (or only by producers) is read as
 * before, its watermark guessed from the event times seen.
 *
 * Rows superseded for every reader (a newer row of the same writer at or
 * below the least position any reader has committed) are deleted when the
 * writer publishes; a reader created later, behind the oldest row kept,
 * waits until it reaches that row.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic_watermark.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/timestamp.h"

#include "catalog_sql/catalog.h"
#include "topic/partition.h"
#include "topic/topic.h"
#include "topic/topic_watermark.h"

/*
 * Publish `watermark` of pipeline `pipeline_id` for the topic it writes, in
 * the current transaction (the checkpoint's, after its sink rows): a row
 * per partition where it advances the writer's last one.
 */
void
weir_topic_watermark_publish(Oid topic_relid, int32 pipeline_id, TimestampTz watermark)
{
	Relation	rel;
	WeirTopic  *topic;
	int32		partitions;
	int32		topic_id;
	Datum	   *positions;
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, INT4OID, INT8ARRAYOID, TIMESTAMPTZOID};
	Datum		values[4];

	if (TIMESTAMP_NOT_FINITE(watermark))
		return;					/* no promise yet */
	rel = table_open(topic_relid, AccessShareLock);
	topic = weir_topic_lookup(rel);
	if (topic == NULL)
	{
		table_close(rel, AccessShareLock);
		return;					/* a table sink: nobody reads it as a topic */
	}
	partitions = topic->partitions;
	topic_id = topic->topic_id;
	positions = palloc(sizeof(Datum) * partitions);
	for (int32 part = 0; part < partitions; part++)
	{
		WeirPartitionInfo info;

		weir_topic_partition_info(topic, rel, part, &info);
		positions[part] = Int64GetDatum(info.next_position - 1);
	}
	table_close(rel, AccessShareLock);

	values[0] = Int32GetDatum(topic_id);
	values[1] = Int32GetDatum(pipeline_id);
	values[2] = PointerGetDatum(construct_array(positions, partitions, INT8OID, 8,
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[3] = TimestampTzGetDatum(watermark);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.topic_watermark AS t "
					  "SELECT $1, u.n - 1, $2, u.pos, $4 "
					  "FROM unnest($3::bigint[]) WITH ORDINALITY AS u(pos, n) "
					  "WHERE $4 > coalesce((SELECT max(o.watermark) FROM weir.topic_watermark o "
					  "WHERE o.topic_id = $1 AND o.part = u.n - 1 AND o.pipeline_id = $2), '-infinity') "
					  "ON CONFLICT (topic_id, part, pipeline_id, pos) DO UPDATE "
					  "SET watermark = greatest(t.watermark, EXCLUDED.watermark)",
					  4, types, values, NULL, SPI_OK_INSERT);

	/*
	 * The least position each partition's readers have committed (a join
	 * numbers its right source's partitions after its left's); where there
	 * is no reader, only the newest row is kept.
	 */
	weir_catalog_exec("WITH topic AS (SELECT relid FROM weir.topic WHERE id = $1), "
					  "reader_pos AS ("
					  " SELECT pp.part, pp.pos FROM weir.pipeline r "
					  " JOIN weir.topic lt ON lt.relid = r.source "
					  " JOIN weir.pipeline_position pp ON pp.pipeline_id = r.id "
					  " WHERE r.source = (SELECT relid FROM topic) AND pp.part < lt.partitions "
					  " UNION ALL "
					  " SELECT pp.part - lt.partitions, pp.pos FROM weir.pipeline r "
					  " JOIN weir.topic lt ON lt.relid = r.source "
					  " JOIN weir.pipeline_position pp ON pp.pipeline_id = r.id "
					  " WHERE r.right_source = (SELECT relid FROM topic) AND pp.part >= lt.partitions), "
					  "cut AS (SELECT part, min(pos) AS pos FROM reader_pos GROUP BY part) "
					  "DELETE FROM weir.topic_watermark t "
					  "WHERE t.topic_id = $1 AND t.pipeline_id = $2 AND EXISTS ("
					  " SELECT 1 FROM weir.topic_watermark n "
					  " WHERE n.topic_id = t.topic_id AND n.part = t.part AND n.pipeline_id = t.pipeline_id "
					  " AND n.pos > t.pos AND n.pos <= coalesce("
					  "  (SELECT c.pos FROM cut c WHERE c.part = t.part), 9223372036854775807))",
					  2, types, values, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

/*
 * The watermark each partition of a topic has for a reader that has
 * processed partition p up to pos[p]: the least over the topic's writers of
 * the newest watermark each published at or below pos[p]; DT_NOBEGIN where
 * a writer has none yet.  False if no pipeline publishes for the topic
 * (*watermark untouched): its reader goes by the event times it sees.
 */
bool
weir_topic_watermark_read(Oid topic_relid, int32 partitions, const int64 *pos,
						  TimestampTz *watermark)
{
	WeirCatalogPrivilege p;
	Datum	   *positions = palloc(sizeof(Datum) * partitions);
	Oid			types[2] = {OIDOID, INT8ARRAYOID};
	Datum		values[2];
	bool		chained;

	for (int32 part = 0; part < partitions; part++)
		positions[part] = Int64GetDatum(pos[part]);
	values[0] = ObjectIdGetDatum(topic_relid);
	values[1] = PointerGetDatum(construct_array(positions, partitions, INT8OID, 8,
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT g.part, CASE WHEN bool_and(m.wm IS NOT NULL) THEN min(m.wm) END "
					  "FROM weir.topic t "
					  "JOIN weir.pipeline wr ON wr.sink = t.relid AND wr.operator <> 'projection' "
					  "CROSS JOIN generate_series(0, cardinality($2) - 1) AS g(part) "
					  "LEFT JOIN LATERAL (SELECT max(tw.watermark) AS wm FROM weir.topic_watermark tw "
					  " WHERE tw.topic_id = t.id AND tw.part = g.part AND tw.pipeline_id = wr.id "
					  " AND tw.pos <= $2[g.part + 1]) m ON true "
					  "WHERE t.relid = $1 GROUP BY g.part",
					  2, types, values, NULL, SPI_OK_SELECT);
	chained = SPI_processed > 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		part = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		d = SPI_getbinval(tup, desc, 2, &isnull);

		if (part >= 0 && part < partitions)
			watermark[part] = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
	}
	weir_catalog_privileged_end(&p);
	return chained;
}
