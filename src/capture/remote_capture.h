/*-------------------------------------------------------------------------
 *
 * remote_capture.h
 *	  A capture of another server's tables over a replication connection
 *	  with pgoutput (remote_capture.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_capture.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_CAPTURE_H
#define WEIR_REMOTE_CAPTURE_H

#include "capture/capture_catalog.h"
#include "capture/capture_shmem.h"

extern void weir_remote_capture_run(WeirCaptureRow *capture, WeirCaptureSlot *slot)
			pg_attribute_noreturn();

#endif							/* WEIR_REMOTE_CAPTURE_H */
