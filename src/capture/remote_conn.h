/*-------------------------------------------------------------------------
 *
 * remote_conn.h
 *	  A remote capture's connection to the publishing server, through
 *	  libpqwalreceiver (remote_conn.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_conn.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_CONN_H
#define WEIR_REMOTE_CONN_H

#include "replication/walreceiver.h"

extern WalReceiverConn *weir_remote_connect(const char *conninfo, const char *appname,
											const char *capture);
extern WalRcvExecResult *weir_remote_query(WalReceiverConn *conn, const char *sql,
										   int ncolumns, const char *capture);
extern char *weir_remote_value(TupleTableSlot *slot, int column);

#endif							/* WEIR_REMOTE_CONN_H */
