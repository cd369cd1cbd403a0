/*-------------------------------------------------------------------------
 *
 * consumer.h
 *	  Transactional consumers of topics: weir.poll() and its companions.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/consumer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CONSUMER_H
#define WEIR_CONSUMER_H

/* SQL-callable only: weir_poll, weir_seek, weir_drop_consumer */

#endif							/* WEIR_CONSUMER_H */
