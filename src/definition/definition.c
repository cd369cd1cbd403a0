/*-------------------------------------------------------------------------
 *
 * definition.c
 *	  From a pipeline's bound definition (definition_parse.c, stored as a
 *	  view by definition_store.c) to the plan that runs it: keys, event
 *	  time, filter, aggregates, columns, and the sink's columns.
 *
 * The same code makes the plan at creation (to derive and check the sink)
 * and in every process that runs the pipeline (worker, read-ahead process,
 * checkpoint writer, readers of its state), from the same stored tree, so
 * all of them agree on every layout.  A stored definition is checked again
 * as it is read (its shape, key types, aggregates): it is a catalog object
 * a superuser could have replaced.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "access/sysattr.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_agg.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "definition/change_topic.h"
#include "definition/definition.h"

static void add_sink_column(WeirPlan *plan, const char *name, Oid type, int32 typmod,
							Oid collation, bool nullable);

/*
 * Keys are compared by their binary image, which is equality for these
 * types (and for text only under a deterministic collation).
 */
bool
weir_definition_key_type_supported(Oid type, Oid collation)
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

/* Varnos an expression refers to: bit 1 the source (left), bit 2 the right. */
static bool
sides_walker(Node *node, int *sides)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		int			varno = ((Var *) node)->varno;

		*sides |= varno == 1 || varno == 2 ? 1 << (varno - 1) : 4;
		return false;
	}
	return expression_tree_walker(node, sides_walker, (void *) sides);
}

int
weir_definition_expr_sides(Node *expr)
{
	int			sides = 0;

	(void) sides_walker(expr, &sides);
	return sides;
}

/* A stored definition that is not what its pipeline kind needs. */
static void
refuse_stored(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("stored definition of the pipeline is invalid: %s", why),
			 errhint("Drop the pipeline and create it again.")));
}

static Expr *
item_expr(WeirDefinition *def, int i)
{
	return list_nth_node(TargetEntry, def->query->targetList, i)->expr;
}

static char *
item_name(WeirDefinition *def, int i)
{
	return strVal(list_nth(def->names, i));
}

/* An item of the right source, as an expression over its own row (varno 1). */
static Expr *
right_expr(Expr *expr)
{
	expr = copyObject(expr);
	ChangeVarNodes((Node *) expr, 2, 1, 0);
	return expr;
}

/* Items from .. from + n - 1 as the plan's keys (of the right source: right). */
static void
plan_keys(WeirPlan *plan, WeirDefinition *def, int from, int n, bool right)
{
	plan->nkeys = n;
	plan->keys = palloc0(sizeof(WeirKeySpec) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		WeirKeySpec *k = &plan->keys[i];
		Expr	   *expr = item_expr(def, from + i);

		if (weir_definition_expr_sides((Node *) expr) & ~(right ? 2 : 1))
			refuse_stored("a key refers to the wrong source");
		k->expr = right ? right_expr(expr) : expr;
		k->type = exprType((Node *) expr);
		k->typmod = exprTypmod((Node *) expr);
		k->collation = exprCollation((Node *) expr);
		get_typlenbyval(k->type, &k->typlen, &k->typbyval);
		k->name = item_name(def, from + i);
		if (!weir_definition_key_type_supported(k->type, k->collation))
			refuse_stored("a key has a type keys cannot have");
	}
}

static void
plan_event_time(WeirPlan *plan, WeirDefinition *def, int i, bool right)
{
	Expr	   *expr = item_expr(def, i);

	if (exprType((Node *) expr) != TIMESTAMPTZOID ||
		(weir_definition_expr_sides((Node *) expr) & ~(right ? 2 : 1)))
		refuse_stored("an event time is not a timestamptz over its source");
	plan->event_time = right ? right_expr(expr) : expr;
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
		case WEIR_AGG_AVG_FLOAT8:
		case WEIR_AGG_SUM_INT_COUNTED:
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

/*
 * Over a change topic (plan->retract), an aggregate must take a row back
 * exactly: count, and sum and avg over integers (whose sum weir keeps in
 * 128 bits) can; min and max cannot without every row, float sums not
 * exactly, and the generic path has no inverse.
 */
static void
refuse_unretractable(WeirPlan *plan, WeirAggSpec *a)
{
	switch (a->kind)
	{
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_COUNT:
		case WEIR_AGG_SUM_INT_COUNTED:
		case WEIR_AGG_AVG_INT:
			return;
		default:
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("aggregate \"%s\" cannot take back the rows of change topic \"%s\"",
					a->name, get_rel_name(plan->source)),
			 errdetail("Over a change topic, an update's before image and a delete take their row back out of its windows; only count, and sum and avg over integer types, can do that exactly."),
			 errhint("Declare insert_only => true if the topic receives only inserts, or aggregate with count, sum or avg over integers.")));
}

