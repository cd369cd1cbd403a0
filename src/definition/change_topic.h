/*-------------------------------------------------------------------------
 *
 * change_topic.h
 *	  Change topics: topics whose rows are row images of a table's changes,
 *	  each with its operation in a column change_op "char" (change_topic.c).
 *
 * A change topic is recognised by its shape alone (a capture writes it, or
 * a user by hand): a column named change_op of type "char".  The other
 * columns a capture writes (commit_lsn pg_lsn, commit_time timestamptz,
 * unchanged_columns name[]) describe the change, not the row; only
 * unchanged_columns means something to weir (an update's TOASTed values it
 * did not carry, README "Change topics").
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/change_topic.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHANGE_TOPIC_H
#define WEIR_CHANGE_TOPIC_H

#include "access/attnum.h"

/* change_op values: what a row of a change topic is */
#define WEIR_CHANGE_OP_INSERT	'I'		/* a new row */
#define WEIR_CHANGE_OP_UPDATE	'U'		/* an update's new row (after image) */
#define WEIR_CHANGE_OP_BEFORE	'B'		/* an update's old row (before image) */
#define WEIR_CHANGE_OP_DELETE	'D'		/* a deleted row (its old image) */
#define WEIR_CHANGE_OP_TRUNCATE 'T'		/* the table was emptied: no row */

/* An operation that takes a row away: its image is an old one. */
static inline bool
weir_change_op_removes(char op)
{
	return op == WEIR_CHANGE_OP_BEFORE || op == WEIR_CHANGE_OP_DELETE;
}

static inline bool
weir_change_op_valid(char op)
{
	return op == WEIR_CHANGE_OP_INSERT || op == WEIR_CHANGE_OP_UPDATE ||
		op == WEIR_CHANGE_OP_BEFORE || op == WEIR_CHANGE_OP_DELETE ||
		op == WEIR_CHANGE_OP_TRUNCATE;
}

extern AttrNumber weir_change_op_attnum(Oid relid);
extern AttrNumber weir_change_unchanged_attnum(Oid relid);
extern bool weir_change_describes_change(Oid relid, AttrNumber attnum);

#endif							/* WEIR_CHANGE_TOPIC_H */
