/*-------------------------------------------------------------------------
 *
 * topic_source.h
 *	  A topic, as a pipeline's source (source_ops.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/source/topic_source.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TOPIC_SOURCE_H
#define WEIR_TOPIC_SOURCE_H

#include "source/source_ops.h"

extern WeirSource *weir_topic_source_open(Oid relid, MemoryContext cxt);

#endif							/* WEIR_TOPIC_SOURCE_H */