static void
plan_aggregates(WeirPlan *plan, WeirDefinition *def, int from)
{
	int			n = def->nitems - from;
	Size		offset = 0;

	plan->naggs = n;
	plan->aggs = palloc0(sizeof(WeirAggSpec) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		WeirAggSpec *a = &plan->aggs[i];
		Aggref	   *aggref;
		int			kind;

		if (!IsA(item_expr(def, from + i), Aggref))
			refuse_stored("an aggregate is not an aggregate call");
		aggref = (Aggref *) item_expr(def, from + i);
		a->name = item_name(def, from + i);
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
		if (aggref->agglevelsup != 0 || (weir_definition_expr_sides((Node *) aggref) & ~1))
			refuse_stored("an aggregate refers to another source");
		kind = agg_kind(aggref->aggfnoid);
		a->kind = kind < 0 ? WEIR_AGG_GENERIC : (WeirAggKind) kind;
		/* a sum that can take inputs back counts them (aggregate.c) */
		if (plan->retract && a->kind == WEIR_AGG_SUM_INT)
			a->kind = WEIR_AGG_SUM_INT_COUNTED;
		if (plan->retract)
			refuse_unretractable(plan, a);
		a->collation = aggref->inputcollid;
		if (a->kind == WEIR_AGG_GENERIC)
			plan_generic(a, aggref);
		a->nargs = list_length(aggref->args);
		a->args = palloc0(sizeof(Expr *) * Max(a->nargs, 1));
		a->argoffset = plan->nargs;
		plan->nargs += a->nargs;
		for (int j = 0; j < a->nargs; j++)
			a->args[j] = list_nth_node(TargetEntry, aggref->args, j)->expr;
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
	}
	/* the rows a window holds, whatever its aggregates count */
	if (plan->retract)
	{
		plan->rows_offset = offset;
		offset += sizeof(int64);
	}
	plan->state_size = MAXALIGN(offset);
}

/*
 * Items from .. the end as the columns a record-emitting operator writes
 * (a join: those of side `side`, each side's values computed when its
 * record arrives); their values are the row's arguments.
 */
