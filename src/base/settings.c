/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  weir's settings: the weir.* GUC variables and their definitions.
 *
 * The variables hold their defaults until _PG_init defines the settings,
 * which happens only when the library is in shared_preload_libraries; it
 * then sets weir_preloaded too.  Settings of one concern that stand on
 * their own (the clock's) are defined by their file, called from here.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "storage/ipc.h"
#include "utils/guc.h"

#include "base/clock.h"
#include "base/settings.h"
#include "pipeline/state_stats.h"

bool		weir_preloaded = false;
char	   *weir_database = NULL;
int			weir_max_partitions = 1024;
int			weir_max_pipelines = 32;
int			weir_max_captures = 8;
int			weir_default_max_state_memory = 1024 * 1024;	/* kB */
int			weir_launcher_naptime = 1000;
int			weir_retention_batch_size = 10000;
int			weir_time_index_interval = 10000;
int			weir_sink_deletes_retention = 86400;	/* s */
bool		weir_checkpoint_writer = true;
bool		weir_start_pipelines = true;
int			weir_read_ahead = WEIR_READ_AHEAD_AUTO;
char	   *weir_fault_point = NULL;

static const struct config_enum_entry read_ahead_options[] = {
	{"off", WEIR_READ_AHEAD_OFF, false},
	{"auto", WEIR_READ_AHEAD_AUTO, false},
	{"on", WEIR_READ_AHEAD_ON, false},
	{NULL, 0, false}
};

/*
 * Define every weir.* setting, then reserve the prefix
 * (MarkGUCPrefixReserved), so that a misspelt weir.* setting is refused
 * instead of being kept as an unknown custom setting.  Called
 * only while shared_preload_libraries is loaded: PGC_POSTMASTER settings
 * cannot be defined later.
 */
void
weir_settings_define(void)
{
	DefineCustomStringVariable("weir.database",
							   "Database in which the weir launcher runs background work.",
							   "Retention and pipeline workers run only in this database.",
							   &weir_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("weir.max_partitions",
							"Maximum number of topic partitions in use at once, over all topics and databases.",
							"Each partition takes a slot of shared memory sized by max_connections.",
							&weir_max_partitions,
							1024, 1, 65536,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.max_pipelines",
							"Maximum number of pipelines running at once, over all databases.",
							"Each running pipeline takes one background worker too: raise max_worker_processes with it.",
							&weir_max_pipelines,
							32, 1, 10000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.max_captures",
							"Maximum number of captures running at once, over all databases.",
							"Each running capture takes one background worker and one replication slot: raise max_worker_processes and max_replication_slots with it.",
							&weir_max_captures,
							8, 1, 1000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.max_state_memory",
							"Default state memory limit of a pipeline.",
							"A pipeline that reaches its limit stops with status out_of_memory and resumes when the limit is raised.",
							&weir_default_max_state_memory,
							1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.launcher_naptime",
							"Time the launcher sleeps between rounds of background work.",
							NULL,
							&weir_launcher_naptime,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.retention_batch_size",
							"Rows deleted per transaction when retention trims a topic.",
							NULL,
							&weir_retention_batch_size,
							10000, 1, INT_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.time_index_interval",
							"Time between samples of topic head positions used by retention.",
							"Retention keeps a row at most this much longer than the topic's retention.",
							&weir_time_index_interval,
							10000, 10, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("weir.sink_deletes_retention",
							"How long the sink rows a checkpoint deleted are kept for weir.sink_changes.",
							"Pipelines with a checkpoint_column only. A reader further behind than this must copy the sink anew.",
							&weir_sink_deletes_retention,
							86400, 1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("weir.checkpoint_writer",
							 "Whether each pipeline writes its checkpoints in a second process while its worker reads on.",
							 "Off: the worker stops reading while it writes each checkpoint. Read when a worker starts.",
							 &weir_checkpoint_writer,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	/*
	 * For tests of exactly-once only (test/t/019_remote_sink.pl): a process
	 * that reaches the named point exits at once, as a crash there would
	 * leave things, or (remote_commit_fails) a step fails there
	 * (sink_remote.c names the points); and for weir.progress, a restore
	 * or compaction that waits a second after each chunk
	 * (restore_chunk_slow, compaction_chunk_slow: progress.c).
	 */
	DefineCustomStringVariable("weir.fault_point",
							   "Test only: the point at which a weir process exits at once.",
							   "Empty: none.",
							   &weir_fault_point,
							   "",
							   PGC_SIGHUP,
							   GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   NULL, NULL, NULL);

	DefineCustomEnumVariable("weir.read_ahead",
							 "Whether pipelines read and evaluate their sources in a second process while their worker applies what was read.",
							 "auto: deduplication, last value and join pipelines, whose worker is as a rule the busier process, not window aggregates and projections. "
							 "It takes one more background worker per pipeline, when one is to spare. Read when a worker starts.",
							 &weir_read_ahead,
							 WEIR_READ_AHEAD_AUTO,
							 read_ahead_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("weir.start_pipelines",
							 "Whether the launcher runs pipelines and captures.",
							 "off: it starts none, stops those running, and leaves the remote servers of sinks and captures alone, "
							 "for a copy restored from a dump or a backup that must not act. Their catalog rows are not changed.",
							 &weir_start_pipelines,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	weir_clock_define_gucs();
	weir_state_stats_define_gucs();

	MarkGUCPrefixReserved("weir");
}

/*
 * A process at a point named by weir.fault_point exits at once, without
 * committing or cleaning up anything it owns outside this server, as a
 * crash there would: test only.
 */
void
weir_fault_point_reached(const char *point)
{
	if (weir_fault_point == NULL || strcmp(weir_fault_point, point) != 0)
		return;
	ereport(LOG, (errmsg("weir fault point \"%s\" reached: the process exits", point)));
	proc_exit(1);
}

/* Whether weir.fault_point names `point` (a point that fails, not exits) */
bool
weir_fault_point_is(const char *point)
{
	return weir_fault_point != NULL && strcmp(weir_fault_point, point) == 0;
}
