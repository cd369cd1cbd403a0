/*-------------------------------------------------------------------------
 *
 * source_ops.h
 *	  The one shape of a pipeline's source: partitions of rows numbered by
 *	  position, read a round at a time.
 *
 * A source is read by the process that reads for a pipeline (its worker,
 * or its read-ahead process: pipeline/reading.c), a round at a time, in
 * the round's transaction:
 *
 *	begin_round		open the source; the bound of each partition now: every
 *					row below it is there for good (committed, and no
 *					position below it can still be taken), so that a reader
 *					that stops at the bound never misses a row
 *	scan			the rows of some partitions' position ranges (after,
 *					upto], visible to the snapshot (taken after the bounds),
 *					each handed to the callback with its partition and
 *					position, deformed up to at least `natts` attributes;
 *					ranges[i].max_position: the last position read
 *	end_round		close it
 *	watermarks		(in a transaction) the event time the source's writers
 *					promise per partition to a reader that has processed
 *					it up to pos[p]: no row beyond has an earlier time;
 *					DT_NOBEGIN: no promise yet.  False: the source has no
 *					writer that promises, and its reader guesses the
 *					watermark from the event times it sees
 *
 * Positions are a partition's own: int64, increasing, never reused.  A
 * pipeline keeps, per partition, the last position it processed
 * (weir.pipeline_position); a restore resumes after it.  Topics are the
 * one kind today (topic_source.c); changes of tables (a position an LSN)
 * and remote servers come next behind the same shape.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/source/source_ops.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SOURCE_OPS_H
#define WEIR_SOURCE_OPS_H

#include "topic/reader.h"

typedef struct WeirSource WeirSource;

typedef struct WeirSourceOps
{
	void		(*begin_round) (WeirSource *src, int64 *bounds);
	void		(*scan) (WeirSource *src, WeirPositionRange *ranges, int n,
						 Snapshot snapshot, AttrNumber natts,
						 WeirPartRowCallback callback, void *arg);
	void		(*end_round) (WeirSource *src);
	bool		(*watermarks) (WeirSource *src, const int64 *pos, TimestampTz *watermark);
} WeirSourceOps;

struct WeirSource
{
	const WeirSourceOps *ops;
	Oid			relid;			/* the relation its rows are of */
	const char *name;			/* for messages */
	int32		partitions;
};

#endif							/* WEIR_SOURCE_OPS_H */
