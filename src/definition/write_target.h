/*-------------------------------------------------------------------------
 *
 * write_target.h
 *	  Checks of the tables a pipeline reads and writes, at creation and at
 *	  each start, and the dependencies that keep them in shape.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/write_target.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WRITE_TARGET_H
#define WEIR_WRITE_TARGET_H

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"

extern void weir_check_source(Oid source, Oid owner);
extern void weir_check_checkpoint_column_name(WeirPlan *plan, const char *name);
extern void weir_check_sink(WeirPlan *plan, WeirPipelineRow *row, Oid sink, Oid owner);
extern void weir_check_late_records(WeirPipelineRow *row, Oid late, Oid owner);
extern char *weir_late_records_definition(const WeirPipelineRow *row, const char *qualified);
extern void weir_check_tables(WeirPlan *plan, WeirPipelineRow *row, Oid owner);
extern void weir_depend_on_tables(Oid view, WeirPlan *plan, WeirPipelineRow *row);

extern char *weir_sink_definition(WeirPlan *plan, const char *qualified);

#endif							/* WEIR_WRITE_TARGET_H */
