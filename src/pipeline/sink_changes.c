/*-------------------------------------------------------------------------
 *
 * sink_changes.c
 *	  weir.sink_changes(pipeline, after_checkpoint, max_rows): what the
 *	  checkpoints after a reader's last one did to a pipeline's sink, for
 *	  readers that follow a sink by checkpoint id.
 *
 * A pipeline created with a checkpoint_column writes, into that column of
 * every sink row it inserts or updates, the id of the checkpoint writing
 * it (sink_table.c), and records the keys of the rows it deletes in
 * weir.sink_deletes (catalog_sink_deletes.c), both in the checkpoint's
 * transaction.  A pipeline's checkpoints commit one after another in id
 * order, so any snapshot sees checkpoints 1..N whole and nothing of N+1:
 * reading, in one snapshot, the sink rows whose checkpoint column is above
 * the reader's position and the deletes recorded above it gives every
 * change since, once the reader stores the greatest checkpoint it applied.
 * A row written again later carries the later id only: the reader sees its
 * latest value, once per reading that finds it changed.
 *
 * Every read here is read-only SPI in the snapshot of the caller's
 * statement (the function is STABLE), so the sink and weir.sink_deletes
 * are seen as of one moment.  The sink is read as the caller, who needs
 * SELECT on it; weir.sink_deletes is weir's, read as weir's owner after
 * checking that the caller may read the sink and that no row-level
 * security applies to it there (a recorded key would show rows a policy
 * hides): doc/security.md.
 *
 * Per checkpoint the deletes come before the rows: a row in the sink with
 * checkpoint N is there after N, so a key N deleted and wrote again ends
 * written.  max_rows is a soft limit: whole checkpoints, up to the first
 * at which the sink's rows or the deletes alone reach it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/sink_changes.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "catalog_sql/catalog_sink_deletes.h"

/* The sink rows of the checkpoints in (after, upto], in checkpoint order */
typedef struct SinkRows
{
	int			n;
	int64	   *checkpoints;
	Datum	   *records;		/* jsonb */
} SinkRows;

/*
 * The sink's rows after `after` (in the caller's snapshot, as the caller):
 * those of the checkpoints up to the first at which they reach max_rows,
 * and not past `deletes_bound` (where the deletes reach it).  Returns the
 * last checkpoint included (WEIR_NO_CHECKPOINT_BOUND: all); the rows go to
 * *rows, in checkpoint order, in the caller's memory context.
 */
static int64
sink_rows(const char *table, const char *column, int64 after, int max_rows,
		  int64 deletes_bound, SinkRows *rows)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	int64		upto = deletes_bound;
	char	   *sql;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = Int64GetDatum(after);
	values[1] = Int32GetDatum(max_rows - 1);
	sql = psprintf("SELECT %s FROM %s WHERE %s OPERATOR(pg_catalog.>) $1 "
				   "ORDER BY %s OFFSET $2 LIMIT 1",
				   column, table, column, column);
	weir_catalog_exec_read_only(sql, 2, types, values);
	if (SPI_processed == 1)
		upto = Min(upto, DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 1, &isnull)));
	types[1] = INT8OID;
	values[1] = Int64GetDatum(upto);
	sql = psprintf("SELECT s.%s, pg_catalog.to_jsonb(s) FROM %s s "
				   "WHERE s.%s OPERATOR(pg_catalog.>) $1 AND s.%s OPERATOR(pg_catalog.<=) $2 "
				   "ORDER BY s.%s",
				   column, table, column, column, column);
	weir_catalog_exec_read_only(sql, 2, types, values);
	rows->n = (int) SPI_processed;
	rows->checkpoints = SPI_palloc(sizeof(int64) * Max(rows->n, 1));
	rows->records = SPI_palloc(sizeof(Datum) * Max(rows->n, 1));
	for (int r = 0; r < rows->n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];

		rows->checkpoints[r] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1,
														   &isnull));
		rows->records[r] = SPI_datumTransfer(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2,
														   &isnull),
											 false, -1);
	}
	SPI_finish();
	return upto;
}

