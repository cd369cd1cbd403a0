/*-------------------------------------------------------------------------
 *
 * remote_capture.c
 *	  A capture of another server's tables: its worker streams the remote
 *	  publication through a logical slot there (pgoutput, protocol 1, text
 *	  values) and appends the changes to the topics here, exactly once.
 *
 * The worker connects (remote_conn.c) as application weir_capture_<id>,
 * creates the remote slot capture->slot_name if it does not exist, and
 * streams from the capture's position.  It keeps pgoutput's messages as
 * they come in a tuplestore (which spills to a temporary file past
 * work_mem, so a transaction larger than memory is fine), and at a commit
 * boundary -- after BATCH_TRANSACTIONS transactions or BATCH_BYTES bytes,
 * or when nothing more is waiting -- writes the whole batch in one local
 * transaction, as the capture's owner, together with the capture's new
 * position (the end LSN of the last transaction written).  Only then does
 * it tell the remote it may forget those transactions: the write, flush
 * and apply positions it reports are that committed position, never more
 * (or, when nothing received is waiting to be written, the end of the
 * WAL the remote reported in its last keepalive).  A transaction that
 * commits before the position (final_lsn < position) was written before a
 * restart and is skipped whole, so each transaction is written once.
 *
 * Relation messages map a remote relation to a captured table by
 * "schema.table" and its columns to the topic's by name; they are applied
 * in stream order, with the rows, when a batch is written.  Values are
 * converted by the topic column's type input function.  Columns added on
 * the remote after the capture was created are not carried (the topic
 * keeps its columns); a captured column the remote no longer sends is
 * null.
 *
 * Feedback goes at least every FEEDBACK_INTERVAL_MS and whenever the
 * remote asks, so the walsender does not time the connection out.  A
 * connection error is an ERROR: capture_worker.c records it in
 * weir.capture and the launcher starts the worker again with back-off.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_capture.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "replication/logicalproto.h"
#include "replication/walreceiver.h"
#include "replication/walsender.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/act_as.h"
#include "base/transaction.h"
#include "capture/capture_catalog.h"
#include "capture/capture_worker.h"
#include "capture/capture_writer.h"
#include "capture/remote_capture.h"
#include "capture/remote_conn.h"

/* A batch is written after this many whole transactions */
#define BATCH_TRANSACTIONS 1000
/* ... or this many bytes of messages (a transaction's worth more at most) */
#define BATCH_BYTES (8 * 1024 * 1024)
/* Feedback to the remote at least this often */
#define FEEDBACK_INTERVAL_MS 10000
/* Longest sleep waiting for the socket */
#define WAIT_MS 1000

/* A remote relation, from its last relation message */
typedef struct RemoteRelation
{
	LogicalRepRelId remoteid;
	char	   *name;			/* schema.table, for messages */
	int			table;			/* index in capture->tables; -1: not captured */
	int			natts;
	int		   *column;			/* [natts]: capture column; -1: not carried */
} RemoteRelation;

/* The worker's state; lives in `cxt` */
typedef struct RemoteState
{
	WeirCaptureRow *capture;
	WeirCaptureSlot *slot;
	WalReceiverConn *conn;
	MemoryContext cxt;			/* worker lifetime */
	MemoryContext batch_cxt;	/* the batch's messages; reset after writing */
	Tuplestorestate *messages;	/* received, not yet written (bytea) */
	TupleDesc	desc;
	int			ntxns;			/* whole transactions in messages */
	Size		bytes;			/* of messages */
	bool		in_txn;			/* a begin received, its commit not yet */
	XLogRecPtr	received;		/* end of the last message received */
	XLogRecPtr	keepalive_lsn;	/* WAL end in the last keepalive */
	XLogRecPtr	reported;		/* flush position last reported */
	TimestampTz last_feedback;
	int			nrels;
	RemoteRelation *rels;
} RemoteState;

/* What writing one batch needs, per captured table's topic */
typedef struct BatchState
{
	WeirCaptureWriter *writer;
	FmgrInfo  **input;			/* [table][column] input functions */
	Oid		  **ioparam;
	int32	  **typmod;
	Datum	   *values;
	bool	   *nulls;
	bool	   *unchanged;
	Datum	   *old_values;
	bool	   *old_nulls;
	bool	   *old_unchanged;
	XLogRecPtr	lsn;			/* the transaction's commit LSN */
	TimestampTz commit_time;
	bool		skipping;		/* written before a restart */
	WeirCaptureProgress progress;
} BatchState;

