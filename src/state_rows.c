/*-------------------------------------------------------------------------
 *
 * state_rows.c
 *	  A checkpoint's window state rows (weir.pipeline_state), written in
 *	  bulk.
 *
 * A checkpoint writes a row per window that changed: new windows are
 * inserted, windows whose row an earlier checkpoint wrote are rewritten.
 * Through SQL (INSERT ... SELECT FROM unnest() ... ON CONFLICT DO UPDATE)
 * each row cost about 6 us, most of a hopping pipeline's checkpoint, whose
 * open windows all change every second.  So both go through the sink's
 * bulk path (sink.c), which sees weir.pipeline_state as a table with these
 * six columns, keyed by (pipeline_id, key, window_start): new windows by
 * heap_multi_insert and key-ordered index insertion, old ones updated in
 * place through the primary key (HOT: no index entries); rows of windows
 * that closed are deleted through it too.  Should the table
 * not be as expected (a row missing, an unexpected one present), the rows
 * go through SQL's upsert, which writes the same values.
 *
 * Runs as the owner of the weir schema (weir_catalog_privileged_begin).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "catalog_pipeline.h"
#include "definition.h"
#include "sink.h"
#include "state_rows.h"

#define STATE_COLUMNS 6

void
weir_state_rows_init(WeirStateRows *s)
{
	weir_column_init(&s->keys, BYTEAOID);
	weir_column_init(&s->starts, TIMESTAMPTZOID);
	weir_column_init(&s->ends, TIMESTAMPTZOID);
	weir_column_init(&s->fired, BOOLOID);
	weir_column_init(&s->states, BYTEAOID);
}

void
weir_state_rows_add(WeirStateRows *s, bytea *key, TimestampTz start,
					TimestampTz end, bool fired, bytea *image)
{
	weir_column_add(&s->keys, PointerGetDatum(key), false);
	weir_column_add(&s->starts, TimestampTzGetDatum(start), false);
	weir_column_add(&s->ends, TimestampTzGetDatum(end), false);
	weir_column_add(&s->fired, BoolGetDatum(fired), false);
	weir_column_add(&s->states, PointerGetDatum(image), false);
}

/* weir.pipeline_state's columns, as the bulk path's plan: key first */
static WeirPlan *
state_table_plan(void)
{
	static const struct
	{
		const char *name;
		Oid			type;
	}			columns[STATE_COLUMNS] = {
		{"pipeline_id", INT4OID}, {"key", BYTEAOID}, {"window_start", TIMESTAMPTZOID},
		{"window_end", TIMESTAMPTZOID}, {"fired", BOOLOID}, {"state", BYTEAOID}
	};
	WeirPlan   *plan = palloc0(sizeof(WeirPlan));

	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * STATE_COLUMNS);
	for (int i = 0; i < STATE_COLUMNS; i++)
	{
		plan->sinkcols[i].name = (char *) columns[i].name;
		plan->sinkcols[i].type = columns[i].type;
		plan->sinkcols[i].typmod = -1;
		plan->sinkcols[i].collation = InvalidOid;
		plan->sinkcols[i].nullable = false;
	}
	plan->nsinkcols = STATE_COLUMNS;
	plan->nsinkkey = 3;
	return plan;
}

/* The arguments of a bulk insertion, for weir_sink_try_insert */
typedef struct BulkInsert
{
	Oid			table;
	WeirPlan   *plan;
	int		   *map;
	Datum	  **values;
	bool	  **nulls;
	int			n;
} BulkInsert;

static void
bulk_insert(void *arg)
{
	BulkInsert *b = (BulkInsert *) arg;

	weir_sink_bulk_insert(b->table, b->plan, b->map, STATE_COLUMNS, b->values, b->nulls, b->n);
}

/*
 * The bulk path; false if it did not (or not entirely) write the rows.  A
 * unique violation on insertion (a row already there) rolls back its
 * subtransaction and answers false too.
 */
static bool
bulk_write(Oid table, int32 id, WeirStateRows *s, bool persisted)
{
	WeirPlan   *plan = state_table_plan();
	int			map[STATE_COLUMNS];
	Datum	   *values[STATE_COLUMNS];
	bool	   *nulls[STATE_COLUMNS];
	int			n = s->keys.n;
	WeirColumn *cols[STATE_COLUMNS - 1] = {&s->keys, &s->starts, &s->ends, &s->fired, &s->states};
	BulkInsert	b = {table, plan, map, values, nulls, n};
	bool		done;

	if (!weir_sink_bulk_eligible(table, plan, map))
		return false;
	values[0] = palloc(sizeof(Datum) * n);
	nulls[0] = palloc0(sizeof(bool) * n);
	for (int r = 0; r < n; r++)
		values[0][r] = Int32GetDatum(id);
	for (int c = 1; c < STATE_COLUMNS; c++)
	{
		values[c] = cols[c - 1]->values;
		nulls[c] = cols[c - 1]->nulls;
	}
	if (persisted)
		return weir_sink_bulk_update(table, plan, map, STATE_COLUMNS, values, nulls, n);
	done = weir_sink_try_insert(bulk_insert, &b);
	CommandCounterIncrement();
	return done;
}

/*
 * Write the rows of pipeline `id`: `persisted` when every one of them is
 * already in the table (an earlier checkpoint wrote it), else none is.
 */
void
weir_state_rows_write(int32 id, WeirStateRows *s, bool persisted)
{
	WeirCatalogPrivilege p;
	Oid			table;
	bool		done;

	if (s->keys.n == 0)
		return;
	weir_catalog_privileged_begin(&p);
	table = get_relname_relid("pipeline_state", get_namespace_oid("weir", false));
	done = OidIsValid(table) && bulk_write(table, id, s, persisted);
	weir_catalog_privileged_end(&p);
	if (!done)
		weir_catalog_write_state(id, weir_column_array(&s->keys),
								 weir_column_array(&s->starts),
								 weir_column_array(&s->ends),
								 weir_column_array(&s->fired),
								 weir_column_array(&s->states));
}

/*
 * Delete the rows of pipeline `id` of these windows (key images and
 * starts): through the primary key, else SQL.
 */
void
weir_state_rows_delete(int32 id, WeirColumn *keys, WeirColumn *starts)
{
	WeirCatalogPrivilege p;
	Oid			table;
	bool		done = false;

	if (keys->n == 0)
		return;
	weir_catalog_privileged_begin(&p);
	table = get_relname_relid("pipeline_state", get_namespace_oid("weir", false));
	if (OidIsValid(table))
	{
		WeirPlan   *plan = state_table_plan();
		int			map[STATE_COLUMNS];
		Datum	   *values[3];

		if (weir_sink_bulk_eligible(table, plan, map))
		{
			values[0] = palloc(sizeof(Datum) * keys->n);
			for (int r = 0; r < keys->n; r++)
				values[0][r] = Int32GetDatum(id);
			values[1] = keys->values;
			values[2] = starts->values;
			done = weir_sink_bulk_delete(table, plan, map, values, keys->n);
		}
	}
	weir_catalog_privileged_end(&p);
	if (!done)
		weir_catalog_delete_state(id, weir_column_array(keys), weir_column_array(starts));
}
