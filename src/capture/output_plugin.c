/*-------------------------------------------------------------------------
 *
 * output_plugin.c
 *	  weir's logical decoding output plugin: the changes of the captured
 *	  tables, as compact binary messages (change_format.h).
 *
 * A slot created with plugin 'weir' (the library's name) decodes through
 * this file.  Option `tables` names the captured tables by OID, comma
 * separated; the changes of every other table are left out.  A capture
 * reads the messages without parsing text: each value goes as the image a
 * tuple holds, TOASTed values fetched and decompressed (a value an update
 * did not carry is marked, not fetched: logical decoding cannot).
 *
 * The callbacks run under logical decoding's rules: they read catalogs,
 * never write, and take no transaction id.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/output_plugin.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "replication/logical.h"
#include "replication/output_plugin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "capture/change_format.h"

/* What a decoding session keeps (ctx->output_plugin_private) */
typedef struct WeirPluginState
{
	MemoryContext cxt;			/* reset after each message */
	Oid		   *tables;			/* the captured tables, sorted */
	int			ntables;
	bool		begin_sent;		/* this transaction's begin is written */
} WeirPluginState;

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

static int
table_oid_cmp(const void *a, const void *b)
{
	Oid			x = *(const Oid *) a;
	Oid			y = *(const Oid *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

static bool
captured(WeirPluginState *st, Oid relid)
{
	return bsearch(&relid, st->tables, st->ntables, sizeof(Oid), table_oid_cmp) != NULL;
}

/* Option `tables`: OIDs, comma separated. */
static void
parse_tables(WeirPluginState *st, const char *value)
{
	List	   *items = NIL;
	ListCell   *lc;
	char	   *copy = pstrdup(value);

	if (!SplitIdentifierString(copy, ',', &items))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value of option \"tables\" of output plugin weir"),
				 errhint("Give the captured tables' OIDs, comma separated.")));
	st->tables = palloc(sizeof(Oid) * Max(list_length(items), 1));
	st->ntables = 0;
	foreach(lc, items)
		st->tables[st->ntables++] = DatumGetObjectId(DirectFunctionCall1(oidin, CStringGetDatum(lfirst(lc))));
	qsort(st->tables, st->ntables, sizeof(Oid), table_oid_cmp);
}

static void
weir_decode_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	WeirPluginState *st = palloc0(sizeof(WeirPluginState));
	ListCell   *lc;
	bool		have_tables = false;

	st->cxt = AllocSetContextCreate(ctx->context, "weir output plugin", ALLOCSET_DEFAULT_SIZES);
	foreach(lc, ctx->output_plugin_options)
	{
		DefElem    *elem = lfirst(lc);

		if (strcmp(elem->defname, "tables") == 0 && elem->arg != NULL)
		{
			parse_tables(st, strVal(elem->arg));
			have_tables = true;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" of output plugin weir is unknown or has no value",
							elem->defname),
					 errhint("Output plugin weir takes one option, tables.")));
	}
	/* creating the slot passes no options; decoding must name the tables */
	if (!have_tables && !is_init)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output plugin weir needs option \"tables\""),
				 errhint("Give the captured tables' OIDs, comma separated.")));
	opt->output_type = OUTPUT_PLUGIN_BINARY_OUTPUT;
	opt->receive_rewrites = false;
	ctx->output_plugin_private = st;
}

static void
weir_decode_shutdown(LogicalDecodingContext *ctx)
{
	WeirPluginState *st = ctx->output_plugin_private;

	MemoryContextDelete(st->cxt);
}

/*
 * A transaction's begin is written before its first captured change, and
 * its commit only after one: transactions that touched no captured table
 * make no messages (a capture still moves past them, capture_worker.c).
 */
static void
weir_decode_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	WeirPluginState *st = ctx->output_plugin_private;

	st->begin_sent = false;
}

static void
send_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	WeirPluginState *st = ctx->output_plugin_private;

	OutputPluginPrepareWrite(ctx, false);
	pq_sendbyte(ctx->out, WEIR_CHANGE_BEGIN);
	pq_sendint64(ctx->out, txn->final_lsn);
	pq_sendint64(ctx->out, txn->end_lsn);
	pq_sendint64(ctx->out, txn->xact_time.commit_time);
	pq_sendint32(ctx->out, txn->xid);
	OutputPluginWrite(ctx, false);
	st->begin_sent = true;
}

static void
weir_decode_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	WeirPluginState *st = ctx->output_plugin_private;

	if (!st->begin_sent)
		return;
	OutputPluginPrepareWrite(ctx, true);
	pq_sendbyte(ctx->out, WEIR_CHANGE_COMMIT);
	pq_sendint64(ctx->out, commit_lsn);
	pq_sendint64(ctx->out, txn->end_lsn);
	pq_sendint64(ctx->out, txn->xact_time.commit_time);
	OutputPluginWrite(ctx, true);
	st->begin_sent = false;
}

