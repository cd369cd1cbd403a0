/*-------------------------------------------------------------------------
 *
 * catalog_counters.h
 *	  SQL on weir.pipeline_counters (catalog_counters.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_counters.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_COUNTERS_H
#define WEIR_CATALOG_COUNTERS_H

#include "checkpoint/checkpoint_counters.h"

extern void weir_catalog_write_counters(int32 id, int64 checkpoint_id,
										const WeirCounters *worker,
										int64 rows_written, int64 dead_at_write,
										WeirCounters *committed);
extern int64 weir_catalog_load_counters(int32 id, WeirCounters *c);

#endif							/* WEIR_CATALOG_COUNTERS_H */
