/*-------------------------------------------------------------------------
 *
 * definition.h
 *	  A pipeline definition, parsed and type-checked against its source.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEFINITION_H
#define WEIR_DEFINITION_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"

/*
 * The longest duration (window size, slide, gap, lateness,
 * out-of-orderness, horizon, ttl, join bound, timeout) weir takes: 1000
 * years, in microseconds.
 */
#define WEIR_MAX_DURATION_USECS (INT64CONST(365250) * USECS_PER_DAY)

/* What a pipeline computes */
typedef enum WeirOperatorKind
{
	WEIR_OP_WINDOW,				/* windowed aggregates per key */
	WEIR_OP_DEDUP,				/* records whose key was not seen within a horizon */
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
	WEIR_AGG_SUM_INT_COUNTED,	/* sum over a change topic: int2, int4 -> int8;
								 * int8 -> numeric, with the count of its
								 * inputs, so that it can take them back */
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
	bool		merge_touching; /* session: sessions that touch merge too */
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
	 * WEIR_OP_DEDUP, WEIR_OP_LAST_VALUE: the key is `keys`; a row
	 * emits `columns`.  Retention: the dedup's horizon or last value's ttl.
	 */
	int64		retention;		/* us of event time; 0: kept forever */
	bool		refresh_horizon;	/* dedup: a dropped copy extends its id's
									 * life (its sighting becomes the id's) */
	int			ncolumns;		/* their values are the row's arguments */
	WeirColumnSpec *columns;
	/* what the sink receives */
	int			nsinkcols;
	WeirSinkColumn *sinkcols;
	int			nsinkkey;

	/*
	 * WEIR_OP_JOIN: this plan is the left side (source, keys, event_time,
	 * its columns); `right` the right side.  A right row r matches a left
	 * row l when r.t BETWEEN l.t - right_before AND l.t + right_after (both
	 * >= 0).  Sink column i is column sink_index[i] of side sink_side[i]
	 * (0: left, 1: right).
	 */
	WeirPlan   *right;
	int64		right_before;	/* us */
	int64		right_after;	/* us */
	bool		left_outer;
	int		   *sink_side;
	int		   *sink_index;

	/*
	 * A change topic as source (change_topic.h; a join: this side's):
	 * change_op, a Var of the source ("char"); NULL for an ordinary topic,
	 * whose every row is an insert.  unchanged: its unchanged_columns
	 * (name[]) where the operator reads it (last value, window), or NULL.
	 */
	Expr	   *change_op;
	Expr	   *unchanged;
	bool		insert_only;	/* window: declared to have inserts only */
	bool		retract;		/* window over a change topic, not
								 * insert_only: before images and deletes
								 * take their row back */
	int			rows_offset;	/* retract: bytes into a window's states of
								 * an int64, the rows it holds */
};

/*
 * A pipeline's definition with its expressions bound: one query
 *	SELECT <items> FROM ONLY source [, ONLY right_source]
 *	  [WHERE filter] [GROUP BY keys, event time, change items]
 * analysed once, at creation, and stored as a view (definition_store.c),
 * which is what a worker runs.  Its target list, by operator:
 *	window:				keys, event time, aggregates
 *	dedup, last value:	keys, event time, columns
 *	projection:			columns
 *	join:				left keys, right keys, left time, right time, columns
 * then the change items: for each source that is a change topic
 * (change_topic.h), but not a projection's, its change_op and (last value,
 * a window without insert_only) its unchanged_columns, bare Vars named ""
 * as event times are, a join's left source's first.
 * Vars refer to the source as varno 1 (a join's right source: 2).  A
 * join's WHERE, when it has a filter, is exactly two conditions ANDed:
 * the left filter (over varno 1) and the right filter (over varno 2), a
 * missing one as the constant true; each applies to its side's records
 * before they are buffered.
 */
typedef struct WeirDefinition
{
	WeirOperatorKind op;
	int			nsources;
	Oid			sources[2];
	int			nkeys;			/* key expressions (a join: on each side) */
	int			nitems;			/* items before the change items (set by
								 * weir_definition_plan) */
	Query	   *query;
	List	   *names;			/* String per target entry: its sink-facing
								 * name; "" for event times */
} WeirDefinition;

/* The SQL text of a definition, as the create functions take it */
typedef struct WeirDefinitionText
{
	WeirOperatorKind op;
	Oid			source;
	Oid			right_source;	/* join */
	const char *key;			/* join: the left key */
	const char *right_key;
	const char *event_time;
	const char *right_event_time;
	const char *aggregates;		/* window */
	const char *columns;		/* NULL: the source's (a join: both sources') */
	const char *filter;			/* a join: the left's */
	const char *right_filter;	/* join */
	bool		insert_only;	/* window: a change topic with inserts only */
} WeirDefinitionText;

/* What a plan takes besides expressions: the catalog row's intervals */
typedef struct WeirPlanOptions
{
	WeirWindowing windowing;	/* window */
	int64		retention;		/* us; dedup horizon, last value ttl; 0: none */
	bool		refresh_horizon;	/* dedup: dropped copies refresh the horizon */
	int64		right_before;	/* us; join */
	int64		right_after;	/* us; join */
	bool		left_outer;
	bool		insert_only;	/* window */
} WeirPlanOptions;

extern WeirPlan *weir_definition_plan(WeirDefinition *def, const WeirPlanOptions *options);
extern int64 weir_interval_usecs(Interval *interval, const char *what);
extern int64 weir_duration_usecs(Interval *interval, const char *what, bool allow_zero);
extern void weir_definition_windowing(Datum windowing, WeirWindowing *out);
extern bool weir_definition_key_type_supported(Oid type, Oid collation);
extern int	weir_definition_expr_sides(Node *expr);

#endif							/* WEIR_DEFINITION_H */
