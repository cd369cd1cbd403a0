/*-------------------------------------------------------------------------
 *
 * checkpoint.h
 *	  A pipeline's checkpoint, as the worker takes it (checkpoint.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/checkpoint.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHECKPOINT_H
#define WEIR_CHECKPOINT_H

#include "checkpoint/checkpoint_apply.h"
#include "checkpoint/checkpoint_package.h"
#include "pipeline/worker.h"

extern void weir_checkpoint_restore(WeirWorker *w);
extern void weir_checkpoint_collect(WeirWorker *w, TimestampTz due, int64 served,
									WeirPackage *pkg);
extern void weir_checkpoint_committed(WeirWorker *w, const WeirCheckpointResult *res);

#endif							/* WEIR_CHECKPOINT_H */
