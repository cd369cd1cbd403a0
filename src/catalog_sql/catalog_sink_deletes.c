/*-------------------------------------------------------------------------
 *
 * catalog_sink_deletes.c
 *	  SQL on weir.sink_deletes and weir.sink_deletes_trimmed: the sink rows
 *	  each checkpoint of a pipeline with a checkpoint column deleted, kept
 *	  for weir.sink_changes (a deleted row is no longer in the sink to be
 *	  found by its checkpoint id).
 *
 * Writes happen in the checkpoint's transaction (sink_table.c records the
 * keys a delete returned; checkpoint_apply.c trims), so a delete is
 * recorded exactly when the checkpoint that made it commits.  Trimming
 * removes the rows older than weir.sink_deletes_retention and raises the
 * pipeline's weir.sink_deletes_trimmed.through to the greatest checkpoint
 * whose deletes it removed: a reader behind that may have missed a delete
 * and is told so (sink_changes.c), never left with a silent gap.
 *
 * The reads serve weir.sink_changes, a STABLE function: they run
 * read-only in SPI, so they see the snapshot of the caller's statement, the
 * same one its read of the sink sees.  Every statement runs as weir's owner
 * (catalog.c): the table is not readable by PUBLIC, and the caller's right
 * to see the keys (SELECT on the sink, no row-level security) is checked
 * by sink_changes.c first.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_sink_deletes.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_sink_deletes.h"

/*
 * The keys (jsonb) of the sink rows checkpoint `checkpoint_id` deleted, at
 * `at` (weir's clock).  In the checkpoint's transaction.
 */
void
weir_catalog_record_sink_deletes(int32 pipeline_id, int64 checkpoint_id, TimestampTz at,
								 Datum *keys, int nkeys)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, INT8OID, TIMESTAMPTZOID, JSONBARRAYOID};
	Datum		values[4];

	values[0] = Int32GetDatum(pipeline_id);
	values[1] = Int64GetDatum(checkpoint_id);
	values[2] = TimestampTzGetDatum(at);
	values[3] = PointerGetDatum(construct_array(keys, nkeys, JSONBOID, -1, false,
												TYPALIGN_INT));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.sink_deletes (pipeline_id, checkpoint_id, recorded_at, key) "
					  "SELECT $1, $2, $3, k FROM pg_catalog.unnest($4) AS k",
					  4, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/*
 * Remove the pipeline's deletes recorded before `cutoff`, and remember the
 * greatest checkpoint among them.  One index probe when there is nothing
 * to remove.  In the checkpoint's transaction.
 */
void
weir_catalog_trim_sink_deletes(int32 pipeline_id, TimestampTz cutoff)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, TIMESTAMPTZOID};
	Datum		values[2];

	values[0] = Int32GetDatum(pipeline_id);
	values[1] = TimestampTzGetDatum(cutoff);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("WITH gone AS (DELETE FROM weir.sink_deletes "
					  "WHERE pipeline_id = $1 AND recorded_at < $2 RETURNING checkpoint_id) "
					  "INSERT INTO weir.sink_deletes_trimmed AS t (pipeline_id, through) "
					  "SELECT $1, max(checkpoint_id) FROM gone HAVING count(*) > 0 "
					  "ON CONFLICT (pipeline_id) DO UPDATE "
					  "SET through = greatest(t.through, excluded.through)",
					  2, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/* The greatest checkpoint whose deletes may have been trimmed; 0: none. */
int64
weir_catalog_sink_deletes_trimmed(int32 pipeline_id)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(pipeline_id);
	int64		through = 0;
	bool		isnull;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec_read_only("SELECT through FROM weir.sink_deletes_trimmed WHERE pipeline_id = $1",
								1, &type, &value);
	if (SPI_processed == 1)
		through = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											  1, &isnull));
	weir_catalog_privileged_end(&p);
	return through;
}

/*
 * The checkpoint of the pipeline's max_rows-th delete after `after` (in
 * checkpoint order); WEIR_NO_CHECKPOINT_BOUND when there are fewer.
 */
int64
weir_catalog_sink_deletes_bound(int32 pipeline_id, int64 after, int max_rows)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT8OID, INT4OID};
	Datum		values[3];
	int64		bound = WEIR_NO_CHECKPOINT_BOUND;
	bool		isnull;

	values[0] = Int32GetDatum(pipeline_id);
	values[1] = Int64GetDatum(after);
	values[2] = Int32GetDatum(max_rows - 1);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec_read_only("SELECT checkpoint_id FROM weir.sink_deletes "
								"WHERE pipeline_id = $1 AND checkpoint_id > $2 "
								"ORDER BY checkpoint_id OFFSET $3 LIMIT 1",
								3, types, values);
	if (SPI_processed == 1)
		bound = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											1, &isnull));
	weir_catalog_privileged_end(&p);
	return bound;
}

/*
 * The pipeline's deletes of the checkpoints in (after, upto], in
 * checkpoint order: their number, and palloc'd arrays of their checkpoints
 * and keys (jsonb), in the caller's memory context.
 */
int
weir_catalog_sink_deletes_read(int32 pipeline_id, int64 after, int64 upto,
							   int64 **checkpoints, Datum **keys)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, INT8OID, INT8OID};
	Datum		values[3];
	int			n;
	bool		isnull;

	values[0] = Int32GetDatum(pipeline_id);
	values[1] = Int64GetDatum(after);
	values[2] = Int64GetDatum(upto);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec_read_only("SELECT checkpoint_id, key FROM weir.sink_deletes "
								"WHERE pipeline_id = $1 AND checkpoint_id > $2 AND checkpoint_id <= $3 "
								"ORDER BY checkpoint_id",
								3, types, values);
	n = (int) SPI_processed;
	*checkpoints = SPI_palloc(sizeof(int64) * Max(n, 1));
	*keys = SPI_palloc(sizeof(Datum) * Max(n, 1));
	for (int r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];

		(*checkpoints)[r] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		(*keys)[r] = SPI_datumTransfer(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull),
									   false, -1);
	}
	weir_catalog_privileged_end(&p);
	return n;
}
