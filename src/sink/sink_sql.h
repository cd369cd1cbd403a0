/*-------------------------------------------------------------------------
 *
 * sink_sql.h
 *	  The statements that write a sink's rows, as text: for the table sink
 *	  (prepared through SPI) and for a remote sink (sent over libpq).
 *
 * Rows travel as arrays, one per sink column, unnested in the statement.
 * How a statement names its parameters is the caller's: "$1" for SPI
 * (typed when prepared), "$1::bigint[]" for a remote server (sent as text).
 * A sink with a checkpoint column has every row it inserts or updates set
 * that column to the writing checkpoint's id, one scalar parameter; the
 * statements of other sinks are as they were without it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_sql.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_SQL_H
#define WEIR_SINK_SQL_H

#include "definition/definition.h"

/* The name of write_keeping's last column, in dead letters */
#define WEIR_SINK_KEPT_COLUMN "weir_kept"

/*
 * What a statement writes to: a table's quoted, qualified name, and the
 * sink columns that form the key its upserts and deletes match on (those
 * are the plan's nsinkkey first columns for weir's own sinks).
 */
typedef struct WeirSinkSqlTarget
{
	const char *table;
	const int  *key;			/* sink column numbers */
	int			nkey;
	const char *const *params;	/* per sink column (then the kept flags):
								 * how the statement names it */
	const char *checkpoint_column;	/* NULL, or the quoted column that
									 * every written row sets to ... */
	const char *checkpoint_param;	/* ... this (a bigint parameter) */
} WeirSinkSqlTarget;

extern char *weir_sink_sql_insert(WeirPlan *plan, const WeirSinkSqlTarget *t, bool upsert);
extern char *weir_sink_sql_keeping(WeirPlan *plan, const WeirSinkSqlTarget *t);
extern char *weir_sink_sql_delete(WeirPlan *plan, const WeirSinkSqlTarget *t);
extern const char *weir_sink_kept_column(WeirPlan *plan);

#endif							/* WEIR_SINK_SQL_H */
