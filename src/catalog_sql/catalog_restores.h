/*-------------------------------------------------------------------------
 *
 * catalog_restores.h
 *	  SQL on weir.restores: restores and drills, and what a worker learns
 *	  after its restore (catalog_restores.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_restores.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_RESTORES_H
#define WEIR_CATALOG_RESTORES_H

#include "access/htup.h"
#include "datatype/timestamp.h"
#include "utils/memutils.h"

/* A row just written to weir.restores, and the target it is held to */
typedef struct WeirRestoreRecord
{
	int64		id;				/* weir.restores.id */
	double		rate_before;	/* records/s; < 0: not known */
	double		target_ms;		/* the pipeline's recovery_target; < 0: none */
	HeapTuple	tuple;			/* the whole row, in the caller's context */
} WeirRestoreRecord;

extern void weir_catalog_pipeline_set_recovery_target(int32 id, Interval *target);
extern void weir_catalog_insert_restore(int32 id, int64 checkpoint_id, bool drill,
										double duration_ms, int64 bytes, int64 rows,
										WeirRestoreRecord *rec);
extern void weir_catalog_restore_followed(int64 restore_id, double first_record_ms,
										  double back_to_rate_ms);

#endif							/* WEIR_CATALOG_RESTORES_H */
