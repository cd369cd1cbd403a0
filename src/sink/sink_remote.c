/*-------------------------------------------------------------------------
 *
 * sink_remote.c
 *	  A pipeline's sink on another PostgreSQL server, as a sink
 *	  (sink_ops.h): exactly once by two-phase commit, or by idempotent
 *	  writes.
 *
 * Two-phase (doc/design.md, "Remote sinks"): each checkpoint's rows go to
 * the remote in one transaction there (one statement per batch of rows,
 * the rows as arrays, as the table sink does), which is prepared
 * (PREPARE TRANSACTION '<prefix><checkpoint id>') as the last thing
 * before the local checkpoint commits; after the local commit, COMMIT
 * PREPARED.  So whether the remote transaction of checkpoint N must commit
 * is written locally, in weir.checkpoints, by the commit that makes N.
 * Whoever finds prepared transactions of the pipeline there (the process
 * that writes its checkpoints, before its first; weir.drop_pipeline)
 * commits those of checkpoints up to the last committed here and rolls
 * back the others: checkpoints commit in order, one at a time, and a
 * checkpoint's id is one more than the last committed.
 *
 * A COMMIT PREPARED that fails is retried until it succeeds (a prepared
 * transaction holds its locks and holds back VACUUM on the remote), with
 * back-off, and before anything else is written there: the pipeline shows
 * it (weir.pipelines.remote_sink, weir.remote_sinks).
 *
 * Idempotent: each checkpoint's rows are upserted, and the pipeline's
 * fence row (<schema>.weir_sink_fence: the last checkpoint applied) is
 * written in the same remote transaction, which commits before the local
 * checkpoint.  After a crash between the two, the checkpoints from the
 * last local one are done again and their rows upserted again.  Those are
 * not skipped by the fence: a checkpoint done again need not hold the same
 * rows as the one applied (its boundary falls elsewhere in the input), and
 * skipping would lose the rows it has beyond the applied one.  What makes
 * this exact is that the rows are a function of the input, upserted by
 * their key (remote_sink_define.c refuses the pipelines for which this is
 * not so); the fence says how far the remote is.
 *
 * Each write call runs under a remote savepoint, so that a write that
 * fails there (a value the remote refuses) can be retried row by row by
 * sink_guard.c, as for the table sink, its failing rows dead letters.
 * A write that fails because the link broke fails the checkpoint, and the
 * worker restarts (launcher.c's back-off) and resolves as above.
 *
 * Values go as text, written with the settings postgres_fdw uses (ISO
 * dates, exact floats), read there by a session set up for it
 * (remote_link.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_remote.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "base/settings.h"
#include "sink/remote_link.h"
#include "sink/sink_remote.h"
#include "sink/sink_sql.h"

/* back-off between attempts at a COMMIT PREPARED that failed */
#define RETRY_FIRST_MS 500
#define RETRY_MAX_MS (30 * 1000)

typedef enum RemoteStatement
{
	REMOTE_INSERT,
	REMOTE_UPSERT,
	REMOTE_KEEPING,
	REMOTE_DELETE,
	REMOTE_STATEMENTS
} RemoteStatement;

typedef struct RemoteSink
{
	WeirSink	sink;			/* first: a WeirSink * is a RemoteSink * */
	WeirPipelineRow *row;
	WeirPlan   *plan;
	WeirPipelineSlot *slot;		/* where its commit's trouble shows */
	MemoryContext cxt;			/* what outlives a checkpoint */
	WeirRemoteSinkRow def;
	char	   *what;			/* 'remote sink of pipeline "x"' */
	char	   *table;			/* the remote table, quoted */
	int		   *key;			/* sink column numbers of def.key_columns */
	char	   *sql[REMOTE_STATEMENTS];
	char	   *copy_sql;		/* COPY table (columns) FROM STDIN */
	bool		binary;			/* in COPY's binary format (copy_payload) */
	FmgrInfo   *io;				/* per sink column: its send (binary) or
								 * output function */
	char	   *form;			/* per sink column: its BinaryForm */
	PGconn	   *conn;
	bool		resolved;		/* in-doubt transactions of earlier
								 * processes resolved */
	bool		savepoint;		/* the open transaction has one */
	int64		prepared;		/* checkpoint whose transaction is prepared
								 * there; 0: none */
	uint64		generation;		/* of the worker it writes for (shmem.h) */
} RemoteSink;

