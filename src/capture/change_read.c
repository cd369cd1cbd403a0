/*-------------------------------------------------------------------------
 *
 * change_read.c
 *	  Reading the messages of weir's output plugin (change_format.h) back
 *	  into values of the captured table's columns.
 *
 * Reading never trusts a message further than its length: every field is
 * taken through pqformat's pq_getmsg*, which raise an error past the end.
 * An image becomes a value only when the column still has the type the
 * message names and the image has the shape that type's values have (the
 * length of a fixed-length type, a plain varlena whose header says its
 * length, a terminated cstring): never an external or compressed varlena,
 * whose bytes would be followed as pointers.  The images themselves are
 * trusted as the output plugin of this server wrote them from tuples; the
 * SQL function that shows a message (weir._capture_change, for tests) is
 * for superusers only.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/change_read.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "capture/change_format.h"
#include "capture/change_read.h"

static void
read_tuple(StringInfo msg, WeirChangeTuple *t)
{
	int			present = pq_getmsgbyte(msg);

	memset(t, 0, sizeof(*t));
	if (present == WEIR_TUPLE_NONE)
		return;
	if (present != WEIR_TUPLE_PRESENT)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid change message: tuple marker %d", present)));
	t->present = true;
	t->natts = (int16) pq_getmsgint(msg, 2);
	if (t->natts < 0 || t->natts > MaxHeapAttributeNumber)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid change message: %d attributes", t->natts)));
	t->atts = palloc0(sizeof(WeirChangeAtt) * Max(t->natts, 1));
	for (int i = 0; i < t->natts; i++)
	{
		WeirChangeAtt *a = &t->atts[i];

		a->typid = pq_getmsgint(msg, 4);
		a->flag = pq_getmsgbyte(msg);
		if (a->flag == WEIR_ATT_VALUE)
		{
			a->len = pq_getmsgint(msg, 4);
			if (a->len < 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("invalid change message: value of length %d", a->len)));
			a->image = pq_getmsgbytes(msg, a->len);
		}
		else if (a->flag != WEIR_ATT_NULL && a->flag != WEIR_ATT_UNCHANGED)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid change message: attribute marker %d", a->flag)));
	}
}

/* Read one message into *change; its images point into `data`. */
void
weir_change_read(const char *data, int len, WeirChange *change)
{
	StringInfoData msg;

	memset(change, 0, sizeof(*change));
	msg.data = (char *) data;
	msg.len = len;
	msg.maxlen = len;
	msg.cursor = 0;
	change->kind = pq_getmsgbyte(&msg);
	switch (change->kind)
	{
		case WEIR_CHANGE_BEGIN:
			change->lsn = pq_getmsgint64(&msg);
			change->end_lsn = pq_getmsgint64(&msg);
			change->commit_ts = pq_getmsgint64(&msg);
			change->xid = pq_getmsgint(&msg, 4);
			break;
		case WEIR_CHANGE_COMMIT:
			change->lsn = pq_getmsgint64(&msg);
			change->end_lsn = pq_getmsgint64(&msg);
			change->commit_ts = pq_getmsgint64(&msg);
			break;
		case WEIR_CHANGE_INSERT:
		case WEIR_CHANGE_UPDATE:
		case WEIR_CHANGE_DELETE:
			change->relid = pq_getmsgint(&msg, 4);
			read_tuple(&msg, &change->new_tuple);
			read_tuple(&msg, &change->old_tuple);
			break;
		case WEIR_CHANGE_TRUNCATE:
			change->nrelids = pq_getmsgint(&msg, 4);
			if (change->nrelids < 0 || change->nrelids > (len - msg.cursor) / 4)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("invalid change message: %d truncated tables", change->nrelids)));
			change->relids = palloc(sizeof(Oid) * Max(change->nrelids, 1));
			for (int i = 0; i < change->nrelids; i++)
				change->relids[i] = pq_getmsgint(&msg, 4);
			change->truncate_flags = pq_getmsgbyte(&msg);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid change message: kind %d", change->kind)));
	}
	pq_getmsgend(&msg);
}

