/*-------------------------------------------------------------------------
 *
 * remote_link.c
 *	  A connection to a remote PostgreSQL server that a remote sink writes
 *	  to (remote_link.h).
 *
 * libpq through PostgreSQL's own helpers (libpq/libpq-be-fe-helpers.h):
 * the connection counts as an external file descriptor, and every wait is
 * on the latch and the socket, so a stuck remote never keeps a worker from
 * answering SIGTERM.
 *
 * Security (doc/security.md): the connection string is the pipeline
 * owner's, and this runs in a server process.  A string without a
 * password could log in through the local server's own credentials (peer
 * or trust authentication as the OS user postgres, its ~/.pgpass).  So, as
 * dblink and postgres_fdw require, an owner who is not a superuser must
 * give a password, and the remote must have asked for it.  The string
 * never appears in a message: libpq's messages name host and port at
 * most, except for a string it cannot parse, whose message is replaced.
 *
 * The session is set up so that values sent as text read back as written:
 * ISO dates, PostgreSQL interval style, exact floats, UTC, an empty
 * search_path (statements name everything).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/remote_link.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
#include "libpq/libpq-be-fe-helpers.h"

#include "sink/remote_link.h"

/* A libpq message that may quote the connection string, made safe to show */
static const char *
safe_error(const char *err)
{
	if (err == NULL || err[0] == '\0')
		return "no error message";
	/* libpq's messages run over lines: the first says what happened */
	if (strchr(err, '\n') != NULL)
	{
		char	   *first = pstrdup(err);

		first[strcspn(first, "\n")] = '\0';
		err = first;
	}
	if (strstr(err, "connection info string") != NULL ||
		strstr(err, "connection option") != NULL ||
		strstr(err, "URI") != NULL ||
		strstr(err, "conninfo") != NULL)
		return "The connection string is malformed.";
	return err;
}

static bool
conninfo_has_password(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	bool		found = false;

	if (opts == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the connection string of %s is malformed", "the remote sink"),
				 errhint("Write it as libpq does: 'host=... dbname=... user=... password=...' or a postgresql:// URI.")));
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL && o->val[0] != '\0')
			found = true;
	PQconninfoFree(opts);
	return found;
}

/*
 * Connect for `owner` (`what` names the sink in messages); ereports 08006
 * when the server cannot be reached, 2F003 when an owner who is not a
 * superuser gave no password or the remote did not use it.
 */
PGconn *
weir_remote_link_connect(const char *conninfo, Oid owner, const char *what)
{
	/* defaults first: the string's own values come later and win */
	const char *keywords[] = {"connect_timeout", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "application_name", "dbname", NULL};
	const char *values[] = {"10", "30", "10", "6", "weir remote sink", conninfo, NULL};
	bool		superuser = superuser_arg(owner);
	PGconn	   *conn;

	if (!superuser && !conninfo_has_password(conninfo))
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required for %s", what),
				 errhint("A role that is not a superuser must give a password in the connection string: without one, the connection could log in with the database server's own credentials.")));
	conn = libpqsrv_connect_params(keywords, values, 1, PG_WAIT_EXTENSION);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		char	   *err = pstrdup(safe_error(conn ? PQerrorMessage(conn) : NULL));

		libpqsrv_disconnect(conn);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to the remote server of %s", what),
				 errdetail_internal("%s", err)));
	}
	if (!superuser && !PQconnectionUsedPassword(conn))
	{
		libpqsrv_disconnect(conn);
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required for %s", what),
				 errdetail("The remote server did not ask for the password."),
				 errhint("Set its authentication method (pg_hba.conf) to one that asks for a password.")));
	}
	PG_TRY();
	{
		weir_remote_link_command(conn, "SET datestyle = ISO; SET intervalstyle = postgres; "
								 "SET extra_float_digits = 3; SET timezone = UTC; "
								 "SET search_path = pg_catalog", what);
	}
	PG_CATCH();
	{
		libpqsrv_disconnect(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return conn;
}

void
weir_remote_link_close(PGconn *conn)
{
	libpqsrv_disconnect(conn);
}

bool
weir_remote_link_ok(PGconn *conn)
{
	return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}

/* Errors that say the remote could not be reached or the link broke */
bool
weir_remote_link_error_is_connection(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_CONNECTION_EXCEPTION;
}

/*
 * Run `sql` with text parameters; returns its result (the caller
 * PQclears it).  A failure ereports the remote's own SQLSTATE and message
 * (08006 if the link broke), naming `what`.
 */
PGresult *
weir_remote_link_exec(PGconn *conn, const char *sql, int nparams,
					  const char *const *values, const char *what)
{
	PGresult   *res;
	ExecStatusType st;
	char	   *msg;
	char	   *detail;
	char	   *hint;
	const char *state;
	int			code;

	/* without parameters, the simple protocol: several statements may go */
	if (nparams == 0)
		res = libpqsrv_exec(conn, sql, PG_WAIT_EXTENSION);
	else
		res = libpqsrv_exec_params(conn, sql, nparams, NULL, values, NULL, NULL, 0,
								   PG_WAIT_EXTENSION);
	st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return res;

	/* the remote's error, copied before the result goes */
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	code = state && strlen(state) == 5 ?
		MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]) :
		ERRCODE_CONNECTION_FAILURE;
	if (PQstatus(conn) != CONNECTION_OK)
		code = ERRCODE_CONNECTION_FAILURE;
	msg = res && PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) ?
		pstrdup(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)) :
		pstrdup(safe_error(PQerrorMessage(conn)));
	detail = res && PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) ?
		pstrdup(PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL)) : NULL;
	hint = res && PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) ?
		pstrdup(PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)) : NULL;
	PQclear(res);
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s: %s", what, msg),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
	return NULL;				/* keep the compiler quiet */
}

