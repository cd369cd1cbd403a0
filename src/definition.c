/*-------------------------------------------------------------------------
 *
 * definition.c
 *	  Parsing and type-checking a pipeline definition against its source.
 *
 * Keys, the event time, the filter and the aggregates are SQL text.  Each is
 * parsed by PostgreSQL's own parser and analyzer as part of a query
 *	  SELECT <text> FROM ONLY <source> [WHERE <filter>]
 * so names resolve against the source's columns, types are checked and a
 * typo is an error when the pipeline is created, not later in the worker.
 * The analyzed query must be exactly that shape (one relation, the source;
 * no sub-queries, set-returning or window functions), which also keeps
 * text such as "1 FROM pg_authid --" from reading anything else.  The
 * expressions that come out refer to the source row as varno 1, which is
 * how the worker evaluates them against a slot of the topic table.
 *
 * The same code builds the plan at creation time (to validate and to derive
 * the sink's columns) and in the worker at start (to run it).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_agg.h"
#include "parser/parse_coerce.h"
#include "parser/parser.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "definition.h"
#include "join.h"
#include "keyed.h"
#include "topic.h"

/* Re-raise an error from parsing `what` with its SQLSTATE, naming `what`. */
static void
rethrow_as(MemoryContext cxt, const char *what)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("invalid %s: %s", what, edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s", edata->hint) : 0));
}

static void
refuse_shape(const char *what, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("invalid %s: %s", what, why),
			 errhint("Write %s as expressions over the columns of the source topic.", what)));
}

/*
 * Parse and analyze "SELECT <targets> FROM ONLY <source> [WHERE <where>]"
 * and check it has exactly that shape.
 */
static Query *
analyze_over_source(Oid source, const char *targets, const char *where,
					const char *what)
{
	MemoryContext cxt = CurrentMemoryContext;
	StringInfoData sql;
	List	   *raw = NIL;
	Query	   *query = NULL;
	RangeTblEntry *rte;

	initStringInfo(&sql);
	/* newlines: a trailing "--" comment in the text cannot swallow the rest */
	appendStringInfo(&sql, "SELECT %s\nFROM ONLY %s", targets,
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
												get_rel_name(source)));
	if (where)
		appendStringInfo(&sql, "\nWHERE %s\n", where);

	PG_TRY();
	{
		raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
		if (list_length(raw) == 1 &&
			IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
			query = parse_analyze_fixedparams(linitial_node(RawStmt, raw),
											  sql.data, NULL, 0, NULL);
	}
	PG_CATCH();
	{
		rethrow_as(cxt, what);
	}
	PG_END_TRY();

	if (query == NULL || query->commandType != CMD_SELECT)
		refuse_shape(what, "it is not a list of expressions");
	if (list_length(query->rtable) != 1)
		refuse_shape(what, "it refers to relations other than the source");
	rte = linitial_node(RangeTblEntry, query->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relid != source ||
		list_length(query->jointree->fromlist) != 1)
		refuse_shape(what, "it refers to relations other than the source");
	if (query->hasWindowFuncs)
		refuse_shape(what, "window functions are not supported");
	if (query->cteList || query->groupClause || query->havingQual ||
		query->sortClause || query->limitCount || query->limitOffset ||
		query->distinctClause || query->setOperations || query->windowClause ||
		query->groupingSets)
		refuse_shape(what, "it is not a list of expressions");
	if (query->hasSubLinks)
		refuse_shape(what, "sub-queries are not supported");
	if (query->hasTargetSRFs)
		refuse_shape(what, "set-returning functions are not supported");
	if (query->hasWindowFuncs)
		refuse_shape(what, "window functions are not supported");
	return query;
}

static void
refuse_volatile(Node *expr, const char *what)
{
	if (contain_volatile_functions(expr))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid %s: volatile functions are not allowed", what),
				 errdetail("A pipeline must compute the same result when it replays records after a crash."),
				 errhint("Use immutable or stable expressions.")));
}

/*
 * Keys are compared by their binary image, which is equality for these
 * types (and for text only under a deterministic collation).
 */
static bool
key_type_supported(Oid type, Oid collation)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case BOOLOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case OIDOID:
		case UUIDOID:
		case BYTEAOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
			return !OidIsValid(collation) || get_collation_isdeterministic(collation);
		default:
			return false;
	}
}

