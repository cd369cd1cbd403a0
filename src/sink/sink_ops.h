/*-------------------------------------------------------------------------
 *
 * sink_ops.h
 *	  The one shape of a pipeline's sink: where a checkpoint's rows go.
 *
 * A sink is written only in a checkpoint's async phase (checkpoint_apply.c),
 * inside the checkpoint's transaction, as the pipeline's owner: its writes
 * commit with the state and the positions, or not at all.  A write that
 * fails is retried row by row in subtransactions (sink_guard.c) after
 * `recheck`, so every call may run in a subtransaction that is rolled back.
 *
 *	write		rows, one array per sink column; upsert false: first
 *				emissions (a plain insert may do), true: rows that may be
 *				there already
 *	write_keeping	rows that may be there already, some of whose columns keep
 *				the value the sink has: one array per sink column, then a
 *				text array, a character per sink column, 'k': kept
 *	delete		rows by the sink's key columns
 *	recheck		the sink still fits the pipeline (raises if not), before any
 *				row is blamed for a failed write
 *
 * and around them, each optional (NULL: nothing to do):
 *	begin		a checkpoint's writes start (sink->checkpoint_id is set);
 *				in its transaction, before the first write
 *	prepare		its writes are done: the last thing before the local
 *				commit (a remote sink prepares its own transaction here)
 *	committed	the local commit happened: outside any transaction (a
 *				remote sink commits what it prepared)
 *
 * The table sink (sink_table.c) is the one kind today; a topic sink is a
 * table sink of the topic's table.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_ops.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_OPS_H
#define WEIR_SINK_OPS_H

#include "base/columns.h"

typedef struct WeirSink WeirSink;

typedef struct WeirSinkOps
{
	void		(*write) (WeirSink *sink, WeirColumn *cols, int ncols, bool upsert);
	void		(*write_keeping) (WeirSink *sink, WeirColumn *cols, int ncols);
	void		(*delete) (WeirSink *sink, WeirColumn *key, int nkey);
	void		(*recheck) (WeirSink *sink);
	void		(*begin) (WeirSink *sink);
	void		(*prepare) (WeirSink *sink);
	void		(*committed) (WeirSink *sink);
} WeirSinkOps;

struct WeirSink
{
	const WeirSinkOps *ops;
	Oid			relid;			/* dead letters of the sink name it */
	const char *const *names;	/* its columns' names, for their JSON (then
								 * the name of write_keeping's last column) */
	int64		checkpoint_id;	/* of the checkpoint being written */
};

/* A checkpoint's writes start, end, and were committed (the optional ops). */
static inline void
weir_sink_begin(WeirSink *sink, int64 checkpoint_id)
{
	sink->checkpoint_id = checkpoint_id;
	if (sink->ops->begin)
		sink->ops->begin(sink);
}

static inline void
weir_sink_prepare(WeirSink *sink)
{
	if (sink->ops->prepare)
		sink->ops->prepare(sink);
}

static inline void
weir_sink_committed(WeirSink *sink)
{
	if (sink->ops->committed)
		sink->ops->committed(sink);
}

#endif							/* WEIR_SINK_OPS_H */
