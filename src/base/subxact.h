/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Work in a subtransaction of its own.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/subxact.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SUBXACT_H
#define WEIR_SUBXACT_H

extern bool weir_in_subtransaction(void (*work) (void *arg), void *arg, ErrorData **error);

#endif							/* WEIR_SUBXACT_H */
