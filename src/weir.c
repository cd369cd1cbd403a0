/*-------------------------------------------------------------------------
 *
 * weir.c
 *	  Library entry point: settings, shared memory hooks, the launcher worker.
 *
 * weir needs shared memory for topic partition counters and producer
 * registrations, and a launcher background worker; both exist only when the
 * library is in shared_preload_libraries.  A backend that loads the library
 * later (CREATE EXTENSION in a server without it) defines nothing, leaves
 * weir_preloaded false, and the install script refuses to proceed.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/weir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "base/settings.h"
#include "base/shmem.h"
#include "capture/capture_shmem.h"
#include "sink/sink_remote.h"
#include "pipeline/launcher.h"
#include "weir.h"

PG_MODULE_MAGIC;

void
_PG_init(void)
{
	/*
	 * Without preloading there is no shared memory and no launcher, and
	 * PGC_POSTMASTER settings cannot be defined any more (that is FATAL):
	 * define nothing, and let weir._check_preloaded() explain.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	weir_settings_define();
	weir_preloaded = true;
	weir_shmem_install_hooks();
	weir_capture_shmem_install_hooks();
	weir_remote_sink_install_hooks();
	weir_launcher_register();
}

/*
 * weir._check_preloaded(): called by the install script, so that CREATE
 * EXTENSION fails early and clearly in a server that did not preload weir.
 */
PG_FUNCTION_INFO_V1(weir_check_preloaded);
Datum
weir_check_preloaded(PG_FUNCTION_ARGS)
{
	if (!weir_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("weir must be loaded via shared_preload_libraries"),
				 errdetail("weir keeps topic positions and pipeline state in shared memory, which can only be reserved at server start."),
				 errhint("Add weir to shared_preload_libraries in postgresql.conf and restart the server.")));
	PG_RETURN_VOID();
}
