/*-------------------------------------------------------------------------
 *
 * topic_watermark.h
 *	  Watermarks that travel with the data: what a pipeline writing a topic
 *	  publishes with its checkpoint, and what a pipeline reading the topic
 *	  takes from it (topic_watermark.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic_watermark.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TOPIC_WATERMARK_H
#define WEIR_TOPIC_WATERMARK_H

#include "datatype/timestamp.h"

extern void weir_topic_watermark_publish(Oid topic_relid, int32 pipeline_id,
										 TimestampTz watermark);
extern bool weir_topic_watermark_read(Oid topic_relid, int32 partitions,
									  const int64 *pos, TimestampTz *watermark);

#endif							/* WEIR_TOPIC_WATERMARK_H */