static void
new_batch_store(RemoteState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->batch_cxt);

	/* interXact: the file may outlive the transactions in between */
	st->messages = tuplestore_begin_heap(false, true, work_mem);
	MemoryContextSwitchTo(old);
	st->ntxns = 0;
	st->bytes = 0;
}

/*
 * Tell the remote how far it may forget: the committed position, or the
 * remote's WAL end when nothing received waits to be written.  Sent when
 * that moved, when `force`, or after FEEDBACK_INTERVAL_MS.
 */
static void
send_feedback(RemoteState *st, bool force)
{
	TimestampTz now = GetCurrentTimestamp();
	XLogRecPtr	flush = st->capture->position;
	StringInfoData s;

	if (!st->in_txn && st->ntxns == 0 && st->keepalive_lsn > flush)
		flush = st->keepalive_lsn;
	if (!force && flush == st->reported &&
		!TimestampDifferenceExceeds(st->last_feedback, now, FEEDBACK_INTERVAL_MS))
		return;
	initStringInfo(&s);
	pq_sendbyte(&s, 'r');
	pq_sendint64(&s, flush);	/* write */
	pq_sendint64(&s, flush);	/* flush */
	pq_sendint64(&s, flush);	/* apply */
	pq_sendint64(&s, now);
	pq_sendbyte(&s, false);
	walrcv_send(st->conn, s.data, s.len);
	pfree(s.data);
	st->reported = flush;
	st->last_feedback = now;
	elog(DEBUG1, "weir capture \"%s\" reported %X/%X", st->capture->name,
		 LSN_FORMAT_ARGS(flush));
}

/* One CopyData message from the remote; `buf` is valid until the next */
static void
handle_copy_data(RemoteState *st, char *buf, int len)
{
	StringInfoData s;
	char		kind;

	s.data = buf;
	s.len = len;
	s.cursor = 0;
	s.maxlen = -1;
	kind = pq_getmsgbyte(&s);
	if (kind == 'w')
	{
		XLogRecPtr	start = pq_getmsgint64(&s);
		XLogRecPtr	end = pq_getmsgint64(&s);
		int			mlen = len - (s.cursor + 8);
		bytea	   *b;
		Datum		d;
		bool		isnull = false;
		char		msg;

		(void) pq_getmsgint64(&s);	/* send time */
		if (mlen <= 0)
			return;
		st->received = Max(st->received, Max(start, end));
		msg = s.data[s.cursor];
		b = palloc(VARHDRSZ + mlen);
		SET_VARSIZE(b, VARHDRSZ + mlen);
		memcpy(VARDATA(b), s.data + s.cursor, mlen);
		d = PointerGetDatum(b);
		tuplestore_putvalues(st->messages, st->desc, &d, &isnull);
		pfree(b);
		st->bytes += mlen;
		if (msg == LOGICAL_REP_MSG_BEGIN)
			st->in_txn = true;
		else if (msg == LOGICAL_REP_MSG_COMMIT)
		{
			st->in_txn = false;
			st->ntxns++;
		}
	}
	else if (kind == 'k')
	{
		XLogRecPtr	end = pq_getmsgint64(&s);
		bool		reply;

		(void) pq_getmsgint64(&s);	/* send time */
		reply = pq_getmsgbyte(&s);
		st->keepalive_lsn = Max(st->keepalive_lsn, end);
		st->received = Max(st->received, end);
		if (reply)
			send_feedback(st, true);
	}
}

/* Remember a relation message, mapping it to a captured table */
static void
note_relation(RemoteState *st, LogicalRepRelation *rel)
{
	WeirCaptureRow *capture = st->capture;
	char	   *name = psprintf("%s.%s", rel->nspname, rel->relname);
	RemoteRelation *r = NULL;

	for (int i = 0; i < st->nrels; i++)
		if (st->rels[i].remoteid == rel->remoteid)
			r = &st->rels[i];
	if (r == NULL)
	{
		st->rels = st->rels ? repalloc(st->rels, sizeof(RemoteRelation) * (st->nrels + 1)) :
			palloc(sizeof(RemoteRelation));
		r = &st->rels[st->nrels++];
	}
	r->remoteid = rel->remoteid;
	r->name = name;
	r->table = -1;
	for (int i = 0; i < capture->ntables; i++)
		if (capture->tables[i].remote_table &&
			strcmp(capture->tables[i].remote_table, name) == 0)
			r->table = i;
	r->natts = rel->natts;
	r->column = palloc(sizeof(int) * Max(rel->natts, 1));
	for (int a = 0; a < rel->natts; a++)
	{
		r->column[a] = -1;
		if (r->table >= 0)
		{
			WeirCaptureTableRow *t = &capture->tables[r->table];

			for (int i = 0; i < t->ncolumns; i++)
				if (strcmp(t->columns[i], rel->attnames[a]) == 0)
					r->column[a] = i;
		}
	}
}