static char *
column_name(TargetEntry *tle, const char *fallback, int n)
{
	if (tle->resname && strcmp(tle->resname, "?column?") != 0)
		return pstrdup(tle->resname);
	return psprintf("%s%d", fallback, n);
}

static void
plan_keys(WeirPlan *plan, Oid source, const char *key, const char *what)
{
	Query	   *query = analyze_over_source(source, key, NULL, what);
	ListCell   *lc;
	int			i = 0;

	if (query->hasAggs)
		refuse_shape(what, "aggregates are not allowed in it");
	plan->nkeys = list_length(query->targetList);
	plan->keys = palloc0(sizeof(WeirKeySpec) * plan->nkeys);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		WeirKeySpec *k = &plan->keys[i++];

		refuse_volatile((Node *) tle->expr, what);
		k->expr = tle->expr;
		k->type = exprType((Node *) tle->expr);
		k->typmod = exprTypmod((Node *) tle->expr);
		k->collation = exprCollation((Node *) tle->expr);
		get_typlenbyval(k->type, &k->typlen, &k->typbyval);
		k->name = column_name(tle, what, i);
		for (int j = 0; j < i - 1; j++)
			if (strcmp(plan->keys[j].name, k->name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("%s name \"%s\" is used twice", what, k->name),
						 errhint("Name each %s with AS.", what)));
		if (!key_type_supported(k->type, k->collation))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s \"%s\" of type %s is not supported", what, k->name,
							format_type_be(k->type)),
					 errdetail("Keys and ids are compared by their binary value, which is equality only for integer, boolean, date, timestamp, uuid, bytea and text types (text under a deterministic collation)."),
					 errhint("Cast it to one of these types, for example text.")));
	}
}

static void
plan_event_time(WeirPlan *plan, Oid source, const char *event_time)
{
	Query	   *query = analyze_over_source(source, event_time, NULL, "event_time");
	TargetEntry *tle;
	Node	   *expr;

	if (query->hasAggs || list_length(query->targetList) != 1)
		refuse_shape("event_time", "it must be one expression");
	tle = linitial_node(TargetEntry, query->targetList);
	refuse_volatile((Node *) tle->expr, "event_time");
	expr = coerce_to_target_type(NULL, (Node *) tle->expr,
								 exprType((Node *) tle->expr),
								 TIMESTAMPTZOID, -1, COERCION_ASSIGNMENT,
								 COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("invalid event_time: type %s cannot be used as a timestamp with time zone",
						format_type_be(exprType((Node *) tle->expr))),
				 errhint("Give a timestamptz column or expression, for example to_timestamp(epoch_seconds).")));
	plan->event_time = (Expr *) expr;
}

static void
plan_filter(WeirPlan *plan, Oid source, const char *filter)
{
	Query	   *query;

	if (filter == NULL)
		return;
	query = analyze_over_source(source, "1", filter, "filter");
	if (query->hasAggs)
		refuse_shape("filter", "aggregates are not allowed in it");
	refuse_volatile(query->jointree->quals, "filter");
	plan->filter = (Expr *) query->jointree->quals;
}

/* The fast-path kind of an aggregate, or -1 if weir cannot keep its state. */
static int
agg_kind(Oid aggfnoid)
{
	switch (aggfnoid)
	{
		case F_COUNT_:
			return WEIR_AGG_COUNT_STAR;
		case F_COUNT_ANY:
			return WEIR_AGG_COUNT;
		case F_SUM_INT2:
		case F_SUM_INT4:
		case F_SUM_INT8:
			return WEIR_AGG_SUM_INT;
		case F_SUM_FLOAT8:
			return WEIR_AGG_SUM_FLOAT8;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT8:
		case F_MIN_TIMESTAMPTZ:
			return WEIR_AGG_MIN;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT8:
		case F_MAX_TIMESTAMPTZ:
			return WEIR_AGG_MAX;
		case F_AVG_INT2:
		case F_AVG_INT4:
		case F_AVG_INT8:
			return WEIR_AGG_AVG_INT;
		case F_AVG_FLOAT8:
			return WEIR_AGG_AVG_FLOAT8;
		default:
			return -1;
	}
}

