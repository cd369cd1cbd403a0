/*-------------------------------------------------------------------------
 *
 * remote_link.h
 *	  A connection to a remote PostgreSQL server that a remote sink writes
 *	  to: libpq, with waits that answer interrupts, and messages that never
 *	  show the connection string.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/remote_link.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_LINK_H
#define WEIR_REMOTE_LINK_H

#include "lib/stringinfo.h"
#include "libpq-fe.h"

/* Appends the next piece of a COPY's input to buf; false after the last */
typedef bool (*WeirCopyProducer) (void *arg, StringInfo buf);

extern PGconn *weir_remote_link_connect(const char *conninfo, Oid owner, const char *what);
extern void weir_remote_link_close(PGconn *conn);
extern PGresult *weir_remote_link_exec(PGconn *conn, const char *sql, int nparams,
									   const char *const *values, const char *what);
extern void weir_remote_link_command(PGconn *conn, const char *sql, const char *what);
extern void weir_remote_link_copy(PGconn *conn, const char *copy, WeirCopyProducer produce,
								  void *arg, const char *what);
extern bool weir_remote_link_ok(PGconn *conn);
extern bool weir_remote_link_error_is_connection(int sqlerrcode);

#endif							/* WEIR_REMOTE_LINK_H */
