/*-------------------------------------------------------------------------
 *
 * sql_args.c
 *	  Checking the arguments of weir's SQL-callable functions.
 *
 * weir's functions are not STRICT: a NULL where a value is required is an
 * error (22004) naming the argument, not a silent NULL result.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/sql_args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "parser/parse_type.h"

#include "base/sql_args.h"

void
weir_require_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * The topic table named by a polymorphic "topic" argument (the first): its
 * row type, as in weir.read(NULL::orders, ...).  `fname` names the function
 * in the error.
 */
Oid
weir_topic_arg_relid(FunctionCallInfo fcinfo, const char *fname)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Oid			relid = OidIsValid(argtype) ? typeOrDomainTypeRelid(argtype) : InvalidOid;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("argument \"topic\" of %s must be the row type of a topic", fname),
				 errhint("Pass a null of the topic's row type, as in %s(NULL::orders, ...).", fname)));
	return relid;
}
