/*-------------------------------------------------------------------------
 *
 * change_topic.c
 *	  Recognising a change topic and its columns (change_topic.h).
 *
 * Each lookup reads the relation's attributes through the syscache; the
 * callers (creation, and the plan every process that runs a pipeline
 * makes) are in a transaction.  What a definition uses of a change topic
 * is bound into its view (definition_parse.c), so those columns cannot go
 * or change type while the pipeline exists.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/change_topic.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/lsyscache.h"

#include "definition/change_topic.h"

/* The columns a capture writes that describe a change, not its row */
static const char *const change_columns[] = {
	"change_op", "commit_lsn", "commit_time", "unchanged_columns"
};

/* Column `name` of relid if it has type `type`; else InvalidAttrNumber. */
static AttrNumber
typed_column(Oid relid, const char *name, Oid type)
{
	AttrNumber	attnum = get_attnum(relid, name);

	if (attnum == InvalidAttrNumber || get_atttype(relid, attnum) != type)
		return InvalidAttrNumber;
	return attnum;
}

/*
 * The change_op column of relid ("char"): a change topic has one.
 * InvalidAttrNumber: an ordinary topic, whose every row is an insert.
 */
AttrNumber
weir_change_op_attnum(Oid relid)
{
	return typed_column(relid, "change_op", CHAROID);
}

/* Its unchanged_columns column (name[]), or InvalidAttrNumber. */
AttrNumber
weir_change_unchanged_attnum(Oid relid)
{
	return typed_column(relid, "unchanged_columns", NAMEARRAYOID);
}

/*
 * Whether column attnum of a change topic describes the change (change_op,
 * commit_lsn, commit_time, unchanged_columns) rather than the row.
 */
bool
weir_change_describes_change(Oid relid, AttrNumber attnum)
{
	char	   *name = get_attname(relid, attnum, true);

	if (name == NULL)
		return false;
	for (int i = 0; i < lengthof(change_columns); i++)
		if (strcmp(name, change_columns[i]) == 0)
			return true;
	return false;
}
