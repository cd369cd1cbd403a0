/*-------------------------------------------------------------------------
 *
 * definition_parse.c
 *	  From the SQL text of a pipeline definition to one analysed query.
 *
 * Keys, event times, the filters, aggregates and columns are SQL text.  Each
 * is parsed by PostgreSQL's own parser and analyzer as part of a query
 *	  SELECT <text> FROM ONLY <source> [WHERE <filter>]
 * so that names resolve against the source's columns, types are checked
 * and a typo is an error when the pipeline is created, naming the argument
 * it is in.  Each analysed query must be exactly that shape (one relation,
 * the source; no sub-queries, set-returning or window functions), which
 * also keeps text such as "1 FROM pg_authid --" from reading anything else.
 *
 * The pieces are then put together into one query over the source(s), its
 * target list in the layout definition.h describes, which is what the
 * pipeline runs from then on: it is stored as a view (definition_store.c),
 * so names are resolved here, once, with the creator's search_path, and
 * nothing created later on anyone's search_path changes what it runs.  The
 * pieces are joined as trees, never as text.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_parse.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parse_oper.h"
#include "parser/parser.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "definition/change_topic.h"
#include "definition/definition.h"
#include "definition/definition_parse.h"
#include "topic/topic_table.h"

/* One argument's analysed items: target entries over one or two sources */
typedef struct Piece
{
	Query	   *query;
	List	   *exprs;			/* Expr * per item */
	List	   *names;			/* char * per item */
} Piece;

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

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * Parse and analyze "SELECT <targets> FROM ONLY <source> [WHERE <where>]"
 * (a join's columns: FROM ONLY <left> l, ONLY <right> r) and check it has
 * exactly that shape.
 */
static Query *
analyze_over(const Oid *sources, int nsources, const char *targets, const char *where,
			 const char *what)
{
	MemoryContext cxt = CurrentMemoryContext;
	StringInfoData sql;
	List	   *raw = NIL;
	Query	   *query = NULL;

	initStringInfo(&sql);
	/* newlines: a trailing "--" comment in the text cannot swallow the rest */
	if (nsources == 1)
		appendStringInfo(&sql, "SELECT %s\nFROM ONLY %s", targets, qualified_name(sources[0]));
	else
		appendStringInfo(&sql, "SELECT %s\nFROM ONLY %s l, ONLY %s r", targets,
						 qualified_name(sources[0]), qualified_name(sources[1]));
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
	if (list_length(query->rtable) != nsources ||
		list_length(query->jointree->fromlist) != nsources)
		refuse_shape(what, "it refers to relations other than the source");
	for (int i = 0; i < nsources; i++)
	{
		RangeTblEntry *rte = list_nth_node(RangeTblEntry, query->rtable, i);

		if (rte->rtekind != RTE_RELATION || rte->relid != sources[i])
			refuse_shape(what, "it refers to relations other than the source");
	}
	if (query->hasWindowFuncs)
		refuse_shape(what, "window functions are not supported");
	if (query->cteList || query->groupClause || query->havingQual ||
		query->sortClause || query->limitCount || query->limitOffset ||
		query->distinctClause || query->setOperations || query->windowClause ||
		query->groupingSets || query->rowMarks)
		refuse_shape(what, "it is not a list of expressions");
	if (query->hasSubLinks)
		refuse_shape(what, "sub-queries are not supported");
	if (query->hasTargetSRFs)
		refuse_shape(what, "set-returning functions are not supported");
	if (nsources == 2 && query->jointree->quals != NULL)
		refuse_shape(what, "it is not a list of expressions over l and r");
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

static char *
column_name(TargetEntry *tle, const char *fallback, int n)
{
	if (tle->resname && strcmp(tle->resname, "?column?") != 0)
		return pstrdup(tle->resname);
	return psprintf("%s%d", fallback, n);
}

/* The items of an analysed query, named, checked to hold no aggregates. */
static Piece
piece_of(Query *query, const char *what, const char *fallback, bool aggregates)
{
	Piece		piece = {query, NIL, NIL};
	ListCell   *lc;
	int			i = 0;

	if (query->hasAggs && !aggregates)
		refuse_shape(what, "aggregates are not allowed in it");
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		refuse_volatile((Node *) tle->expr, what);
		piece.exprs = lappend(piece.exprs, tle->expr);
		piece.names = lappend(piece.names, column_name(tle, fallback, ++i));
	}
	return piece;
}

/* Two items of one argument may not share a name (they become columns). */
static void
refuse_duplicates(Piece *piece, const char *what, const char *hint)
{
	ListCell   *a;
	ListCell   *b;

	foreach(a, piece->names)
		for_each_cell(b, piece->names, lnext(piece->names, a))
			if (strcmp(lfirst(a), lfirst(b)) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("%s name \"%s\" is used twice", what, (char *) lfirst(a)),
						 errhint("%s", hint)));
}

