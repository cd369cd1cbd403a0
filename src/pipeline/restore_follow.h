/*-------------------------------------------------------------------------
 *
 * restore_follow.h
 *	  After a worker's restore: the time to its first record and back to
 *	  the rate before the restart (restore_follow.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/restore_follow.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_RESTORE_FOLLOW_H
#define WEIR_RESTORE_FOLLOW_H

#include "datatype/timestamp.h"

/* What a worker watches after its restore, until both figures are known */
typedef struct WeirRestoreFollow
{
	int64		restore_id;		/* its weir.restores row */
	TimestampTz restored_at;	/* the restore's end */
	double		rate_before;	/* records/s; < 0: not known */
	TimestampTz first_at;		/* first record processed; 0: none yet */
	TimestampTz back_at;		/* back to the rate; 0: not yet */
	TimestampTz span_start;		/* of the current span of at least 1 s */
	int64		span_records;	/* processed in it */
	bool		written;		/* both figures are in the row */
} WeirRestoreFollow;

extern void weir_restore_follow_begin(WeirRestoreFollow *f, int64 restore_id,
									  TimestampTz restored_at, double rate_before);
extern void weir_restore_follow_round(WeirRestoreFollow *f, int64 records,
									  bool caught_up);

#endif							/* WEIR_RESTORE_FOLLOW_H */
