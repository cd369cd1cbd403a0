/*-------------------------------------------------------------------------
 *
 * local_decoder.c
 *	  A capture's logical decoding in its own process: its slot, created
 *	  and acquired by the capture's worker, and one decoding context kept
 *	  for the worker's life, read a batch at a time.
 *
 * Each batch runs in the transaction that then writes its changes (as
 * pg_logical_slot_peek_changes decodes inside the caller's transaction):
 * the reorder buffer replays each decoded transaction in an internal
 * subtransaction it rolls back, so nothing is written and no transaction
 * id is taken until decoding is done.  Catalog caches filled under
 * historic snapshots are then thrown away (InvalidateSystemCaches), and
 * the batch is written with ordinary ones.  The messages of weir's output
 * plugin (change_format.h) go into a tuplestore that spills to a temporary
 * file, so a transaction larger than memory is written, not refused (the
 * reorder buffer itself spills under logical_decoding_work_mem).
 *
 * A batch ends at a transaction boundary (a whole decoded commit record)
 * once it holds enough bytes, or at the WAL flushed when it started.  The
 * slot's confirmed position is moved by the caller only after the batch's
 * transaction commits (weir_local_confirm): to the end of what was read,
 * which also carries a capture with no relevant changes forward, so that
 * an idle capture holds no WAL.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/local_decoder.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogutils.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "capture/change_format.h"
#include "capture/local_decoder.h"

struct WeirLocalDecoder
{
	LogicalDecodingContext *ctx;
	TupleDesc	desc;			/* of the messages: one bytea */
	Tuplestorestate *messages;	/* this batch's */
	MemoryContext batch_cxt;	/* holds it: outlives the batch's transaction,
								 * so that a batch can be written again after
								 * an error (capture_worker.c) */
	int			ntxns;			/* whole transactions in it */
	Size		bytes;
};

static WeirLocalDecoder *decoding = NULL;	/* the one of this process */

#define WEIR_PLUGIN_NAME "weir"

/*
 * Some builds restrict the output plugins a slot may load
 * (output_plugin_libraries, a superuser setting).  The server preloads
 * weir, and this process runs only weir's own code: it allows weir's
 * plugin for itself.
 */
static void
allow_weir_plugin(void)
{
	const char *allowed = GetConfigOption("output_plugin_libraries", true, false);
	List	   *names = NIL;
	ListCell   *lc;
	char	   *copy;

	if (allowed == NULL)
		return;
	copy = pstrdup(allowed);
	if (SplitIdentifierString(copy, ',', &names))
		foreach(lc, names)
			if (strcmp(lfirst(lc), WEIR_PLUGIN_NAME) == 0)
				return;
	SetConfigOption("output_plugin_libraries",
					allowed[0] ? psprintf("%s, %s", allowed, WEIR_PLUGIN_NAME) : WEIR_PLUGIN_NAME,
					PGC_SUSET, PGC_S_OVERRIDE);
}

/* Whether slot `slot_name` exists; *invalidated: it lost its WAL. */
bool
weir_local_slot_exists(const char *slot_name, bool *invalidated)
{
	bool		found = false;

	*invalidated = false;
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];

		if (s->in_use && strcmp(NameStr(s->data.name), slot_name) == 0)
		{
			found = true;
			SpinLockAcquire(&s->mutex);
			*invalidated = !XLogRecPtrIsInvalid(s->data.invalidated_at) ||
				XLogRecPtrIsInvalid(s->data.restart_lsn);
			SpinLockRelease(&s->mutex);
			break;
		}
	}
	LWLockRelease(ReplicationSlotControlLock);
	return found;
}

/*
 * Create the capture's slot, with weir's output plugin, from now on.  In a
 * transaction that has written nothing; it waits for the transactions
 * running now to end (a consistent start needs that).
 */
void
weir_local_slot_create(const char *slot_name)
{
	LogicalDecodingContext *ctx;

	CheckSlotPermissions();
	CheckLogicalDecodingRequirements();
	allow_weir_plugin();
	ReplicationSlotCreate(slot_name, true, RS_EPHEMERAL, false);
	ctx = CreateInitDecodingContext(WEIR_PLUGIN_NAME, NIL, false, InvalidXLogRecPtr,
									XL_ROUTINE(.page_read = read_local_xlog_page,
											   .segment_open = wal_segment_open,
											   .segment_close = wal_segment_close),
									NULL, NULL, NULL);
	DecodingContextFindStartpoint(ctx);
	FreeDecodingContext(ctx);
	ReplicationSlotPersist();
	ReplicationSlotRelease();
}

/* Drop slot `slot_name` if it exists and nobody holds it. */
void
weir_local_slot_drop(const char *slot_name)
{
	bool		invalidated;

	if (weir_local_slot_exists(slot_name, &invalidated))
		ReplicationSlotDrop(slot_name, true);
}

static void
prepare_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid, bool last_write)
{
	resetStringInfo(ctx->out);
}

/* Keep one message of the output plugin in the batch. */
static void
keep_message(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid, bool last_write)
{
	WeirLocalDecoder *d = decoding;
	bytea	   *b;
	Datum		value;
	bool		isnull = false;

	if (ctx->out->len < 1)
		elog(ERROR, "weir's output plugin wrote an empty message");
	b = palloc(VARHDRSZ + ctx->out->len);
	SET_VARSIZE(b, VARHDRSZ + ctx->out->len);
	memcpy(VARDATA(b), ctx->out->data, ctx->out->len);
	value = PointerGetDatum(b);
	tuplestore_putvalues(d->messages, d->desc, &value, &isnull);
	pfree(b);
	d->bytes += ctx->out->len;
	if (ctx->out->data[0] == WEIR_CHANGE_COMMIT)
		d->ntxns++;
}