/*
 * Key expressions: one or more, `hint` saying what to do when there are
 * none; with hint NULL (a window aggregate's), none is fine.
 */
static Piece
parse_keys(Oid source, const char *key, const char *what, const char *hint)
{
	Piece		piece = piece_of(analyze_over(&source, 1, key, NULL, what), what, what, false);
	ListCell   *lc;
	ListCell   *ln;

	if (piece.exprs == NIL && hint != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("invalid %s: it has no expressions", what),
				 errhint("%s", hint)));

	refuse_duplicates(&piece, what, psprintf("Name each %s with AS.", what));
	forboth(lc, piece.exprs, ln, piece.names)
	{
		Node	   *expr = lfirst(lc);

		if (!weir_definition_key_type_supported(exprType(expr), exprCollation(expr)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s \"%s\" of type %s is not supported", what, (char *) lfirst(ln),
							format_type_be(exprType(expr))),
					 errdetail("Keys are compared by their binary value, which is equality only for integer, boolean, date, timestamp, uuid, bytea and text types (text under a deterministic collation)."),
					 errhint("Cast it to one of these types, for example text.")));
	}
	return piece;
}

static Piece
parse_event_time(Oid source, const char *event_time, const char *what)
{
	Piece		piece = piece_of(analyze_over(&source, 1, event_time, NULL, what),
								 what, what, false);
	Node	   *expr;

	if (list_length(piece.exprs) != 1)
		refuse_shape(what, "it must be one expression");
	expr = linitial(piece.exprs);
	expr = coerce_to_target_type(NULL, expr, exprType(expr), TIMESTAMPTZOID, -1,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("invalid %s: type %s cannot be used as a timestamp with time zone",
						what, format_type_be(exprType(linitial(piece.exprs)))),
				 errhint("Give a timestamptz column or expression, for example to_timestamp(epoch_seconds).")));
	refuse_volatile(expr, what);	/* a cast may be */
	linitial(piece.exprs) = expr;
	linitial(piece.names) = "";
	return piece;
}

/* A filter (`what`: its argument's name) over the columns of `source`. */
static Node *
parse_filter(Oid source, const char *filter, const char *what, Query **query)
{
	*query = analyze_over(&source, 1, "1", filter, what);
	if ((*query)->hasAggs)
		refuse_shape(what, "aggregates are not allowed in it");
	refuse_volatile((*query)->jointree->quals, what);
	return (*query)->jointree->quals;
}

/*
 * A join's WHERE: its left filter AND its right filter (over varno 2), a
 * missing one as true, so that each side's is found again as it was
 * given (definition.h); NULL without filters.  *left_query and
 * *right_query: each filter's analysed query, or NULL.
 */