/* Bytes of state per aggregate kind; see aggregate.c for the layouts. */
static int
agg_state_size(WeirAggKind kind)
{
	switch (kind)
	{
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_COUNT:
			return 8;
		case WEIR_AGG_SUM_INT:
			return 16;
		case WEIR_AGG_AVG_INT:
			return 24;
		case WEIR_AGG_GENERIC:
			return 8;			/* a pointer to worker-local state */
		default:
			return 16;
	}
}

/*
 * Set up the catalog-driven path for an aggregate weir has no fast path for:
 * its state must be combinable (session windows merge) and, if internal,
 * serialisable (checkpoints store it).
 */
static void
plan_generic(WeirAggSpec *a, Aggref *aggref)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	Form_pg_aggregate agg;
	bool		isnull;
	Datum		initval;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	if (!OidIsValid(agg->aggcombinefn))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s cannot be kept in a window: it has no combine function",
						format_procedure(aggref->aggfnoid)),
				 errdetail("Window state must be combinable and serialisable.")));
	{
		Oid			inputs[FUNC_MAX_ARGS];
		int			ninputs = get_aggregate_argtypes(aggref, inputs);

		/* Aggref.aggtranstype is only set by the planner */
		a->transtype = resolve_aggregate_transtype(aggref->aggfnoid, agg->aggtranstype,
												   inputs, ninputs);
	}
	if (a->transtype == INTERNALOID &&
		(!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s cannot be kept in a window: its state cannot be serialised",
						format_procedure(aggref->aggfnoid)),
				 errdetail("Checkpoints store window state, which needs serialize and deserialize functions.")));
	get_typlenbyval(a->transtype, &a->transtypelen, &a->transtypebyval);
	fmgr_info(agg->aggtransfn, &a->transfn);
	fmgr_info(agg->aggcombinefn, &a->combinefn);
	a->serialfn.fn_oid = InvalidOid;
	a->deserialfn.fn_oid = InvalidOid;
	if (a->transtype == INTERNALOID)
	{
		fmgr_info(agg->aggserialfn, &a->serialfn);
		fmgr_info(agg->aggdeserialfn, &a->deserialfn);
	}
	a->finalfn.fn_oid = InvalidOid;
	if (OidIsValid(agg->aggfinalfn))
		fmgr_info(agg->aggfinalfn, &a->finalfn);
	a->finalextra = agg->aggfinalextra;
	a->finalmodify = agg->aggfinalmodify;
	initval = SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &isnull);
	a->has_initval = !isnull;
	if (!isnull)
	{
		Oid			input;
		Oid			ioparam;

		getTypeInputInfo(a->transtype, &input, &ioparam);
		a->initval = OidInputFunctionCall(input, TextDatumGetCString(initval), ioparam, -1);
	}
	ReleaseSysCache(tup);
}

static void
plan_aggregates(WeirPlan *plan, Oid source, const char *aggregates)
{
	Query	   *query = analyze_over_source(source, aggregates, NULL, "aggregates");
	ListCell   *lc;
	int			i = 0;
	Size		offset = 0;

	plan->naggs = list_length(query->targetList);
	plan->aggs = palloc0(sizeof(WeirAggSpec) * plan->naggs);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		WeirAggSpec *a = &plan->aggs[i++];
		Aggref	   *aggref;
		int			kind;

		if (!IsA(tle->expr, Aggref))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid aggregates: item %d is not an aggregate call", i),
					 errhint("List aggregate calls such as count(*) AS n, sum(amount) AS total; compute on their results in a view over the sink.")));
		aggref = (Aggref *) tle->expr;
		a->name = column_name(tle, "agg", i);
		if (aggref->aggdistinct || aggref->aggorder || aggref->aggkind != AGGKIND_NORMAL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate \"%s\" cannot be kept in a window: DISTINCT, ORDER BY and ordered-set aggregates are not supported",
							a->name),
					 errdetail("Window state must be combinable and serialisable.")));
		if (aggref->aggfilter)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate \"%s\" has a FILTER clause, which is not supported", a->name),
					 errhint("Use the pipeline's filter argument.")));
		kind = agg_kind(aggref->aggfnoid);
		a->kind = kind < 0 ? WEIR_AGG_GENERIC : (WeirAggKind) kind;
		a->collation = aggref->inputcollid;
		if (a->kind == WEIR_AGG_GENERIC)
			plan_generic(a, aggref);
		a->nargs = list_length(aggref->args);
		a->args = palloc0(sizeof(Expr *) * Max(a->nargs, 1));
		a->argoffset = plan->nargs;
		plan->nargs += a->nargs;
		for (int j = 0; j < a->nargs; j++)
		{
			a->args[j] = list_nth_node(TargetEntry, aggref->args, j)->expr;
			refuse_volatile((Node *) a->args[j], "aggregates");
		}
		if (a->nargs > 0)
		{
			a->arg = a->args[0];
			a->argtype = exprType((Node *) a->arg);
		}
		if (a->kind == WEIR_AGG_GENERIC)
			plan->has_generic = true;
		a->resulttype = aggref->aggtype;
		a->resulttypmod = -1;
		a->offset = offset;
		offset += agg_state_size(a->kind);
		for (int j = 0; j < i - 1; j++)
			if (strcmp(plan->aggs[j].name, a->name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("aggregate name \"%s\" is used twice", a->name),
						 errhint("Name each aggregate with AS, for example sum(amount) AS total.")));
	}
	plan->state_size = MAXALIGN(offset);
}

