/*-------------------------------------------------------------------------
 *
 * progress.h
 *	  What a long step of a pipeline is doing now: a restore, a compaction,
 *	  a catch-up (progress.c), shown by weir.progress (progress_view.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/progress.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_PROGRESS_H
#define WEIR_PROGRESS_H

#include "base/shmem.h"

/* Which step: an index into WeirPipelineSlot.progress */
typedef enum WeirProgressKind
{
	WEIR_PROGRESS_RESTORE,		/* a starting worker loads its checkpoint */
	WEIR_PROGRESS_COMPACTION,	/* a checkpoint rewrites the whole state */
	WEIR_PROGRESS_CATCH_UP		/* the worker reads a backlog */
} WeirProgressKind;

/*
 * The phase of a step, in order: a restore goes from loading positions to
 * reading chunks; a compaction from writing chunks to deleting the older
 * ones; a catch-up only reads.
 */
typedef enum WeirProgressPhase
{
	WEIR_PHASE_LOADING_POSITIONS,
	WEIR_PHASE_READING_CHUNKS,
	WEIR_PHASE_WRITING_CHUNKS,
	WEIR_PHASE_DELETING_CHUNKS,
	WEIR_PHASE_READING_BACKLOG
} WeirProgressPhase;

/*
 * A backlog of at least this many records (lag_rows) makes a catch-up:
 * about ten full reading rounds, so that a busy but keeping-up pipeline
 * does not show one after every burst.
 */
#define WEIR_CATCH_UP_ROWS 100000

extern void weir_progress_attach(WeirPipelineSlot *slot);
extern void weir_progress_begin(WeirProgressKind kind, WeirProgressPhase phase,
								int64 bytes_total, int64 rows_total);
extern void weir_progress_phase(WeirProgressKind kind, WeirProgressPhase phase);
extern void weir_progress_advance(WeirProgressKind kind, int64 bytes, int64 rows);
extern void weir_progress_end(WeirProgressKind kind);
extern void weir_progress_round(int64 records, int64 lag_rows);
extern const char *weir_progress_kind_name(int kind);
extern const char *weir_progress_phase_name(int phase);

#endif							/* WEIR_PROGRESS_H */