/* An image as a value of attribute `att`, or an error: see the top. */
static Datum
image_datum(Form_pg_attribute att, const WeirChangeAtt *a)
{
	char	   *copy;

	if (att->attbyval)
	{
		if (a->len != att->attlen)
			goto bad;
		switch (att->attlen)
		{
			case sizeof(char):
				return CharGetDatum(a->image[0]);
			case sizeof(int16):
				{
					int16		v;

					memcpy(&v, a->image, sizeof(v));
					return Int16GetDatum(v);
				}
			case sizeof(int32):
				{
					int32		v;

					memcpy(&v, a->image, sizeof(v));
					return Int32GetDatum(v);
				}
			case sizeof(int64):
				{
					int64		v;

					memcpy(&v, a->image, sizeof(v));
					return Int64GetDatum(v);
				}
			default:
				goto bad;
		}
	}
	if (att->attlen > 0)
	{
		if (a->len != att->attlen)
			goto bad;
		copy = palloc(a->len);
		memcpy(copy, a->image, a->len);
		return PointerGetDatum(copy);
	}
	if (att->attlen == -1)
	{
		/* palloc'd: aligned for a 4-byte header */
		if (a->len < 1)
			goto bad;
		copy = palloc(a->len);
		memcpy(copy, a->image, a->len);
		if (VARATT_IS_1B(copy))
		{
			if (VARATT_IS_1B_E(copy) || VARSIZE_1B(copy) != a->len)
				goto bad;
		}
		else if (a->len < VARHDRSZ || !VARATT_IS_4B_U(copy) || VARSIZE_4B(copy) != a->len)
			goto bad;
		return PointerGetDatum(copy);
	}
	/* cstring */
	if (a->len < 1 || a->image[a->len - 1] != '\0' || strlen(a->image) != a->len - 1)
		goto bad;
	return CStringGetDatum(pstrdup(a->image));

bad:
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid change message: a value of column \"%s\" (type %s) has no valid image",
					NameStr(att->attname), format_type_be(att->atttypid))));
	return (Datum) 0;			/* keep compiler quiet */
}

/*
 * A tuple of a message as the values of `desc`'s columns.  A column the
 * message does not have (added since) or that is dropped is null;
 * *unchanged marks the TOASTed values an update did not carry (null too).
 * A column whose type differs from the message's is an error: the table
 * changed in a way its changes cannot follow.
 */
void
weir_change_datums(const WeirChangeTuple *tuple, TupleDesc desc,
				   Datum *values, bool *nulls, bool *unchanged)
{
	if (tuple->natts > desc->natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid change message: %d columns for a table of %d",
						tuple->natts, desc->natts)));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const WeirChangeAtt *a = i < tuple->natts ? &tuple->atts[i] : NULL;

		values[i] = (Datum) 0;
		nulls[i] = true;
		unchanged[i] = false;
		if (a == NULL || att->attisdropped || a->flag == WEIR_ATT_NULL)
			continue;
		if (a->typid != att->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of table \"%s\" changed type since the change was written",
							NameStr(att->attname), get_rel_name(get_typ_typrelid(desc->tdtypeid))),
					 errdetail("The change holds a value of type %s; the column is of type %s.",
							   format_type_be(a->typid), format_type_be(att->atttypid))));
		if (a->flag == WEIR_ATT_UNCHANGED)
		{
			unchanged[i] = true;
			continue;
		}
		values[i] = image_datum(att, a);
		nulls[i] = false;
	}
}

static Datum
tuple_text(const WeirChangeTuple *t, TupleDesc desc, ArrayBuildState **unchanged_names)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	bool	   *unchanged = palloc(sizeof(bool) * Max(desc->natts, 1));
	HeapTuple	tuple;

	weir_change_datums(t, desc, values, nulls, unchanged);
	for (int i = 0; i < desc->natts; i++)
		if (unchanged[i] && unchanged_names)
			*unchanged_names = accumArrayResult(*unchanged_names,
												CStringGetTextDatum(NameStr(TupleDescAttr(desc, i)->attname)),
												false, TEXTOID, CurrentMemoryContext);
	tuple = heap_form_tuple(desc, values, nulls);
	return CStringGetTextDatum(OidOutputFunctionCall(F_RECORD_OUT,
													 heap_copy_tuple_as_datum(tuple, desc)));
}

