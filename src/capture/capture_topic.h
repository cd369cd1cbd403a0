/*-------------------------------------------------------------------------
 *
 * capture_topic.h
 *	  What local and remote captures share in defining a capture
 *	  (capture_topic.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_topic.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_TOPIC_H
#define WEIR_CAPTURE_TOPIC_H

#include "capture/capture_catalog.h"

extern void weir_capture_check_can_capture(void);
extern void weir_capture_check_column_name(const char *column, const char *table);
extern Oid	weir_capture_create_topic(const char *capture, const char *table_name,
									  const char *schema, const WeirCaptureTableRow *t,
									  const Oid *types, const int32 *typmods,
									  const Oid *collations, int32 partitions,
									  Datum retention, bool has_retention);

#endif							/* WEIR_CAPTURE_TOPIC_H */
