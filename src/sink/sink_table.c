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

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/write_target.h"
#include "sink/bulk.h"
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

/* The name of write_keeping's last column, in dead letters */
#define KEPT_COLUMN "weir_kept"

/*
 * The sink's insert, prepared once per worker and kept:
 *	INSERT INTO sink (columns) SELECT * FROM unnest($1, ..., $n)
 * and with upsert, for rows already emitted (late updates, emit updates):
 *	... ON CONFLICT (key columns) DO UPDATE SET other columns
 * Parameters are arrays, one per column.  Must be called inside SPI.
 */
static SPIPlanPtr
prepare_sink(WeirPlan *plan, Oid sink, bool upsert)
{
	StringInfoData sql;
	int			ncols = plan->nsinkcols;
	Oid		   *types = palloc(sizeof(Oid) * ncols);
	SPIPlanPtr	prepared;

	Assert(!upsert || plan->nsinkkey > 0);
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink)),
												get_rel_name(sink)));
	for (int i = 0; i < ncols; i++)
	{
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "",
						 quote_identifier(plan->sinkcols[i].name));
		types[i] = get_array_type(plan->sinkcols[i].type);
	}
	appendStringInfoString(&sql, ") SELECT * FROM unnest(");
	for (int i = 0; i < ncols; i++)
		appendStringInfo(&sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	appendStringInfoChar(&sql, ')');
	if (upsert)
	{
		for (int i = 0; i < plan->nsinkkey; i++)
			appendStringInfo(&sql, "%s%s", i == 0 ? " ON CONFLICT (" : ", ",
							 quote_identifier(plan->sinkcols[i].name));
		appendStringInfoString(&sql, ") DO UPDATE SET ");
		for (int i = plan->nsinkkey; i < ncols; i++)
		{
			const char *c = quote_identifier(plan->sinkcols[i].name);

			appendStringInfo(&sql, "%s%s = EXCLUDED.%s", i > plan->nsinkkey ? ", " : "", c, c);
		}
	}

	prepared = weir_catalog_prepare_hiding_sql(sql.data, ncols, types);
	if (SPI_keepplan(prepared) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return prepared;
}

/*
 * The key columns of d and of another relation, equal:
 *	d.k1 = <other>.k1 AND ...
 */
static char *
key_match(WeirPlan *plan, const char *other)
{
	StringInfoData cond;

	initStringInfo(&cond);
	for (int i = 0; i < plan->nsinkkey; i++)
	{
		const char *k = quote_identifier(plan->sinkcols[i].name);

		appendStringInfo(&cond, "%sd.%s = %s.%s", i > 0 ? " AND " : "", k, other, k);
	}
	return cond.data;
}

/*
 * The sink's upsert of rows some of whose columns keep the value the sink
 * has, prepared once per worker and kept:
 *	WITH d AS (SELECT * FROM unnest($1, ..., $n, $n+1) AS d(c1, ..., kept)),
 *		 u AS (UPDATE sink s SET c = CASE WHEN substr(d.kept, i, 1) = 'k'
 *									 THEN s.c ELSE d.c END, ...
 *				 FROM d WHERE <keys match> RETURNING <d's keys>)
 *	INSERT INTO sink (c1, ...) SELECT c1, ... FROM d
 *	 WHERE NOT EXISTS (SELECT FROM u WHERE <keys match>)
 * A row not in the sink is inserted with what it has (NULL where it
 * keeps).  Parameters are arrays, one per column, then the text array.
 * Must be called inside SPI.
 */
static SPIPlanPtr
prepare_sink_keeping(WeirPlan *plan, Oid sink)
{
	StringInfoData sql;
	StringInfoData cols;
	StringInfoData dcols;
	int			ncols = plan->nsinkcols;
	Oid		   *types = palloc(sizeof(Oid) * (ncols + 1));
	const char *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink)),
												   get_rel_name(sink));
	SPIPlanPtr	prepared;
	char	   *kept = pstrdup(KEPT_COLUMN);

	Assert(plan->nsinkkey > 0);
	/* a name for the kept flags that no sink column has */
	for (int i = 0; i < ncols; i++)
		if (strcmp(plan->sinkcols[i].name, kept) == 0)
		{
			kept = psprintf("%s_", kept);
			i = -1;
		}
	initStringInfo(&sql);
	initStringInfo(&cols);
	initStringInfo(&dcols);
	for (int i = 0; i < ncols; i++)
	{
		const char *c = quote_identifier(plan->sinkcols[i].name);

		appendStringInfo(&cols, "%s%s", i > 0 ? ", " : "", c);
		appendStringInfo(&dcols, "%sd.%s", i > 0 ? ", " : "", c);
		types[i] = get_array_type(plan->sinkcols[i].type);
	}
	types[ncols] = TEXTARRAYOID;
	appendStringInfoString(&sql, "WITH d AS (SELECT * FROM unnest(");
	for (int i = 0; i <= ncols; i++)
		appendStringInfo(&sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	appendStringInfo(&sql, ") AS d(%s, %s)), u AS (UPDATE %s s SET ",
					 cols.data, kept, table);
	for (int i = plan->nsinkkey; i < ncols; i++)
	{
		const char *c = quote_identifier(plan->sinkcols[i].name);

		appendStringInfo(&sql, "%s%s = CASE WHEN pg_catalog.substr(d.%s, %d, 1) = 'k' "
						 "THEN s.%s ELSE d.%s END",
						 i > plan->nsinkkey ? ", " : "", c, kept, i + 1, c, c);
	}
	appendStringInfo(&sql, " FROM d WHERE %s RETURNING ", key_match(plan, "s"));
	for (int i = 0; i < plan->nsinkkey; i++)
		appendStringInfo(&sql, "%sd.%s", i > 0 ? ", " : "",
						 quote_identifier(plan->sinkcols[i].name));
	appendStringInfo(&sql, ") INSERT INTO %s (%s) SELECT %s FROM d "
					 "WHERE NOT EXISTS (SELECT FROM u WHERE %s)",
					 table, cols.data, dcols.data, key_match(plan, "u"));
	prepared = weir_catalog_prepare_hiding_sql(sql.data, ncols + 1, types);
	if (SPI_keepplan(prepared) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return prepared;
}

/*
 * The sink's retraction by its key, prepared once per worker and kept:
 *	DELETE FROM sink s USING unnest($1, ..., $k) AS d(key columns)
 *	WHERE s.c1 = d.c1 AND ...
 * Used when session windows merge and a row already emitted must go.
 */
static SPIPlanPtr
prepare_sink_delete(WeirPlan *plan, Oid sink)
{
	StringInfoData sql;
	StringInfoData cols;
	StringInfoData cond;
	int			nkey = plan->nsinkkey;
	Oid		   *types = palloc(sizeof(Oid) * Max(nkey, 1));
	SPIPlanPtr	prepared;

	Assert(nkey > 0);
	initStringInfo(&sql);
	initStringInfo(&cols);
	initStringInfo(&cond);
	for (int i = 0; i < nkey; i++)
	{
		const char *k = quote_identifier(plan->sinkcols[i].name);

		appendStringInfo(&cols, "%s%s", i > 0 ? ", " : "", k);
		appendStringInfo(&cond, "%ss.%s = d.%s", i > 0 ? " AND " : "", k, k);
		types[i] = get_array_type(plan->sinkcols[i].type);
	}
	appendStringInfo(&sql, "DELETE FROM %s s USING unnest(",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink)),
												get_rel_name(sink)));
	for (int i = 0; i < nkey; i++)
		appendStringInfo(&sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	appendStringInfo(&sql, ") AS d(%s) WHERE %s", cols.data, cond.data);
	prepared = weir_catalog_prepare_hiding_sql(sql.data, nkey, types);
	if (SPI_keepplan(prepared) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return prepared;
}

static void
run_sink_delete(SPIPlanPtr delete_plan, Datum *arrays)
{
	int			rc = weir_catalog_execute_hiding_sql(delete_plan, arrays);

	if (rc != SPI_OK_DELETE)
		elog(ERROR, "sink retraction failed: %s", SPI_result_code_string(rc));
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
		st->sink_map = MemoryContextAlloc(st->cxt, sizeof(int) * ncols);
	if (!weir_sink_bulk_eligible(st->row->sink, st->plan, st->sink_map))
		return false;
	values = palloc(sizeof(Datum *) * ncols);
	nulls = palloc(sizeof(bool *) * ncols);
	for (int c = 0; c < ncols; c++)
	{
		values[c] = cols[c].values;
		nulls[c] = cols[c].nulls;
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
	Datum	   *arrays = palloc(sizeof(Datum) * ncols);

	for (int c = 0; c < ncols; c++)
		arrays[c] = weir_column_array(&cols[c]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (*plan == NULL)
		*plan = prepare_sink(st->plan, st->row->sink, upsert);
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
	Datum	   *arrays = palloc(sizeof(Datum) * ncols);

	Assert(ncols == st->plan->nsinkcols + 1);
	if (cols[0].n == 0)
		return;
	for (int c = 0; c < ncols; c++)
		arrays[c] = weir_column_array(&cols[c]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (st->keeping_plan == NULL)
		st->keeping_plan = prepare_sink_keeping(st->plan, st->row->sink);
	run_sink_write(st->keeping_plan, arrays);
	SPI_finish();
}

/* Delete sink rows by the sink's key: merged sessions, expired keys. */
static void
table_delete(WeirSink *sink, WeirColumn *key, int nkey)
{
	SinkTable  *st = (SinkTable *) sink;
	Datum	   *arrays = palloc(sizeof(Datum) * nkey);

	for (int i = 0; i < nkey; i++)
		arrays[i] = weir_column_array(&key[i]);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (st->delete_plan == NULL)
		st->delete_plan = prepare_sink_delete(st->plan, st->row->sink);
	run_sink_delete(st->delete_plan, arrays);
	SPI_finish();
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
	names[plan->nsinkcols] = KEPT_COLUMN;
	st->sink.ops = &table_ops;
	st->sink.relid = row->sink;
	st->sink.names = names;
	st->row = row;
	st->plan = plan;
	st->cxt = cxt;
	return &st->sink;
}
