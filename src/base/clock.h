/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The one source of "now" for retention, watermarks and timeouts.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/clock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CLOCK_H
#define WEIR_CLOCK_H

#include "datatype/timestamp.h"

extern void weir_clock_define_gucs(void);
extern TimestampTz weir_clock_now(void);

#endif							/* WEIR_CLOCK_H */
