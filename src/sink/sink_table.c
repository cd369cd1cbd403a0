/*-------------------------------------------------------------------------
 *
 * sink_table.c
 *	  A pipeline's sink table, as a sink: rows through the bulk path
 *	  (bulk.c) when the table allows it, through SQL otherwise; windows
 *	  emitted for the first time inserted, rows already there upserted.
 *
 * Runs in the process that applies a checkpoint (the worker, or its
 * checkpoint writer), in the checkpoint's transaction, as the pipeline's
 * owner (the current user).
 *
 * A pipeline with a checkpoint column (row->checkpoint_column) has every
 * row it inserts or updates carry sink.checkpoint_id there (one more
 * statement parameter, or one more column of the bulk path), and its
 * deletes return the deleted keys, recorded in weir.sink_deletes for
 * readers (weir.sink_changes).  Without one, the statements are those of
 * before, and nothing more is written.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_table.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "base/clock.h"
#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "catalog_sql/catalog_sink_deletes.h"
#include "definition/write_target.h"
#include "sink/bulk.h"
#include "sink/sink_sql.h"
#include "sink/sink_table.h"

typedef struct SinkTable
{
	WeirSink	sink;			/* first: a WeirSink * is a SinkTable * */
	WeirPipelineRow *row;
	WeirPlan   *plan;
	MemoryContext cxt;			/* what outlives a checkpoint */
	int		   *sink_map;		/* sink attribute of each of our columns (bulk.c) */
	SPIPlanPtr	upsert_plan;	/* rows already emitted */
	SPIPlanPtr	insert_plan;	/* first emission of a window */
	SPIPlanPtr	keeping_plan;	/* rows keeping some of the sink's values */
	SPIPlanPtr	delete_plan;
} SinkTable;

/*
 * The sink's statements (sink_sql.c), prepared once per worker and kept:
 * parameters $1..$n, arrays, one per column (a delete's: its key columns;
 * keeping's: then the kept flags).  Must be called inside SPI.
 */
typedef enum SinkStatement
{
	SINK_INSERT,
	SINK_UPSERT,
	SINK_KEEPING,
	SINK_DELETE
} SinkStatement;

static SPIPlanPtr
prepare_sink(WeirPlan *plan, Oid sink, const char *checkpoint_column, SinkStatement which)
{
	int			ncols = plan->nsinkcols;
	int			nparams = which == SINK_DELETE ? plan->nsinkkey :
		which == SINK_KEEPING ? ncols + 1 : ncols;
	Oid		   *types = palloc(sizeof(Oid) * (ncols + 2));
	const char **params = palloc(sizeof(char *) * (ncols + 2));
	int		   *key = palloc(sizeof(int) * Max(plan->nsinkkey, 1));
	WeirSinkSqlTarget t;
	char	   *sql;
	SPIPlanPtr	prepared;

	for (int i = 0; i < plan->nsinkkey; i++)
		key[i] = i;
	for (int i = 0; i < nparams; i++)
	{
		params[i] = psprintf("$%d", i + 1);
		types[i] = i < ncols ? get_array_type(plan->sinkcols[i].type) : TEXTARRAYOID;
	}
	t.table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink)),
										 get_rel_name(sink));
	t.key = key;
	t.nkey = plan->nsinkkey;
	t.params = params;
	t.checkpoint_column = checkpoint_column ? quote_identifier(checkpoint_column) : NULL;
	t.checkpoint_param = NULL;
	/* rows written: the checkpoint's id, one more parameter (bigint) */
	if (checkpoint_column && which != SINK_DELETE)
	{
		types[nparams] = INT8OID;
		t.checkpoint_param = psprintf("$%d", ++nparams);
	}
	switch (which)
	{
		case SINK_INSERT:
		case SINK_UPSERT:
			sql = weir_sink_sql_insert(plan, &t, which == SINK_UPSERT);
			break;
		case SINK_KEEPING:
			sql = weir_sink_sql_keeping(plan, &t);
			break;
		default:
			sql = weir_sink_sql_delete(plan, &t);
			break;
	}
	prepared = weir_catalog_prepare_hiding_sql(sql, nparams, types);
	if (SPI_keepplan(prepared) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return prepared;
}

