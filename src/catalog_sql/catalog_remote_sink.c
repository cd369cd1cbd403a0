/*-------------------------------------------------------------------------
 *
 * catalog_remote_sink.c
 *	  SQL on weir.pipeline_remote_sink (catalog_remote_sink.h).
 *
 * The table is granted to nobody (its connection strings may hold
 * passwords): every statement here runs as weir's own role
 * (weir_catalog_privileged_begin); callers have checked that the pipeline
 * is the current user's, or run for its worker.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_remote_sink.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_remote_sink.h"

const char *
weir_remote_commit_name(WeirRemoteCommit commit)
{
	return commit == WEIR_REMOTE_TWO_PHASE ? "two_phase" : "idempotent";
}

void
weir_catalog_remote_sink_insert(const WeirRemoteSinkRow *row)
{
	WeirCatalogPrivilege p;
	Oid			types[8] = {INT4OID, TEXTOID, NAMEOID, NAMEOID, TEXTOID, NAMEARRAYOID, TEXTOID, OIDOID};
	Datum		values[8];
	Datum	   *keys = palloc(sizeof(Datum) * Max(row->nkey, 1));

	for (int i = 0; i < row->nkey; i++)
		keys[i] = DirectFunctionCall1(namein, CStringGetDatum(row->key_columns[i]));
	values[0] = Int32GetDatum(row->pipeline_id);
	values[1] = CStringGetTextDatum(row->conninfo);
	values[2] = DirectFunctionCall1(namein, CStringGetDatum(row->remote_schema));
	values[3] = DirectFunctionCall1(namein, CStringGetDatum(row->remote_table));
	values[4] = CStringGetTextDatum(weir_remote_commit_name(row->commit));
	values[5] = PointerGetDatum(construct_array(keys, row->nkey, NAMEOID, NAMEDATALEN,
												false, TYPALIGN_CHAR));
	values[6] = CStringGetTextDatum(row->prefix);
	values[7] = ObjectIdGetDatum(row->owner);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_remote_sink (pipeline_id, conninfo, "
					  "remote_schema, remote_table, commit_mode, key_columns, transaction_prefix, owner) "
					  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
					  8, types, values, NULL, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

static char *
text_value(HeapTuple tup, int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(tup, SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

/* The remote sink of pipeline `pipeline_id`, in the current context; false: none */
bool
weir_catalog_remote_sink(int32 pipeline_id, WeirRemoteSinkRow *row)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(pipeline_id);
	bool		found = false;

	memset(row, 0, sizeof(*row));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT conninfo, remote_schema, remote_table, commit_mode, "
					  "key_columns, transaction_prefix, abandoned, owner "
					  "FROM weir.pipeline_remote_sink WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		bool		isnull;
		Datum		keys = SPI_getbinval(tup, SPI_tuptable->tupdesc, 5, &isnull);
		Datum	   *elems;
		int			nelems;

		found = true;
		row->pipeline_id = pipeline_id;
		row->conninfo = text_value(tup, 1, cxt);
		row->remote_schema = text_value(tup, 2, cxt);
		row->remote_table = text_value(tup, 3, cxt);
		row->commit = strcmp(text_value(tup, 4, cxt), "two_phase") == 0 ?
			WEIR_REMOTE_TWO_PHASE : WEIR_REMOTE_IDEMPOTENT;
		deconstruct_array(DatumGetArrayTypeP(keys), NAMEOID, NAMEDATALEN, false,
						  TYPALIGN_CHAR, &elems, NULL, &nelems);
		row->key_columns = MemoryContextAlloc(cxt, sizeof(char *) * Max(nelems, 1));
		for (int i = 0; i < nelems; i++)
			row->key_columns[i] = MemoryContextStrdup(cxt, NameStr(*DatumGetName(elems[i])));
		row->nkey = nelems;
		row->prefix = text_value(tup, 6, cxt);
		row->abandoned = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 7, &isnull));
		row->owner = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 8, &isnull));
	}
	weir_catalog_privileged_end(&p);
	return found;
}

void
weir_catalog_remote_sink_abandon(int32 pipeline_id)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(pipeline_id);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.pipeline_remote_sink SET abandoned = true WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/* The two-phase remote sinks of deleted pipelines still to resolve, in cxt */
List *
weir_catalog_remote_sink_orphans(MemoryContext cxt)
{
	WeirCatalogPrivilege p;
	List	   *orphans = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT transaction_prefix, pipeline_id, conninfo, owner, last_checkpoint "
					  "FROM weir.remote_sink_to_resolve ORDER BY dropped_at",
					  0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		WeirRemoteSinkOrphan *o = MemoryContextAlloc(cxt, sizeof(WeirRemoteSinkOrphan));
		bool		isnull;

		o->prefix = text_value(tup, 1, cxt);
		o->pipeline_id = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		o->conninfo = text_value(tup, 3, cxt);
		o->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
		o->last_checkpoint = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		orphans = lappend(orphans, o);
	}
	weir_catalog_privileged_end(&p);
	return orphans;
}

void
weir_catalog_remote_sink_orphan_resolved(const char *prefix)
{
	WeirCatalogPrivilege p;
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(prefix);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.remote_sink_to_resolve WHERE transaction_prefix = $1",
					  1, &type, &value, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

/* weir.drop_pipeline resolved it already: nothing left for the launcher */
void
weir_catalog_remote_sink_resolved(int32 pipeline_id)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(pipeline_id);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.remote_sink_to_resolve WHERE pipeline_id = $1",
					  1, &type, &value, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}
