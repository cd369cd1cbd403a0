/*-------------------------------------------------------------------------
 *
 * capture_worker.h
 *	  A capture's background worker (capture_worker.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_WORKER_H
#define WEIR_CAPTURE_WORKER_H

#include "capture/capture_apply.h"
#include "capture/capture_shmem.h"

extern PGDLLEXPORT void weir_capture_main(Datum main_arg);

#endif							/* WEIR_CAPTURE_WORKER_H */
