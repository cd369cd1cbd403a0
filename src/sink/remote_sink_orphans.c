/*-------------------------------------------------------------------------
 *
 * remote_sink_orphans.c
 *	  Resolving the prepared transactions of two-phase remote sinks whose
 *	  pipelines went without weir.drop_pipeline.
 *
 * weir.drop_pipeline resolves a pipeline's prepared transactions on its
 * remote first.  A pipeline can also go with its definition (DROP ...
 * CASCADE of its source, DROP OWNED of its owner): then a trigger on
 * weir.pipeline leaves the sink's connection, transaction prefix and the
 * last checkpoint committed here in weir.remote_sink_to_resolve, in the
 * same transaction.  Each round, the launcher calls
 * weir_remote_sink_resolve_orphans: for each row whose pipeline has no
 * worker and no checkpoint writer left, it connects and resolves as a
 * worker would at its start (sink_remote.c: commit up to the last
 * checkpoint, roll back the rest), then deletes the row.  On a failure
 * the row stays, a WARNING says why (never with the connection string),
 * and the next try is RETRY_MS later.
 *
 * Called outside a transaction; opens its own.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/remote_sink_orphans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/shmem.h"
#include "base/transaction.h"
#include "catalog_sql/catalog_remote_sink.h"
#include "checkpoint/checkpoint_writer.h"
#include "sink/remote_sink_orphans.h"
#include "sink/sink_remote.h"

/* Wait between tries after a failure */
#define RETRY_MS 5000

static TimestampTz next_try = 0;

/* Resolve one; whether it is done */
static bool
resolve_one(const WeirRemoteSinkOrphan *o)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *what = psprintf("remote sink of dropped pipeline %d", o->pipeline_id);
	volatile bool done = false;

	PG_TRY();
	{
		PGconn	   *conn = weir_remote_link_connect(o->conninfo, o->owner, what);

		(void) weir_remote_sink_resolve(conn, o->prefix, o->last_checkpoint, what);
		weir_remote_link_close(conn);
		done = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errmsg("could not resolve the prepared transactions of the %s: %s", what, edata->message),
				 errhint("The launcher tries again; they hold their locks on the remote server until then.")));
	}
	PG_END_TRY();
	return done;
}

/* Resolve the remote transactions of pipelines gone unresolved (file header) */
void
weir_remote_sink_resolve_orphans(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *orphans;
	List	   *ready = NIL;
	List	   *resolved = NIL;
	ListCell   *lc;
	bool		failed = false;
	TimestampTz now = GetCurrentTimestamp();

	if (now < next_try)
		return;
	weir_transaction_begin();
	orphans = weir_catalog_remote_sink_orphans(cxt);
	foreach(lc, orphans)
	{
		WeirRemoteSinkOrphan *o = lfirst(lc);

		/* its worker, or a writer committing its last checkpoint, is still going */
		if (weir_shmem_pipeline(o->pipeline_id, false) != NULL ||
			!weir_writer_gone(o->pipeline_id))
			failed = true;
		else
			ready = lappend(ready, o);
	}
	weir_transaction_end();
	MemoryContextSwitchTo(cxt);
	foreach(lc, ready)
	{
		WeirRemoteSinkOrphan *o = lfirst(lc);

		if (resolve_one(o))
			resolved = lappend(resolved, o->prefix);
		else
			failed = true;
	}
	if (resolved)
	{
		weir_transaction_begin();
		foreach(lc, resolved)
			weir_catalog_remote_sink_orphan_resolved(lfirst(lc));
		weir_transaction_end();
		MemoryContextSwitchTo(cxt);
	}
	next_try = failed ? now + RETRY_MS * INT64CONST(1000) : 0;
}
