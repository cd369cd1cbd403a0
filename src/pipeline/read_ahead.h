/*-------------------------------------------------------------------------
 *
 * read_ahead.h
 *	  A pipeline's read-ahead process: a second process that reads and
 *	  evaluates the worker's sources while the worker applies what was read
 *	  (read_ahead.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/read_ahead.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_READ_AHEAD_H
#define WEIR_READ_AHEAD_H

#include "base/shmem.h"
#include "pipeline/reading.h"

typedef struct WeirReadAhead WeirReadAhead;

/* How far a round of the read-ahead process got */
typedef struct WeirReadAheadRound
{
	bool		complete;		/* its end came: the fields below are its */
	bool		stopped;		/* the process exited: it was let go (the
								 * WeirReadAhead is freed) */
	bool		caught_up;
	int64		lag;
	int64		tickets;		/* weir.checkpoint() tickets taken before its bounds */
} WeirReadAheadRound;

extern PGDLLEXPORT void weir_read_ahead_main(Datum main_arg);

extern WeirReadAhead *weir_read_ahead_start(WeirReading *rd, WeirPipelineSlot *slot,
											 int pipelines, bool worker_bound,
											 WeirGroupDone apply, void *apply_arg);
extern int64 weir_read_ahead_round(WeirReadAhead *ra, TimestampTz now,
								   TimestampTz next_checkpoint, int64 served,
								   bool in_flight, WeirReadAheadRound *round);
extern void weir_read_ahead_stop(WeirReadAhead *ra, const char *why);

#endif							/* WEIR_READ_AHEAD_H */
