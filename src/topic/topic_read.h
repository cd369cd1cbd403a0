/*-------------------------------------------------------------------------
 *
 * topic_read.h
 *	  weir.read() and weir.stable_position(): reading a partition from SQL.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic_read.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TOPIC_READ_H
#define WEIR_TOPIC_READ_H

/* SQL-callable only: weir_read, weir_stable_position, weir_scan_count,
 * weir_scan_count_partitions */

#endif							/* WEIR_TOPIC_READ_H */
