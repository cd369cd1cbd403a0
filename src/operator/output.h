/*-------------------------------------------------------------------------
 *
 * output.h
 *	  What an operator owes the sink, into a checkpoint's package: rows,
 *	  deletions, rows kept record by record, and the windows that could not
 *	  be rows, as dead letters of the sink.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/output.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_OPERATOR_OUTPUT_H
#define WEIR_OPERATOR_OUTPUT_H

#include "checkpoint/checkpoint_package.h"
#include "operator/operator.h"
#include "sink/sink_rows.h"

/*
 * Records passed on as they are (dedup, projection): their column values,
 * the sink's next rows, kept until a checkpoint commits them.
 */
typedef struct WeirKeptRows
{
	WeirPlan   *plan;
	MemoryContext cxt;			/* by-reference values; reset after each checkpoint */
	WeirColumn *pending;		/* [plan->ncolumns] */
} WeirKeptRows;

extern void weir_kept_rows_init(WeirKeptRows *k, WeirPlan *plan, MemoryContext parent);
extern void weir_kept_rows_add(WeirKeptRows *k, Datum *values, bool *nulls);
extern void weir_kept_rows_forget(WeirKeptRows *k);

extern void weir_output_rows(WeirOperator *op, WeirPackage *pkg, WeirPackageOpKind kind,
							 WeirSinkRows *rows);
extern void weir_output_deletes(WeirPackage *pkg, WeirColumn **key, int nkey);
extern void weir_output_kept(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark,
							 WeirColumn *pending, WeirKeyedCollected *collected,
							 WeirCollected *n);

#endif							/* WEIR_OPERATOR_OUTPUT_H */
