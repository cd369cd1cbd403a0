/*-------------------------------------------------------------------------
 *
 * dead_letter.c
 *	  The shape of a dead letter (weir.dead_letters): its columns, its
 *	  record as JSON, and which errors are a record's fault.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/dead_letter.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/json.h"
#include "utils/lsyscache.h"

#include "base/dead_letter.h"

/*
 * The four columns dead letters are written from (weir.dead_letters:
 * partition, position, error, record), empty.
 */
void
weir_dead_letter_columns_init(WeirColumn *d)
{
	weir_column_init(&d[0], INT4OID);
	weir_column_init(&d[1], INT8OID);
	weir_column_init(&d[2], TEXTOID);
	weir_column_init(&d[3], JSONBOID);
}

/*
 * Whether an error is about the row being evaluated or written (classes 22,
 * 23, 54, 09, 21, 2F, 38, 39, P0: errors a row causes), so that the row,
 * not the pipeline, pays for it.  Other errors (privileges, locks,
 * resources, shutdown) are not a row's fault, and retrying later can cure
 * them.
 */
bool
weir_error_is_about_data(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_DATA_EXCEPTION:
		case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
		case ERRCODE_TRIGGERED_ACTION_EXCEPTION:
		case ERRCODE_CARDINALITY_VIOLATION:
		case ERRCODE_SQL_ROUTINE_EXCEPTION:
		case ERRCODE_EXTERNAL_ROUTINE_EXCEPTION:
		case ERRCODE_EXTERNAL_ROUTINE_INVOCATION_EXCEPTION:
		case ERRCODE_PLPGSQL_ERROR:
			return true;
		default:
			return false;
	}
}

/*
 * One field of a dead letter's record, a JSON object being built in buf
 * (after '{'): "name": value as its type's text, or null.
 */
void
weir_json_field(StringInfo buf, const char *name, Oid type, Datum value, bool isnull)
{
	if (buf->data[buf->len - 1] != '{')
		appendStringInfoString(buf, ", ");
	escape_json(buf, name);
	appendStringInfoString(buf, ": ");
	if (isnull)
		appendStringInfoString(buf, "null");
	else
	{
		Oid			output;
		bool		varlena;

		getTypeOutputInfo(type, &output, &varlena);
		escape_json(buf, OidOutputFunctionCall(output, value));
	}
}

