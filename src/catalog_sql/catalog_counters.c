/*-------------------------------------------------------------------------
 *
 * catalog_counters.c
 *	  SQL on weir.pipeline_counters: a pipeline's counters as of its last
 *	  checkpoint (checkpoint_counters.c says how they are kept).
 *
 * The row is written by each checkpoint's transaction and read by a
 * starting worker, both as weir's catalog owner (the pipeline's owner may
 * read it, as anyone, but not write it).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_counters.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_counters.h"

static int64
get_int8(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * Write the counters of checkpoint `checkpoint_id` of pipeline `id`, in the
 * checkpoint's transaction: the worker's (absolute, from the package's
 * header), and the previous checkpoint's records_out and dead_at_write
 * plus `rows_written` and `dead_at_write` of this one's writes.  The
 * committed values (all six) go to *committed.  Checkpoints of a pipeline
 * are written one at a time (checkpoint_writer.c), so adding to the row
 * read in the same statement is safe.
 */
void
weir_catalog_write_counters(int32 id, int64 checkpoint_id, const WeirCounters *worker,
							int64 rows_written, int64 dead_at_write,
							WeirCounters *committed)
{
	WeirCatalogPrivilege p;
	Oid			types[8] = {INT4OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID,
		INT8OID, INT8OID};
	Datum		values[8];

	values[0] = Int32GetDatum(id);
	values[1] = Int64GetDatum(checkpoint_id);
	values[2] = Int64GetDatum(worker->records_in);
	values[3] = Int64GetDatum(rows_written);
	values[4] = Int64GetDatum(worker->records_late);
	values[5] = Int64GetDatum(worker->records_dead);
	values[6] = Int64GetDatum(dead_at_write);
	values[7] = Int64GetDatum(worker->records_dropped);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_counters AS c (pipeline_id, checkpoint_id, "
					  "records_in, records_out, records_late, records_dead, dead_at_write, "
					  "records_dropped, updated_at) "
					  "VALUES ($1, $2, $3, $4, $5, $6 + $7, $7, $8, clock_timestamp()) "
					  "ON CONFLICT (pipeline_id) DO UPDATE SET checkpoint_id = $2, "
					  "records_in = $3, records_out = c.records_out + $4, records_late = $5, "
					  "records_dead = $6 + c.dead_at_write + $7, "
					  "dead_at_write = c.dead_at_write + $7, records_dropped = $8, "
					  "updated_at = clock_timestamp() "
					  "RETURNING records_out, dead_at_write",
					  8, types, values, NULL, SPI_OK_INSERT_RETURNING);
	*committed = *worker;
	committed->records_out = get_int8(1);
	committed->dead_at_write = get_int8(2);
	weir_catalog_privileged_end(&p);
}

/*
 * The counters of pipeline `id` as of its last checkpoint (records_dead:
 * the worker's part, without dead_at_write, as WeirCounters counts it),
 * and that checkpoint's id; all 0 and 0 when it has none.
 */
int64
weir_catalog_load_counters(int32 id, WeirCounters *c)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);
	int64		checkpoint_id = 0;

	memset(c, 0, sizeof(*c));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT checkpoint_id, records_in, records_out, records_late, "
					  "records_dead - dead_at_write, dead_at_write, records_dropped "
					  "FROM weir.pipeline_counters WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		checkpoint_id = get_int8(1);
		c->records_in = get_int8(2);
		c->records_out = get_int8(3);
		c->records_late = get_int8(4);
		c->records_dead = get_int8(5);
		c->dead_at_write = get_int8(6);
		c->records_dropped = get_int8(7);
	}
	weir_catalog_privileged_end(&p);
	return checkpoint_id;
}