static Node *
parse_join_filters(const WeirDefinitionText *text, Query **left_query, Query **right_query)
{
	Node	   *left = NULL;
	Node	   *right = NULL;

	*left_query = NULL;
	*right_query = NULL;
	if (text->filter)
		left = parse_filter(text->source, text->filter, "left_filter", left_query);
	if (text->right_filter)
	{
		right = copyObject(parse_filter(text->right_source, text->right_filter,
										"right_filter", right_query));
		ChangeVarNodes(right, 1, 2, 0);
	}
	if (left == NULL && right == NULL)
		return NULL;
	return (Node *) makeBoolExpr(AND_EXPR,
								 list_make2(left ? left : makeBoolConst(true, false),
											right ? right : makeBoolConst(true, false)),
								 -1);
}

static Piece
parse_aggregates(Oid source, const char *aggregates)
{
	Piece		piece = piece_of(analyze_over(&source, 1, aggregates, NULL, "aggregates"),
								 "aggregates", "agg", true);
	ListCell   *lc;
	int			i = 0;

	foreach(lc, piece.exprs)
	{
		Node	   *expr = lfirst(lc);

		i++;
		if (!IsA(expr, Aggref))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid aggregates: item %d is not an aggregate call", i),
					 errhint("List aggregate calls such as count(*) AS n, sum(amount) AS total; compute on their results in a view over the sink.")));
	}
	refuse_duplicates(&piece, "aggregate",
					  "Name each aggregate with AS, for example sum(amount) AS total.");
	return piece;
}

/*
 * Whether a default column list leaves out column `att` of `source`: its
 * partition and position (the sink, a table or another topic, has its
 * own), and with `changes`, a change topic's change_op and
 * unchanged_columns, which describe a change, not the row (last value,
 * dedup and join write rows, not changes).
 */
static bool
default_skips(Oid source, Form_pg_attribute att, bool changes)
{
	if (att->attisdropped || att->attnum == WEIR_TOPIC_PART_ATTNUM ||
		att->attnum == WEIR_TOPIC_POS_ATTNUM)
		return true;
	return changes && (att->attnum == weir_change_op_attnum(source) ||
					   att->attnum == weir_change_unchanged_attnum(source));
}

/*
 * The default columns of a record-emitting operator: every column of the
 * source but those default_skips leaves out, and those named as a key in
 * keynames (last value writes its keys first).  Bound now, like any other
 * column list.
 */
static char *
default_columns(Oid source, List *keynames, bool changes)
{
	StringInfoData all;
	Relation	rel = relation_open(source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;

	initStringInfo(&all);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		bool		is_key = false;

		foreach(lc, keynames)
			if (strcmp(lfirst(lc), NameStr(att->attname)) == 0)
				is_key = true;
		if (is_key || default_skips(source, att, changes))
			continue;
		appendStringInfo(&all, "%s%s", all.len > 0 ? ", " : "",
						 quote_identifier(NameStr(att->attname)));
	}
	relation_close(rel, AccessShareLock);
	return all.data;
}

static Piece
parse_columns(Oid source, const char *columns, List *skip, bool changes)
{
	Piece		piece;

	if (columns == NULL)
		columns = default_columns(source, skip, changes);
	piece = piece_of(analyze_over(&source, 1, columns, NULL, "columns"), "columns",
					 "column", false);
	if (piece.exprs == NIL)
		refuse_shape("columns", "it has no columns");
	return piece;
}

/*
 * A join's columns: "SELECT <columns> FROM ONLY left l, ONLY right r",
 * each expression over one side only (each side's values are computed when
 * its record arrives and kept with it until matched).  By default every
 * column of both sources but those default_skips leaves out, right columns
 * whose name the left already uses prefixed with right_.
 */
