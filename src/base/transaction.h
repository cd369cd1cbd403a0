/*-------------------------------------------------------------------------
 *
 * transaction.h
 *	  A background process's transaction, with a snapshot (transaction.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/transaction.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TRANSACTION_H
#define WEIR_TRANSACTION_H

extern void weir_transaction_begin(void);
extern void weir_transaction_end(void);

#endif							/* WEIR_TRANSACTION_H */
