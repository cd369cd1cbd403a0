/*-------------------------------------------------------------------------
 *
 * capture_topic.c
 *	  What local and remote captures share in defining a capture: who may
 *	  create one, the names a capture's topic keeps for the change itself,
 *	  and creating the topic of one captured table.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_topic.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "capture/capture_topic.h"
#include "capture/capture_writer.h"
#include "catalog_sql/catalog.h"

/* Names a topic of a capture gives its own columns */
static const char *const change_columns[] = {
	"part", "pos", WEIR_CHANGE_OP_COLUMN, WEIR_CHANGE_LSN_COLUMN, WEIR_CHANGE_TIME_COLUMN,
	WEIR_CHANGE_UNCHANGED_COLUMN
};

void
weir_capture_check_can_capture(void)
{
	if (!superuser() && !has_rolreplication(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create a capture"),
				 errdetail("A capture holds a replication slot, which keeps WAL for the whole server, and reads tables below their grants."),
				 errhint("Ask a superuser for the REPLICATION attribute (ALTER ROLE ... REPLICATION).")));
}

/*
 * A captured table's column must not take a name its topic gives the
 * change itself; `table` names the table in the message.
 */
void
weir_capture_check_column_name(const char *column, const char *table)
{
	for (int k = 0; k < lengthof(change_columns); k++)
		if (strcmp(column, change_columns[k]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" has a name its topic uses for the change",
							column, table),
					 errdetail("A capture's topic has columns part, pos, change_op, commit_lsn, commit_time and unchanged_columns, then the table's."),
					 errhint("Rename the column, or capture a view of it through another table.")));
}

/*
 * The column list of a captured table's topic, for weir.create_topic:
 * the change's columns, then the table's `t->columns` with their types
 * (types[i], typmods[i]) and, where not the type's default, collations.
 */
static char *
topic_columns(const WeirCaptureTableRow *t, const Oid *types, const int32 *typmods,
			  const Oid *collations)
{
	StringInfoData cols;

	initStringInfo(&cols);
	appendStringInfo(&cols, "%s \"char\" NOT NULL, %s pg_lsn NOT NULL, %s timestamptz NOT NULL, %s name[]",
					 WEIR_CHANGE_OP_COLUMN, WEIR_CHANGE_LSN_COLUMN, WEIR_CHANGE_TIME_COLUMN,
					 WEIR_CHANGE_UNCHANGED_COLUMN);
	for (int i = 0; i < t->ncolumns; i++)
	{
		appendStringInfo(&cols, ", %s %s", quote_identifier(t->columns[i]),
						 format_type_with_typemod(types[i], typmods[i]));
		if (collations && OidIsValid(collations[i]) &&
			collations[i] != get_typcollation(types[i]))
			appendStringInfo(&cols, " COLLATE %s", generate_collation_name(collations[i]));
	}
	return cols.data;
}

/*
 * Create the topic <schema>.<capture>_<table_name> of one captured table,
 * as the caller (weir.create_topic through SPI), with the columns of
 * topic_columns; returns its relid.  Local and remote captures share it.
 */
Oid
weir_capture_create_topic(const char *capture, const char *table_name, const char *schema,
						  const WeirCaptureTableRow *t, const Oid *types, const int32 *typmods,
						  const Oid *collations, int32 partitions, Datum retention,
						  bool has_retention)
{
	char	   *relname = psprintf("%s_%s", capture, table_name);
	char	   *qualified;
	Oid			argtypes[4] = {TEXTOID, TEXTOID, INT4OID, INTERVALOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			topic;
	bool		isnull;

	if (strlen(relname) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the topic name \"%s\" is too long", relname),
				 errhint("Give the capture a shorter name.")));
	qualified = quote_qualified_identifier(schema, relname);
	values[0] = CStringGetTextDatum(qualified);
	values[1] = CStringGetTextDatum(topic_columns(t, types, typmods, collations));
	values[2] = Int32GetDatum(partitions);
	values[3] = retention;
	if (!has_retention)
		nulls[3] = 'n';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	weir_catalog_exec("SELECT weir.create_topic($1, $2, $3, NULL, $4)::oid",
					  4, argtypes, values, nulls, SPI_OK_SELECT);
	topic = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										   &isnull));
	SPI_finish();
	return topic;
}