static void
add_sink_column(WeirPlan *plan, const char *name, Oid type, int32 typmod,
				Oid collation, bool nullable)
{
	WeirSinkColumn *c = &plan->sinkcols[plan->nsinkcols++];

	for (int i = 0; i < plan->nsinkcols - 1; i++)
		if (strcmp(plan->sinkcols[i].name, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("sink column name \"%s\" is used twice", name),
					 errhint(plan->op == WEIR_OP_WINDOW ?
							 "Name keys and aggregates apart with AS; window_start and window_end are taken." :
							 "Name the columns apart with AS.")));
	c->name = pstrdup(name);
	c->type = type;
	c->typmod = typmod;
	c->collation = collation;
	c->nullable = nullable;
}

WeirPlan *
weir_definition_plan(Oid source, const char *key, const char *event_time,
					 const char *aggregates, const char *filter,
					 WeirWindowing *windowing)
{
	WeirPlan   *plan = palloc0(sizeof(WeirPlan));

	plan->op = WEIR_OP_WINDOW;
	plan->source = source;
	plan_keys(plan, source, key, "key");
	plan_event_time(plan, source, event_time);
	plan_filter(plan, source, filter);
	plan_aggregates(plan, source, aggregates);
	plan->windowing = *windowing;

	/* the sink: keys, the window, the aggregates; unique on keys + start */
	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * (plan->nkeys + 2 + plan->naggs));
	for (int i = 0; i < plan->nkeys; i++)
		add_sink_column(plan, plan->keys[i].name, plan->keys[i].type,
						plan->keys[i].typmod, plan->keys[i].collation, false);
	add_sink_column(plan, "window_start", TIMESTAMPTZOID, -1, InvalidOid, false);
	plan->nsinkkey = plan->nsinkcols;
	add_sink_column(plan, "window_end", TIMESTAMPTZOID, -1, InvalidOid, false);
	for (int i = 0; i < plan->naggs; i++)
		add_sink_column(plan, plan->aggs[i].name, plan->aggs[i].resulttype, -1,
						InvalidOid, true);
	return plan;
}

/*
 * The columns a record-emitting operator writes: the given expressions, or
 * by default every column of the source but its partition and position
 * (the sink, a table or another topic, has its own), and with skip_keys
 * but those named as a key (last value writes its keys first).
 */
static void
plan_columns(WeirPlan *plan, Oid source, const char *columns, bool skip_keys)
{
	Query	   *query;
	ListCell   *lc;
	int			i = 0;

	if (columns == NULL)
	{
		StringInfoData all;
		Relation	rel = relation_open(source, AccessShareLock);
		TupleDesc	desc = RelationGetDescr(rel);

		initStringInfo(&all);
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			bool		is_key = false;

			for (int k = 0; skip_keys && k < plan->nkeys; k++)
				if (strcmp(plan->keys[k].name, NameStr(att->attname)) == 0)
					is_key = true;
			if (att->attisdropped || att->attnum == WEIR_TOPIC_PART_ATTNUM ||
				att->attnum == WEIR_TOPIC_POS_ATTNUM || is_key)
				continue;
			appendStringInfo(&all, "%s%s", all.len > 0 ? ", " : "",
							 quote_identifier(NameStr(att->attname)));
		}
		relation_close(rel, AccessShareLock);
		columns = all.data;
	}
	query = analyze_over_source(source, columns, NULL, "columns");
	if (query->hasAggs)
		refuse_shape("columns", "aggregates are not allowed in it");
	if (query->targetList == NIL)
		refuse_shape("columns", "it has no columns");
	plan->ncolumns = list_length(query->targetList);
	plan->columns = palloc0(sizeof(WeirColumnSpec) * plan->ncolumns);
	plan->nargs = plan->ncolumns;
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		WeirColumnSpec *c = &plan->columns[i++];

		refuse_volatile((Node *) tle->expr, "columns");
		c->name = column_name(tle, "column", i);
		c->expr = tle->expr;
		c->type = exprType((Node *) tle->expr);
		c->typmod = exprTypmod((Node *) tle->expr);
		get_typlenbyval(c->type, &c->typlen, &c->typbyval);
	}
}