static void
plan_columns(WeirPlan *plan, WeirDefinition *def, int from, int side)
{
	int			n = def->nitems - from;

	plan->columns = palloc0(sizeof(WeirColumnSpec) * Max(n, 1));
	plan->ncolumns = 0;
	for (int i = 0; i < n; i++)
	{
		Expr	   *expr = item_expr(def, from + i);
		int			sides = weir_definition_expr_sides((Node *) expr);
		WeirColumnSpec *c;

		if (sides & ~(def->op == WEIR_OP_JOIN ? 3 : 1) || sides == 3)
			refuse_stored("a column refers to the wrong source");
		/* a join column over no source column (a constant) goes left */
		if (def->op == WEIR_OP_JOIN && (sides == 2 ? 1 : 0) != side)
			continue;
		c = &plan->columns[plan->ncolumns++];
		c->name = item_name(def, from + i);
		c->expr = side == 1 ? right_expr(expr) : expr;
		c->type = exprType((Node *) expr);
		c->typmod = exprTypmod((Node *) expr);
		get_typlenbyval(c->type, &c->typlen, &c->typbyval);
	}
	plan->nargs = plan->ncolumns;
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
 * A join's filter of side `side` (0: left, 1: right) from its WHERE
 * (definition.h), as an expression over that side's row; NULL: none.
 */
static Expr *
join_filter(Node *quals, int side)
{
	Node	   *filter;

	if (!is_andclause(quals) || list_length(((BoolExpr *) quals)->args) != 2)
		refuse_stored("its filters are not one for each source");
	filter = list_nth(((BoolExpr *) quals)->args, side);
	if (weir_definition_expr_sides(filter) & ~(1 << side))
		refuse_stored("a filter refers to the other source");
	/* a side given no filter is stored as the constant true (definition_parse.c): none */
	if (IsA(filter, Const) && !((Const *) filter)->constisnull &&
		((Const *) filter)->consttype == BOOLOID &&
		DatumGetBool(((Const *) filter)->constvalue))
		return NULL;
	return side == 1 ? right_expr((Expr *) filter) : (Expr *) filter;
}

/*
 * The change items of side `side` (definition.h): change_op and
 * unchanged_columns of its source, each a bare Var of it of its type.
 */
static void
plan_change_items(WeirPlan *plan, WeirDefinition *def, int side)
{
	for (int i = def->nitems; i < list_length(def->query->targetList); i++)
	{
		Expr	   *expr = item_expr(def, i);
		Var		   *var = (Var *) expr;

		if (!IsA(expr, Var) || var->varattno <= 0 || var->varlevelsup != 0 ||
			(var->varno != 1 && var->varno != 2))
			refuse_stored("a change item is not a column of a source");
		if (var->varno != side + 1)
			continue;
		if (var->vartype == CHAROID && plan->change_op == NULL &&
			var->varattno == weir_change_op_attnum(plan->source))
			plan->change_op = side == 1 ? right_expr(expr) : expr;
		else if (var->vartype == NAMEARRAYOID && plan->unchanged == NULL &&
				 var->varattno == weir_change_unchanged_attnum(plan->source))
			plan->unchanged = side == 1 ? right_expr(expr) : expr;
		else
			refuse_stored("a change item is not change_op or unchanged_columns of its source");
	}
	if (plan->unchanged && plan->change_op == NULL)
		refuse_stored("it has unchanged_columns without change_op");
}

static WeirPlan *
new_plan(WeirDefinition *def, int side)
{
	WeirPlan   *plan = palloc0(sizeof(WeirPlan));
	Node	   *quals = def->query->jointree ? def->query->jointree->quals : NULL;

	plan->op = def->op;
	plan->source = def->sources[side];
	plan_change_items(plan, def, side);
	if (quals && def->op == WEIR_OP_JOIN)
		plan->filter = join_filter(quals, side);
	else if (quals)
	{
		if (weir_definition_expr_sides(quals) & ~1)
			refuse_stored("its filter refers to another source");
		plan->filter = (Expr *) quals;
	}
	return plan;
}

/*
 * Over a change topic, what a window takes back must be what its row
 * added, so every expression (keys, event time, filter, aggregate
 * arguments) must depend on the row's own columns only: not on change_op,
 * commit_lsn, commit_time or unchanged_columns, which a before image or a
 * delete does not repeat.
 */
static void
refuse_change_columns(WeirPlan *plan, Node *expr)
{
	Bitmapset  *attnos = NULL;
	int			a = -1;

	pull_varattnos(expr, 1, &attnos);
	while ((a = bms_next_member(attnos, a)) >= 0)
	{
		AttrNumber	attnum = a + FirstLowInvalidHeapAttributeNumber;

		if (attnum > 0 && weir_change_describes_change(plan->source, attnum))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("window aggregates over change topic \"%s\" cannot use column \"%s\"",
							get_rel_name(plan->source),
							get_attname(plan->source, attnum, false)),
					 errdetail("An update's before image and a delete take back what their row added, which must depend on the row's own columns only; change_op, commit_lsn, commit_time and unchanged_columns describe the change."),
					 errhint("Use columns of the table, for the event time a timestamp the rows hold, or declare insert_only => true if the topic receives only inserts.")));
	}
}

/* A window over a change topic: what it can take back (refuse_*). */
static void
plan_window_changes(WeirPlan *plan, WeirDefinition *def, const WeirPlanOptions *options)
{
	if (options->insert_only && plan->change_op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("insert_only applies only to change topics"),
				 errdetail("Topic \"%s\" has no column change_op of type \"char\": every row of it is an insert.",
						   get_rel_name(plan->source)),
				 errhint("Leave insert_only out.")));
	plan->insert_only = options->insert_only;
	plan->retract = plan->change_op != NULL && !plan->insert_only;
	if (!plan->retract)
		return;
	if (options->windowing.kind == WEIR_WINDOW_SESSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session windows over change topic \"%s\" cannot take back rows",
						get_rel_name(plan->source)),
				 errdetail("Taking a row back out of a session may split it, which needs every row of the session."),
				 errhint("Use tumbling or hopping windows, or declare insert_only => true if the topic receives only inserts.")));
	for (int i = 0; i < def->nitems; i++)
	{
		Expr	   *expr = item_expr(def, i);

		/* an aggregate's arguments: its Aggref */
		refuse_change_columns(plan, (Node *) expr);
	}
	if (plan->filter)
		refuse_change_columns(plan, (Node *) plan->filter);
}

