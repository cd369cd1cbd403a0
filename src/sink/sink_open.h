/*-------------------------------------------------------------------------
 *
 * sink_open.h
 *	  A pipeline's sink, of whichever kind it has.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_open.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_OPEN_H
#define WEIR_SINK_OPEN_H

#include "base/shmem.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"
#include "sink/sink_ops.h"

extern WeirSink *weir_sink_open(WeirPipelineRow *row, WeirPlan *plan, WeirPipelineSlot *slot,
								MemoryContext cxt);

#endif							/* WEIR_SINK_OPEN_H */
