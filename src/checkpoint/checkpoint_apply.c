/*-------------------------------------------------------------------------
 *
 * checkpoint_apply.c
 *	  A checkpoint's async phase: the writes of a package (checkpoint.c
 *	  collected it), then its weir.checkpoints row, in the current
 *	  transaction; its commit makes the checkpoint.
 *
 * Runs in the worker (no checkpoint writer) or in its checkpoint writer
 * (checkpoint_writer.c), as the pipeline's owner: the sink is written with
 * the owner's rights (sink_ops.h), weir's catalog through catalog*.c.  A
 * write of rows that fails is retried row by row, and the rows that still
 * fail become dead letters (sink_guard.c).  The rows written and refused
 * are counted here, into the pipeline's counters row the transaction
 * writes last (checkpoint_counters.c), so a checkpoint that rolls back
 * counts nothing.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_apply.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/clock.h"
#include "base/settings.h"
#include "catalog_sql/catalog_chunk.h"
#include "catalog_sql/catalog_counters.h"
#include "catalog_sql/catalog_sink_deletes.h"
#include "checkpoint/checkpoint_apply.h"
#include "checkpoint/checkpoint_package.h"
#include "definition/write_target.h"
#include "sink/sink_guard.h"
#include "topic/topic_watermark.h"

static double
ms_since(TimestampTz from, TimestampTz to)
{
	return (double) (to - from) / 1000.0;
}

/* What a guarded write (sink_guard.c) needs to write a set of rows again. */
typedef struct GuardedWrite
{
	WeirCheckpointTarget *target;
	int			ncols;
	bool		upsert;
	int64		watermark;		/* late records: as of */
	Oid			source;			/* late records: their topic */
} GuardedWrite;

static void
guarded_sink_rows(void *arg, WeirColumn *cols)
{
	GuardedWrite *g = arg;
	WeirSink   *sink = g->target->sink;

	sink->ops->write(sink, cols, g->ncols, g->upsert);
}

static void
guarded_sink_rows_keeping(void *arg, WeirColumn *cols)
{
	GuardedWrite *g = arg;
	WeirSink   *sink = g->target->sink;

	sink->ops->write_keeping(sink, cols, g->ncols);
}

static void
guarded_sink_deletes(void *arg, WeirColumn *cols)
{
	GuardedWrite *g = arg;
	WeirSink   *sink = g->target->sink;

	sink->ops->delete(sink, cols, g->ncols);
}

static void
recheck_sink(void *arg)
{
	GuardedWrite *g = arg;
	WeirSink   *sink = g->target->sink;

	sink->ops->recheck(sink);
}

static void
recheck_late_records(void *arg)
{
	GuardedWrite *g = arg;
	WeirPipelineRow *row = &g->target->row;

	weir_check_late_records(row, row->late_records, row->owner);
}

static void
guarded_late(void *arg, WeirColumn *cols)
{
	GuardedWrite *g = arg;
	WeirPipelineRow *row = &g->target->row;

	/* a join's table has one shape for both topics: each row as JSON */
	weir_catalog_write_late(row->late_records, g->source,
							weir_column_array(&cols[0]), weir_column_array(&cols[1]),
							TimestampTzGetDatum(g->watermark),
							g->target->plan->op == WEIR_OP_JOIN);
}

/* The sink, as a guarded write's target: dead letters keyed by its columns. */
static WeirGuardTarget
sink_guard(WeirSink *sink)
{
	WeirGuardTarget t;

	t.relid = sink->relid;
	/* named as it is now: a sink renamed since the start is named so */
	t.what = OidIsValid(sink->relid) ?
		psprintf("sink \"%s\"", get_rel_name(sink->relid)) : "the remote sink";
	t.positions = false;
	t.names = sink->names;
	t.recheck = recheck_sink;
	return t;
}

/* Whether the pipeline is still there (not dropped, or replaced under its id). */
bool
weir_checkpoint_pipeline_exists(const WeirPipelineRow *row)
{
	WeirPipelineRow current;

	return weir_catalog_pipeline_by_id(row->id, &current) &&
		current.created_at == row->created_at;
}

/*
 * Do the writes of a package, and its weir.checkpoints row, in the current
 * transaction.  What the worker learns from the commit goes to *res.  A
 * pipeline dropped meanwhile gets nothing written: false.
 */