static void
run_sink_delete(SPIPlanPtr delete_plan, Datum *arrays, bool returning)
{
	int			rc = weir_catalog_execute_hiding_sql(delete_plan, arrays);

	if (rc != (returning ? SPI_OK_DELETE_RETURNING : SPI_OK_DELETE))
		elog(ERROR, "sink retraction failed: %s", SPI_result_code_string(rc));
}

/*
 * The statement's parameters for rows: one array per column, then, with a
 * checkpoint column, the checkpoint's id.
 */
static Datum *
row_params(SinkTable *st, WeirColumn *cols, int ncols)
{
	Datum	   *arrays = palloc(sizeof(Datum) * (ncols + 1));

	for (int c = 0; c < ncols; c++)
		arrays[c] = weir_column_array(&cols[c]);
	arrays[ncols] = Int64GetDatum(st->sink.checkpoint_id);
	return arrays;
}

/* Run the sink upsert; the caller is in SPI, as the pipeline's owner. */
static void
run_sink_write(SPIPlanPtr sink_plan, Datum *arrays)
{
	int			rc = weir_catalog_execute_hiding_sql(sink_plan, arrays);

	if (rc != SPI_OK_INSERT)
		elog(ERROR, "sink write failed: %s", SPI_result_code_string(rc));
}

/*
 * Rows through the bulk path (bulk.c), when the sink allows it: first
 * emissions inserted, rows already in the sink updated in place.  False:
 * not (all) done, SQL must.
 */
static bool
bulk_write(SinkTable *st, WeirColumn *cols, int ncols, bool update)
{
	Datum	  **values;
	bool	  **nulls;

	/* checked at every checkpoint: a trigger added later must not be bypassed */
	if (st->sink_map == NULL)
		st->sink_map = MemoryContextAlloc(st->cxt, sizeof(int) * (ncols + 1));
	if (!weir_sink_bulk_eligible(st->row->sink, st->plan, st->row->checkpoint_column,
								 st->sink_map))
		return false;
	values = palloc(sizeof(Datum *) * (ncols + 1));
	nulls = palloc(sizeof(bool *) * (ncols + 1));
	for (int c = 0; c < ncols; c++)
	{
		values[c] = cols[c].values;
		nulls[c] = cols[c].nulls;
	}
	/* the checkpoint column: one more column, the checkpoint's id in each row */
	if (st->row->checkpoint_column)
	{
		int			n = cols[0].n;

		values[ncols] = palloc(sizeof(Datum) * Max(n, 1));
		nulls[ncols] = palloc0(sizeof(bool) * Max(n, 1));
		for (int r = 0; r < n; r++)
			values[ncols][r] = Int64GetDatum(st->sink.checkpoint_id);
		ncols++;
	}
	if (update)
		return weir_sink_bulk_update(st->row->sink, st->plan, st->sink_map, ncols,
									 values, nulls, cols[0].n);
	weir_sink_bulk_insert(st->row->sink, st->plan, st->sink_map, ncols, values,
						  nulls, cols[0].n);
	return true;
}

/* Sink rows through SQL (INSERT, or upsert): one array per column. */
static void
sql_write(SinkTable *st, WeirColumn *cols, int ncols, bool upsert)
{
	SPIPlanPtr *plan = upsert ? &st->upsert_plan : &st->insert_plan;
	Datum	   *arrays = row_params(st, cols, ncols);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (*plan == NULL)
		*plan = prepare_sink(st->plan, st->row->sink, st->row->checkpoint_column,
							 upsert ? SINK_UPSERT : SINK_INSERT);
	run_sink_write(*plan, arrays);
	SPI_finish();
}

/* A first emission of rows, for weir_sink_try_insert */
typedef struct SinkInsert
{
	SinkTable  *st;
	WeirColumn *cols;
	int			ncols;
} SinkInsert;

static void
sink_insert(void *arg)
{
	SinkInsert *si = (SinkInsert *) arg;

	if (!bulk_write(si->st, si->cols, si->ncols, false))
		sql_write(si->st, si->cols, si->ncols, false);
}

/*
 * Windows emitted for the first time go in with a plain INSERT, much
 * cheaper than the upsert; if the sink already holds such a row (the
 * pipeline was created over an existing sink, or someone wrote to it), the
 * INSERT, run in a subtransaction, fails on the unique key and the rows
 * are upserted instead.
 */
