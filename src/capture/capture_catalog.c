/*-------------------------------------------------------------------------
 *
 * capture_catalog.c
 *	  SQL on weir's capture catalog: weir.capture, weir.capture_table and
 *	  weir.capture_connection.
 *
 * As for the topic catalog (catalog.c), statements run as the owner of the
 * weir schema with search_path pg_catalog, pg_temp; callers have checked
 * the user's rights.  A remote capture's connection string is read here
 * only, and only by the capture's worker and weir.create_capture: no view
 * shows it.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"

#include "capture/capture_catalog.h"
#include "catalog_sql/catalog.h"

static char *
text_value(HeapTuple tup, int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(tup, SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

/* A name[] column as C strings in `cxt` */
static char **
name_array(HeapTuple tup, int col, int *n, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, col, &isnull);
	Datum	   *elems;
	int			nelems;
	char	  **out;

	*n = 0;
	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(d), NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, NULL, &nelems);
	out = MemoryContextAlloc(cxt, sizeof(char *) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
		out[i] = MemoryContextStrdup(cxt, NameStr(*DatumGetName(elems[i])));
	*n = nelems;
	return out;
}

static void
fill_tables(WeirCaptureRow *row, MemoryContext cxt)
{
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(row->id);

	weir_catalog_exec("SELECT relid, remote_table, topic, columns, attnums, key_columns, "
					  "full_identity, dropped_at IS NOT NULL "
					  "FROM weir.capture_table WHERE capture_id = $1 ORDER BY topic",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	row->ntables = SPI_processed;
	row->tables = MemoryContextAllocZero(cxt, sizeof(WeirCaptureTableRow) * Max(row->ntables, 1));
	for (int i = 0; i < row->ntables; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		WeirCaptureTableRow *t = &row->tables[i];
		bool		isnull;
		Datum		d;

		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
		t->relid = isnull ? InvalidOid : DatumGetObjectId(d);
		t->remote_table = text_value(tup, 2, cxt);
		t->topic = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
		t->columns = name_array(tup, 4, &t->ncolumns, cxt);
		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 5, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			n;

			deconstruct_array(DatumGetArrayTypeP(d), INT2OID, 2, true, TYPALIGN_SHORT,
							  &elems, NULL, &n);
			if (n != t->ncolumns)
				elog(ERROR, "capture %d: topic %u has %d columns and %d attribute numbers",
					 row->id, t->topic, t->ncolumns, n);
			t->attnums = MemoryContextAlloc(cxt, sizeof(int16) * Max(n, 1));
			for (int k = 0; k < n; k++)
				t->attnums[k] = DatumGetInt16(elems[k]);
		}
		t->key_columns = name_array(tup, 6, &t->nkeys, cxt);
		t->full_identity = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 7, &isnull));
		t->dropped = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 8, &isnull));
	}
}

static bool
capture_where(const char *where, Oid type, Datum value, WeirCaptureRow *row)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	StringInfoData sql;
	bool		found;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT id, name, owner, slot_name, publication, position, position_time, "
					 "enabled, status FROM weir.capture WHERE %s", where);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec(sql.data, 1, &type, &value, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;

		memset(row, 0, sizeof(*row));
		row->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		row->name = text_value(tup, 2, cxt);
		row->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		row->slot_name = text_value(tup, 4, cxt);
		row->publication = text_value(tup, 5, cxt);
		row->position = DatumGetLSN(SPI_getbinval(tup, desc, 6, &isnull));
		d = SPI_getbinval(tup, desc, 7, &isnull);
		row->position_time = isnull ? 0 : DatumGetTimestampTz(d);
		row->enabled = DatumGetBool(SPI_getbinval(tup, desc, 8, &isnull));
		row->status = text_value(tup, 9, cxt);
		fill_tables(row, cxt);
	}
	weir_catalog_privileged_end(&p);
	return found;
}

bool
weir_catalog_capture_by_name(const char *name, WeirCaptureRow *row)
{
	return capture_where("name = $1", TEXTOID, CStringGetTextDatum(name), row);
}

bool
weir_catalog_capture_by_id(int32 id, WeirCaptureRow *row)
{
	return capture_where("id = $1", INT4OID, Int32GetDatum(id), row);
}

/*
 * A new capture; its slot is named after its id and the database, since
 * slots are the whole server's.  Returns the id.
 */