/* The caller may read the sink, and with it the keys of its deleted rows. */
static void
check_reader(const WeirPipelineRow *row, const char *sink)
{
	char		relkind = get_rel_relkind(row->sink);

	/*
	 * Reading a view (an owner may turn an emptied sink into one with a
	 * _RETURN rule) would run its functions with the caller's rights.
	 */
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("sink %s of pipeline \"%s\" is no longer a table", sink, row->name),
				 errhint("weir.sink_changes reads only a table; drop and create the pipeline with a table sink.")));
	if (pg_class_aclcheck(row->sink, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the sink of pipeline \"%s\"", row->name),
				 errdetail("weir.sink_changes reads sink %s as the caller.", sink),
				 errhint("Have the sink's owner GRANT SELECT on it to the reader.")));
	if (check_enable_rls(row->sink, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("sink %s of pipeline \"%s\" has row-level security that applies to the reader",
						sink, row->name),
				 errdetail("The keys of deleted rows, which weir keeps for readers, would show rows the policies hide."),
				 errhint("Read the changes as a role the policies do not apply to (the sink's owner, or one with BYPASSRLS).")));
}

static void
put(Tuplestorestate *ts, TupleDesc desc, int64 checkpoint, const char *change, Datum record)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = Int64GetDatum(checkpoint);
	values[1] = CStringGetTextDatum(change);
	values[2] = record;
	tuplestore_putvalues(ts, desc, values, nulls);
}

PG_FUNCTION_INFO_V1(weir_sink_changes);
Datum
weir_sink_changes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		after = PG_GETARG_INT64(1);
	int32		max_rows = PG_GETARG_INT32(2);
	WeirPipelineRow row;
	const char *sink;
	int64		trimmed;
	int64		last;
	TimestampTz watermark;
	int64		upto;
	SinkRows	rows;
	int64	   *delete_checkpoints;
	Datum	   *delete_keys;
	int			ndeletes;
	int			d = 0;
	int			r = 0;

	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must be at least 1")));
	if (!weir_catalog_pipeline_by_name(name, &row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", name)));
	if (row.checkpoint_column == NULL || !OidIsValid(row.sink))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pipeline \"%s\" has no checkpoint_column", name),
				 errdetail("Its sink rows do not say which checkpoint wrote them."),
				 errhint("Create the pipeline with checkpoint_column => 'a bigint column of the sink' (weir.drop_pipeline, then weir.create_*).")));
	sink = quote_qualified_identifier(get_namespace_name(get_rel_namespace(row.sink)),
									  get_rel_name(row.sink));
	check_reader(&row, sink);

	/*
	 * Checkpoint ids start again at 1 for a pipeline created again under
	 * the same name: a reader whose position is past the last checkpoint
	 * would silently skip the new pipeline's first ones.
	 */
	last = weir_catalog_last_checkpoint_in_snapshot(row.id, &watermark);
	if (after > last)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("position " INT64_FORMAT " is past the last checkpoint " INT64_FORMAT " of pipeline \"%s\"",
						after, last, name),
				 errdetail("A reader's position is a checkpoint the pipeline committed; the pipeline may have been dropped and created again, its checkpoint ids starting over."),
				 errhint("Resynchronise: copy sink %s anew and, in the same snapshot, take the greatest value of its column %s; then continue with weir.sink_changes after that checkpoint.",
						 sink, quote_identifier(row.checkpoint_column))));

	trimmed = weir_catalog_sink_deletes_trimmed(row.id);
	if (after < trimmed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the deletes of pipeline \"%s\" after checkpoint " INT64_FORMAT " are no longer kept",
						name, after),
				 errdetail("Deletes of checkpoints up to " INT64_FORMAT " are gone (weir.sink_deletes_retention).",
						   trimmed),
				 errhint("Resynchronise: copy sink %s anew and, in the same snapshot, take the greatest value of its column %s; then continue with weir.sink_changes after that checkpoint.",
						 sink, quote_identifier(row.checkpoint_column))));

	upto = sink_rows(sink, quote_identifier(row.checkpoint_column), after, max_rows,
					 weir_catalog_sink_deletes_bound(row.id, after, max_rows), &rows);
	ndeletes = weir_catalog_sink_deletes_read(row.id, after, upto, &delete_checkpoints,
											  &delete_keys);

	/* per checkpoint: its deletes, then its rows */
	InitMaterializedSRF(fcinfo, 0);
	while (d < ndeletes || r < rows.n)
	{
		if (r >= rows.n || (d < ndeletes && delete_checkpoints[d] <= rows.checkpoints[r]))
		{
			put(rsinfo->setResult, rsinfo->setDesc, delete_checkpoints[d], "delete",
				delete_keys[d]);
			d++;
		}
		else
		{
			put(rsinfo->setResult, rsinfo->setDesc, rows.checkpoints[r], "upsert",
				rows.records[r]);
			r++;
		}
	}
	return (Datum) 0;
}