/*
 * Acquire slot `slot_name` for this process (for its life) and set up its
 * decoding of `tables`.  Outside a transaction.
 */
WeirLocalDecoder *
weir_local_decoder_start(const char *slot_name, const Oid *tables, int ntables)
{
	WeirLocalDecoder *d = MemoryContextAllocZero(TopMemoryContext, sizeof(WeirLocalDecoder));
	StringInfoData oids;
	List	   *options;
	MemoryContext old;

	Assert(decoding == NULL);
	d->batch_cxt = AllocSetContextCreate(TopMemoryContext, "weir capture batch",
										 ALLOCSET_DEFAULT_SIZES);
	initStringInfo(&oids);
	for (int i = 0; i < ntables; i++)
		appendStringInfo(&oids, "%s%u", i > 0 ? "," : "", tables[i]);
	old = MemoryContextSwitchTo(TopMemoryContext);
	options = list_make1(makeDefElem("tables", (Node *) makeString(pstrdup(oids.data)), -1));
	MemoryContextSwitchTo(old);

	StartTransactionCommand();
	old = MemoryContextSwitchTo(TopMemoryContext);
	d->desc = CreateTemplateTupleDesc(1);
	TupleDescInitEntry(d->desc, 1, "message", BYTEAOID, -1, 0);
	MemoryContextSwitchTo(old);
	CheckSlotPermissions();
	CheckLogicalDecodingRequirements();
	allow_weir_plugin();
	ReplicationSlotAcquire(slot_name, true);
	if (!XLogRecPtrIsInvalid(MyReplicationSlot->data.invalidated_at) ||
		XLogRecPtrIsInvalid(MyReplicationSlot->data.restart_lsn))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication slot \"%s\" has been invalidated", slot_name),
				 errdetail("The server removed WAL the slot still needed (max_slot_wal_keep_size).")));
	/* the context lives as long as the worker, not the transaction */
	old = MemoryContextSwitchTo(TopMemoryContext);
	d->ctx = CreateDecodingContext(InvalidXLogRecPtr, options, false,
								   XL_ROUTINE(.page_read = read_local_xlog_page,
											  .segment_open = wal_segment_open,
											  .segment_close = wal_segment_close),
								   prepare_write, keep_message, NULL);
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();
	XLogBeginRead(d->ctx->reader, MyReplicationSlot->data.restart_lsn);
	decoding = d;
	return d;
}

/*
 * Decode a batch into the current transaction: whole transactions, until
 * `max_bytes` of messages are kept or the WAL flushed at the start is read
 * (*at_end).  Returns the number of transactions with captured changes.
 */
int
weir_local_decode(WeirLocalDecoder *d, Size max_bytes, bool *at_end)
{
	XLogRecPtr	upto = GetFlushRecPtr(NULL);
	ResourceOwner owner = CurrentResourceOwner;
	MemoryContext cxt = CurrentMemoryContext;

	Assert(IsTransactionState() && !TransactionIdIsValid(GetTopTransactionIdIfAny()));
	MemoryContextSwitchTo(d->batch_cxt);
	d->messages = tuplestore_begin_heap(false, true, work_mem);
	MemoryContextSwitchTo(cxt);
	d->ntxns = 0;
	d->bytes = 0;
	/* entries cached under ordinary snapshots must not serve decoding */
	InvalidateSystemCaches();
	while (d->ctx->reader->EndRecPtr < upto)
	{
		char	   *errm = NULL;
		XLogRecord *record;

		/*
		 * The reader keeps what it decodes (an oversized record's buffer)
		 * from one batch to the next: not in the batch's transaction
		 */
		MemoryContextSwitchTo(d->ctx->context);
		record = XLogReadRecord(d->ctx->reader, &errm);
		MemoryContextSwitchTo(cxt);

		if (errm)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not read WAL at %X/%X for replication slot \"%s\": %s",
							LSN_FORMAT_ARGS(d->ctx->reader->EndRecPtr),
							NameStr(MyReplicationSlot->data.name), errm)));
		if (record != NULL)
			LogicalDecodingProcessRecord(d->ctx, d->ctx->reader);
		CHECK_FOR_INTERRUPTS();
		if (d->bytes >= max_bytes)
			break;
	}
	*at_end = d->ctx->reader->EndRecPtr >= upto;
	/* decoding may have changed these (logicalfuncs.c does the same) */
	CurrentResourceOwner = owner;
	MemoryContextSwitchTo(cxt);
	InvalidateSystemCaches();
	return d->ntxns;
}

Tuplestorestate *
weir_local_decoder_messages(WeirLocalDecoder *d)
{
	return d->messages;
}

/* The batch is written (or abandoned): forget its messages. */
void
weir_local_decoder_done(WeirLocalDecoder *d)
{
	if (d->messages)
		tuplestore_end(d->messages);
	d->messages = NULL;
	MemoryContextReset(d->batch_cxt);
}

/* Where decoding has read up to: a transaction boundary. */
XLogRecPtr
weir_local_decoder_read_upto(WeirLocalDecoder *d)
{
	return d->ctx->reader->EndRecPtr;
}

/*
 * After the batch's transaction committed: the slot may let go of the WAL
 * before `lsn`.  Never moves it back (LogicalConfirmReceivedLocation would).
 */
void
weir_local_confirm(XLogRecPtr lsn)
{
	XLogRecPtr	confirmed;

	SpinLockAcquire(&MyReplicationSlot->mutex);
	confirmed = MyReplicationSlot->data.confirmed_flush;
	SpinLockRelease(&MyReplicationSlot->mutex);
	if (lsn > confirmed)
		LogicalConfirmReceivedLocation(lsn);
}