/* The columns as sink columns, after those already there; values may be null. */
static void
add_column_sinkcols(WeirPlan *plan)
{
	for (int i = 0; i < plan->ncolumns; i++)
		add_sink_column(plan, plan->columns[i].name, plan->columns[i].type,
						plan->columns[i].typmod, exprCollation((Node *) plan->columns[i].expr),
						true);
}

/*
 * What dedup and last value share: a key (dedup: the id), event time,
 * filter, columns, a retention, and a state per key.
 */
static WeirPlan *
plan_keyed(WeirOperatorKind op, Oid source, const char *key, const char *event_time,
		   const char *columns, const char *filter, int64 retention, Size state_size)
{
	WeirPlan   *plan = palloc0(sizeof(WeirPlan));

	plan->op = op;
	plan->source = source;
	plan_keys(plan, source, key, op == WEIR_OP_DEDUP ? "id" : "key");
	plan_event_time(plan, source, event_time);
	plan_filter(plan, source, filter);
	/* last value writes its keys first: the columns leave them out */
	plan_columns(plan, source, columns, op == WEIR_OP_LAST_VALUE);
	plan->retention = retention;
	plan->state_size = state_size;
	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * (plan->nkeys + plan->ncolumns));
	return plan;
}

WeirPlan *
weir_definition_dedup_plan(Oid source, const char *id, const char *event_time,
						   const char *columns, const char *filter, int64 horizon)
{
	/* one state per id: the latest event time it was seen at */
	WeirPlan   *plan = plan_keyed(WEIR_OP_DEDUP, source, id, event_time, columns, filter,
								  horizon, sizeof(TimestampTz));

	/* the sink: the columns, insert-only */
	add_column_sinkcols(plan);
	return plan;
}

/* A stateless stage: filter and columns, insert-only. */
WeirPlan *
weir_definition_projection_plan(Oid source, const char *columns, const char *filter)
{
	WeirPlan   *plan = palloc0(sizeof(WeirPlan));

	plan->op = WEIR_OP_PROJECTION;
	plan->source = source;
	plan_filter(plan, source, filter);
	plan_columns(plan, source, columns, false);
	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * plan->ncolumns);
	add_column_sinkcols(plan);
	return plan;
}

WeirPlan *
weir_definition_last_value_plan(Oid source, const char *key, const char *event_time,
								const char *columns, const char *filter, int64 ttl)
{
	/* per key: the newest row's event time, partition and position */
	WeirPlan   *plan = plan_keyed(WEIR_OP_LAST_VALUE, source, key, event_time, columns,
								  filter, ttl, sizeof(WeirKeyedState));

	/* the sink: keys, then the columns; unique on the keys */
	for (int i = 0; i < plan->nkeys; i++)
		add_sink_column(plan, plan->keys[i].name, plan->keys[i].type,
						plan->keys[i].typmod, plan->keys[i].collation, false);
	plan->nsinkkey = plan->nkeys;
	add_column_sinkcols(plan);
	return plan;
}

/* Varnos a join column's expression refers to: bit 1 left, bit 2 right. */
static bool
join_sides_walker(Node *node, int *sides)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		*sides |= 1 << (((Var *) node)->varno - 1);
		return false;
	}
	return expression_tree_walker(node, join_sides_walker, (void *) sides);
}

/*
 * A join's columns: "SELECT <columns> FROM ONLY left l, ONLY right r",
 * each expression over one side only (each side's values are computed when
 * its record arrives and kept with it until matched).  By default every
 * column of both sources but partition and position, right columns whose
 * name the left already uses prefixed with right_.
 */