static RemoteRelation *
relation_of(RemoteState *st, LogicalRepRelId remoteid)
{
	for (int i = 0; i < st->nrels; i++)
		if (st->rels[i].remoteid == remoteid)
			return &st->rels[i];
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("the remote server of capture \"%s\" sent a change of relation %u before describing it",
					st->capture->name, remoteid)));
	return NULL;				/* keep compiler quiet */
}

/* A remote tuple as the topic's column values */
static void
convert_tuple(BatchState *b, const WeirCaptureTableRow *t, RemoteRelation *r,
			  LogicalRepTupleData *tup, Datum *values, bool *nulls, bool *unchanged)
{
	for (int i = 0; i < t->ncolumns; i++)
	{
		values[i] = (Datum) 0;
		nulls[i] = true;
		unchanged[i] = false;
	}
	for (int a = 0; a < tup->ncols && a < r->natts; a++)
	{
		int			i = r->column[a];

		if (i < 0)
			continue;
		switch (tup->colstatus[a])
		{
			case LOGICALREP_COLUMN_NULL:
				break;
			case LOGICALREP_COLUMN_UNCHANGED:
				unchanged[i] = true;
				break;
			case LOGICALREP_COLUMN_TEXT:
				values[i] = InputFunctionCall(&b->input[r->table][i],
											  tup->colvalues[a].data,
											  b->ioparam[r->table][i],
											  b->typmod[r->table][i]);
				nulls[i] = false;
				break;
			default:
				elog(ERROR, "unexpected column status %d in a change of \"%s\"",
					 tup->colstatus[a], r->name);
		}
	}
}

/* One insert, update or delete of a captured table */
static void
write_change(BatchState *b, WeirCaptureRow *capture, RemoteRelation *r, char op,
			 LogicalRepTupleData *oldtup, LogicalRepTupleData *newtup)
{
	const WeirCaptureTableRow *t = &capture->tables[r->table];

	if (oldtup)
		convert_tuple(b, t, r, oldtup, b->old_values, b->old_nulls, b->old_unchanged);
	if (newtup)
		convert_tuple(b, t, r, newtup, b->values, b->nulls, b->unchanged);
	switch (op)
	{
		case WEIR_OP_INSERT:
			weir_capture_writer_row(b->writer, r->table, WEIR_OP_INSERT, b->lsn, b->commit_time,
									b->values, b->nulls, NULL);
			break;
		case WEIR_OP_UPDATE:
			if (oldtup)
			{
				weir_capture_writer_row(b->writer, r->table, WEIR_OP_BEFORE, b->lsn,
										b->commit_time, b->old_values, b->old_nulls, NULL);
				/* an unchanged TOASTed value is the old row's */
				for (int i = 0; i < t->ncolumns; i++)
					if (b->unchanged[i] && !b->old_unchanged[i] && !b->old_nulls[i])
					{
						b->values[i] = b->old_values[i];
						b->nulls[i] = false;
						b->unchanged[i] = false;
					}
					else if (b->unchanged[i] && t->full_identity)
						b->unchanged[i] = false;
			}
			weir_capture_writer_row(b->writer, r->table, WEIR_OP_UPDATE, b->lsn, b->commit_time,
									b->values, b->nulls, b->unchanged);
			break;
		case WEIR_OP_DELETE:
			weir_capture_writer_row(b->writer, r->table, WEIR_OP_DELETE, b->lsn, b->commit_time,
									b->old_values, b->old_nulls, NULL);
			break;
	}
}