static Piece
parse_join_columns(const Oid *sources, const char *columns)
{
	Piece		piece;
	ListCell   *lc;
	int			i = 0;

	if (columns == NULL)
	{
		StringInfoData all;
		List	   *left_names = NIL;

		initStringInfo(&all);
		for (int side = 0; side < 2; side++)
		{
			Relation	rel = relation_open(sources[side], AccessShareLock);
			TupleDesc	desc = RelationGetDescr(rel);

			for (int a = 0; a < desc->natts; a++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, a);
				char	   *name = NameStr(att->attname);
				bool		taken = false;

				if (default_skips(sources[side], att, true))
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
	piece = piece_of(analyze_over(sources, 2, columns, NULL, "columns"), "columns",
					 "column", false);
	if (piece.exprs == NIL)
		refuse_shape("columns", "it has no columns");
	foreach(lc, piece.exprs)
	{
		int			sides = weir_definition_expr_sides(lfirst(lc));

		i++;
		if (sides == 3)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("invalid columns: column %d refers to both sides", i),
					 errhint("Give each side's columns apart (l.a, r.b) and combine them in a view over the sink.")));
	}
	return piece;
}

/* --- putting the pieces together ---------------------------------------- */

typedef struct Assembly
{
	WeirDefinition *def;
	List	   *rtable;			/* the RTEs of the query being built */
	int			ngroup;
} Assembly;

/*
 * Add a piece's items (whose Vars refer to varno 1, or with `varno` 2 to
 * the right source) as target entries named `colname`1, 2, ...; with
 * `group`, they are grouped by (a window's keys and event time).
 */
static void
add_items(Assembly *a, Piece *piece, int varno, const char *colname, bool numbered,
		  bool group)
{
	Query	   *q = a->def->query;
	ListCell   *le;
	ListCell   *ln;
	int			n = 0;

	/* what each piece read of its source, for the view's permission data */
	for (int r = 0; r < list_length(piece->query->rtable); r++)
	{
		RangeTblEntry *from = list_nth_node(RangeTblEntry, piece->query->rtable, r);
		RangeTblEntry *into = list_nth_node(RangeTblEntry, a->rtable, varno - 1 + r);

		into->selectedCols = bms_union(into->selectedCols, from->selectedCols);
	}
	forboth(le, piece->exprs, ln, piece->names)
	{
		Expr	   *expr = copyObject(lfirst(le));
		TargetEntry *tle;

		if (varno != 1)
			ChangeVarNodes((Node *) expr, 1, varno, 0);
		n++;
		tle = makeTargetEntry(expr, list_length(q->targetList) + 1,
							  numbered ? psprintf("%s_%d", colname, n) : pstrdup(colname),
							  false);
		if (group)
		{
			SortGroupClause *g = makeNode(SortGroupClause);
			Oid			sortop;
			Oid			eqop;
			bool		hashable;

			get_sort_group_operators(exprType((Node *) expr), false, true, false,
									 &sortop, &eqop, NULL, &hashable);
			tle->ressortgroupref = ++a->ngroup;
			g->tleSortGroupRef = tle->ressortgroupref;
			g->eqop = eqop;
			g->sortop = sortop;
			g->nulls_first = false;
			g->hashable = hashable;
			q->groupClause = lappend(q->groupClause, g);
		}
		q->targetList = lappend(q->targetList, tle);
		a->def->names = lappend(a->def->names, makeString(pstrdup(lfirst(ln))));
	}
}

/*
 * Column attnum of the source of varno as an item of its own, named
 * `colname` in the view and "" in the catalog (definition.h), grouped by
 * with `group` (a window's), so that the view stays a valid query.
 */
static void
add_column_item(Assembly *a, int varno, AttrNumber attnum, const char *colname, bool group)
{
	RangeTblEntry *rte = list_nth_node(RangeTblEntry, a->rtable, varno - 1);
	Oid			type;
	int32		typmod;
	Oid			collation;
	Piece		piece = {NULL, NIL, NIL};
	Query		fake;

	get_atttypetypmodcoll(rte->relid, attnum, &type, &typmod, &collation);
	rte->selectedCols = bms_add_member(rte->selectedCols,
									   attnum - FirstLowInvalidHeapAttributeNumber);
	/* add_items reads the permissions of a piece's query: none to add */
	memset(&fake, 0, sizeof(fake));
	piece.query = &fake;
	piece.exprs = list_make1(makeVar(1, attnum, type, typmod, collation, 0));
	piece.names = list_make1("");
	add_items(a, &piece, varno, colname, false, group);
}