/* One attribute's value: its image as a tuple holds it, never TOASTed. */
static void
write_value(StringInfo out, Form_pg_attribute att, Datum value)
{
	if (att->attbyval)
	{
		char		image[sizeof(Datum)];

		store_att_byval(image, value, att->attlen);
		pq_sendint32(out, att->attlen);
		pq_sendbytes(out, image, att->attlen);
	}
	else if (att->attlen > 0)
	{
		pq_sendint32(out, att->attlen);
		pq_sendbytes(out, DatumGetPointer(value), att->attlen);
	}
	else if (att->attlen == -1)
	{
		/* reassembled TOAST (indirect) and compressed values expanded */
		struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));

		pq_sendint32(out, VARSIZE_ANY(v));
		pq_sendbytes(out, (char *) v, VARSIZE_ANY(v));
	}
	else
	{
		const char *s = DatumGetCString(value);
		int			len = strlen(s) + 1;

		pq_sendint32(out, len);
		pq_sendbytes(out, s, len);
	}
}

static void
write_tuple(StringInfo out, TupleDesc desc, ReorderBufferTupleBuf *buf)
{
	HeapTuple	tuple;

	if (buf == NULL)
	{
		pq_sendbyte(out, WEIR_TUPLE_NONE);
		return;
	}
	tuple = &buf->tuple;
	pq_sendbyte(out, WEIR_TUPLE_PRESENT);
	pq_sendint16(out, desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		isnull;
		Datum		value;

		pq_sendint32(out, att->atttypid);
		if (att->attisdropped)
		{
			pq_sendbyte(out, WEIR_ATT_NULL);
			continue;
		}
		value = heap_getattr(tuple, i + 1, desc, &isnull);
		if (isnull)
			pq_sendbyte(out, WEIR_ATT_NULL);
		else if (att->attlen == -1 && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(value)))
			pq_sendbyte(out, WEIR_ATT_UNCHANGED);	/* decoding cannot fetch it */
		else
		{
			pq_sendbyte(out, WEIR_ATT_VALUE);
			write_value(out, att, value);
		}
	}
}

static void
weir_decode_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				   Relation relation, ReorderBufferChange *change)
{
	WeirPluginState *st = ctx->output_plugin_private;
	TupleDesc	desc = RelationGetDescr(relation);
	MemoryContext old;
	char		kind;

	if (!captured(st, RelationGetRelid(relation)))
		return;
	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			kind = WEIR_CHANGE_INSERT;
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			kind = WEIR_CHANGE_UPDATE;
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			kind = WEIR_CHANGE_DELETE;
			break;
		default:
			return;				/* nothing else reaches a change callback */
	}
	old = MemoryContextSwitchTo(st->cxt);
	if (!st->begin_sent)
		send_begin(ctx, txn);
	OutputPluginPrepareWrite(ctx, true);
	pq_sendbyte(ctx->out, kind);
	pq_sendint32(ctx->out, RelationGetRelid(relation));
	write_tuple(ctx->out, desc, kind == WEIR_CHANGE_DELETE ? NULL : change->data.tp.newtuple);
	write_tuple(ctx->out, desc, kind == WEIR_CHANGE_INSERT ? NULL : change->data.tp.oldtuple);
	OutputPluginWrite(ctx, true);
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->cxt);
}

static void
weir_decode_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, int nrelations,
					 Relation relations[], ReorderBufferChange *change)
{
	WeirPluginState *st = ctx->output_plugin_private;
	int			n = 0;
	int			flags = 0;

	for (int i = 0; i < nrelations; i++)
		if (captured(st, RelationGetRelid(relations[i])))
			n++;
	if (n == 0)
		return;
	if (change->data.truncate.cascade)
		flags |= WEIR_TRUNCATE_CASCADE;
	if (change->data.truncate.restart_seqs)
		flags |= WEIR_TRUNCATE_RESTART_IDENTITY;
	if (!st->begin_sent)
		send_begin(ctx, txn);
	OutputPluginPrepareWrite(ctx, true);
	pq_sendbyte(ctx->out, WEIR_CHANGE_TRUNCATE);
	pq_sendint32(ctx->out, n);
	for (int i = 0; i < nrelations; i++)
		if (captured(st, RelationGetRelid(relations[i])))
			pq_sendint32(ctx->out, RelationGetRelid(relations[i]));
	pq_sendbyte(ctx->out, flags);
	OutputPluginWrite(ctx, true);
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = weir_decode_startup;
	cb->begin_cb = weir_decode_begin;
	cb->change_cb = weir_decode_change;
	cb->truncate_cb = weir_decode_truncate;
	cb->commit_cb = weir_decode_commit;
	cb->shutdown_cb = weir_decode_shutdown;
}