int32
weir_catalog_capture_insert(const char *name, Oid owner, const char *publication,
							const char *conninfo)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {TEXTOID, OIDOID, TEXTOID, OIDOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	bool		isnull;
	int32		id;

	values[0] = CStringGetTextDatum(name);
	values[1] = ObjectIdGetDatum(owner);
	if (publication)
		values[2] = CStringGetTextDatum(publication);
	else
		nulls[2] = 'n';
	values[3] = ObjectIdGetDatum(MyDatabaseId);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.capture (name, owner, publication, slot_name) "
					  "VALUES ($1, $2, $3, 'weir_pending') RETURNING id",
					  3, types, values, nulls, SPI_OK_INSERT_RETURNING);
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	types[0] = INT4OID;
	values[0] = Int32GetDatum(id);
	weir_catalog_exec("UPDATE weir.capture SET slot_name = format('weir_capture_%s_%s', $2, $1) "
					  "WHERE id = $1",
					  2, (Oid[]) {INT4OID, OIDOID}, (Datum[]) {values[0], values[3]}, NULL,
					  SPI_OK_UPDATE);
	if (conninfo)
		weir_catalog_exec("INSERT INTO weir.capture_connection VALUES ($1, $2)",
						  2, (Oid[]) {INT4OID, TEXTOID},
						  (Datum[]) {values[0], CStringGetTextDatum(conninfo)}, NULL,
						  SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
	return id;
}

static Datum
names_datum(char **names, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = DirectFunctionCall1(namein, CStringGetDatum(names[i]));
	return PointerGetDatum(construct_array(elems, n, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
}

void
weir_catalog_capture_table_insert(int32 capture_id, const WeirCaptureTableRow *t)
{
	WeirCatalogPrivilege p;
	Oid			types[8] = {INT4OID, OIDOID, TEXTOID, OIDOID, NAMEARRAYOID, INT2ARRAYOID,
	NAMEARRAYOID, BOOLOID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int32GetDatum(capture_id);
	values[1] = ObjectIdGetDatum(t->relid);
	if (!OidIsValid(t->relid))
		nulls[1] = 'n';
	if (t->remote_table)
		values[2] = CStringGetTextDatum(t->remote_table);
	else
		nulls[2] = 'n';
	values[3] = ObjectIdGetDatum(t->topic);
	values[4] = names_datum(t->columns, t->ncolumns);
	if (t->attnums)
	{
		Datum	   *elems = palloc(sizeof(Datum) * Max(t->ncolumns, 1));

		for (int i = 0; i < t->ncolumns; i++)
			elems[i] = Int16GetDatum(t->attnums[i]);
		values[5] = PointerGetDatum(construct_array(elems, t->ncolumns, INT2OID, 2, true,
													TYPALIGN_SHORT));
	}
	else
		nulls[5] = 'n';
	values[6] = names_datum(t->key_columns, t->nkeys);
	values[7] = BoolGetDatum(t->full_identity);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.capture_table (capture_id, relid, remote_table, topic, "
					  "columns, attnums, key_columns, full_identity) "
					  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
					  8, types, values, nulls, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

char *
weir_catalog_capture_conninfo(int32 id)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);
	char	   *conninfo = NULL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT conninfo FROM weir.capture_connection WHERE capture_id = $1",
					  1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		conninfo = text_value(SPI_tuptable->vals[0], 1, cxt);
	weir_catalog_privileged_end(&p);
	return conninfo;
}

/*
 * The worker's status; `disable` also stops the capture (the launcher
 * starts no worker for it until weir.start_capture).  A capture that is no
 * longer enabled keeps the status its owner gave it.
 */
void
weir_catalog_capture_set_status(int32 id, const char *status, const char *error, bool disable)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, TEXTOID, TEXTOID, BOOLOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int32GetDatum(id);
	values[1] = CStringGetTextDatum(status);
	if (error)
		values[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	values[3] = BoolGetDatum(disable);
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.capture SET status = $2, last_error = $3, "
					  "enabled = enabled AND NOT $4 WHERE id = $1 AND enabled",
					  4, types, values, nulls, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

void
weir_catalog_capture_set_enabled(int32 id, bool enabled)
{
	WeirCatalogPrivilege p;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.capture SET enabled = $2, "
					  "status = CASE WHEN $2 THEN 'starting' ELSE 'stopped' END, "
					  "last_error = CASE WHEN $2 THEN NULL ELSE last_error END WHERE id = $1",
					  2, (Oid[]) {INT4OID, BOOLOID},
					  (Datum[]) {Int32GetDatum(id), BoolGetDatum(enabled)}, NULL, SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}

/* In the capture's transaction: what its topics now hold. */
void
weir_catalog_capture_set_position(int32 id, XLogRecPtr position, TimestampTz position_time)
{
	WeirCatalogPrivilege p;
	Oid			types[3] = {INT4OID, PG_LSNOID, TIMESTAMPTZOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int32GetDatum(id);
	values[1] = LSNGetDatum(position);
	values[2] = TimestampTzGetDatum(position_time);
	if (position_time == 0)
		nulls[2] = 'n';
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.capture SET position = $2, "
					  "position_time = coalesce($3, position_time) WHERE id = $1",
					  3, types, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("capture %d was dropped", id)));
	weir_catalog_privileged_end(&p);
}

void
weir_catalog_capture_delete(int32 id)
{
	WeirCatalogPrivilege p;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);

	weir_catalog_privileged_begin(&p);
	/* a remote slot is dropped by the launcher once the worker is gone */
	weir_catalog_exec("INSERT INTO weir.capture_remote_slot_to_drop (slot_name, conninfo, capture_id) "
					  "SELECT c.slot_name, cc.conninfo, c.id FROM weir.capture c "
					  "JOIN weir.capture_connection cc ON cc.capture_id = c.id WHERE c.id = $1 "
					  "ON CONFLICT (slot_name) DO NOTHING",
					  1, &type, &value, NULL, SPI_OK_INSERT);
	weir_catalog_exec("DELETE FROM weir.capture WHERE id = $1", 1, &type, &value, NULL,
					  SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

/* The remote slots of dropped captures not dropped yet, in `cxt`. */
List *
weir_catalog_remote_slots_to_drop(MemoryContext cxt)
{
	WeirCatalogPrivilege p;
	List	   *out = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT slot_name::text, conninfo, capture_id "
					  "FROM weir.capture_remote_slot_to_drop ORDER BY dropped_at",
					  0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		WeirRemoteSlotToDrop *d = MemoryContextAllocZero(cxt, sizeof(WeirRemoteSlotToDrop));
		bool		isnull;

		d->slot_name = text_value(SPI_tuptable->vals[i], 1, cxt);
		d->conninfo = text_value(SPI_tuptable->vals[i], 2, cxt);
		d->capture_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 3, &isnull));
		out = lappend(out, d);
	}
	weir_catalog_privileged_end(&p);
	return out;
}

/* A dropped capture's remote slot is gone. */
void
weir_catalog_remote_slot_dropped(const char *slot_name)
{
	WeirCatalogPrivilege p;
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(slot_name);

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("DELETE FROM weir.capture_remote_slot_to_drop WHERE slot_name = $1::name",
					  1, &type, &value, NULL, SPI_OK_DELETE);
	weir_catalog_privileged_end(&p);
}

static List *
column_list(const char *sql, bool names)
{
	MemoryContext cxt = CurrentMemoryContext;
	WeirCatalogPrivilege p;
	List	   *out = NIL;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec(sql, 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
		bool		isnull;

		if (names)
			out = lappend(out, text_value(SPI_tuptable->vals[i], 1, cxt));
		else
			out = lappend_int(out, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
															   SPI_tuptable->tupdesc, 1,
															   &isnull)));
		MemoryContextSwitchTo(oldcxt);
	}
	weir_catalog_privileged_end(&p);
	return out;
}

