/*-------------------------------------------------------------------------
 *
 * capture_define.h
 *	  Defining captures (capture_define.c, remote_define.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_define.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_DEFINE_H
#define WEIR_CAPTURE_DEFINE_H

#include "utils/array.h"

#include "capture/capture_catalog.h"

/* capture_define.c: shared by local and remote captures */
extern void weir_capture_check_can_capture(void);
extern void weir_capture_check_column_name(const char *column, const char *table);
extern Oid	weir_capture_create_topic(const char *capture, const char *table_name,
									  const char *schema, const WeirCaptureTableRow *t,
									  const Oid *types, const int32 *typmods,
									  const Oid *collations, int32 partitions,
									  Datum retention, bool has_retention);

/* remote_define.c: a capture of another server's publication */
extern int32 weir_remote_capture_create(const char *name, const char *publication,
										const char *conninfo, ArrayType *remote_tables,
										const char *topic_schema, int32 partitions,
										Datum retention, bool has_retention);

#endif							/* WEIR_CAPTURE_DEFINE_H */
