/*-------------------------------------------------------------------------
 *
 * remote_conn.c
 *	  A remote capture's connection to the publishing server.
 *
 * PostgreSQL 15's libpqwalreceiver, loaded at run time, gives a
 * replication=database connection: it streams a logical slot and also
 * runs SQL (walrcv_exec), and its waits are interruptible (they wait on
 * the latch and the socket).  The role it logs in as therefore needs the
 * REPLICATION attribute on the remote server, and a pg_hba "replication"
 * line.
 *
 * The connection string may hold a password: it never appears in a
 * message.  libpq's own messages name the host and port at most, except
 * when it cannot parse the string, where it may quote a piece of it: that
 * message is replaced with a sentence of ours.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_conn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "capture/remote_conn.h"

/* A libpq error that may quote the connection string, made safe to show */
static const char *
safe_error(const char *err)
{
	if (err == NULL)
		return "no error message";
	if (strstr(err, "connection info string") != NULL ||
		strstr(err, "connection option") != NULL ||
		strstr(err, "URI") != NULL)
		return "The connection string is malformed.";
	return err;
}

/*
 * Connect to the remote server of capture `capture` (named in messages)
 * as application `appname`; ereports 08006 on failure.
 */
WalReceiverConn *
weir_remote_connect(const char *conninfo, const char *appname, const char *capture)
{
	MemoryContext cxt = CurrentMemoryContext;
	WalReceiverConn *volatile conn;
	char	   *volatile err = NULL;

	load_file("libpqwalreceiver", false);
	PG_TRY();
	{
		char	   *e = NULL;

		conn = walrcv_connect(conninfo, true, appname, &e);
		err = e;
	}
	PG_CATCH();
	{
		/* a string libpq cannot parse: its detail may quote the string */
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		err = edata->detail ? edata->detail : edata->message;
		conn = NULL;
	}
	PG_END_TRY();
	if (conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to the remote server of capture \"%s\"", capture),
				 errdetail_internal("%s", safe_error(err)),
				 errhint("The remote server needs a role with the REPLICATION attribute and a pg_hba.conf \"replication\" line for it.")));
	return conn;
}

/*
 * Run `sql` on the remote server; its `ncolumns` columns come back as
 * text.  The caller frees the result with walrcv_clear_result.
 */
WalRcvExecResult *
weir_remote_query(WalReceiverConn *conn, const char *sql, int ncolumns, const char *capture)
{
	Oid		   *types = palloc(sizeof(Oid) * Max(ncolumns, 1));
	WalRcvExecResult *res;

	for (int i = 0; i < ncolumns; i++)
		types[i] = TEXTOID;
	res = walrcv_exec(conn, sql, ncolumns, types);
	if (res->status != WALRCV_OK_TUPLES && res->status != WALRCV_OK_COMMAND)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not query the remote server of capture \"%s\"", capture),
				 errdetail_internal("%s", safe_error(res->err))));
	return res;
}

/* Column `column` (from 1) of a row of a weir_remote_query result, or NULL */
char *
weir_remote_value(TupleTableSlot *slot, int column)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, column, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}
