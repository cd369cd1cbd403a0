/*-------------------------------------------------------------------------
 *
 * skip.c
 *	  weir.skip(): the last resort for a record that stops a pipeline.
 *
 * Records that cannot be processed or written become dead letters by
 * themselves (reading.c, sink_guard.c; a generic aggregate's transition
 * function that fails on a record, through weir_skip_after_failure below).
 * Should one still stop a pipeline (an error weir does not attribute to a
 * record, such as a generic aggregate's serialise function), the pipeline's error
 * names the topic, partition and position it was at, and its owner can
 * move it past that record:
 *	SELECT weir.skip('pipeline', 'topic', partition, position);
 *	SELECT weir.start('pipeline');
 * The request is kept in weir.pipeline_skip; workers load the requests of
 * their pipeline when they start and treat such a record as a dead letter
 * with the error "skipped by weir.skip()", written in the checkpoint that
 * moves past it, so it is recorded once whatever crashes meanwhile.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/skip.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/sql_args.h"
#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/pipeline_plan.h"
#include "pipeline/skip.h"
#include "topic/topic.h"

/*
 * The committed position of the pipeline in partition `index` (the
 * worker's numbering: the left source's partitions, then the right's).
 */
static int64
committed_position(int32 pipeline_id, int32 index)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		values[2] = {Int32GetDatum(pipeline_id), Int32GetDatum(index)};
	int64		pos = 0;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT pos FROM weir.pipeline_position WHERE pipeline_id = $1 AND part = $2",
					  2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			pos = DatumGetInt64(d);
	}
	weir_catalog_privileged_end(&p);
	return pos;
}

static int32
partitions_of(Oid topic)
{
	Relation	rel = table_open(topic, AccessShareLock);
	int32		n = weir_topic_get(rel)->partitions;

	table_close(rel, AccessShareLock);
	return n;
}

/* weir.skip(pipeline text, topic regclass, partition integer, position bigint) */
PG_FUNCTION_INFO_V1(weir_skip);
Datum
weir_skip(PG_FUNCTION_ARGS)
{
	WeirPipelineRow row;
	Oid			topic;
	int32		part;
	int64		position;
	int32		index;
	int32		partitions;
	WeirCatalogPrivilege p;
	Oid			types[5] = {INT4OID, OIDOID, INT4OID, INT8OID, NAMEOID};
	Datum		values[5];

	weir_require_arg(fcinfo, 0, "pipeline");
	weir_require_arg(fcinfo, 1, "topic");
	weir_require_arg(fcinfo, 2, "partition");
	weir_require_arg(fcinfo, 3, "position");
	row = weir_pipeline_for_owner(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	topic = PG_GETARG_OID(1);
	part = PG_GETARG_INT32(2);
	position = PG_GETARG_INT64(3);

	if (topic != row.source && topic != row.right_source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline \"%s\" does not read topic \"%s\"", row.name, get_rel_name(topic)),
				 errhint("Name the topic, partition and position its error names.")));
	partitions = partitions_of(topic);
	if (part < 0 || part >= partitions)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d is out of range for topic \"%s\"", part, get_rel_name(topic)),
				 errdetail_plural("The topic has %d partition, numbered 0 to %d.",
								  "The topic has %d partitions, numbered 0 to %d.",
								  partitions, partitions, partitions - 1)));
	index = topic == row.source ? part : partitions_of(row.source) + part;
	if (position <= committed_position(row.id, index))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pipeline \"%s\" is past position " INT64_FORMAT " of partition %d of topic \"%s\" already",
						row.name, position, part, get_rel_name(topic))));

	values[0] = Int32GetDatum(row.id);
	values[1] = ObjectIdGetDatum(topic);
	values[2] = Int32GetDatum(part);
	values[3] = Int64GetDatum(position);
	values[4] = DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(GetUserId(), false)));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_skip (pipeline_id, source, partition, position, "
					  "requested_by) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
					  5, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
	PG_RETURN_VOID();
}

/*
 * A record on which a generic aggregate's transition function raised an
 * error, while the worker was applying it to state (where it cannot be
 * undone): recorded here, in a transaction of its own, the worker exits
 * and restores its last checkpoint, and the record is a dead letter with
 * that error when it is read again.  Exactly once: the request outlives
 * crashes, and the dead letter commits with the checkpoint that passes it.
 */
void
weir_skip_after_failure(int32 pipeline_id, Oid source, int32 part, int64 position,
						const char *error)
{
	WeirCatalogPrivilege p;
	Oid			types[5] = {INT4OID, OIDOID, INT4OID, INT8OID, TEXTOID};
	Datum		values[5];

	values[0] = Int32GetDatum(pipeline_id);
	values[1] = ObjectIdGetDatum(source);
	values[2] = Int32GetDatum(part);
	values[3] = Int64GetDatum(position);
	values[4] = CStringGetTextDatum(error);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_skip (pipeline_id, source, partition, position, "
					  "requested_by, error) VALUES ($1, $2, $3, $4, 'weir', $5) "
					  "ON CONFLICT DO NOTHING",
					  5, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/* The skip requests of a pipeline, in the current memory context; *n of them. */
WeirSkip *
weir_skip_load(int32 pipeline_id, int *n)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(pipeline_id);
	WeirSkip   *skips = NULL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT source, partition, position, error FROM weir.pipeline_skip "
					  "WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	*n = (int) SPI_processed;
	if (*n > 0)
		skips = MemoryContextAlloc(cxt, sizeof(WeirSkip) * *n);
	for (int i = 0; i < *n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		skips[i].source = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		skips[i].part = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		skips[i].position = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		skips[i].error = SPI_getvalue(tup, desc, 4);
		skips[i].error = skips[i].error ?
			MemoryContextStrdup(cxt, skips[i].error) : "skipped by weir.skip()";
	}
	weir_catalog_privileged_end(&p);
	return skips;
}
