/*-------------------------------------------------------------------------
 *
 * views.h
 *	  Set-returning functions behind weir's views.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/views.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_VIEWS_H
#define WEIR_VIEWS_H

/* SQL-callable only: weir_topic_partition_state */

#endif							/* WEIR_VIEWS_H */
