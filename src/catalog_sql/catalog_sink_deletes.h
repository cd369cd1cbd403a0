/*-------------------------------------------------------------------------
 *
 * catalog_sink_deletes.h
 *	  SQL on weir.sink_deletes: the sink rows each checkpoint deleted, for
 *	  readers of pipelines with a checkpoint column.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_sink_deletes.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_SINK_DELETES_H
#define WEIR_CATALOG_SINK_DELETES_H

#include "datatype/timestamp.h"

/* No bound: every checkpoint after the reader's */
#define WEIR_NO_CHECKPOINT_BOUND PG_INT64_MAX

extern void weir_catalog_record_sink_deletes(int32 pipeline_id, int64 checkpoint_id,
											 TimestampTz at, Datum *keys, int nkeys);
extern void weir_catalog_trim_sink_deletes(int32 pipeline_id, TimestampTz cutoff);
extern int64 weir_catalog_sink_deletes_trimmed(int32 pipeline_id);
extern int64 weir_catalog_sink_deletes_bound(int32 pipeline_id, int64 after, int max_rows);
extern int	weir_catalog_sink_deletes_read(int32 pipeline_id, int64 after, int64 upto,
										   int64 **checkpoints, Datum **keys);

#endif							/* WEIR_CATALOG_SINK_DELETES_H */