/* Ids of the captures that should run, as a List of ints. */
List *
weir_catalog_enabled_captures(void)
{
	return column_list("SELECT id FROM weir.capture WHERE enabled ORDER BY id", false);
}

/* Every local capture's slot name, as C strings (the launcher's sweep). */
List *
weir_catalog_capture_slot_names(void)
{
	return column_list("SELECT slot_name::text FROM weir.capture "
					   "WHERE publication IS NULL ORDER BY id", true);
}

/* A captured table was dropped: note it; whether it was captured. */
bool
weir_catalog_capture_table_dropped(Oid relid)
{
	WeirCatalogPrivilege p;
	Oid			type = OIDOID;
	Datum		value = ObjectIdGetDatum(relid);
	bool		found;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.capture_table SET dropped_at = now() "
					  "WHERE relid = $1 AND dropped_at IS NULL",
					  1, &type, &value, NULL, SPI_OK_UPDATE);
	found = SPI_processed > 0;
	weir_catalog_privileged_end(&p);
	return found;
}

/* A captured table's topic gained columns (capture_apply.c). */
void
weir_catalog_capture_table_columns(int32 capture_id, const WeirCaptureTableRow *t)
{
	WeirCatalogPrivilege p;
	Datum	   *elems = palloc(sizeof(Datum) * Max(t->ncolumns, 1));
	Datum		values[4];

	for (int i = 0; i < t->ncolumns; i++)
		elems[i] = Int16GetDatum(t->attnums[i]);
	values[0] = Int32GetDatum(capture_id);
	values[1] = ObjectIdGetDatum(t->topic);
	values[2] = names_datum(t->columns, t->ncolumns);
	values[3] = PointerGetDatum(construct_array(elems, t->ncolumns, INT2OID, 2, true,
												TYPALIGN_SHORT));
	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("UPDATE weir.capture_table SET columns = $3, attnums = $4 "
					  "WHERE capture_id = $1 AND topic = $2",
					  4, (Oid[]) {INT4OID, OIDOID, NAMEARRAYOID, INT2ARRAYOID}, values, NULL,
					  SPI_OK_UPDATE);
	weir_catalog_privileged_end(&p);
}
