/*-------------------------------------------------------------------------
 *
 * catalog_restores.c
 *	  SQL on weir.restores: a worker's restore or a drill is written when
 *	  it ends; the worker fills in the time to its first record and back to
 *	  the rate before the restart later, on the same row (by its id).
 *
 * Everything here runs as weir's catalog owner: the pipeline's owner may
 * read weir.restores, as anyone, but not write it.
 *
 * The rate before a restart is measured on weir.checkpoints, not in memory
 * (a crashed worker's memory is gone): the records_in of the checkpoints
 * committed in the minute up to the restored one, over the time from the
 * first of them to it; the first one's own records came before that time,
 * so they are left out.  Fewer than two checkpoints: not known.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_restores.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_restores.h"

static double
get_float8(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? -1.0 : DatumGetFloat8(d);
}

/*
 * Set a pipeline's recovery target; a zero interval removes it (NULL).
 */
void
weir_catalog_pipeline_set_recovery_target(int32 id, Interval *target)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, INTERVALOID};
	Datum		values[2] = {Int32GetDatum(id), IntervalPGetDatum(target)};

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.pipeline SET recovery_target = nullif($2, interval '0') "
					  "WHERE id = $1",
					  2, types, values, NULL, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/*
 * Write a restore (drill false: by the pipeline's worker) or a drill of
 * checkpoint `checkpoint_id` of pipeline `id` into weir.restores, in the
 * caller's transaction.  *rec receives the row's id, the rate before (for
 * a restore), the pipeline's recovery target and the row itself, copied
 * into the caller's memory context.
 */
void
weir_catalog_insert_restore(int32 id, int64 checkpoint_id, bool drill, double duration_ms,
							int64 bytes, int64 rows, WeirRestoreRecord *rec)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			types[6] = {INT4OID, INT8OID, FLOAT8OID, INT8OID, INT8OID, TEXTOID};
	Datum		values[6];
	bool		isnull;
	MemoryContext spi_cxt;

	values[0] = Int32GetDatum(id);
	values[1] = Int64GetDatum(checkpoint_id);
	values[2] = Float8GetDatum(duration_ms);
	values[3] = Int64GetDatum(bytes);
	values[4] = Int64GetDatum(rows);
	values[5] = CStringGetTextDatum(drill ? "drill" : "restore");
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("WITH last AS ("
					  "  SELECT committed_at FROM weir.checkpoints "
					  "   WHERE pipeline_id = $1 AND id = $2), "
					  "minute AS ("
					  "  SELECT c.committed_at, c.records_in FROM weir.checkpoints c, last "
					  "   WHERE c.pipeline_id = $1 AND c.id <= $2 "
					  "     AND c.committed_at >= last.committed_at - interval '1 minute'), "
					  "rate AS ("
					  "  SELECT (sum(records_in) - (array_agg(records_in ORDER BY committed_at))[1])::float8 / "
					  "         nullif(extract(epoch FROM max(committed_at) - min(committed_at)), 0) AS r "
					  "    FROM minute) "
					  "INSERT INTO weir.restores (pipeline_id, checkpoint_id, restored_at, duration_ms, "
					  "bytes, windows, rows, kind, rate_before) "
					  "SELECT $1, $2, clock_timestamp(), $3, $4, $5, $5, $6, "
					  "       CASE WHEN $6 = 'restore' THEN rate.r END FROM rate "
					  "RETURNING *",
					  6, types, values, NULL, SPI_OK_INSERT_RETURNING);
	if (SPI_processed != 1)
		elog(ERROR, "weir.restores: %d rows inserted, not 1", (int) SPI_processed);
	rec->id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  SPI_fnumber(SPI_tuptable->tupdesc, "id"), &isnull));
	rec->rate_before = get_float8(SPI_fnumber(SPI_tuptable->tupdesc, "rate_before"));
	spi_cxt = MemoryContextSwitchTo(cxt);
	rec->tuple = heap_copytuple(SPI_tuptable->vals[0]);
	MemoryContextSwitchTo(spi_cxt);
	/* the target it is held to: the one in force now */
	weir_catalog_exec("SELECT (extract(epoch FROM recovery_target) * 1000)::float8 "
					  "FROM weir.pipeline WHERE id = $1",
					  1, types, values, NULL, SPI_OK_SELECT);
	rec->target_ms = SPI_processed == 1 ? get_float8(1) : -1.0;
	weir_catalog_privileged_end(&p);
}

/*
 * What a worker learnt after its restore `restore_id`: the time to its
 * first record and back to the rate before, in ms (< 0: not known yet,
 * left as it is).  In the caller's transaction.
 */
void
weir_catalog_restore_followed(int64 restore_id, double first_record_ms, double back_to_rate_ms)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT8OID, FLOAT8OID, FLOAT8OID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int64GetDatum(restore_id);
	values[1] = Float8GetDatum(first_record_ms);
	values[2] = Float8GetDatum(back_to_rate_ms);
	if (first_record_ms < 0)
		nulls[1] = 'n';
	if (back_to_rate_ms < 0)
		nulls[2] = 'n';
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.restores SET "
					  "first_record_ms = coalesce(first_record_ms, $2), "
					  "back_to_rate_ms = coalesce(back_to_rate_ms, $3) "
					  "WHERE id = $1",
					  3, types, values, nulls, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}
