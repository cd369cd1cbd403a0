/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The weir launcher background worker.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_LAUNCHER_H
#define WEIR_LAUNCHER_H

extern void weir_launcher_register(void);
extern PGDLLEXPORT void weir_launcher_main(Datum main_arg);

#endif							/* WEIR_LAUNCHER_H */
