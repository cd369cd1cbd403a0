/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  weir's settings (the weir.* GUCs) and whether the library was
 *	  preloaded.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SETTINGS_H
#define WEIR_SETTINGS_H

/* true in processes forked from a postmaster that preloaded the library */
extern bool weir_preloaded;

extern char *weir_database;
extern int	weir_max_partitions;
extern int	weir_max_pipelines;
extern int	weir_max_captures;
extern int	weir_default_max_state_memory;	/* kB */
extern int	weir_launcher_naptime;		/* ms */
extern int	weir_retention_batch_size;	/* rows per delete transaction */
extern int	weir_time_index_interval;	/* ms between head samples */
extern int	weir_sink_deletes_retention;	/* s a sink delete is kept for readers */
extern bool weir_checkpoint_writer;	/* checkpoints written by a second process */
extern bool weir_start_pipelines;	/* the launcher runs pipelines and captures */

/* weir.read_ahead: whether sources are read by a second process */
typedef enum WeirReadAheadMode
{
	WEIR_READ_AHEAD_OFF,
	WEIR_READ_AHEAD_AUTO,		/* for the kinds whose worker is the busier process */
	WEIR_READ_AHEAD_ON
} WeirReadAheadMode;
extern int	weir_read_ahead;
extern char *weir_fault_point;	/* test only */

/* For tests: exit at once at a named point, when weir.fault_point names it */
extern void weir_fault_point_reached(const char *point);
extern bool weir_fault_point_is(const char *point);

extern void weir_settings_define(void);

#endif							/* WEIR_SETTINGS_H */