bool
weir_checkpoint_apply(WeirCheckpointTarget *target, const char *data, Size len,
					  WeirCheckpointResult *res)
{
	WeirPipelineRow *row = &target->row;
	WeirPackageReader r;
	const WeirPackageHeader *h = weir_package_read_begin(&r, data, len);
	const WeirPackageOp *op;
	int			maxcols = Max(target->plan->nsinkcols + 1, 4);	/* + kept */
	WeirColumn *cols = palloc(sizeof(WeirColumn) * maxcols);
	List	   *chunks;
	int64		state_deletes = 0;
	int64		rows_written = 0;	/* sink rows inserted or upserted */
	int64		dead_at_write = 0;	/* rows refused: dead letters */
	TimestampTz written;

	memset(res, 0, sizeof(*res));
	if (!weir_checkpoint_pipeline_exists(row))
		return false;
	/*
	 * The commit record is flushed before the caller moves on, whatever
	 * synchronous_commit says (server, database or owner setting): once a
	 * checkpoint is seen committed, its sink rows are read by others and a
	 * remote sink's prepared transaction is committed after it, so a crash
	 * must not undo it.
	 */
	ForceSyncCommit();
	weir_sink_begin(target->sink, h->checkpoint_id);
	while ((op = weir_package_read_op(&r, cols, maxcols, &chunks)) != NULL)
	{
		switch ((WeirPackageOpKind) op->kind)
		{
			case WEIR_PKG_SINK_DELETE:
				{
					GuardedWrite g = {target, op->ncols, false, 0, InvalidOid};
					WeirGuardTarget t = sink_guard(target->sink);

					dead_at_write += weir_guarded_write(row, cols, op->ncols,
														guarded_sink_deletes, &g, &t);
					break;
				}
			case WEIR_PKG_SINK_INSERT:
			case WEIR_PKG_SINK_UPSERT:
				{
					GuardedWrite g = {target, op->ncols, op->kind == WEIR_PKG_SINK_UPSERT, 0,
					InvalidOid};
					WeirGuardTarget t = sink_guard(target->sink);
					int			dead = weir_guarded_write(row, cols, op->ncols,
														  guarded_sink_rows, &g, &t);

					rows_written += cols[0].n - dead;
					dead_at_write += dead;
					break;
				}
			case WEIR_PKG_SINK_UPSERT_KEEPING:
				{
					GuardedWrite g = {target, op->ncols, true, 0, InvalidOid};
					WeirGuardTarget t = sink_guard(target->sink);
					int			dead = weir_guarded_write(row, cols, op->ncols,
														  guarded_sink_rows_keeping, &g, &t);

					rows_written += cols[0].n - dead;
					dead_at_write += dead;
					break;
				}
			case WEIR_PKG_CHUNKS:
				{
					int64		deleted_bytes;

					state_deletes += weir_catalog_apply_chunks(row->id, op->space, chunks,
															   op->first_chunk, op->compacted,
															   op->watermark, &deleted_bytes);
					if (op->space >= 0 && op->space < WEIR_CHECKPOINT_SPACES)
						res->deleted_bytes[op->space] += deleted_bytes;
					break;
				}
			case WEIR_PKG_POSITIONS:
				weir_catalog_write_positions(row->id, weir_column_array(&cols[0]),
											 weir_column_array(&cols[1]),
											 weir_column_array(&cols[2]));
				break;
			case WEIR_PKG_DEAD_LETTERS:
				weir_catalog_write_dead_letters(row->id, op->oid,
												weir_column_array(&cols[0]),
												weir_column_array(&cols[1]),
												weir_column_array(&cols[2]),
												weir_column_array(&cols[3]));
				break;
			case WEIR_PKG_LATE:
				{
					GuardedWrite g = {target, 2, false, op->watermark, op->oid};
					/* rows it refuses: dead letters of their topic */
					WeirGuardTarget t = {op->oid, NULL, true, NULL, recheck_late_records};

					t.what = psprintf("late-records table \"%s\"",
									  get_rel_name(row->late_records));
					dead_at_write += weir_guarded_write(row, cols, 2, guarded_late, &g, &t);
					break;
				}
			default:
				elog(ERROR, "unrecognized checkpoint package write: %d", op->kind);
		}
	}
	/* deletes kept for readers (weir.sink_changes) for so long, no longer */
	if (row->checkpoint_column)
		weir_catalog_trim_sink_deletes(row->id, weir_clock_now() -
									   (int64) weir_sink_deletes_retention * USECS_PER_SEC);
	/* the watermark travels with the rows to readers of a topic sink */
	if (!TIMESTAMP_NOT_FINITE(h->published))
		weir_topic_watermark_publish(row->sink, row->id, h->published);
	written = weir_clock_now();
	weir_catalog_write_checkpoint(row->id, h->checkpoint_id, h->due, h->watermark,
								  ms_since(h->due, h->started), ms_since(h->started, h->synced),
								  ms_since(h->synced, written), h->bytes,
								  h->sink_rows, h->state_rows, state_deletes,
								  h->records_since);
	/* the counters commit with the checkpoint, or not at all */
	weir_catalog_write_counters(row->id, h->checkpoint_id, &h->counters,
								rows_written, dead_at_write, &res->counters);
	/* the last thing before the commit: a remote sink prepares here */
	weir_sink_prepare(target->sink);
	res->checkpoint_id = h->checkpoint_id;
	res->served = h->served;
	res->sink_rows = h->sink_rows;
	res->write_us = (double) (written - h->synced);
	return true;
}
