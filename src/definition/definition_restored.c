/*-------------------------------------------------------------------------
 *
 * definition_restored.c
 *	  A pipeline's definition view made again by pg_restore gets back the
 *	  dependencies weir recorded for it at creation.
 *
 * weir_depend_on_tables (write_target.c) makes a definition's _RETURN
 * rule depend on its sources' part and pos columns and primary key, and on
 * the columns it writes in its sink: PostgreSQL then refuses to drop or
 * retype them.  pg_dump writes a view as its query, and a restore records
 * only what that query uses, so a restored definition has lost them.  The
 * worker and weir.start() call this before a pipeline runs: when the
 * dependency on the source's pos column is missing, every dependency is
 * recorded again, once (the check is the first of them).  Writing
 * pg_depend needs no privilege, and the objects are the pipeline's own
 * tables, checked by weir_check_tables just before.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_restored.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_rewrite.h"
#include "rewrite/rewriteSupport.h"
#include "utils/fmgroids.h"

#include "definition/definition_restored.h"
#include "definition/write_target.h"
#include "topic/topic_table.h"

/* Whether `rule` depends on column `attnum` of relation `relid`. */
static bool
rule_depends_on(Oid rule, Oid relid, AttrNumber attnum)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(RewriteRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(rule));
	scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

		found = d->refclassid == RelationRelationId && d->refobjid == relid &&
			d->refobjsubid == attnum;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

/*
 * Record the dependencies of a restored definition again (the header says
 * why); nothing when they are there.  In a transaction.
 */
void
weir_definition_depend_again(WeirPlan *plan, WeirPipelineRow *row)
{
	Oid			rule = get_rewrite_oid(row->definition, ViewSelectRuleName, false);

	if (rule_depends_on(rule, row->source, WEIR_TOPIC_POS_ATTNUM))
		return;
	weir_depend_on_tables(row->definition, plan, row);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\": the dependencies of its restored definition were recorded again",
					row->name)));
}