/* Run a statement whose result says nothing */
void
weir_remote_link_command(PGconn *conn, const char *sql, const char *what)
{
	PQclear(weir_remote_link_exec(conn, sql, 0, NULL, what));
}

/* Wait until the socket can take more, answering interrupts */
static void
wait_writable(PGconn *conn)
{
	(void) WaitLatchOrSocket(MyLatch, WL_EXIT_ON_PM_DEATH | WL_LATCH_SET | WL_SOCKET_WRITEABLE,
							 PQsocket(conn), 0, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Raise a failed COPY's error (or the link's) */
static void
copy_failed(PGconn *conn, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int			code = state && strlen(state) == 5 && PQstatus(conn) == CONNECTION_OK ?
		MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]) :
		ERRCODE_CONNECTION_FAILURE;
	char	   *msg = pstrdup(res && PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) ?
							  PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) :
							  safe_error(PQerrorMessage(conn)));
	char	   *detail = res && PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) ?
		pstrdup(PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL)) : NULL;

	PQclear(res);
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s: %s", what, msg),
			 detail ? errdetail_internal("%s", detail) : 0));
}

/* Queue `len` bytes of COPY data, waiting only while libpq cannot take them */
static void
put_copy_data(PGconn *conn, const char *data, Size len, const char *what)
{
	Size		sent = 0;

	while (sent < len)
	{
		int			piece = (int) Min(len - sent, (Size) 1024 * 1024);
		int			rc = PQputCopyData(conn, data + sent, piece);

		if (rc < 0)
			copy_failed(conn, NULL, what);
		if (rc == 0)
		{
			wait_writable(conn);
			continue;
		}
		sent += piece;
	}
	/* send what the socket takes now, without waiting for the rest */
	if (PQflush(conn) < 0)
		copy_failed(conn, NULL, what);
}

/*
 * COPY ... FROM STDIN, its input made piece by piece by produce(arg, buf)
 * (which appends the next piece to buf and returns false after the last).
 * Each piece goes as soon as it is made, so the remote reads and inserts
 * the rows while the next ones are being encoded here, rather than after
 * all of them.  The link is non-blocking while the data goes, so that a
 * remote that stops reading never keeps this process from its interrupts.
 */
void
weir_remote_link_copy(PGconn *conn, const char *copy, WeirCopyProducer produce, void *arg,
					  const char *what)
{
	PGresult   *res;
	StringInfoData piece;

	if (!PQsendQuery(conn, copy))
		copy_failed(conn, NULL, what);
	res = libpqsrv_get_result(conn, PG_WAIT_EXTENSION);
	if (res == NULL || PQresultStatus(res) != PGRES_COPY_IN)
	{
		/* the statement failed: its error, after the rest of its results */
		PQclear(libpqsrv_get_result_last(conn, PG_WAIT_EXTENSION));
		copy_failed(conn, res, what);
	}
	PQclear(res);
	if (PQsetnonblocking(conn, 1) != 0)
		copy_failed(conn, NULL, what);
	initStringInfo(&piece);
	PG_TRY();
	{
		bool		more;

		do
		{
			resetStringInfo(&piece);
			more = produce(arg, &piece);
			put_copy_data(conn, piece.data, piece.len, what);
		} while (more);
		for (;;)
		{
			int			rc = PQputCopyEnd(conn, NULL);

			if (rc < 0)
				copy_failed(conn, NULL, what);
			if (rc == 1)
				break;
			wait_writable(conn);
		}
		for (;;)
		{
			int			rc = PQflush(conn);

			if (rc < 0)
				copy_failed(conn, NULL, what);
			if (rc == 0)
				break;
			wait_writable(conn);
		}
	}
	PG_CATCH();
	{
		(void) PQsetnonblocking(conn, 0);
		/*
		 * A piece that could not be made (an output function's error) leaves
		 * the remote in the COPY: end it there as failed, so that its
		 * transaction can roll back to the write's savepoint and go on.
		 */
		if (weir_remote_link_ok(conn) && PQputCopyEnd(conn, "weir: the rows could not be encoded") == 1)
			PQclear(libpqsrv_get_result_last(conn, PG_WAIT_EXTENSION));
		PG_RE_THROW();
	}
	PG_END_TRY();
	(void) PQsetnonblocking(conn, 0);
	pfree(piece.data);
	res = libpqsrv_get_result_last(conn, PG_WAIT_EXTENSION);
	if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK)
		copy_failed(conn, res, what);
	PQclear(res);
}