static WeirPlan *
plan_window(WeirDefinition *def, const WeirPlanOptions *options)
{
	WeirPlan   *plan = new_plan(def, 0);

	plan_keys(plan, def, 0, def->nkeys, false);
	plan_event_time(plan, def, def->nkeys, false);
	plan_window_changes(plan, def, options);
	plan_aggregates(plan, def, def->nkeys + 1);
	plan->windowing = options->windowing;

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
 * Dedup and last value: a key, event time, filter, columns,
 * a retention, and a state per key.
 */
static WeirPlan *
plan_keyed(WeirDefinition *def, const WeirPlanOptions *options)
{
	WeirPlan   *plan = new_plan(def, 0);

	plan_keys(plan, def, 0, def->nkeys, false);
	plan_event_time(plan, def, def->nkeys, false);
	plan_columns(plan, def, def->nkeys + 1, 0);
	plan->retention = options->retention;
	plan->refresh_horizon = options->refresh_horizon;
	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * (plan->nkeys + plan->ncolumns));
	if (def->op == WEIR_OP_DEDUP)
	{
		/* the sink: the columns (what a key keeps is dedup.c's) */
		add_column_sinkcols(plan);
		return plan;
	}
	/* the sink: keys, then the columns; unique on the keys */
	for (int i = 0; i < plan->nkeys; i++)
		add_sink_column(plan, plan->keys[i].name, plan->keys[i].type,
						plan->keys[i].typmod, plan->keys[i].collation, false);
	plan->nsinkkey = plan->nkeys;
	add_column_sinkcols(plan);
	return plan;
}

/* A stateless stage: filter and columns, insert-only. */
static WeirPlan *
plan_projection(WeirDefinition *def)
{
	WeirPlan   *plan = new_plan(def, 0);

	plan_columns(plan, def, 0, 0);
	plan->sinkcols = palloc0(sizeof(WeirSinkColumn) * plan->ncolumns);
	add_column_sinkcols(plan);
	return plan;
}

/*
 * A join: the plan is the left side, plan->right the right side, each with
 * its keys, event time and its side's columns: a right row r matches a
 * left row l when r.t BETWEEN l.t - right_before AND l.t + right_after.
 * Sink column i is column sink_index[i] of side sink_side[i] (0: left, 1:
 * right), in the order the columns were given.
 */
static WeirPlan *
plan_join(WeirDefinition *def, const WeirPlanOptions *options)
{
	WeirPlan   *left = new_plan(def, 0);
	WeirPlan   *right = new_plan(def, 1);
	int			from = 2 * def->nkeys + 2;
	int			n = def->nitems - from;
	int			next[2] = {0, 0};

	plan_keys(left, def, 0, def->nkeys, false);
	plan_keys(right, def, def->nkeys, def->nkeys, true);
	for (int i = 0; i < def->nkeys; i++)
		if (left->keys[i].type != right->keys[i].type)
			refuse_stored("its join keys differ in type");
	plan_event_time(left, def, 2 * def->nkeys, false);
	plan_event_time(right, def, 2 * def->nkeys + 1, true);
	plan_columns(left, def, from, 0);
	plan_columns(right, def, from, 1);
	left->sink_side = palloc(sizeof(int) * Max(n, 1));
	left->sink_index = palloc(sizeof(int) * Max(n, 1));
	left->sinkcols = palloc0(sizeof(WeirSinkColumn) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		Expr	   *expr = item_expr(def, from + i);
		int			side = weir_definition_expr_sides((Node *) expr) == 2 ? 1 : 0;

		left->sink_side[i] = side;
		left->sink_index[i] = next[side]++;
		/* an inner join fills every column; a left outer one may not */
		add_sink_column(left, item_name(def, from + i), exprType((Node *) expr),
						exprTypmod((Node *) expr), exprCollation((Node *) expr), true);
	}
	left->right_before = right->right_before = options->right_before;
	left->right_after = right->right_after = options->right_after;
	left->left_outer = right->left_outer = options->left_outer;
	left->right = right;
	left->nsinkkey = 0;
	return left;
}