/* One pgoutput message of the batch */
static void
apply_message(RemoteState *st, BatchState *b, StringInfo s)
{
	WeirCaptureRow *capture = st->capture;
	char		kind = pq_getmsgbyte(s);
	LogicalRepTupleData oldtup;
	LogicalRepTupleData newtup;
	LogicalRepRelId relid;
	RemoteRelation *r;

	switch (kind)
	{
		case LOGICAL_REP_MSG_BEGIN:
			{
				LogicalRepBeginData begin;

				logicalrep_read_begin(s, &begin);
				b->lsn = begin.final_lsn;
				b->commit_time = begin.committime;
				b->skipping = begin.final_lsn < capture->position;
				break;
			}
		case LOGICAL_REP_MSG_COMMIT:
			{
				LogicalRepCommitData commit;

				logicalrep_read_commit(s, &commit);
				if (!b->skipping)
				{
					capture->position = commit.end_lsn;
					capture->position_time = commit.committime;
					b->progress.transactions++;
				}
				break;
			}
		case LOGICAL_REP_MSG_RELATION:
			{
				MemoryContext old = MemoryContextSwitchTo(st->cxt);

				note_relation(st, logicalrep_read_rel(s));
				MemoryContextSwitchTo(old);
				break;
			}
		case LOGICAL_REP_MSG_INSERT:
			relid = logicalrep_read_insert(s, &newtup);
			r = relation_of(st, relid);
			if (!b->skipping && r->table >= 0)
				write_change(b, capture, r, WEIR_OP_INSERT, NULL, &newtup);
			break;
		case LOGICAL_REP_MSG_UPDATE:
			{
				bool		has_old;

				relid = logicalrep_read_update(s, &has_old, &oldtup, &newtup);
				r = relation_of(st, relid);
				if (!b->skipping && r->table >= 0)
					write_change(b, capture, r, WEIR_OP_UPDATE, has_old ? &oldtup : NULL,
								 &newtup);
				break;
			}
		case LOGICAL_REP_MSG_DELETE:
			relid = logicalrep_read_delete(s, &oldtup);
			r = relation_of(st, relid);
			if (!b->skipping && r->table >= 0)
				write_change(b, capture, r, WEIR_OP_DELETE, &oldtup, NULL);
			break;
		case LOGICAL_REP_MSG_TRUNCATE:
			{
				bool		cascade;
				bool		restart;
				List	   *relids = logicalrep_read_truncate(s, &cascade, &restart);
				ListCell   *lc;

				if (b->skipping)
					break;
				foreach(lc, relids)
				{
					r = relation_of(st, lfirst_oid(lc));
					if (r->table >= 0)
						weir_capture_writer_truncate(b->writer, r->table, b->lsn,
													 b->commit_time);
				}
				break;
			}
		default:
			/* origin, type and generic messages carry nothing for a topic */
			break;
	}
}

/*
 * Write the batch's whole transactions in one local transaction, with the
 * capture's position; then report it to the remote.  `caught_up`: nothing
 * more was waiting.
 */
