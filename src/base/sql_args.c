/*-------------------------------------------------------------------------
 *
 * sql_args.c
 *	  Checking the arguments of weir's SQL-callable functions.
 *
 * weir's functions are not STRICT: a NULL where a value is required is an
 * error (22004) naming the argument, not a silent NULL result.
 *
 * Functions with many parameters (the create_* functions) read them by
 * name (WeirSqlArgs): the names come from the function's pg_proc entry, so
 * the SQL script alone decides the order, and a parameter that was renamed
 * stays declared, as a trailing DEFAULT NULL, only so that a call still
 * using it gets an error naming the new one (PostgreSQL itself would only
 * say that no such function exists).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/sql_args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "funcapi.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

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
 * The names of the parameters of the function `fcinfo` calls, in the
 * current memory context.  Called from SQL only (it needs flinfo).
 */
void
weir_sql_args_init(WeirSqlArgs *args, FunctionCallInfo fcinfo)
{
	Oid			fn_oid = fcinfo->flinfo ? fcinfo->flinfo->fn_oid : InvalidOid;
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	Form_pg_proc proc;
	Oid		   *types;
	char	   *modes;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fn_oid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	args->fcinfo = fcinfo;
	args->function = quote_qualified_identifier(get_namespace_name(proc->pronamespace),
												NameStr(proc->proname));
	args->nargs = get_func_arg_info(tup, &types, &args->names, &modes);
	ReleaseSysCache(tup);
	if (args->names == NULL)
		elog(ERROR, "function %s has no parameter names", args->function);
	if (args->nargs != fcinfo->nargs)
		elog(ERROR, "function %s called with %d arguments, declared with %d",
			 args->function, fcinfo->nargs, args->nargs);
}

/*
 * The position of parameter `name`; -1 if the function has none by that
 * name and missing_ok (the caller's default applies), else an internal
 * error: the C code and the SQL script disagree.
 */
int
weir_sql_arg(const WeirSqlArgs *args, const char *name, bool missing_ok)
{
	for (int i = 0; i < args->nargs; i++)
		if (strcmp(args->names[i], name) == 0)
			return i;
	if (!missing_ok)
		elog(ERROR, "function %s has no parameter \"%s\"", args->function, name);
	return -1;
}

/* Whether parameter `name` is null, or the function has none by that name. */
bool
weir_sql_arg_isnull(const WeirSqlArgs *args, const char *name)
{
	int			i = weir_sql_arg(args, name, true);

	return i < 0 || args->fcinfo->args[i].isnull;
}

/*
 * Refuse a call that gives a renamed parameter (one not null), naming the
 * new name.  42P02 undefined_parameter: under its old name the parameter
 * is gone.
 */
void
weir_sql_args_refuse_renamed(const WeirSqlArgs *args, const WeirRenamedArg *renamed, int n)
{
	for (int i = 0; i < n; i++)
		if (!weir_sql_arg_isnull(args, renamed[i].name))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_PARAMETER),
					 errmsg("argument \"%s\" of %s was renamed to \"%s\"",
							renamed[i].name, args->function, renamed[i].renamed_to),
					 errhint("%s", renamed[i].hint)));
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
