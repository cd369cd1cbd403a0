/*-------------------------------------------------------------------------
 *
 * retention.h
 *	  Deleting consumed topic rows older than their topic's retention.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/retention.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_RETENTION_H
#define WEIR_RETENTION_H

#include "catalog_sql/catalog.h"

extern int64 weir_retention_trim_topic(WeirTopicRow *row, bool own_transactions);

#endif							/* WEIR_RETENTION_H */
