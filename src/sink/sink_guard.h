/*-------------------------------------------------------------------------
 *
 * sink_guard.h
 *	  Checkpoint writes in which a row that cannot be written becomes a
 *	  dead letter instead of failing the checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_guard.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_GUARD_H
#define WEIR_SINK_GUARD_H

#include "base/columns.h"
#include "catalog_sql/catalog_pipeline.h"

/* Writes the rows of cols (all the same length) */
typedef void (*WeirGuardedWrite) (void *arg, WeirColumn *cols);

typedef struct WeirGuardTarget
{
	Oid			relid;			/* the dead letters' source */
	const char *what;			/* prefix of their error: 'sink "x"' */
	bool		positions;		/* cols[0], cols[1]: partition, position */
	const char *const *names;	/* else: the columns' names, for the JSON */
	/*
	 * Checks the table as a worker's start does (write_target.c), raising if
	 * it no longer fits the pipeline: run when a write failed, before any
	 * row is blamed, since the table may have changed since the round began
	 */
	void		(*recheck) (void *arg);
} WeirGuardTarget;

extern int	weir_guarded_write(const WeirPipelineRow *row, WeirColumn *cols, int ncols,
							   WeirGuardedWrite write, void *arg,
							   const WeirGuardTarget *target);

#endif							/* WEIR_SINK_GUARD_H */
