/*-------------------------------------------------------------------------
 *
 * catalog_pipeline.h
 *	  SQL on weir's pipeline catalog and on sinks.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_pipeline.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_PIPELINE_H
#define WEIR_CATALOG_PIPELINE_H

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "utils/array.h"

/*
 * A pipeline's status: weir.pipeline.status holds weir_pipeline_status_name
 * of it (the text tests and the weir.pipelines view compare).  The view
 * shows 'running' whenever a worker holds the pipeline's slot, and
 * 'starting' for an enabled pipeline whose status is neither failed nor
 * out_of_memory, whatever the catalog says.
 *
 * enabled goes with the status: true in starting, running and failed after
 * an error a restart may cure; false in stopped, out_of_memory and failed
 * after an error it cannot (error_is_permanent in worker.c).
 *
 * Allowed transitions, and who makes them:
 *
 *	 (new)	   -> starting		weir.create_pipeline, create_dedup,
 *								create_last_value, create_join,
 *								create_projection (start => true)
 *	 (new)	   -> stopped		the same (start => false)
 *	 any	   -> starting		weir.start (enables; clears last_error)
 *	 any	   -> stopped		weir.stop (disables)
 *	 starting, running, failed
 *			   -> running		the worker, restored, before its first round
 *								(running: its predecessor ended without a
 *								word, by a crash or a restart to move past a
 *								record; failed: the launcher restarted it
 *								after an error)
 *	 starting, running, failed
 *			   -> failed		the worker, on an error (disables it if the
 *								error is permanent)
 *	 starting, running
 *			   -> out_of_memory	the worker, at max_state_memory (disables)
 *
 * The worker's transitions (weir_catalog_pipeline_set_status) apply only to
 * an enabled pipeline: one that weir.stop (or the worker itself) disabled
 * meanwhile keeps its status, as the worker will be stopped anyway.  Any
 * other transition is an error.  The launcher writes no status: it starts
 * workers of enabled pipelines (with back-off after failures) and stops the
 * others.  Dropping a pipeline deletes its row.
 */
typedef enum WeirPipelineStatus
{
	WEIR_PIPELINE_STOPPED,
	WEIR_PIPELINE_STARTING,
	WEIR_PIPELINE_RUNNING,
	WEIR_PIPELINE_FAILED,
	WEIR_PIPELINE_OUT_OF_MEMORY
} WeirPipelineStatus;

typedef struct WeirPipelineRow
{
	int32		id;
	char	   *name;
	Oid			owner;			/* the definition's owner */
	Oid			definition;		/* view weir_pipelines.<name> */
	List	   *names;			/* String per item of the definition */
	int			nkeys;			/* key items of the definition (per side) */
	Oid			source;
	char	   *key;			/* a join: the left's; NULL for a projection */
	char	   *event_time;		/* NULL for a projection */
	Datum		windowing;		/* weir.windowing, copied; 0 for dedup */
	char	   *aggregates;		/* NULL for dedup */
	char	   *filter;			/* NULL: none; a join: the left's */
	Interval	out_of_orderness;
	Interval	allowed_lateness;
	bool		has_idle_timeout;
	Interval	idle_timeout;
	char	   *emit;
	Oid			sink;
	Oid			late_records;	/* InvalidOid: none */
	Interval	checkpoint_interval;
	int64		max_state_memory;	/* bytes */
	bool		enabled;
	TimestampTz created_at;		/* tells apart pipelines that reuse an id */
	char	   *operator;		/* "window", "dedup", "last_value", "join",
								 * "projection" */
	bool		has_horizon;	/* dedup */
	Interval	horizon;
	bool		refresh_horizon;	/* dedup: dropped copies extend an id's
									 * life; true for other kinds */
	bool		has_ttl;		/* last_value */
	Interval	ttl;
	char	   *columns;		/* dedup, last_value, join; NULL: the source's */
	Oid			right_source;	/* join; source is the left */
	char	   *right_key;
	char	   *right_event_time;
	char	   *right_filter;	/* NULL: none */
	Interval	right_before;	/* r.t BETWEEN l.t - right_before */
	Interval	right_after;	/* AND l.t + right_after */
	char	   *join_kind;		/* "inner" or "left" */
	bool		insert_only;	/* window over a change topic: inserts only */
	char	   *checkpoint_column;	/* the sink's column for the id of the
									 * checkpoint that wrote a row; NULL: none */
	WeirPipelineStatus status;	/* as read; insert writes starting or
								 * stopped, as enabled says */
} WeirPipelineRow;

extern int32 weir_catalog_pipeline_insert(WeirPipelineRow *row);
extern bool weir_catalog_pipeline_by_name(const char *name, WeirPipelineRow *row);
extern bool weir_catalog_pipeline_by_id(int32 id, WeirPipelineRow *row);
extern void weir_catalog_pipeline_set_enabled(int32 id, bool enabled);
extern const char *weir_pipeline_status_name(WeirPipelineStatus status);
extern WeirPipelineStatus weir_pipeline_status_from_name(const char *name);
extern bool weir_pipeline_status_allowed(WeirPipelineStatus from, WeirPipelineStatus to);
extern bool weir_catalog_pipeline_set_status(int32 id, WeirPipelineStatus status,
											 const char *error, bool disable);
extern void weir_catalog_pipeline_delete(int32 id);
extern bool weir_catalog_pipeline_delete_by_definition(Oid definition);
extern void weir_catalog_pipeline_alter(int32 id, int64 max_state_memory,
										Interval *checkpoint_interval);
extern void weir_catalog_write_late(Oid late_table, Oid source, Datum parts,
									Datum positions, Datum watermark, bool as_record);
extern char *weir_catalog_topic_record(Oid source, int32 part, int64 pos);
extern List *weir_catalog_enabled_pipelines(void);
extern void weir_catalog_run_ddl(const char *sql);

extern void weir_catalog_load_positions(int32 id, int32 partitions, int64 *pos,
										TimestampTz *max_event_time);
extern int64 weir_catalog_last_checkpoint(int32 id, TimestampTz *watermark);
extern int64 weir_catalog_last_checkpoint_in_snapshot(int32 id, TimestampTz *watermark);

extern void weir_catalog_write_positions(int32 id, Datum parts, Datum positions,
										 Datum max_event_times);
extern void weir_catalog_write_checkpoint(int32 id, int64 checkpoint_id,
										  TimestampTz started_at,
										  TimestampTz watermark,
										  double start_delay_ms, double sync_ms,
										  double async_ms, int64 bytes,
										  int64 sink_rows, int64 state_rows,
										  int64 state_deletes, int64 records_in);
extern void weir_catalog_write_dead_letters(int32 id, Oid source, Datum parts,
											Datum positions, Datum errors,
											Datum records);

extern List *weir_catalog_checkpoint_order(ArrayType *names);

#endif							/* WEIR_CATALOG_PIPELINE_H */
