/*-------------------------------------------------------------------------
 *
 * definition_store.c
 *	  A pipeline's bound definition kept as a view in schema weir_pipelines,
 *	  named after the pipeline and owned by the pipeline's owner.
 *
 * Keeping the analysed query as a view gives a pipeline what PostgreSQL
 * gives views, with PostgreSQL's own machinery:
 *	- its expressions are bound once, at creation: the worker runs the
 *	  stored tree (weir_definition_load), never re-parsed text, so an
 *	  operator or function created later on a search_path cannot take
 *	  over;
 *	- pg_depend records what it uses (columns of its sources, functions,
 *	  operators, types, collations), so ALTER TABLE ... TYPE or DROP of
 *	  those is refused, or drops the pipeline with CASCADE; it is also made
 *	  to depend on the columns the pipeline writes and on its sources'
 *	  positions (write_target.c);
 *	- pg_shdepend records its owner, who is the pipeline's owner: DROP
 *	  ROLE is refused while a role owns pipelines, REASSIGN OWNED hands
 *	  them over, DROP OWNED drops them (weir's sql_drop event trigger
 *	  forgets a pipeline whose view goes).
 * The catalog row (weir.pipeline) keeps the view's oid, the names of its
 * items and the number of keys.
 *
 * The view is created by weir, as the owner of schema weir_pipelines, in
 * which nobody else may create objects; weir's event trigger refuses
 * statements that would change it (CREATE OR REPLACE, RENAME, SET SCHEMA).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_store.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "commands/tablecmds.h"
#include "commands/view.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/act_as.h"
#include "catalog_sql/catalog.h"
#include "definition/definition.h"
#include "definition/definition_store.h"

#define DEFINITION_SCHEMA "weir_pipelines"

/*
 * Store a definition as view weir_pipelines.<name>, owned by `owner`;
 * returns its oid.  In the caller's transaction (a rolled back creation
 * leaves no view).  The caller has checked `owner` may read the sources.
 */
Oid
weir_definition_store(WeirDefinition *def, const char *name, Oid owner)
{
	CreateStmt *cs = makeNode(CreateStmt);
	List	   *columns = NIL;
	ListCell   *lc;
	ObjectAddress address;
	WeirActAs	as;

	foreach(lc, def->query->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *expr = (Node *) tle->expr;

		columns = lappend(columns, makeColumnDef(tle->resname, exprType(expr),
												 exprTypmod(expr), exprCollation(expr)));
	}
	cs->relation = makeRangeVar(DEFINITION_SCHEMA, pstrdup(name), -1);
	cs->tableElts = columns;
	cs->oncommit = ONCOMMIT_NOOP;
	cs->if_not_exists = false;

	/* created by the schema's owner (act_as.c), owned by the pipeline's */
	weir_act_as_begin(&as, weir_namespace_owner(DEFINITION_SCHEMA));
	address = DefineRelation(cs, RELKIND_VIEW, owner, NULL, NULL);
	CommandCounterIncrement();
	/* copies the tree, adds OLD and NEW, records what it depends on */
	StoreViewQuery(address.objectId, def->query, false);
	CommandCounterIncrement();
	weir_act_as_end(&as);
	return address.objectId;
}

/* Whether a relation is a definition view (a view in weir_pipelines). */
bool
weir_definition_is_view(Oid relid)
{
	Oid			nsp = get_namespace_oid(DEFINITION_SCHEMA, true);

	return OidIsValid(nsp) && get_rel_relkind(relid) == RELKIND_VIEW &&
		get_rel_namespace(relid) == nsp;
}

/*
 * The definition stored as view `view`, in the current memory context,
 * checked to read the sources the catalog row names.  Needs a
 * transaction.
 */
WeirDefinition *
weir_definition_load(Oid view, WeirOperatorKind op, int nkeys, List *names, Oid source,
					 Oid right_source)
{
	Relation	rel = try_relation_open(view, AccessShareLock);
	WeirDefinition *def;
	Query	   *query;
	int			nsources = op == WEIR_OP_JOIN ? 2 : 1;

	if (rel == NULL || !weir_definition_is_view(view))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the definition of the pipeline is missing"),
				 errhint("Drop the pipeline and create it again.")));
	query = copyObject(get_view_query(rel));
	relation_close(rel, AccessShareLock);

	/* a view's query starts its range table with OLD and NEW (PostgreSQL 15) */
	if (list_length(query->rtable) != nsources + 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("stored definition of the pipeline is invalid: it does not read its sources"),
				 errhint("Drop the pipeline and create it again.")));
	query->rtable = list_delete_first(list_delete_first(query->rtable));
	OffsetVarNodes((Node *) query, -2, 0);
	for (int i = 0; i < nsources; i++)
	{
		RangeTblEntry *rte = list_nth_node(RangeTblEntry, query->rtable, i);

		if (rte->rtekind != RTE_RELATION || rte->relid != (i == 0 ? source : right_source) ||
			rte->inh)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("stored definition of the pipeline is invalid: it does not read its sources"),
					 errhint("Drop the pipeline and create it again.")));
	}
	if (query->commandType != CMD_SELECT || query->hasSubLinks || query->hasTargetSRFs ||
		query->hasWindowFuncs || query->cteList || query->setOperations ||
		query->havingQual || query->sortClause || query->limitCount ||
		query->limitOffset || query->distinctClause || query->groupingSets)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("stored definition of the pipeline is invalid: it is not a list of expressions"),
				 errhint("Drop the pipeline and create it again.")));

	def = palloc0(sizeof(WeirDefinition));
	def->op = op;
	def->nsources = nsources;
	def->sources[0] = source;
	def->sources[1] = right_source;
	def->nkeys = nkeys;
	def->query = query;
	def->names = names;
	return def;
}

/* Drop a definition view (weir.drop_pipeline), with what depends on it. */
void
weir_definition_drop(Oid view)
{
	ObjectAddress object;

	if (!weir_definition_is_view(view))
		return;
	ObjectAddressSet(object, RelationRelationId, view);
	performDeletion(&object, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
}
