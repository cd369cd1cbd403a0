/*-------------------------------------------------------------------------
 *
 * weir.h
 *	  Library entry point of the weir extension.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/weir.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WEIR_H
#define WEIR_WEIR_H

extern void _PG_init(void);

/* SQL-callable only: weir_check_preloaded */

#endif							/* WEIR_WEIR_H */
