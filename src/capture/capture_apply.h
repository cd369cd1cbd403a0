/*-------------------------------------------------------------------------
 *
 * capture_apply.h
 *	  Turning a batch of weir's output plugin messages into topic rows
 *	  (capture_apply.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_apply.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_APPLY_H
#define WEIR_CAPTURE_APPLY_H

#include "utils/tuplestore.h"

#include "capture/capture_catalog.h"
#include "capture/capture_shmem.h"

extern void weir_capture_apply_messages(WeirCaptureRow *capture, Tuplestorestate *messages,
										XLogRecPtr upto, WeirCaptureProgress *progress);

#endif							/* WEIR_CAPTURE_APPLY_H */
