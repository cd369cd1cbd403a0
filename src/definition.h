/*-------------------------------------------------------------------------
 *
 * definition.h
 *	  A pipeline definition, parsed and type-checked against its source.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEFINITION_H
#define WEIR_DEFINITION_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/primnodes.h"

typedef enum WeirWindowKind
{
	WEIR_WINDOW_TUMBLING,
	WEIR_WINDOW_HOPPING,
	WEIR_WINDOW_SESSION
} WeirWindowKind;

typedef enum WeirAggKind
{
	WEIR_AGG_COUNT_STAR,
	WEIR_AGG_COUNT,
	WEIR_AGG_SUM_INT,			/* int2, int4 -> int8; int8 -> numeric */
	WEIR_AGG_SUM_FLOAT8,
	WEIR_AGG_MIN,				/* by-value ordered types */
	WEIR_AGG_MAX,
	WEIR_AGG_AVG_INT,			/* int2, int4, int8 -> numeric */
	WEIR_AGG_AVG_FLOAT8,
	WEIR_AGG_GENERIC			/* any aggregate, through its catalog entry */
} WeirAggKind;

typedef struct WeirAggSpec
{
	WeirAggKind kind;
	char	   *name;			/* sink column */
	Expr	   *arg;			/* first argument; NULL for count(*) */
	Oid			argtype;
	int			nargs;
	Expr	  **args;			/* [nargs] */
	int			argoffset;		/* into a row's evaluated arguments */
	Oid			resulttype;
	int32		resulttypmod;
	int			offset;			/* bytes into a window's aggregate states */

	/* WEIR_AGG_GENERIC: pg_aggregate's functions, looked up per process */
	Oid			collation;		/* the aggregate's input collation */
	FmgrInfo	transfn;
	FmgrInfo	combinefn;
	FmgrInfo	serialfn;		/* fn_oid InvalidOid: not internal */
	FmgrInfo	deserialfn;
	FmgrInfo	finalfn;		/* fn_oid InvalidOid: none */
	Oid			transtype;
	int16		transtypelen;
	bool		transtypebyval;
	bool		has_initval;
	Datum		initval;
	bool		finalextra;
	char		finalmodify;
} WeirAggSpec;

typedef struct WeirKeySpec
{
	char	   *name;			/* sink column */
	Expr	   *expr;
	Oid			type;
	int32		typmod;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
} WeirKeySpec;

typedef struct WeirWindowing
{
	WeirWindowKind kind;
	int64		size;			/* us; session: the gap */
	int64		slide;			/* us; tumbling: = size */
} WeirWindowing;

/* Everything the worker needs to run a pipeline, built from its catalog row */
typedef struct WeirPlan
{
	Oid			source;			/* topic relid */
	int			nkeys;
	WeirKeySpec *keys;
	Expr	   *event_time;		/* timestamptz */
	Expr	   *filter;			/* boolean, or NULL */
	int			naggs;
	WeirAggSpec *aggs;
	Size		state_size;		/* bytes of aggregate state per window */
	int			nargs;			/* evaluated arguments per row, all aggregates */
	bool		has_generic;	/* some aggregate keeps a state in local memory */
	WeirWindowing windowing;
} WeirPlan;

extern WeirPlan *weir_definition_plan(Oid source, const char *key,
									  const char *event_time,
									  const char *aggregates,
									  const char *filter,
									  WeirWindowing *windowing);
extern int64 weir_interval_usecs(Interval *interval, const char *what);
extern void weir_definition_windowing(Datum windowing, WeirWindowing *out);

#endif							/* WEIR_DEFINITION_H */
