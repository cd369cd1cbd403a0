/*-------------------------------------------------------------------------
 *
 * checkpoint_writer.h
 *	  A pipeline's checkpoint writer: a second process that writes the
 *	  worker's checkpoints while the worker reads on (checkpoint_writer.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_writer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHECKPOINT_WRITER_H
#define WEIR_CHECKPOINT_WRITER_H

#include "base/shmem.h"
#include "catalog_sql/catalog_pipeline.h"
#include "checkpoint/checkpoint_apply.h"
#include "checkpoint/checkpoint_package.h"

typedef struct WeirWriterLink WeirWriterLink;

/* What the writer is doing, as the worker sees it */
typedef enum WeirWriterState
{
	WEIR_WRITER_IDLE,			/* nothing in flight */
	WEIR_WRITER_BUSY,			/* a checkpoint is being written */
	WEIR_WRITER_COMMITTED		/* the one in flight committed: now idle */
} WeirWriterState;

extern PGDLLEXPORT void weir_checkpoint_writer_main(Datum main_arg);

extern void weir_writer_wait_for_predecessor(int32 pipeline_id);
extern bool weir_writer_gone(int32 pipeline_id);
extern WeirWriterLink *weir_writer_start(const WeirPipelineRow *row, WeirPipelineSlot *slot,
										 int64 checkpoint_id, int pipelines,
										 MemoryContext cxt);
extern void weir_writer_send(WeirWriterLink *link, WeirPackage *pkg);
extern WeirWriterState weir_writer_poll(WeirWriterLink *link, WeirCheckpointResult *res);
extern void weir_writer_stop(WeirWriterLink *link, WeirPipelineSlot *slot,
							 const char *name);

#endif							/* WEIR_CHECKPOINT_WRITER_H */
