/*-------------------------------------------------------------------------
 *
 * sink_order.h
 *	  The order of a checkpoint's sink rows along the sink's key (sink_order.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_order.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_ORDER_H
#define WEIR_SINK_ORDER_H

#include "definition/definition.h"

extern int *weir_sink_key_order(WeirPlan *plan, Datum **values, int nrows,
								const int *keycol, int nkeys);
extern int *weir_sink_time_order(Datum *first, Datum *second, int nrows);

#endif							/* WEIR_SINK_ORDER_H */