static void
table_write(WeirSink *sink, WeirColumn *cols, int ncols, bool upsert)
{
	SinkTable  *st = (SinkTable *) sink;
	SinkInsert	si = {st, cols, ncols};

	if (cols[0].n == 0)
		return;
	if (upsert)
	{
		/* an upsert writes the same values again if the bulk update stopped */
		if (!bulk_write(st, cols, ncols, true))
			sql_write(st, cols, ncols, true);
	}
	else if (st->plan->nsinkkey == 0)
		sink_insert(&si);		/* rows without a key are only ever inserted */
	else if (!weir_sink_try_insert(sink_insert, &si))
		sql_write(st, cols, ncols, true);
}

/*
 * Rows some of whose columns keep the sink's value (the last column says
 * which), through SQL: the bulk path writes whole rows.
 */
static void
table_write_keeping(WeirSink *sink, WeirColumn *cols, int ncols)
{
	SinkTable  *st = (SinkTable *) sink;
	Datum	   *arrays;

	Assert(ncols == st->plan->nsinkcols + 1);
	if (cols[0].n == 0)
		return;
	arrays = row_params(st, cols, ncols);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (st->keeping_plan == NULL)
		st->keeping_plan = prepare_sink(st->plan, st->row->sink, st->row->checkpoint_column,
										SINK_KEEPING);
	run_sink_write(st->keeping_plan, arrays);
	SPI_finish();
}

/*
 * Delete sink rows by the sink's key: merged sessions, expired keys.  With
 * a checkpoint column, the keys of the rows deleted go to
 * weir.sink_deletes in the same (sub)transaction, for readers.
 */
static void
table_delete(WeirSink *sink, WeirColumn *key, int nkey)
{
	SinkTable  *st = (SinkTable *) sink;
	bool		record = st->row->checkpoint_column != NULL;
	Datum	   *arrays = palloc(sizeof(Datum) * nkey);
	Datum	   *keys = NULL;
	int			nkeys = 0;

	for (int i = 0; i < nkey; i++)
		arrays[i] = weir_column_array(&key[i]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (st->delete_plan == NULL)
		st->delete_plan = prepare_sink(st->plan, st->row->sink, st->row->checkpoint_column,
									   SINK_DELETE);
	run_sink_delete(st->delete_plan, arrays, record);
	if (record && SPI_processed > 0)
	{
		bool		isnull;

		/* copied to the caller's context: SPI_finish frees SPI's */
		keys = SPI_palloc(sizeof(Datum) * SPI_processed);
		for (uint64 r = 0; r < SPI_processed; r++)
			keys[r] = SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[r],
													  SPI_tuptable->tupdesc, 1, &isnull),
										false, -1);
		nkeys = (int) SPI_processed;
	}
	SPI_finish();
	if (nkeys > 0)
		weir_catalog_record_sink_deletes(st->row->id, st->sink.checkpoint_id,
										 weir_clock_now(), keys, nkeys);
}

static void
table_recheck(WeirSink *sink)
{
	SinkTable  *st = (SinkTable *) sink;

	weir_check_sink(st->plan, st->row, st->row->sink, st->row->owner);
}

static const WeirSinkOps table_ops = {
	.write = table_write,
	.write_keeping = table_write_keeping,
	.delete = table_delete,
	.recheck = table_recheck,
};

/*
 * The sink table of the pipeline `row` (which must outlive it), in cxt.
 * Needs no transaction.
 */
WeirSink *
weir_sink_table_open(WeirPipelineRow *row, WeirPlan *plan, MemoryContext cxt)
{
	SinkTable  *st = MemoryContextAllocZero(cxt, sizeof(SinkTable));
	const char **names = MemoryContextAlloc(cxt, sizeof(char *) * (plan->nsinkcols + 1));

	for (int i = 0; i < plan->nsinkcols; i++)
		names[i] = plan->sinkcols[i].name;
	names[plan->nsinkcols] = WEIR_SINK_KEPT_COLUMN;
	st->sink.ops = &table_ops;
	st->sink.relid = row->sink;
	st->sink.names = names;
	st->row = row;
	st->plan = plan;
	st->cxt = cxt;
	return &st->sink;
}
