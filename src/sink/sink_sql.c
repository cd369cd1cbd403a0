/*-------------------------------------------------------------------------
 *
 * sink_sql.c
 *	  The statements that write a sink's rows, as text (sink_sql.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "sink/sink_sql.h"

static bool
is_key(const WeirSinkSqlTarget *t, int col)
{
	for (int i = 0; i < t->nkey; i++)
		if (t->key[i] == col)
			return true;
	return false;
}

static const char *
col(WeirPlan *plan, int i)
{
	return quote_identifier(plan->sinkcols[i].name);
}

/*
 * INSERT INTO sink (columns) SELECT * FROM unnest($1, ..., $n)
 * and with upsert, for rows that may be there already:
 *	... ON CONFLICT (key columns) DO UPDATE SET other columns
 * (DO NOTHING when every column is a key column).
 */
char *
weir_sink_sql_insert(WeirPlan *plan, const WeirSinkSqlTarget *t, bool upsert)
{
	StringInfoData sql;
	int			ncols = plan->nsinkcols;
	bool		first = true;

	Assert(!upsert || t->nkey > 0);
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", t->table);
	for (int i = 0; i < ncols; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", col(plan, i));
	if (t->checkpoint_column)
		appendStringInfo(&sql, ", %s) SELECT *, %s FROM unnest(", t->checkpoint_column,
						 t->checkpoint_param);
	else
		appendStringInfoString(&sql, ") SELECT * FROM unnest(");
	for (int i = 0; i < ncols; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", t->params[i]);
	appendStringInfoChar(&sql, ')');
	if (!upsert)
		return sql.data;
	for (int i = 0; i < t->nkey; i++)
		appendStringInfo(&sql, "%s%s", i == 0 ? " ON CONFLICT (" : ", ", col(plan, t->key[i]));
	appendStringInfoChar(&sql, ')');
	for (int i = 0; i < ncols; i++)
	{
		if (is_key(t, i))
			continue;
		appendStringInfo(&sql, "%s%s = EXCLUDED.%s", first ? " DO UPDATE SET " : ", ",
						 col(plan, i), col(plan, i));
		first = false;
	}
	/*
	 * An updated row takes the id of the checkpoint that updates it.  When
	 * every column is a key (DO NOTHING), the row there is the row written
	 * and keeps the id of the checkpoint that wrote it first: a reader that
	 * has it needs it no second time.
	 */
	if (!first && t->checkpoint_column)
		appendStringInfo(&sql, ", %s = EXCLUDED.%s", t->checkpoint_column,
						 t->checkpoint_column);
	if (first)
		appendStringInfoString(&sql, " DO NOTHING");
	return sql.data;
}

/* The key columns of d and of another relation, equal: d.k1 = o.k1 AND ... */
static char *
key_match(WeirPlan *plan, const WeirSinkSqlTarget *t, const char *other)
{
	StringInfoData cond;

	initStringInfo(&cond);
	for (int i = 0; i < t->nkey; i++)
	{
		const char *k = col(plan, t->key[i]);

		appendStringInfo(&cond, "%sd.%s = %s.%s", i > 0 ? " AND " : "", k, other, k);
	}
	return cond.data;
}

/* A name for write_keeping's flags that no sink column has */
const char *
weir_sink_kept_column(WeirPlan *plan)
{
	char	   *kept = pstrdup(WEIR_SINK_KEPT_COLUMN);

	for (int i = 0; i < plan->nsinkcols; i++)
		if (strcmp(plan->sinkcols[i].name, kept) == 0)
		{
			kept = psprintf("%s_", kept);
			i = -1;
		}
	return kept;
}

/*
 * An upsert of rows some of whose columns keep the value the sink has:
 *	WITH d AS (SELECT * FROM unnest($1, ..., $n, $n+1) AS d(c1, ..., kept)),
 *		 u AS (UPDATE sink s SET c = CASE WHEN substr(d.kept, i, 1) = 'k'
 *									 THEN s.c ELSE d.c END, ...
 *				 FROM d WHERE <keys match> RETURNING <d's keys>)
 *	INSERT INTO sink (c1, ...) SELECT c1, ... FROM d
 *	 WHERE NOT EXISTS (SELECT FROM u WHERE <keys match>)
 * A row not in the sink is inserted with what it has (NULL where it
 * keeps).  Parameters: one per column, then the kept flags (text).
 */
char *
weir_sink_sql_keeping(WeirPlan *plan, const WeirSinkSqlTarget *t)
{
	StringInfoData sql;
	StringInfoData cols;
	StringInfoData dcols;
	int			ncols = plan->nsinkcols;
	const char *kept = quote_identifier(weir_sink_kept_column(plan));
	bool		first = true;

	Assert(t->nkey > 0);
	initStringInfo(&sql);
	initStringInfo(&cols);
	initStringInfo(&dcols);
	for (int i = 0; i < ncols; i++)
	{
		appendStringInfo(&cols, "%s%s", i > 0 ? ", " : "", col(plan, i));
		appendStringInfo(&dcols, "%sd.%s", i > 0 ? ", " : "", col(plan, i));
	}
	appendStringInfoString(&sql, "WITH d AS (SELECT * FROM unnest(");
	for (int i = 0; i <= ncols; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", t->params[i]);
	appendStringInfo(&sql, ") AS d(%s, %s)), u AS (UPDATE %s s SET ",
					 cols.data, kept, t->table);
	for (int i = 0; i < ncols; i++)
	{
		if (is_key(t, i))
			continue;
		appendStringInfo(&sql, "%s%s = CASE WHEN pg_catalog.substr(d.%s, %d, 1) = 'k' "
						 "THEN s.%s ELSE d.%s END",
						 first ? "" : ", ", col(plan, i), kept, i + 1, col(plan, i), col(plan, i));
		first = false;
	}
	if (t->checkpoint_column)
	{
		appendStringInfo(&sql, "%s%s = %s", first ? "" : ", ", t->checkpoint_column,
						 t->checkpoint_param);
		appendStringInfo(&cols, ", %s", t->checkpoint_column);
		appendStringInfo(&dcols, ", %s", t->checkpoint_param);
	}
	appendStringInfo(&sql, " FROM d WHERE %s RETURNING ", key_match(plan, t, "s"));
	for (int i = 0; i < t->nkey; i++)
		appendStringInfo(&sql, "%sd.%s", i > 0 ? ", " : "", col(plan, t->key[i]));
	appendStringInfo(&sql, ") INSERT INTO %s (%s) SELECT %s FROM d "
					 "WHERE NOT EXISTS (SELECT FROM u WHERE %s)",
					 t->table, cols.data, dcols.data, key_match(plan, t, "u"));
	return sql.data;
}

/*
 * Rows deleted by the key:
 *	DELETE FROM sink s USING unnest($1, ..., $k) AS d(key columns)
 *	WHERE s.k1 = d.k1 AND ...
 * and with a checkpoint column: RETURNING jsonb_build_object('k1', d.k1,
 * ...), each deleted row's key as JSON.
 * Parameter i is the i-th key column's (params[i]).
 */
char *
weir_sink_sql_delete(WeirPlan *plan, const WeirSinkSqlTarget *t)
{
	StringInfoData sql;
	StringInfoData cols;

	Assert(t->nkey > 0);
	initStringInfo(&sql);
	initStringInfo(&cols);
	for (int i = 0; i < t->nkey; i++)
		appendStringInfo(&cols, "%s%s", i > 0 ? ", " : "", col(plan, t->key[i]));
	appendStringInfo(&sql, "DELETE FROM %s s USING unnest(", t->table);
	for (int i = 0; i < t->nkey; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", t->params[i]);
	appendStringInfo(&sql, ") AS d(%s) WHERE %s", cols.data, key_match(plan, t, "s"));
	/* the keys of the rows deleted, for readers (weir.sink_deletes) */
	if (t->checkpoint_column)
	{
		appendStringInfoString(&sql, " RETURNING pg_catalog.jsonb_build_object(");
		for (int i = 0; i < t->nkey; i++)
			appendStringInfo(&sql, "%s%s, d.%s", i > 0 ? ", " : "",
							 quote_literal_cstr(plan->sinkcols[t->key[i]].name),
							 col(plan, t->key[i]));
		appendStringInfoChar(&sql, ')');
	}
	return sql.data;
}
