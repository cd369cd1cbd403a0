/*-------------------------------------------------------------------------
 *
 * definition_restored.h
 *	  The dependencies of a definition view made again by pg_restore.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_restored.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEFINITION_RESTORED_H
#define WEIR_DEFINITION_RESTORED_H

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"

extern void weir_definition_depend_again(WeirPlan *plan, WeirPipelineRow *row);

#endif							/* WEIR_DEFINITION_RESTORED_H */
