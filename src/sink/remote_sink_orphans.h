/*-------------------------------------------------------------------------
 *
 * remote_sink_orphans.h
 *	  Resolving the prepared transactions of two-phase remote sinks whose
 *	  pipelines went without weir.drop_pipeline (remote_sink_orphans.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/remote_sink_orphans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_SINK_ORPHANS_H
#define WEIR_REMOTE_SINK_ORPHANS_H

extern void weir_remote_sink_resolve_orphans(void);

#endif							/* WEIR_REMOTE_SINK_ORPHANS_H */
