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

/* The topic table whose row type a polymorphic "topic" argument has. */
extern Oid	weir_topic_arg_relid(FunctionCallInfo fcinfo, const char *fname);

#endif							/* WEIR_SQL_ARGS_H */