static void
plan_join_columns(WeirPlan *left, WeirPlan *right, const char *columns)
{
	MemoryContext cxt = CurrentMemoryContext;
	StringInfoData sql;
	List	   *raw = NIL;
	Query	   *query = NULL;
	ListCell   *lc;
	int			i = 0;
	int			n;
	Oid			rels[2] = {left->source, right->source};

	if (columns == NULL)
	{
		StringInfoData all;
		List	   *left_names = NIL;

		initStringInfo(&all);
		for (int side = 0; side < 2; side++)
		{
			Relation	rel = relation_open(rels[side], AccessShareLock);
			TupleDesc	desc = RelationGetDescr(rel);

			for (int a = 0; a < desc->natts; a++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, a);
				char	   *name = NameStr(att->attname);
				bool		taken = false;

				if (att->attisdropped || att->attnum == WEIR_TOPIC_PART_ATTNUM ||
					att->attnum == WEIR_TOPIC_POS_ATTNUM)
					continue;
				foreach(lc, left_names)
					if (strcmp(lfirst(lc), name) == 0)
						taken = true;
				appendStringInfo(&all, "%s%s.%s", all.len > 0 ? ", " : "",
								 side == 0 ? "l" : "r", quote_identifier(name));
				if (side == 1 && taken)
					appendStringInfo(&all, " AS %s",
									 quote_identifier(psprintf("right_%s", name)));
				if (side == 0)
					left_names = lappend(left_names, pstrdup(name));
			}
			relation_close(rel, AccessShareLock);
		}
		columns = all.data;
	}

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s\nFROM ONLY %s l, ONLY %s r", columns,
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(rels[0])),
												get_rel_name(rels[0])),
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(rels[1])),
												get_rel_name(rels[1])));
	PG_TRY();
	{
		raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
		if (list_length(raw) == 1 &&
			IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
			query = parse_analyze_fixedparams(linitial_node(RawStmt, raw),
											  sql.data, NULL, 0, NULL);
	}
	PG_CATCH();
	{
		rethrow_as(cxt, "columns");
	}
	PG_END_TRY();
	if (query == NULL || query->commandType != CMD_SELECT ||
		list_length(query->rtable) != 2 || list_length(query->jointree->fromlist) != 2 ||
		query->jointree->quals != NULL || query->cteList || query->groupClause ||
		query->havingQual || query->sortClause || query->limitCount ||
		query->limitOffset || query->distinctClause || query->setOperations ||
		query->windowClause || query->groupingSets || query->hasSubLinks ||
		query->hasTargetSRFs || query->hasWindowFuncs || query->hasAggs)
		refuse_shape("columns", "it is not a list of expressions over l and r");
	for (int r = 0; r < 2; r++)
	{
		RangeTblEntry *rte = list_nth_node(RangeTblEntry, query->rtable, r);

		if (rte->rtekind != RTE_RELATION || rte->relid != rels[r])
			refuse_shape("columns", "it refers to relations other than the sources");
	}
	n = list_length(query->targetList);
	if (n == 0)
		refuse_shape("columns", "it has no columns");
	left->columns = palloc0(sizeof(WeirColumnSpec) * n);
	right->columns = palloc0(sizeof(WeirColumnSpec) * n);
	left->sink_side = palloc(sizeof(int) * n);
	left->sink_index = palloc(sizeof(int) * n);
	left->sinkcols = palloc0(sizeof(WeirSinkColumn) * n);
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		int			sides = 0;
		int			side;
		WeirPlan   *plan;
		WeirColumnSpec *c;
		Node	   *expr = (Node *) copyObject(tle->expr);

		refuse_volatile(expr, "columns");
		(void) join_sides_walker(expr, &sides);
		if (sides == 3)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid columns: column %d refers to both sides", i + 1),
					 errhint("Give each side's columns apart (l.a, r.b) and combine them in a view over the sink.")));
		side = sides == 2 ? 1 : 0;
		plan = side == 0 ? left : right;
		if (side == 1)
			ChangeVarNodes(expr, 2, 1, 0);	/* evaluated against the right row */
		c = &plan->columns[plan->ncolumns];
		c->name = column_name(tle, "column", i + 1);
		c->expr = (Expr *) expr;
		c->type = exprType(expr);
		c->typmod = exprTypmod(expr);
		get_typlenbyval(c->type, &c->typlen, &c->typbyval);
		left->sink_side[i] = side;
		left->sink_index[i] = plan->ncolumns++;
		/* an inner join fills every column; a left outer one may not */
		add_sink_column(left, c->name, c->type, c->typmod, exprCollation(expr), true);
		i++;
	}
	left->nargs = left->ncolumns;
	right->nargs = right->ncolumns;
}

