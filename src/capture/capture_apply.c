/*-------------------------------------------------------------------------
 *
 * capture_apply.c
 *	  Turning a batch of weir's output plugin messages (change_format.h)
 *	  into topic rows, in the capture's transaction, as its owner.
 *
 * A transaction that ends at or before the capture's position was written
 * before a crash (the slot's confirmed position is saved lazily, so
 * decoding may start earlier than the position): it is skipped whole.
 *
 * An insert is one 'I' row; a delete one 'D' row holding the old key (the
 * whole old row under REPLICA IDENTITY FULL); an update a 'U' row with the
 * new row, after a 'B' row with the old one when the old one was logged
 * (always under FULL; otherwise only when the key changed).  Under FULL
 * the old row carries every value, so an unchanged TOASTed value of the
 * new row is taken from it; otherwise it is null and named in
 * unchanged_columns.  A truncate is a 'T' row in every partition.
 *
 * Columns added to a captured table appear in the topic with the first
 * change that has them (ALTER TABLE ... ADD COLUMN on the topic, as its
 * owner); a column whose type changed stops the capture.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_apply.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "base/act_as.h"
#include "capture/capture_apply.h"
#include "capture/capture_catalog.h"
#include "capture/capture_writer.h"
#include "capture/change_format.h"
#include "capture/change_read.h"
#include "catalog_sql/catalog_pipeline.h"

/* The index of captured table `relid` in the capture, or -1 */
static int
table_index(WeirCaptureRow *capture, Oid relid)
{
	for (int i = 0; i < capture->ntables; i++)
		if (capture->tables[i].relid == relid)
			return i;
	return -1;
}

static int
max_attnum(const WeirCaptureTableRow *t)
{
	int			max = 0;

	for (int i = 0; i < t->ncolumns; i++)
		max = Max(max, t->attnums[i]);
	return max;
}

/*
 * A change has attributes past the ones the topic carries: columns added
 * to the table.  Those that still exist are added to the topic, in
 * attribute order; one dropped since carries nothing.  The caller has
 * closed its writer (ALTER TABLE needs the topic unused).
 */
static void
add_new_columns(WeirCaptureRow *capture, int table, const WeirChangeTuple *tuple)
{
	WeirCaptureTableRow *t = &capture->tables[table];
	int			known = max_attnum(t);
	bool		changed = false;

	for (int k = known + 1; k <= tuple->natts; k++)
	{
		HeapTuple	atttup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(t->relid),
											 Int16GetDatum(k));
		Form_pg_attribute att;
		char	   *name;

		if (!HeapTupleIsValid(atttup))
			continue;
		att = (Form_pg_attribute) GETSTRUCT(atttup);
		if (att->attisdropped)
		{
			ReleaseSysCache(atttup);
			continue;
		}
		name = MemoryContextStrdup(GetMemoryChunkContext(t->columns), NameStr(att->attname));
		weir_catalog_run_ddl(psprintf("ALTER TABLE %s ADD COLUMN %s %s",
									  quote_qualified_identifier(get_namespace_name(get_rel_namespace(t->topic)),
																 get_rel_name(t->topic)),
									  quote_identifier(name),
									  format_type_with_typemod(att->atttypid, att->atttypmod)));
		ReleaseSysCache(atttup);
		t->columns = repalloc(t->columns, sizeof(char *) * (t->ncolumns + 1));
		t->attnums = repalloc(t->attnums, sizeof(int16) * (t->ncolumns + 1));
		t->columns[t->ncolumns] = name;
		t->attnums[t->ncolumns] = k;
		t->ncolumns++;
		changed = true;
	}
	if (changed)
		weir_catalog_capture_table_columns(capture->id, t);
}

typedef struct ApplyState
{
	WeirCaptureRow *capture;
	WeirCaptureWriter *writer;
	Datum	   *values;			/* [ncolumns] of the table at hand */
	bool	   *nulls;
	bool	   *unchanged;
	Datum	   *old_values;
	bool	   *old_nulls;
	bool	   *old_unchanged;
	int			width;			/* the arrays' size */
	int64		rows;			/* written by writers closed so far */
	MemoryContext cxt;			/* the batch's: writers live there */
} ApplyState;

static void
ensure_width(ApplyState *st, int n)
{
	if (n <= st->width)
		return;
	st->width = Max(n, st->width * 2);
	st->values = MemoryContextAlloc(st->cxt, sizeof(Datum) * st->width);
	st->nulls = MemoryContextAlloc(st->cxt, sizeof(bool) * st->width);
	st->unchanged = MemoryContextAlloc(st->cxt, sizeof(bool) * st->width);
	st->old_values = MemoryContextAlloc(st->cxt, sizeof(Datum) * st->width);
	st->old_nulls = MemoryContextAlloc(st->cxt, sizeof(bool) * st->width);
	st->old_unchanged = MemoryContextAlloc(st->cxt, sizeof(bool) * st->width);
}

