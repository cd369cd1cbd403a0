/*-------------------------------------------------------------------------
 *
 * transaction.c
 *	  A background process's transaction (a worker's round, a checkpoint
 *	  writer's package, a restore, a launcher's pass): a statement start
 *	  time, and an active snapshot for SPI and the user's expressions.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/transaction.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/snapmgr.h"

#include "base/transaction.h"

void
weir_transaction_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* Commit; CurrentMemoryContext is then TopMemoryContext. */
void
weir_transaction_end(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}
