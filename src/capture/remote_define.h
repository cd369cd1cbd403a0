/*-------------------------------------------------------------------------
 *
 * remote_define.h
 *	  Defining a capture of another server's publication (remote_define.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_define.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_DEFINE_H
#define WEIR_REMOTE_DEFINE_H

#include "utils/array.h"

extern int32 weir_remote_capture_create(const char *name, const char *publication,
										const char *conninfo, ArrayType *remote_tables,
										const char *topic_schema, int32 partitions,
										Datum retention, bool has_retention);

#endif							/* WEIR_REMOTE_DEFINE_H */
