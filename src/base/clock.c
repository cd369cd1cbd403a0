/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The one source of "now" for everything time-dependent in weir.
 *
 * Retention, idle timeouts and checkpoint timing ask this file
 * for the time, never GetCurrentTimestamp() directly, so that tests can move
 * weir's clock forward with the superuser-only GUC weir.clock_offset instead
 * of sleeping.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/clock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"
#include "utils/timestamp.h"

#include "base/clock.h"

static int	weir_clock_offset = 0;	/* s added to the real time */

void
weir_clock_define_gucs(void)
{
	DefineCustomIntVariable("weir.clock_offset",
							"Seconds added to the wall clock as weir sees it (for tests).",
							NULL,
							&weir_clock_offset,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

TimestampTz
weir_clock_now(void)
{
	return GetCurrentTimestamp() + (TimestampTz) weir_clock_offset * USECS_PER_SEC;
}