/*
 * The plan of a bound definition, in the current memory context.  Needs a
 * transaction (catalog lookups of aggregates and types); may ereport.
 */
WeirPlan *
weir_definition_plan(WeirDefinition *def, const WeirPlanOptions *options)
{
	int			n = list_length(def->query->targetList);
	int			needed = 1;

	if (list_length(def->names) != n || def->nkeys < 0)
		refuse_stored("its names do not match its items");
	switch (def->op)
	{
		case WEIR_OP_WINDOW:
			needed = def->nkeys + 1;
			break;
		case WEIR_OP_DEDUP:
		case WEIR_OP_LAST_VALUE:
			needed = def->nkeys + 2;
			break;
		case WEIR_OP_PROJECTION:
			needed = 1;
			break;
		case WEIR_OP_JOIN:
			needed = 2 * def->nkeys + 3;
			break;
	}
	if (n < needed)
		refuse_stored("it has too few items for its kind");
	/* the change items: the items after the others named "" (definition.h) */
	def->nitems = n;
	while (def->nitems > needed && strVal(list_nth(def->names, def->nitems - 1))[0] == '\0')
		def->nitems--;
	if (def->op == WEIR_OP_PROJECTION && def->nitems != n)
		refuse_stored("a projection has change items");
	switch (def->op)
	{
		case WEIR_OP_WINDOW:
			return plan_window(def, options);
		case WEIR_OP_DEDUP:
		case WEIR_OP_LAST_VALUE:
			return plan_keyed(def, options);
		case WEIR_OP_PROJECTION:
			return plan_projection(def);
		case WEIR_OP_JOIN:
			return plan_join(def, options);
	}
	elog(ERROR, "unrecognized operator kind: %d", (int) def->op);
	return NULL;				/* keep compiler quiet */
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

/*
 * An interval as microseconds.  Months have no fixed length and are
 * refused; so is anything longer than WEIR_MAX_DURATION_USECS either way,
 * which keeps every sum of a pipeline's durations and an event time inside
 * int64 (and event times far enough from the ends of timestamptz's range:
 * worker.c refuses those nearer than the pipeline's durations).
 */
int64
weir_interval_usecs(Interval *interval, const char *what)
{
	int64		us;

	if (interval->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be given in months or years", what),
				 errhint("Months differ in length; give days, hours, minutes or seconds.")));
	if (interval->day > WEIR_MAX_DURATION_USECS / USECS_PER_DAY ||
		interval->day < -(WEIR_MAX_DURATION_USECS / USECS_PER_DAY) ||
		interval->time > WEIR_MAX_DURATION_USECS || interval->time < -WEIR_MAX_DURATION_USECS ||
		(us = interval->time + (int64) interval->day * USECS_PER_DAY) > WEIR_MAX_DURATION_USECS ||
		us < -WEIR_MAX_DURATION_USECS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at most %d days", what,
						(int) (WEIR_MAX_DURATION_USECS / USECS_PER_DAY)),
				 errdetail("Longer durations would put window bounds and expiry times outside the range of timestamp with time zone.")));
	return us;
}

/* A duration argument: at least zero (allow_zero) or positive. */
int64
weir_duration_usecs(Interval *interval, const char *what, bool allow_zero)
{
	int64		us = weir_interval_usecs(interval, what);

	if (us < 0 || (!allow_zero && us == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s interval", what,
						allow_zero ? "a non-negative" : "a positive")));
	return us;
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
	us = weir_duration_usecs(DatumGetIntervalP(d), what, false);
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
	Datum		touchingd = GetAttributeByName(tup, "merge_touching", &isnull);

	/* null: false, as a value stored before the attribute was added reads */
	out->merge_touching = !isnull && DatumGetBool(touchingd);
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
	if (out->merge_touching && out->kind != WEIR_WINDOW_SESSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("merge_touching applies only to session windows"),
				 errhint("Leave merge_touching null or false for %s windows.", kind)));
}
