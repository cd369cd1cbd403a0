/*-------------------------------------------------------------------------
 *
 * sql_args.h
 *	  Checking the arguments of weir's SQL-callable functions.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/sql_args.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SQL_ARGS_H
#define WEIR_SQL_ARGS_H

#include "fmgr.h"

/* An argument a function cannot do without: NULL raises 22004. */
extern void weir_require_arg(FunctionCallInfo fcinfo, int argno, const char *name);

/*
 * The arguments of the SQL function being called, by name: its parameters'
 * names from pg_proc, so that C code asks for "horizon" rather than for a
 * position that moves whenever a parameter is added or reordered.
 */
typedef struct WeirSqlArgs
{
	FunctionCallInfo fcinfo;
	const char *function;		/* schema-qualified name, for messages */
	int			nargs;
	char	  **names;			/* [nargs]; "" for an unnamed one */
} WeirSqlArgs;

/*
 * A parameter kept, after a rename, only to say so: given, it raises 42P02
 * naming `renamed_to`, with `hint`.
 */
typedef struct WeirRenamedArg
{
	const char *name;
	const char *renamed_to;
	const char *hint;
} WeirRenamedArg;

extern void weir_sql_args_init(WeirSqlArgs *args, FunctionCallInfo fcinfo);
extern int	weir_sql_arg(const WeirSqlArgs *args, const char *name, bool missing_ok);
extern bool weir_sql_arg_isnull(const WeirSqlArgs *args, const char *name);
extern void weir_sql_args_refuse_renamed(const WeirSqlArgs *args,
										 const WeirRenamedArg *renamed, int n);

/* The topic table whose row type a polymorphic "topic" argument has. */
extern Oid	weir_topic_arg_relid(FunctionCallInfo fcinfo, const char *fname);

#endif							/* WEIR_SQL_ARGS_H */