/* The name of checkpoint `id`'s prepared transaction */
static char *
gid(RemoteSink *rs, int64 id)
{
	return psprintf("%s" INT64_FORMAT, rs->def.prefix, id);
}

static void
set_trouble(RemoteSink *rs, int64 pending, int attempts, TimestampTz retry_at,
			const char *error)
{
	SpinLockAcquire(&rs->slot->mutex);
	rs->slot->remote_pending = pending;
	rs->slot->remote_attempts = attempts;
	rs->slot->remote_retry_at = retry_at;
	strlcpy(rs->slot->remote_error, error ? error : "", sizeof(rs->slot->remote_error));
	SpinLockRelease(&rs->slot->mutex);
}

static void
ensure_link(RemoteSink *rs)
{
	if (weir_remote_link_ok(rs->conn))
		return;
	if (rs->conn)
		weir_remote_link_close(rs->conn);
	rs->conn = NULL;
	rs->conn = weir_remote_link_connect(rs->def.conninfo, rs->row->owner, rs->what);
}

/*
 * Resolve the prepared transactions of this pipeline that the remote
 * holds: those of checkpoints up to `last_committed` commit, the others
 * roll back.  Needs a link; no transaction open on it.  Returns how many
 * there were.
 */
int
weir_remote_sink_resolve(PGconn *conn, const char *prefix, int64 last_committed,
						 const char *what)
{
	const char *values[1] = {prefix};
	PGresult   *res;
	int			n;

	res = weir_remote_link_exec(conn,
								"SELECT gid FROM pg_catalog.pg_prepared_xacts "
								"WHERE database = pg_catalog.current_database() "
								"AND pg_catalog.starts_with(gid, $1) ORDER BY prepared",
								1, values, what);
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
	{
		const char *g = PQgetvalue(res, i, 0);
		int64		id = pg_strtoint64(g + strlen(prefix));
		bool		commit = id <= last_committed;

		weir_remote_link_command(conn, psprintf("%s PREPARED %s",
												commit ? "COMMIT" : "ROLLBACK",
												quote_literal_cstr(g)), what);
		ereport(LOG,
				(errmsg("%s: %s the prepared transaction of checkpoint " INT64_FORMAT
						" (the last committed here is " INT64_FORMAT ")",
						what, commit ? "committed" : "rolled back", id, last_committed)));
	}
	PQclear(res);
	return n;
}

/*
 * Values of a column as one array, written as text with the settings
 * that read back exactly (as postgres_fdw's set_transmission_modes).
 */
