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

/* What a pipeline computes */
typedef enum WeirOperatorKind
{
	WEIR_OP_WINDOW,				/* windowed aggregates per key */
	WEIR_OP_DEDUP,				/* records whose id was not seen within a horizon */
	WEIR_OP_LAST_VALUE,			/* the newest row per key */
	WEIR_OP_PROJECTION,			/* every record (filtered), as columns: no state */
	WEIR_OP_JOIN				/* an interval join of two topics */
} WeirOperatorKind;

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

/* A column of a record-emitting operator (dedup): an expression's value */
typedef struct WeirColumnSpec
{
	char	   *name;
	Expr	   *expr;
	Oid			type;
	int32		typmod;
	int16		typlen;
	bool		typbyval;
} WeirColumnSpec;

/*
 * A column of the sink, in the order the worker produces them.  The first
 * nsinkkey columns form the sink's unique key (rows are upserted and
 * retracted by it); with none, rows are only ever inserted.
 */
typedef struct WeirSinkColumn
{
	char	   *name;
	Oid			type;
	int32		typmod;
	Oid			collation;
	bool		nullable;
} WeirSinkColumn;

typedef struct WeirWindowing
{
	WeirWindowKind kind;
	int64		size;			/* us; session: the gap */
	int64		slide;			/* us; tumbling: = size */
} WeirWindowing;

/* Everything the worker needs to run a pipeline, built from its catalog row */
typedef struct WeirPlan WeirPlan;

struct WeirPlan
{
	WeirOperatorKind op;
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
	/*
	 * WEIR_OP_DEDUP, WEIR_OP_LAST_VALUE: the id or key is `keys`; a row
	 * emits `columns`.  Retention: the dedup's horizon or last value's ttl.
	 */
	int64		retention;		/* us of event time; 0: kept forever */
	int			ncolumns;		/* their values are the row's arguments */
	WeirColumnSpec *columns;
	/* what the sink receives */
	int			nsinkcols;
	WeirSinkColumn *sinkcols;
	int			nsinkkey;

	/*
	 * WEIR_OP_JOIN: this plan is the left side (source, keys, event_time,
	 * its columns); `right` the right side.  l.t BETWEEN r.t - lower AND
	 * r.t + upper.  Sink column i is column sink_index[i] of side
	 * sink_side[i] (0: left, 1: right).
	 */
	WeirPlan   *right;
	int64		join_lower;		/* us */
	int64		join_upper;		/* us */
	bool		left_outer;
	int		   *sink_side;
	int		   *sink_index;
};

extern WeirPlan *weir_definition_plan(Oid source, const char *key,
									  const char *event_time,
									  const char *aggregates,
									  const char *filter,
									  WeirWindowing *windowing);
extern WeirPlan *weir_definition_dedup_plan(Oid source, const char *id,
											const char *event_time,
											const char *columns,
											const char *filter, int64 horizon);
extern WeirPlan *weir_definition_last_value_plan(Oid source, const char *key,
												 const char *event_time,
												 const char *columns,
												 const char *filter, int64 ttl);
extern WeirPlan *weir_definition_projection_plan(Oid source, const char *columns,
												 const char *filter);
extern WeirPlan *weir_definition_join_plan(Oid left, Oid right, const char *left_key,
										   const char *right_key, const char *left_time,
										   const char *right_time, const char *columns,
										   int64 lower, int64 upper, bool left_outer);
extern int64 weir_interval_usecs(Interval *interval, const char *what);
extern void weir_definition_windowing(Datum windowing, WeirWindowing *out);

#endif							/* WEIR_DEFINITION_H */
