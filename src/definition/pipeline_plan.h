/*-------------------------------------------------------------------------
 *
 * pipeline_plan.h
 *	  A pipeline's catalog row as the processes that run it need it
 *	  (pipeline_plan.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/pipeline_plan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_PIPELINE_PLAN_H
#define WEIR_PIPELINE_PLAN_H

#include "catalog_sql/catalog_pipeline.h"
#include "definition/definition.h"

extern WeirOperatorKind weir_pipeline_operator(WeirPipelineRow *row);
extern void weir_pipeline_plan_options(WeirPipelineRow *row, WeirPlanOptions *o);
extern WeirPlan *weir_pipeline_plan(WeirPipelineRow *row);
extern void weir_pipeline_act_as_owner(WeirPipelineRow *row);
extern WeirPipelineRow weir_pipeline_for_owner(const char *name);

#endif							/* WEIR_PIPELINE_PLAN_H */