/*
 * The change items of the source of varno, when it is a change topic
 * (change_topic.h; definition.h): its change_op, and with `unchanged` its
 * unchanged_columns, if it has one.
 */
static void
add_change_items(Assembly *a, int varno, bool unchanged, bool group)
{
	Oid			source = a->def->sources[varno - 1];
	AttrNumber	op = weir_change_op_attnum(source);
	AttrNumber	kept = weir_change_unchanged_attnum(source);

	if (op == InvalidAttrNumber)
		return;
	add_column_item(a, varno, op, varno == 1 ? "change_op" : "right_change_op", group);
	if (unchanged && kept != InvalidAttrNumber)
		add_column_item(a, varno, kept, "unchanged_columns", group);
}

/* Start the query over the sources, with the range table of `base`. */
static Assembly
begin_assembly(WeirOperatorKind op, const Oid *sources, int nsources, Query *base,
			   Node *quals)
{
	Assembly	a;
	Query	   *q = makeNode(Query);
	List	   *fromlist = NIL;

	a.def = palloc0(sizeof(WeirDefinition));
	a.def->op = op;
	a.def->nsources = nsources;
	for (int i = 0; i < nsources; i++)
		a.def->sources[i] = sources[i];
	a.def->query = q;
	a.ngroup = 0;
	q->commandType = CMD_SELECT;
	q->querySource = QSRC_ORIGINAL;
	q->canSetTag = true;
	a.rtable = copyObject(base->rtable);
	for (int i = 0; i < nsources; i++)
	{
		RangeTblRef *ref = makeNode(RangeTblRef);

		ref->rtindex = i + 1;
		fromlist = lappend(fromlist, ref);
		list_nth_node(RangeTblEntry, a.rtable, i)->selectedCols = NULL;
	}
	q->rtable = a.rtable;
	q->jointree = makeFromExpr(fromlist, copyObject(quals));
	return a;
}

/*
 * Parse, check and bind a definition given as text; errors name the
 * argument at fault.  The sink's columns are checked by the plan
 * (definition.c).
 */
