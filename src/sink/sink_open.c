/*-------------------------------------------------------------------------
 *
 * sink_open.c
 *	  A pipeline's sink, of whichever kind it has: a table of this
 *	  database (a topic's too), or a table of another server.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_open.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "sink/sink_open.h"
#include "sink/sink_remote.h"
#include "sink/sink_table.h"

/*
 * The sink of pipeline `row` (which must outlive it), in cxt; `slot` shows
 * a remote sink's trouble.  Needs a transaction.
 */
WeirSink *
weir_sink_open(WeirPipelineRow *row, WeirPlan *plan, WeirPipelineSlot *slot, MemoryContext cxt)
{
	/* a pipeline without a sink table writes to another server */
	if (!OidIsValid(row->sink))
		return weir_sink_remote_open(row, plan, slot, cxt);
	return weir_sink_table_open(row, plan, cxt);
}