WeirPlan *
weir_definition_join_plan(Oid left_source, Oid right_source, const char *left_key,
						  const char *right_key, const char *left_time,
						  const char *right_time, const char *columns,
						  int64 lower, int64 upper, bool left_outer)
{
	WeirPlan   *left = palloc0(sizeof(WeirPlan));
	WeirPlan   *right = palloc0(sizeof(WeirPlan));

	left->op = right->op = WEIR_OP_JOIN;
	left->source = left_source;
	right->source = right_source;
	plan_keys(left, left_source, left_key, "left_key");
	plan_keys(right, right_source, right_key, "right_key");
	if (left->nkeys != right->nkeys)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("left_key has %d expressions, right_key %d", left->nkeys, right->nkeys),
				 errhint("Give the join key as the same number of expressions on both sides.")));
	for (int i = 0; i < left->nkeys; i++)
		if (left->keys[i].type != right->keys[i].type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("join key %d is %s on the left and %s on the right", i + 1,
							format_type_be(left->keys[i].type),
							format_type_be(right->keys[i].type)),
					 errhint("Cast one side so that both have the same type.")));
	plan_event_time(left, left_source, left_time);
	plan_event_time(right, right_source, right_time);
	plan_join_columns(left, right, columns);
	left->join_lower = right->join_lower = lower;
	left->join_upper = right->join_upper = upper;
	left->left_outer = right->left_outer = left_outer;
	/* per key and side: the rows' latest time and their list */
	left->state_size = right->state_size = sizeof(JoinKeyState);
	left->right = right;
	left->nsinkkey = 0;
	return left;
}

/* An interval as microseconds; months have no fixed length and are refused. */
int64
weir_interval_usecs(Interval *interval, const char *what)
{
	if (interval->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be given in months or years", what),
				 errhint("Months differ in length; give days, hours, minutes or seconds.")));
	return interval->time + (int64) interval->day * USECS_PER_DAY;
}

static int64
windowing_usecs(HeapTupleHeader tup, const char *field, const char *what)
{
	bool		isnull;
	Datum		d = GetAttributeByName(tup, field, &isnull);
	int64		us;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of the windowing must not be null", what),
				 errhint("Build windowings with weir.tumbling(), weir.hopping() or weir.session().")));
	us = weir_interval_usecs(DatumGetIntervalP(d), what);
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive interval", what),
				 errhint("Build windowings with weir.tumbling(), weir.hopping() or weir.session().")));
	return us;
}

/*
 * Decode and check a weir.windowing value.  The constructors check their
 * arguments, but a value can also be written as a row literal, so every
 * rule is checked here too.
 */
void
weir_definition_windowing(Datum windowing, WeirWindowing *out)
{
	HeapTupleHeader tup = DatumGetHeapTupleHeader(windowing);
	bool		isnull;
	Datum		kindd = GetAttributeByName(tup, "kind", &isnull);
	char	   *kind = isnull ? "" : TextDatumGetCString(kindd);

	if (strcmp(kind, "tumbling") == 0)
	{
		out->kind = WEIR_WINDOW_TUMBLING;
		out->size = windowing_usecs(tup, "size", "window size");
		out->slide = out->size;
	}
	else if (strcmp(kind, "hopping") == 0)
	{
		out->kind = WEIR_WINDOW_HOPPING;
		out->size = windowing_usecs(tup, "size", "window size");
		out->slide = windowing_usecs(tup, "slide", "window slide");
		if (out->slide > out->size)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("window slide must not be longer than the window size")));
		if ((out->size + out->slide - 1) / out->slide > 64)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a record would fall into more than 64 hopping windows"),
					 errhint("Use a longer slide.")));
	}
	else if (strcmp(kind, "session") == 0)
	{
		out->kind = WEIR_WINDOW_SESSION;
		out->size = windowing_usecs(tup, "gap", "session gap");
		out->slide = 0;
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown window kind \"%s\"", kind),
				 errhint("Build windowings with weir.tumbling(), weir.hopping() or weir.session().")));
}