WeirDefinition *
weir_definition_parse(const WeirDefinitionText *text)
{
	Oid			sources[2] = {text->source, text->right_source};
	Query	   *filter_query = NULL;
	Query	   *right_filter_query = NULL;
	Node	   *quals;
	Assembly	a;

	if (text->op == WEIR_OP_JOIN)
		quals = parse_join_filters(text, &filter_query, &right_filter_query);
	else
		quals = text->filter ? parse_filter(text->source, text->filter, "filter",
											&filter_query) : NULL;

	switch (text->op)
	{
		case WEIR_OP_WINDOW:
			{
				/* no key (NULL, or no expressions): one group per window */
				Piece		keys = {NULL, NIL, NIL};
				Piece		time = parse_event_time(text->source, text->event_time, "event_time");
				Piece		aggs = parse_aggregates(text->source, text->aggregates);

				if (text->key)
					keys = parse_keys(text->source, text->key, "key", NULL);
				a = begin_assembly(text->op, sources, 1, time.query, quals);
				a.def->nkeys = list_length(keys.exprs);
				if (keys.query)
					add_items(&a, &keys, 1, "key", true, true);
				add_items(&a, &time, 1, "event_time", false, true);
				add_items(&a, &aggs, 1, "aggregate", true, false);
				add_change_items(&a, 1, !text->insert_only, true);
				a.def->query->hasAggs = true;
				break;
			}
		case WEIR_OP_DEDUP:
		case WEIR_OP_LAST_VALUE:
			{
				Piece		keys = parse_keys(text->source, text->key, "key",
											  "Give one or more expressions that identify a record.");
				Piece		time = parse_event_time(text->source, text->event_time, "event_time");
				/* last value writes its keys first: the columns leave them out */
				Piece		columns = parse_columns(text->source, text->columns,
													text->op == WEIR_OP_LAST_VALUE ? keys.names : NIL,
													true);

				a = begin_assembly(text->op, sources, 1, keys.query, quals);
				a.def->nkeys = list_length(keys.exprs);
				add_items(&a, &keys, 1, "key", true, false);
				add_items(&a, &time, 1, "event_time", false, false);
				add_items(&a, &columns, 1, "column", true, false);
				add_change_items(&a, 1, text->op == WEIR_OP_LAST_VALUE, false);
				break;
			}
		case WEIR_OP_PROJECTION:
			{
				/* a projection passes changes on as they are: none skipped */
				Piece		columns = parse_columns(text->source, text->columns, NIL, false);

				a = begin_assembly(text->op, sources, 1, columns.query, quals);
				add_items(&a, &columns, 1, "column", true, false);
				break;
			}
		case WEIR_OP_JOIN:
			{
				Piece		lkeys = parse_keys(text->source, text->key, "left_key",
											   "Give one or more expressions to join on.");
				Piece		rkeys = parse_keys(text->right_source, text->right_key, "right_key",
											   "Give one or more expressions to join on.");
				Piece		ltime = parse_event_time(text->source, text->event_time,
													 "left_event_time");
				Piece		rtime = parse_event_time(text->right_source, text->right_event_time,
													 "right_event_time");
				Piece		columns = parse_join_columns(sources, text->columns);
				ListCell   *l;
				ListCell   *r;
				int			i = 0;

				if (list_length(lkeys.exprs) != list_length(rkeys.exprs))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
							 errmsg("left_key has %d expressions, right_key %d",
									list_length(lkeys.exprs), list_length(rkeys.exprs)),
							 errhint("Give the join key as the same number of expressions on both sides.")));
				forboth(l, lkeys.exprs, r, rkeys.exprs)
				{
					Oid			lt = exprType(lfirst(l));
					Oid			rt = exprType(lfirst(r));

					i++;
					if (lt != rt)
						ereport(ERROR,
								(errcode(ERRCODE_DATATYPE_MISMATCH),
								 errmsg("join key %d is %s on the left and %s on the right", i,
										format_type_be(lt), format_type_be(rt)),
								 errhint("Cast one side so that both have the same type.")));
				}
				a = begin_assembly(text->op, sources, 2, columns.query, quals);
				a.def->nkeys = list_length(lkeys.exprs);
				add_items(&a, &lkeys, 1, "left_key", true, false);
				add_items(&a, &rkeys, 2, "right_key", true, false);
				add_items(&a, &ltime, 1, "left_event_time", false, false);
				add_items(&a, &rtime, 2, "right_event_time", false, false);
				add_items(&a, &columns, 1, "column", true, false);
				add_change_items(&a, 1, false, false);
				add_change_items(&a, 2, false, false);
				break;
			}
		default:
			elog(ERROR, "unrecognized operator kind: %d", (int) text->op);
	}
	if (filter_query)
		linitial_node(RangeTblEntry, a.rtable)->selectedCols =
			bms_union(linitial_node(RangeTblEntry, a.rtable)->selectedCols,
					  linitial_node(RangeTblEntry, filter_query->rtable)->selectedCols);
	if (right_filter_query)
		lsecond_node(RangeTblEntry, a.rtable)->selectedCols =
			bms_union(lsecond_node(RangeTblEntry, a.rtable)->selectedCols,
					  linitial_node(RangeTblEntry, right_filter_query->rtable)->selectedCols);
	return a.def;
}
