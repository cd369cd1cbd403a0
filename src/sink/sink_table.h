/*-------------------------------------------------------------------------
 *
 * sink_table.h
 *	  A pipeline's sink table, as a sink (sink_ops.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_table.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_TABLE_H
#define WEIR_SINK_TABLE_H

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"
#include "sink/sink_ops.h"

extern WeirSink *weir_sink_table_open(WeirPipelineRow *row, WeirPlan *plan,
									  MemoryContext cxt);

#endif							/* WEIR_SINK_TABLE_H */
