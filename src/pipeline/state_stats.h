/*-------------------------------------------------------------------------
 *
 * state_stats.h
 *	  weir.state_stats: figures of a running pipeline's state, from the
 *	  samples its worker keeps in its slot and a walk over its store
 *	  (state_stats.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_stats.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_STATS_H
#define WEIR_STATE_STATS_H

#include "base/shmem.h"

extern bool weir_track_state_stats;

extern void weir_state_stats_define_gucs(void);
extern TimestampTz weir_state_stats_sample_due(WeirPipelineSlot *slot);
extern void weir_state_stats_note(WeirStateSamples *stats, TimestampTz sample_at,
								  TimestampTz newest_event_time, int64 records_in,
								  int64 entries, int64 bytes, int64 in_worker_bytes);

#endif							/* WEIR_STATE_STATS_H */