/*
 * weir._capture_change(data bytea) -> (kind, relid, relids, lsn, end_lsn,
 * commit_ts, xid, new_row, old_row, unchanged): one message shown, its
 * rows as the table's row type in text.  For tests; superusers only.
 */
PG_FUNCTION_INFO_V1(weir_capture_change);
Datum
weir_capture_change(PG_FUNCTION_ARGS)
{
	bytea	   *data = PG_GETARG_BYTEA_PP(0);
	TupleDesc	result_desc;
	Datum		values[10];
	bool		nulls[10];
	WeirChange change;
	char		kind[2];

	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	weir_change_read(VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data), &change);
	memset(nulls, true, sizeof(nulls));
	kind[0] = change.kind;
	kind[1] = '\0';
	values[0] = CStringGetTextDatum(kind);
	nulls[0] = false;
	switch (change.kind)
	{
		case WEIR_CHANGE_BEGIN:
		case WEIR_CHANGE_COMMIT:
			values[3] = LSNGetDatum(change.lsn);
			values[4] = LSNGetDatum(change.end_lsn);
			values[5] = TimestampTzGetDatum(change.commit_ts);
			nulls[3] = nulls[4] = nulls[5] = false;
			if (change.kind == WEIR_CHANGE_BEGIN)
			{
				values[6] = TransactionIdGetDatum(change.xid);
				nulls[6] = false;
			}
			break;
		case WEIR_CHANGE_TRUNCATE:
			{
				Datum	   *oids = palloc(sizeof(Datum) * Max(change.nrelids, 1));

				for (int i = 0; i < change.nrelids; i++)
					oids[i] = ObjectIdGetDatum(change.relids[i]);
				values[2] = PointerGetDatum(construct_array(oids, change.nrelids, REGCLASSOID,
															sizeof(Oid), true, TYPALIGN_INT));
				nulls[2] = false;
				break;
			}
		default:
			{
				Relation	rel = table_open(change.relid, AccessShareLock);
				ArrayBuildState *names = NULL;

				values[1] = ObjectIdGetDatum(change.relid);
				nulls[1] = false;
				if (change.new_tuple.present)
				{
					values[7] = tuple_text(&change.new_tuple, RelationGetDescr(rel), &names);
					nulls[7] = false;
				}
				if (change.old_tuple.present)
				{
					values[8] = tuple_text(&change.old_tuple, RelationGetDescr(rel), NULL);
					nulls[8] = false;
				}
				if (names)
				{
					values[9] = makeArrayResult(names, CurrentMemoryContext);
					nulls[9] = false;
				}
				table_close(rel, AccessShareLock);
			}
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(result_desc, values, nulls)));
}

/*
 * A tuple of a message as the values of a capture's columns: column i is
 * the table's attribute attnums[i], held in a topic column like atts[i].
 * An attribute the message does not have (added since), or null, or of a
 * dropped column, is null; *unchanged marks the TOASTed values an update did
 * not carry (null too).  An attribute whose type is not the topic column's
 * is an error: the table changed in a way its topic cannot follow.
 */
void
weir_change_columns(const WeirChangeTuple *tuple, int ncolumns, const int16 *attnums,
					Form_pg_attribute *atts, const char *table,
					Datum *values, bool *nulls, bool *unchanged)
{
	for (int i = 0; i < ncolumns; i++)
	{
		int			k = attnums[i] - 1;
		const WeirChangeAtt *a = (k >= 0 && k < tuple->natts) ? &tuple->atts[k] : NULL;

		values[i] = (Datum) 0;
		nulls[i] = true;
		unchanged[i] = false;
		if (a == NULL || a->flag == WEIR_ATT_NULL)
			continue;
		if (a->typid != atts[i]->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of captured table \"%s\" changed type",
							NameStr(atts[i]->attname), table),
					 errdetail("A change holds a value of type %s; its topic's column is of type %s.",
							   format_type_be(a->typid), format_type_be(atts[i]->atttypid)),
					 errhint("A capture cannot follow a change of a column's type: drop the capture and create it again.")));
		if (a->flag == WEIR_ATT_UNCHANGED)
		{
			unchanged[i] = true;
			continue;
		}
		values[i] = image_datum(atts[i], a);
		nulls[i] = false;
	}
}
