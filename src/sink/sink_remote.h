/*-------------------------------------------------------------------------
 *
 * sink_remote.h
 *	  A pipeline's sink on another PostgreSQL server (sink_remote.c), and
 *	  how one is defined and dropped (remote_sink_define.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_remote.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SINK_REMOTE_H
#define WEIR_SINK_REMOTE_H

#include "base/shmem.h"
#include "catalog_sql/catalog_pipeline.h"
#include "catalog_sql/catalog_remote_sink.h"
#include "definition/definition.h"
#include "sink/remote_link.h"
#include "sink/sink_ops.h"

/* What weir.remote_table() returns starts so */
#define WEIR_REMOTE_SINK_TOKEN "weir.remote_table:"

extern WeirSink *weir_sink_remote_open(WeirPipelineRow *row, WeirPlan *plan,
									   WeirPipelineSlot *slot, MemoryContext cxt);
extern int	weir_remote_sink_resolve(PGconn *conn, const char *prefix, int64 last_committed,
									 const char *what);

/* remote_sink_define.c */
extern bool weir_remote_sink_named(const char *sink);
extern WeirRemoteSinkRow *weir_remote_sink_define(const char *sink, WeirPlan *plan,
												  WeirPipelineRow *row);
extern void weir_remote_sink_record(WeirRemoteSinkRow *def, int32 id);
extern void weir_remote_sink_drop(const WeirPipelineRow *row);
extern void weir_remote_sink_install_hooks(void);

#endif							/* WEIR_SINK_REMOTE_H */
