/*-------------------------------------------------------------------------
 *
 * restore_follow.c
 *	  What a restarted worker learns after its restore, written into its
 *	  weir.restores row once known: the time to the first record and the
 *	  time back to the rate before the restart.
 *
 * Both are measured from the restore's end, in wall-clock time (not
 * weir's test clock: they are durations of real work).
 *
 * Time to the first record: until the end of the first round that
 * processed at least one record.  With nothing to read, it also counts the
 * wait for producers: it says when the pipeline moved again.
 *
 * Time back to the rate: until the first of
 *	- a span of at least one second (spans follow each other, one starting
 *	  where the last ended, at round boundaries) whose records/s reach 90%
 *	  of the rate before the restart (rate_before, from weir.checkpoints:
 *	  catalog_restores.c), or
 *	- a round, after at least one record, that found nothing more to read
 *	  (caught up): a pipeline whose producers are slower than it was cannot
 *	  reach its old rate, yet it is no longer behind.
 * 90%, not 100%: a rate measured over a minute and one over a second
 * differ by noise of a few percent; spans of a second, not single rounds:
 * a round is a bounded batch whose rate says little.  With no records
 * after the restore, both stay NULL.
 *
 * The row is updated once each figure is known, in the worker's round
 * transaction (at most twice per worker lifetime).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/restore_follow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog_sql/catalog_restores.h"
#include "pipeline/restore_follow.h"

#define RATE_SPAN_USECS USECS_PER_SEC
#define RATE_FRACTION 0.9

void
weir_restore_follow_begin(WeirRestoreFollow *f, int64 restore_id, TimestampTz restored_at,
						  double rate_before)
{
	memset(f, 0, sizeof(*f));
	f->restore_id = restore_id;
	f->restored_at = restored_at;
	f->rate_before = rate_before;
	f->span_start = restored_at;
}

/*
 * After a round that processed `records` records (caught_up: it found
 * nothing more to read).  Inside a transaction; can ereport (the update).
 */
void
weir_restore_follow_round(WeirRestoreFollow *f, int64 records, bool caught_up)
{
	TimestampTz now;
	bool		learnt = false;

	if (f->written)
		return;
	now = GetCurrentTimestamp();
	if (f->first_at == 0 && records > 0)
	{
		f->first_at = now;
		learnt = true;
	}
	f->span_records += records;
	if (f->first_at != 0 && f->back_at == 0)
	{
		int64		span = now - f->span_start;

		if (caught_up ||
			(span >= RATE_SPAN_USECS && f->rate_before > 0 &&
			 f->span_records * (double) USECS_PER_SEC / span >= RATE_FRACTION * f->rate_before))
		{
			f->back_at = now;
			learnt = true;
		}
	}
	if (now - f->span_start >= RATE_SPAN_USECS)
	{
		f->span_start = now;
		f->span_records = 0;
	}
	if (!learnt)
		return;
	weir_catalog_restore_followed(f->restore_id,
								  f->first_at ? (f->first_at - f->restored_at) / 1000.0 : -1,
								  f->back_at ? (f->back_at - f->restored_at) / 1000.0 : -1);
	f->written = f->first_at != 0 && f->back_at != 0;
}
