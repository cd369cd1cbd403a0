/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a piece of work in a subtransaction of its own, so that an
 *	  error in it can be answered instead of ending the transaction.
 *
 * weir answers errors so in several places: a batch of records whose
 * evaluation fails is evaluated again row by row (worker.c), a first
 * insertion that meets a row already in the sink becomes an upsert
 * (sink.c), a write a row makes fail is written again row by row
 * (sink_guard.c).  All do it the way PL/pgSQL's exception blocks do.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/subxact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "base/subxact.h"

/*
 * Run work(arg) in a subtransaction.  True if it completed (the
 * subtransaction is committed into the current one).  False if it raised
 * an error: its work is rolled back, the subtransaction is gone (so that
 * callers can nest these), and *error, if given, is the error, allocated in
 * the caller's memory context, to rethrow (ReThrowError) or to report.
 */
bool
weir_in_subtransaction(void (*work) (void *arg), void *arg, ErrorData **error)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool done = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		work(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		done = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		if (error)
			*error = edata;
		else
			FreeErrorData(edata);
	}
	PG_END_TRY();
	return done;
}