static void
apply_change(ApplyState *st, WeirChange *change, XLogRecPtr lsn, TimestampTz commit_time)
{
	WeirCaptureRow *capture = st->capture;
	int			table = table_index(capture, change->relid);
	WeirCaptureTableRow *t;
	WeirCaptureTarget *target;

	if (table < 0)
		return;					/* not captured any more */
	t = &capture->tables[table];
	if (t->natts_checked == 0)
		t->natts_checked = max_attnum(t);	/* once per table, not per change */
	if ((change->new_tuple.present && change->new_tuple.natts > t->natts_checked) ||
		(change->old_tuple.present && change->old_tuple.natts > t->natts_checked))
	{
		/* the topic is altered with no scan of it open */
		MemoryContext old = MemoryContextSwitchTo(st->cxt);

		st->rows += st->writer->rows;
		weir_capture_writer_end(st->writer);
		add_new_columns(capture, table, change->new_tuple.present ?
						&change->new_tuple : &change->old_tuple);
		t->natts_checked = Max(change->new_tuple.natts, change->old_tuple.natts);
		st->writer = weir_capture_writer_begin(capture);
		MemoryContextSwitchTo(old);
	}
	target = &st->writer->targets[table];
	ensure_width(st, t->ncolumns);
	if (change->old_tuple.present)
		weir_change_columns(&change->old_tuple, t->ncolumns, t->attnums, target->column_atts,
							target->table_name, st->old_values, st->old_nulls,
							st->old_unchanged);
	if (change->new_tuple.present)
		weir_change_columns(&change->new_tuple, t->ncolumns, t->attnums, target->column_atts,
							target->table_name, st->values, st->nulls, st->unchanged);

	switch (change->kind)
	{
		case WEIR_CHANGE_INSERT:
			weir_capture_writer_row(st->writer, table, WEIR_OP_INSERT, lsn, commit_time,
									st->values, st->nulls, NULL);
			break;
		case WEIR_CHANGE_UPDATE:
			if (t->full_identity && !change->old_tuple.present)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("captured table \"%s\" is no longer REPLICA IDENTITY FULL",
								target->table_name),
						 errdetail("An update carried no old row; the capture was created with whole old rows, and change topics promise them."),
						 errhint("ALTER TABLE %s REPLICA IDENTITY FULL, then weir.start_capture().",
								 target->table_name)));
			if (change->old_tuple.present)
			{
				weir_capture_writer_row(st->writer, table, WEIR_OP_BEFORE, lsn, commit_time,
										st->old_values, st->old_nulls, NULL);
				/* an unchanged TOASTed value is the old row's */
				for (int i = 0; i < t->ncolumns; i++)
					if (st->unchanged[i] && !st->old_unchanged[i] && !st->old_nulls[i])
					{
						st->values[i] = st->old_values[i];
						st->nulls[i] = false;
						st->unchanged[i] = false;
					}
					else if (st->unchanged[i] && t->full_identity)
					{
						/* a null old value: the new one is null too */
						st->unchanged[i] = false;
					}
			}
			weir_capture_writer_row(st->writer, table, WEIR_OP_UPDATE, lsn, commit_time,
									st->values, st->nulls, st->unchanged);
			break;
		case WEIR_CHANGE_DELETE:
			if (!change->old_tuple.present)
				return;			/* a table without a replica identity */
			weir_capture_writer_row(st->writer, table, WEIR_OP_DELETE, lsn, commit_time,
									st->old_values, st->old_nulls, NULL);
			break;
	}
}

/*
 * Write the transactions of a batch not yet written, those that end at or
 * before `upto` (InvalidXLogRecPtr: all); the caller is in a transaction
 * with a snapshot, and sets the capture's position after.  The capture's
 * position in memory follows each transaction written, so after an error
 * it says how far the batch got (capture_worker.c writes that much again).
 */
void
weir_capture_apply_messages(WeirCaptureRow *capture, Tuplestorestate *messages,
							XLogRecPtr upto, WeirCaptureProgress *progress)
{
	MemoryContext per_message = AllocSetContextCreate(CurrentMemoryContext,
													  "weir capture message",
													  ALLOCSET_DEFAULT_SIZES);
	MemoryContext outer = CurrentMemoryContext;
	TupleDesc	desc = CreateTemplateTupleDesc(1);
	TupleTableSlot *slot;
	ApplyState	st = {0};
	WeirActAs	as;
	bool		skipping = false;
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	XLogRecPtr	end_lsn = InvalidXLogRecPtr;
	TimestampTz commit_time = 0;

	TupleDescInitEntry(desc, 1, "message", BYTEAOID, -1, 0);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	st.capture = capture;
	st.cxt = outer;
	weir_act_as_begin(&as, capture->owner);
	st.writer = weir_capture_writer_begin(capture);
	tuplestore_rescan(messages);
	while (tuplestore_gettupleslot(messages, true, false, slot))
	{
		bool		isnull;
		bytea	   *b = DatumGetByteaPP(slot_getattr(slot, 1, &isnull));
		WeirChange	change;

		MemoryContextSwitchTo(per_message);
		weir_change_read(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), &change);
		switch (change.kind)
		{
			case WEIR_CHANGE_BEGIN:
				lsn = change.lsn;
				end_lsn = change.end_lsn;
				commit_time = change.commit_ts;
				skipping = end_lsn <= capture->position ||
					(!XLogRecPtrIsInvalid(upto) && end_lsn > upto);
				break;
			case WEIR_CHANGE_COMMIT:
				if (!skipping)
				{
					capture->position = end_lsn;
					capture->position_time = commit_time;
					progress->transactions++;
				}
				break;
			case WEIR_CHANGE_TRUNCATE:
				if (!skipping)
					for (int i = 0; i < change.nrelids; i++)
					{
						int			table = table_index(capture, change.relids[i]);

						if (table >= 0)
							weir_capture_writer_truncate(st.writer, table, lsn, commit_time);
					}
				break;
			default:
				if (!skipping)
					apply_change(&st, &change, lsn, commit_time);
				break;
		}
		MemoryContextSwitchTo(outer);
		MemoryContextReset(per_message);
		ExecClearTuple(slot);
	}
	progress->rows += st.rows + st.writer->rows;
	weir_capture_writer_end(st.writer);
	weir_act_as_end(&as);
	progress->position = capture->position;
	progress->position_time = capture->position_time;
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(per_message);
}