static char *
array_text(WeirColumn *c)
{
	Datum		array = weir_column_array(c);
	Oid			out;
	bool		varlena;
	int			nest = NewGUCNestLevel();
	char	   *text;

	(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	getTypeOutputInfo(get_array_type(c->type), &out, &varlena);
	text = OidOutputFunctionCall(out, array);
	AtEOXact_GUC(true, nest);
	return text;
}

/* The statement of a kind, made once: parameters cast to the arrays' types */
static const char *
statement(RemoteSink *rs, RemoteStatement which)
{
	WeirPlan   *plan = rs->plan;
	MemoryContext old;
	WeirSinkSqlTarget t;
	const char **params;
	int			ncols = plan->nsinkcols;

	if (rs->sql[which])
		return rs->sql[which];
	old = MemoryContextSwitchTo(rs->cxt);
	params = palloc(sizeof(char *) * (ncols + 1));
	if (which == REMOTE_DELETE)
		for (int i = 0; i < rs->def.nkey; i++)
			params[i] = psprintf("$%d::%s", i + 1,
								 format_type_be_qualified(get_array_type(plan->sinkcols[rs->key[i]].type)));
	else
	{
		for (int i = 0; i < ncols; i++)
			params[i] = psprintf("$%d::%s", i + 1,
								 format_type_be_qualified(get_array_type(plan->sinkcols[i].type)));
		params[ncols] = psprintf("$%d::pg_catalog.text[]", ncols + 1);
	}
	t.table = rs->table;
	t.key = rs->key;
	t.nkey = rs->def.nkey;
	t.params = params;
	t.checkpoint_column = NULL;	/* refused for remote sinks (pipeline.c) */
	t.checkpoint_param = NULL;
	switch (which)
	{
		case REMOTE_INSERT:
			rs->sql[which] = weir_sink_sql_insert(plan, &t, false);
			break;
		case REMOTE_UPSERT:
			rs->sql[which] = weir_sink_sql_insert(plan, &t, true);
			break;
		case REMOTE_KEEPING:
			rs->sql[which] = weir_sink_sql_keeping(plan, &t);
			break;
		default:
			rs->sql[which] = weir_sink_sql_delete(plan, &t);
			break;
	}
	MemoryContextSwitchTo(old);
	return rs->sql[which];
}

/*
 * A column's binary form written here rather than by its send function,
 * for the built-in types whose send function only writes the value in
 * network byte order (int4send, timestamp_send, ...): the same bytes,
 * without a StringInfo and a bytea made and freed per value.
 */
typedef enum BinaryForm
{
	BINARY_BY_SEND,				/* its send function */
	BINARY_BOOL,
	BINARY_INT2,
	BINARY_INT4,				/* int4, date, oid */
	BINARY_INT8,				/* int8, timestamp, timestamptz, time */
	BINARY_FLOAT4,
	BINARY_FLOAT8
} BinaryForm;

static BinaryForm
binary_form(Oid type)
{
	switch (type)
	{
		case BOOLOID:
			return BINARY_BOOL;
		case INT2OID:
			return BINARY_INT2;
		case INT4OID:
		case DATEOID:
		case OIDOID:
			return BINARY_INT4;
		case INT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TIMEOID:
			return BINARY_INT8;
		case FLOAT4OID:
			return BINARY_FLOAT4;
		case FLOAT8OID:
			return BINARY_FLOAT8;
		default:
			return BINARY_BY_SEND;
	}
}

/* One value in COPY's binary format: its length, then its binary form */
static void
binary_value(RemoteSink *rs, int c, Datum v, StringInfo buf)
{
	bytea	   *b;

	switch ((BinaryForm) rs->form[c])
	{
		case BINARY_BOOL:
			pq_sendint32(buf, 1);
			pq_sendbyte(buf, DatumGetBool(v) ? 1 : 0);
			return;
		case BINARY_INT2:
			pq_sendint32(buf, 2);
			pq_sendint16(buf, DatumGetInt16(v));
			return;
		case BINARY_INT4:
			pq_sendint32(buf, 4);
			pq_sendint32(buf, DatumGetInt32(v));
			return;
		case BINARY_INT8:
			pq_sendint32(buf, 8);
			pq_sendint64(buf, DatumGetInt64(v));
			return;
		case BINARY_FLOAT4:
			pq_sendint32(buf, 4);
			pq_sendfloat4(buf, DatumGetFloat4(v));
			return;
		case BINARY_FLOAT8:
			pq_sendint32(buf, 8);
			pq_sendfloat8(buf, DatumGetFloat8(v));
			return;
		case BINARY_BY_SEND:
			break;
	}
	b = SendFunctionCall(&rs->io[c], v);
	pq_sendint32(buf, VARSIZE(b) - VARHDRSZ);
	appendBinaryStringInfo(buf, VARDATA(b), VARSIZE(b) - VARHDRSZ);
	pfree(b);
}

/* One value in COPY's text format, escaped */
static void
text_value(RemoteSink *rs, int c, Datum v, StringInfo buf)
{
	for (const char *p = OutputFunctionCall(&rs->io[c], v); *p; p++)
	{
		switch (*p)
		{
			case '\\':
				appendStringInfoString(buf, "\\\\");
				break;
			case '\t':
				appendStringInfoString(buf, "\\t");
				break;
			case '\n':
				appendStringInfoString(buf, "\\n");
				break;
			case '\r':
				appendStringInfoString(buf, "\\r");
				break;
			default:
				appendStringInfoChar(buf, *p);
		}
	}
}

/* Rows per piece of a COPY's input (weir_remote_link_copy sends each) */
#define COPY_PIECE_ROWS 4096

/* The rows of one write, as COPY's input, a piece at a time */
typedef struct CopyRows
{
	RemoteSink *rs;
	WeirColumn *cols;
	int			ncols;
	int			next;			/* the first row not yet in a piece */
	MemoryContext cxt;			/* reset after each piece */
} CopyRows;

/*
 * The next piece of COPY's input: binary when every column's type is one
 * of PostgreSQL's own (the same there, with its binary form), else text.
 * The binary header comes with the first piece, its trailer with the last.
 * A WeirCopyProducer (remote_link.h).
 */
static bool
copy_piece(void *arg, StringInfo buf)
{
	CopyRows   *p = arg;
	RemoteSink *rs = p->rs;
	WeirColumn *cols = p->cols;
	int			end = Min(p->next + COPY_PIECE_ROWS, cols[0].n);
	int			nest = 0;
	MemoryContext old = MemoryContextSwitchTo(p->cxt);

	if (rs->binary && p->next == 0)
	{
		appendBinaryStringInfo(buf, "PGCOPY\n\377\r\n\0", 11);
		pq_sendint32(buf, 0);
		pq_sendint32(buf, 0);
	}
	if (!rs->binary)
	{
		/* text written with the settings that read back exactly (array_text) */
		nest = NewGUCNestLevel();
		(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	for (int r = p->next; r < end; r++)
	{
		if (rs->binary)
			pq_sendint16(buf, (uint16) p->ncols);
		for (int c = 0; c < p->ncols; c++)
		{
			bool		null = cols[c].nulls[r];

			if (rs->binary)
			{
				if (null)
					pq_sendint32(buf, (uint32) -1);
				else
					binary_value(rs, c, cols[c].values[r], buf);
				continue;
			}
			if (c > 0)
				appendStringInfoChar(buf, '\t');
			if (null)
				appendStringInfoString(buf, "\\N");
			else
				text_value(rs, c, cols[c].values[r], buf);
		}
		if (!rs->binary)
			appendStringInfoChar(buf, '\n');
	}
	p->next = end;
	if (!rs->binary)
		AtEOXact_GUC(true, nest);
	else if (end == cols[0].n)
		pq_sendint16(buf, (uint16) -1);
	MemoryContextSwitchTo(old);
	MemoryContextReset(p->cxt);
	return end < cols[0].n;
}

/*
 * Run a write under a savepoint: a failure rolls back to it, so that the
 * transaction there goes on and sink_guard.c can retry row by row.  `sql`
 * is a statement whose parameters are the columns as arrays, or (copy) a
 * COPY ... FROM STDIN of the rows.
 */
static void
run_write(RemoteSink *rs, const char *sql, bool copy, WeirColumn *cols, int ncols)
{
	const char **values = NULL;
	CopyRows	rows = {rs, cols, ncols, 0, NULL};

	if (copy)
		rows.cxt = AllocSetContextCreate(CurrentMemoryContext, "weir remote copy piece",
										 ALLOCSET_DEFAULT_SIZES);
	else
	{
		values = palloc(sizeof(char *) * ncols);
		for (int c = 0; c < ncols; c++)
			values[c] = array_text(&cols[c]);
	}
	weir_remote_link_command(rs->conn, rs->savepoint ?
							 "RELEASE SAVEPOINT weir_write; SAVEPOINT weir_write" :
							 "SAVEPOINT weir_write", rs->what);
	rs->savepoint = true;
	PG_TRY();
	{
		if (copy)
			weir_remote_link_copy(rs->conn, sql, copy_piece, &rows, rs->what);
		else
			PQclear(weir_remote_link_exec(rs->conn, sql, ncols, values, rs->what));
	}
	PG_CATCH();
	{
		/* the link may be gone too: then the checkpoint fails as it is */
		if (weir_remote_link_ok(rs->conn) &&
			PQtransactionStatus(rs->conn) == PQTRANS_INERROR)
		{
			PGresult   *r = PQexec(rs->conn, "ROLLBACK TO SAVEPOINT weir_write");

			PQclear(r);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (rows.cxt)
		MemoryContextDelete(rows.cxt);
}

/*
 * Rows that are new (first emissions) or have no key: COPY, the remote's
 * fastest way in.  New rows that meet rows there already (a checkpoint
 * done again after a crash, with an idempotent sink; a table loaded
 * beforehand) are upserted instead, as the table sink does.
 */
static void
write_new(RemoteSink *rs, WeirColumn *cols, int ncols)
{
	MemoryContext cxt = CurrentMemoryContext;

	if (rs->def.nkey == 0)
	{
		run_write(rs, rs->copy_sql, true, cols, ncols);
		return;
	}
	PG_TRY();
	{
		run_write(rs, rs->copy_sql, true, cols, ncols);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION ||
			PQtransactionStatus(rs->conn) != PQTRANS_INTRANS)
			PG_RE_THROW();
		FlushErrorState();
		run_write(rs, statement(rs, REMOTE_UPSERT), false, cols, ncols);
	}
	PG_END_TRY();
}

static void
remote_write(WeirSink *sink, WeirColumn *cols, int ncols, bool upsert)
{
	RemoteSink *rs = (RemoteSink *) sink;

	if (cols[0].n == 0)
		return;
	if (!upsert || rs->def.nkey == 0)
		write_new(rs, cols, ncols);
	else
		run_write(rs, statement(rs, REMOTE_UPSERT), false, cols, ncols);
}

static void
remote_write_keeping(WeirSink *sink, WeirColumn *cols, int ncols)
{
	RemoteSink *rs = (RemoteSink *) sink;

	if (cols[0].n == 0)
		return;
	run_write(rs, statement(rs, REMOTE_KEEPING), false, cols, ncols);
}

static void
remote_delete(WeirSink *sink, WeirColumn *key, int nkey)
{
	RemoteSink *rs = (RemoteSink *) sink;

	if (key[0].n == 0)
		return;
	run_write(rs, statement(rs, REMOTE_DELETE), false, key, nkey);
}

/* Before a failed write is blamed on its rows: the link must be there */
static void
remote_recheck(WeirSink *sink)
{
	RemoteSink *rs = (RemoteSink *) sink;

	if (!weir_remote_link_ok(rs->conn) ||
		PQtransactionStatus(rs->conn) != PQTRANS_INTRANS)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the link to the %s broke during a checkpoint", rs->what)));
}

/*
 * Whether the link answers (a statement that does nothing); false when it
 * broke, and the error says so.  Other errors are raised.
 */
static bool
try_begin(RemoteSink *rs)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		ok = true;

	PG_TRY();
	{
		weir_remote_link_command(rs->conn, "SELECT", rs->what);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (!weir_remote_link_error_is_connection(edata->sqlerrcode) ||
			weir_remote_link_ok(rs->conn))
			PG_RE_THROW();
		FlushErrorState();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * A checkpoint's writes start: a link (made again if it broke), the
 * in-doubt transactions of earlier processes resolved (the first time),
 * then a transaction there.
 */
static void
remote_begin(WeirSink *sink)
{
	RemoteSink *rs = (RemoteSink *) sink;

	/* a commit still pending would hold locks this transaction needs */
	if (rs->prepared != 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("the %s still has the transaction of checkpoint " INT64_FORMAT " prepared",
						rs->what, rs->prepared)));
	ensure_link(rs);
	/* a link idle since the last checkpoint may have broken: one more try */
	if (!try_begin(rs))
	{
		weir_remote_link_close(rs->conn);
		rs->conn = NULL;
		ensure_link(rs);
		(void) try_begin(rs);
	}
	if (!rs->resolved && rs->def.commit == WEIR_REMOTE_TWO_PHASE)
	{
		/* checkpoint N is written after N - 1 committed here, and only then */
		(void) weir_remote_sink_resolve(rs->conn, rs->def.prefix, sink->checkpoint_id - 1,
										rs->what);
		rs->resolved = true;
	}
	weir_remote_link_command(rs->conn, "BEGIN ISOLATION LEVEL READ COMMITTED", rs->what);
	rs->savepoint = false;
}

/* Its writes are done, and the local commit comes next */
static void
remote_prepare(WeirSink *sink)
{
	RemoteSink *rs = (RemoteSink *) sink;

	if (rs->def.commit == WEIR_REMOTE_IDEMPOTENT)
	{
		const char *values[2];

		values[0] = rs->def.prefix;
		values[1] = psprintf(INT64_FORMAT, sink->checkpoint_id);
		PQclear(weir_remote_link_exec(rs->conn,
									  psprintf("INSERT INTO %s.weir_sink_fence AS f (sink, checkpoint_id, applied_at) "
											   "VALUES ($1, $2, pg_catalog.now()) ON CONFLICT (sink) DO UPDATE "
											   "SET checkpoint_id = EXCLUDED.checkpoint_id, applied_at = EXCLUDED.applied_at",
											   quote_identifier(rs->def.remote_schema)),
									  2, values, rs->what));
		weir_remote_link_command(rs->conn, "COMMIT", rs->what);
		return;
	}
	weir_remote_link_command(rs->conn,
							 psprintf("PREPARE TRANSACTION %s",
									  quote_literal_cstr(gid(rs, sink->checkpoint_id))),
							 rs->what);
	rs->prepared = sink->checkpoint_id;
	weir_fault_point_reached("remote_after_prepare");
}

/*
 * The local commit happened: COMMIT PREPARED, until it succeeds.  Outside
 * any transaction; waits answer interrupts (a worker told to stop goes,
 * and its successor resolves).
 */
static void
remote_committed(WeirSink *sink)
{
	RemoteSink *rs = (RemoteSink *) sink;
	MemoryContext cxt;
	int			wait_ms = RETRY_FIRST_MS;
	int			attempts = 0;

	if (rs->prepared == 0)
		return;
	weir_fault_point_reached("remote_after_local_commit");
	cxt = AllocSetContextCreate(CurrentMemoryContext, "weir remote commit",
								ALLOCSET_SMALL_SIZES);
	for (;;)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		ErrorData  *edata = NULL;

		/* a new weir.fault_point reaches a writer that retries here */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		PG_TRY();
		{
			ensure_link(rs);
			if (weir_fault_point_is("remote_commit_fails"))
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("%s: weir.fault_point \"remote_commit_fails\"", rs->what)));
			weir_remote_link_command(rs->conn,
									 psprintf("COMMIT PREPARED %s",
											  quote_literal_cstr(gid(rs, rs->prepared))),
									 rs->what);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		/* gone: resolved by hand meanwhile (there is nothing else to do) */
		if (edata && edata->sqlerrcode == ERRCODE_UNDEFINED_OBJECT)
		{
			ereport(WARNING,
					(errmsg("%s: the prepared transaction of checkpoint " INT64_FORMAT " is gone: %s",
							rs->what, rs->prepared, edata->message)));
			edata = NULL;
		}
		if (edata == NULL)
			break;
		/* a writer whose worker left: the next worker resolves, at its start */
		if (weir_shmem_pipeline_generation(rs->slot) != rs->generation)
		{
			ereport(LOG,
					(errmsg("%s: the worker left; its successor resolves the transaction of checkpoint " INT64_FORMAT,
							rs->what, rs->prepared)));
			proc_exit(0);
		}
		attempts++;
		set_trouble(rs, rs->prepared, attempts,
					TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms),
					edata->message);
		if (attempts == 1)
			ereport(WARNING,
					(errmsg("%s: COMMIT PREPARED of checkpoint " INT64_FORMAT " failed, retrying: %s",
							rs->what, rs->prepared, edata->message)));
		if (!weir_remote_link_ok(rs->conn))
		{
			if (rs->conn)
				weir_remote_link_close(rs->conn);
			rs->conn = NULL;
		}
		MemoryContextReset(cxt);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		wait_ms = Min(wait_ms * 2, RETRY_MAX_MS);
	}
	MemoryContextDelete(cxt);
	rs->prepared = 0;
	if (attempts > 0)
		set_trouble(rs, 0, 0, 0, NULL);
}

static const WeirSinkOps remote_ops = {
	.write = remote_write,
	.write_keeping = remote_write_keeping,
	.delete = remote_delete,
	.recheck = remote_recheck,
	.begin = remote_begin,
	.prepare = remote_prepare,
	.committed = remote_committed,
};

/*
 * COPY's format: binary when every sink column's type is built in (its OID
 * and binary form are the same there) and has a binary form; the
 * functions that write each column.
 */
static void
setup_copy(RemoteSink *rs)
{
	WeirPlan   *plan = rs->plan;
	StringInfoData sql;

	rs->binary = true;
	for (int i = 0; i < plan->nsinkcols; i++)
	{
		Oid			type = plan->sinkcols[i].type;
		Oid			elem = get_element_type(type);
		HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for type %u", type);
		if (type >= FirstNormalObjectId || (OidIsValid(elem) && elem >= FirstNormalObjectId) ||
			!OidIsValid(((Form_pg_type) GETSTRUCT(tup))->typsend) ||
			((Form_pg_type) GETSTRUCT(tup))->typtype == TYPTYPE_COMPOSITE)
			rs->binary = false;
		ReleaseSysCache(tup);
	}
	rs->io = palloc(sizeof(FmgrInfo) * Max(plan->nsinkcols, 1));
	rs->form = palloc(Max(plan->nsinkcols, 1));
	for (int i = 0; i < plan->nsinkcols; i++)
	{
		Oid			func;
		bool		varlena;

		rs->form[i] = (char) (rs->binary ? binary_form(plan->sinkcols[i].type) : BINARY_BY_SEND);

		if (rs->binary)
			getTypeBinaryOutputInfo(plan->sinkcols[i].type, &func, &varlena);
		else
			getTypeOutputInfo(plan->sinkcols[i].type, &func, &varlena);
		fmgr_info_cxt(func, &rs->io[i], rs->cxt);
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "COPY %s (", rs->table);
	for (int i = 0; i < plan->nsinkcols; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", quote_identifier(plan->sinkcols[i].name));
	appendStringInfo(&sql, ") FROM STDIN%s", rs->binary ? " (FORMAT binary)" : "");
	rs->copy_sql = sql.data;
}

/*
 * The remote sink of pipeline `row` (which must outlive it), in cxt.
 * Needs a transaction (its catalog row); connects at its first checkpoint.
 */
WeirSink *
weir_sink_remote_open(WeirPipelineRow *row, WeirPlan *plan, WeirPipelineSlot *slot,
					  MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	RemoteSink *rs = palloc0(sizeof(RemoteSink));
	const char **names = palloc(sizeof(char *) * (plan->nsinkcols + 1));

	if (!weir_catalog_remote_sink(row->id, &rs->def))
		elog(ERROR, "pipeline \"%s\" has no remote sink", row->name);
	for (int i = 0; i < plan->nsinkcols; i++)
		names[i] = plan->sinkcols[i].name;
	names[plan->nsinkcols] = WEIR_SINK_KEPT_COLUMN;
	rs->key = palloc(sizeof(int) * Max(rs->def.nkey, 1));
	for (int k = 0; k < rs->def.nkey; k++)
	{
		rs->key[k] = -1;
		for (int i = 0; i < plan->nsinkcols; i++)
			if (strcmp(plan->sinkcols[i].name, rs->def.key_columns[k]) == 0)
				rs->key[k] = i;
		if (rs->key[k] < 0)
			elog(ERROR, "remote sink key column \"%s\" is not a sink column",
				 rs->def.key_columns[k]);
	}
	rs->sink.ops = &remote_ops;
	rs->sink.relid = InvalidOid;
	rs->sink.names = names;
	rs->row = row;
	rs->plan = plan;
	rs->slot = slot;
	rs->generation = weir_shmem_pipeline_generation(slot);
	rs->cxt = cxt;
	rs->what = psprintf("remote sink of pipeline \"%s\"", row->name);
	rs->table = psprintf("%s.%s", quote_identifier(rs->def.remote_schema),
						 quote_identifier(rs->def.remote_table));
	setup_copy(rs);
	MemoryContextSwitchTo(old);
	return &rs->sink;
}