static void
write_batch(RemoteState *st, bool caught_up)
{
	WeirCaptureRow *capture = st->capture;
	MemoryContext per_message;
	TupleTableSlot *tslot;
	BatchState	b = {0};
	WeirActAs	as;
	int			width = 1;
	XLogRecPtr	before = capture->position;

	pgstat_report_activity(STATE_RUNNING, "weir: capturing changes");
	weir_transaction_begin();
	per_message = AllocSetContextCreate(CurrentMemoryContext, "weir remote capture message",
										ALLOCSET_DEFAULT_SIZES);
	weir_act_as_begin(&as, capture->owner);
	b.writer = weir_capture_writer_begin(capture);
	b.input = palloc(sizeof(FmgrInfo *) * Max(capture->ntables, 1));
	b.ioparam = palloc(sizeof(Oid *) * Max(capture->ntables, 1));
	b.typmod = palloc(sizeof(int32 *) * Max(capture->ntables, 1));
	for (int t = 0; t < capture->ntables; t++)
	{
		WeirCaptureTarget *target = &b.writer->targets[t];
		int			n = capture->tables[t].ncolumns;

		width = Max(width, n);
		b.input[t] = palloc(sizeof(FmgrInfo) * Max(n, 1));
		b.ioparam[t] = palloc(sizeof(Oid) * Max(n, 1));
		b.typmod[t] = palloc(sizeof(int32) * Max(n, 1));
		for (int i = 0; i < n; i++)
		{
			Oid			func;

			getTypeInputInfo(target->column_atts[i]->atttypid, &func, &b.ioparam[t][i]);
			fmgr_info(func, &b.input[t][i]);
			b.typmod[t][i] = target->column_atts[i]->atttypmod;
		}
	}
	b.values = palloc(sizeof(Datum) * width);
	b.nulls = palloc(sizeof(bool) * width);
	b.unchanged = palloc(sizeof(bool) * width);
	b.old_values = palloc(sizeof(Datum) * width);
	b.old_nulls = palloc(sizeof(bool) * width);
	b.old_unchanged = palloc(sizeof(bool) * width);

	tslot = MakeSingleTupleTableSlot(st->desc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(st->messages, true, false, tslot))
	{
		bool		isnull;
		bytea	   *msg = DatumGetByteaPP(slot_getattr(tslot, 1, &isnull));
		StringInfoData s;
		MemoryContext old = MemoryContextSwitchTo(per_message);

		s.data = VARDATA_ANY(msg);
		s.len = VARSIZE_ANY_EXHDR(msg);
		s.cursor = 0;
		s.maxlen = -1;
		apply_message(st, &b, &s);
		MemoryContextSwitchTo(old);
		MemoryContextReset(per_message);
		ExecClearTuple(tslot);
		CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(tslot);
	b.progress.rows = b.writer->rows;
	weir_capture_writer_end(b.writer);
	weir_act_as_end(&as);
	if (capture->position != before)
		weir_catalog_capture_set_position(capture->id, capture->position,
										  capture->position_time);
	weir_transaction_end();
	MemoryContextSwitchTo(st->cxt);

	tuplestore_end(st->messages);
	MemoryContextReset(st->batch_cxt);
	new_batch_store(st);
	weir_capture_note_progress(st->slot, st->received, caught_up, &b.progress);
	send_feedback(st, false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Create the remote slot if it does not exist yet */
static void
ensure_remote_slot(RemoteState *st)
{
	WeirCaptureRow *capture = st->capture;
	WalRcvExecResult *res;
	char	   *sql;
	bool		exists;

	sql = psprintf("SELECT plugin FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
				   quote_literal_cstr(capture->slot_name));
	/* walrcv_exec builds its result's tuple descriptor from the catalogs */
	weir_transaction_begin();
	res = weir_remote_query(st->conn, sql, 1, capture->name);
	exists = tuplestore_tuple_count(res->tuplestore) > 0;
	walrcv_clear_result(res);
	weir_transaction_end();
	MemoryContextSwitchTo(st->cxt);
	if (exists)
		return;
	pgstat_report_activity(STATE_RUNNING, "weir: creating the capture's remote replication slot");
	(void) walrcv_create_slot(st->conn, capture->slot_name, false, false,
							  CRS_NOEXPORT_SNAPSHOT, NULL);
	ereport(LOG,
			(errmsg("weir capture \"%s\" created replication slot \"%s\" on the remote server",
					capture->name, capture->slot_name)));
}

/*
 * Run remote capture `capture` in its worker, holding shared slot `slot`:
 * connect, stream and write until an error or a signal ends the process.
 */
/*
 * One session with the remote server: connect, make sure of the slot,
 * stream from the capture's position until an error ends it.
 */
static void
stream_session(RemoteState *st, const char *conninfo, const char *appname)
{
	WeirCaptureRow *capture = st->capture;
	WeirCaptureSlot *slot = st->slot;
	WalRcvStreamOptions options = {0};

	pgstat_report_activity(STATE_RUNNING, "weir: connecting to the remote server");
	st->conn = weir_remote_connect(conninfo, appname, capture->name);
	SpinLockAcquire(&slot->mutex);
	slot->connects++;
	slot->next_connect_at = 0;
	SpinLockRelease(&slot->mutex);

	ensure_remote_slot(st);

	options.logical = true;
	options.slotname = capture->slot_name;
	options.startpoint = capture->position;
	options.proto.logical.proto_version = LOGICALREP_PROTO_VERSION_NUM;
	options.proto.logical.publication_names = list_make1(makeString(capture->publication));
	options.proto.logical.binary = false;
	options.proto.logical.streaming = false;
	options.proto.logical.twophase = false;
	if (!walrcv_startstreaming(st->conn, &options))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the remote server of capture \"%s\" did not start streaming", capture->name)));
	st->reported = capture->position;
	st->in_txn = false;
	st->nrels = 0;
	new_batch_store(st);

	weir_transaction_begin();
	weir_catalog_capture_set_status(capture->id, WEIR_CAPTURE_RUNNING, NULL, false);
	weir_transaction_end();
	MemoryContextSwitchTo(st->cxt);
	ereport(LOG,
			(errmsg("weir capture \"%s\" streaming publication \"%s\" from %X/%X",
					capture->name, capture->publication, LSN_FORMAT_ARGS(capture->position))));
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		pgsocket	fd = PGINVALID_SOCKET;
		char	   *buf;
		int			len;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		len = walrcv_receive(st->conn, &buf, &fd);
		while (len != 0)
		{
			if (len < 0)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("the remote server of capture \"%s\" ended the replication stream",
								capture->name)));
			handle_copy_data(st, buf, len);
			if (!st->in_txn && (st->ntxns >= BATCH_TRANSACTIONS || st->bytes >= BATCH_BYTES))
				write_batch(st, false);
			CHECK_FOR_INTERRUPTS();
			len = walrcv_receive(st->conn, &buf, &fd);
		}
		if (!st->in_txn && st->ntxns > 0)
			write_batch(st, true);
		else
		{
			WeirCaptureProgress none = {0};

			weir_capture_note_progress(slot, st->received, !st->in_txn && st->ntxns == 0, &none);
		}
		send_feedback(st, false);
		(void) WaitLatchOrSocket(MyLatch,
								 WL_SOCKET_READABLE | WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 fd, WAIT_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * The worker's life: sessions with the remote server.  A session that
 * ends with a connection error (class 08: the server went away, or cannot
 * be reached) is retried here after a back-off of 1 s doubling to 60 s
 * (reset after a minute of streaming), which weir.captures shows
 * (connects, next_connect_at, status 'failed' and the error); what was
 * received but not written is dropped and received again.  Any other error
 * ends the worker (capture_worker.c records it; the launcher restarts it).
 */
void
weir_remote_capture_run(WeirCaptureRow *capture, WeirCaptureSlot *slot)
{
	RemoteState st = {0};
	char		appname[NAMEDATALEN];
	char	   *conninfo;
	int			failures = 0;

	st.cxt = AllocSetContextCreate(TopMemoryContext, "weir remote capture",
								   ALLOCSET_DEFAULT_SIZES);
	st.batch_cxt = AllocSetContextCreate(st.cxt, "weir remote capture batch",
										 ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(st.cxt);
	st.capture = capture;
	st.slot = slot;
	weir_transaction_begin();
	MemoryContextSwitchTo(st.cxt);
	st.desc = CreateTemplateTupleDesc(1);
	TupleDescInitEntry(st.desc, 1, "message", BYTEAOID, -1, 0);
	conninfo = weir_catalog_capture_conninfo(capture->id);
	conninfo = conninfo ? MemoryContextStrdup(st.cxt, conninfo) : NULL;
	weir_transaction_end();
	MemoryContextSwitchTo(st.cxt);
	if (conninfo == NULL)
		elog(ERROR, "remote capture \"%s\" has no connection", capture->name);
	snprintf(appname, sizeof(appname), "weir_capture_%d", capture->id);

	for (;;)
	{
		TimestampTz started = GetCurrentTimestamp();

		PG_TRY();
		{
			stream_session(&st, conninfo, appname);
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			TimestampTz retry_at;
			int			backoff_s;

			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(st.cxt);
			edata = CopyErrorData();
			if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_CONNECTION_EXCEPTION)
			{
				RESUME_INTERRUPTS();
				PG_RE_THROW();
			}
			EmitErrorReport();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			RESUME_INTERRUPTS();
			if (st.conn)
			{
				walrcv_disconnect(st.conn);
				st.conn = NULL;
			}
			/* what was received and not written comes again */
			if (st.messages)
				tuplestore_end(st.messages);
			st.messages = NULL;
			MemoryContextReset(st.batch_cxt);

			if (GetCurrentTimestamp() - started > 60 * USECS_PER_SEC)
				failures = 0;
			failures++;
			backoff_s = Min(1 << Min(failures - 1, 6), 60);
			retry_at = GetCurrentTimestamp() + (int64) backoff_s * USECS_PER_SEC;
			SpinLockAcquire(&slot->mutex);
			slot->next_connect_at = retry_at;
			slot->caught_up = false;
			SpinLockRelease(&slot->mutex);
			weir_transaction_begin();
			weir_catalog_capture_set_status(capture->id, WEIR_CAPTURE_FAILED, edata->message,
											false);
			weir_transaction_end();
			MemoryContextSwitchTo(st.cxt);
			FreeErrorData(edata);
			pgstat_report_activity(STATE_IDLE, "weir: waiting to reconnect");
			while (GetCurrentTimestamp() < retry_at)
			{
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 Max((retry_at - GetCurrentTimestamp()) / 1000, 1),
								 PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
		}
		PG_END_TRY();
	}
}
