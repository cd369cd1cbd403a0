/*-------------------------------------------------------------------------
 *
 * sink_guard.c
 *	  Writes of a checkpoint that one bad row cannot stop: a row the sink
 *	  (or the late-records table) refuses becomes a dead letter, in the
 *	  checkpoint's transaction, and the rest is written.
 *
 * A checkpoint writes its sink rows in a few statements.  If one row breaks
 * a constraint of the user's table, has a key too large for its index, or
 * trips a trigger, the statement fails, and so would every later try, and
 * the pipeline would restart from its last checkpoint and fail again on the
 * same row, forever.  So each batch is written in a subtransaction; when it
 * fails with an error about the data (weir_error_is_about_data: errors a
 * row causes), it is written
 * again row by row, each in a subtransaction of its own, and the rows that
 * fail go to weir.dead_letters with their error: source the table written
 * (partition and position null, the row as JSON) for sink rows, or the
 * topic with the record's partition and position for late records.  Other
 * errors (privileges, locks, resources, shutdown) still fail the
 * checkpoint: they are not a row's fault and retrying later can cure them.
 * Before blaming any row, the table is checked again as a worker's start
 * checks it: a table changed since the round began (a NOT NULL column
 * without a default added) fails the checkpoint and disables the pipeline,
 * its rows kept for when the table is fixed.
 * The cost when nothing fails: one subtransaction per write.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_guard.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "base/dead_letter.h"
#include "base/subxact.h"
#include "catalog_sql/catalog_pipeline.h"
#include "sink/sink_guard.h"

typedef struct GuardedCall
{
	WeirGuardedWrite write;
	void	   *arg;
	WeirColumn *cols;
} GuardedCall;

static void
guarded_call(void *arg)
{
	GuardedCall *call = arg;

	call->write(call->arg, call->cols);
}

/*
 * Run write(arg, cols) in a subtransaction.  False, with the error's
 * message in *message, if it failed on the data; other errors propagate.
 */
static bool
try_write(WeirGuardedWrite write, void *arg, WeirColumn *cols, char **message)
{
	GuardedCall call = {write, arg, cols};
	ErrorData  *edata;

	if (weir_in_subtransaction(guarded_call, &call, &edata))
		return true;
	if (!weir_error_is_about_data(edata->sqlerrcode))
		ReThrowError(edata);
	*message = edata->message;
	return false;
}

/* Row i of `cols` as a JSON object keyed by `names`. */
static Datum
row_json(WeirColumn *cols, int ncols, const char *const *names, int i)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int c = 0; c < ncols; c++)
		weir_json_field(&buf, names[c], cols[c].type, cols[c].values[i], cols[c].nulls[i]);
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * Write the rows of cols through write(arg, ...), in the current
 * transaction; rows refused for their data become dead letters of
 * target->relid.  Returns how many did: the caller counts them, and the
 * rows written, only into what commits with the checkpoint
 * (weir.pipeline_counters), never into shared counters directly, since the
 * transaction may yet roll back.
 */
int
weir_guarded_write(const WeirPipelineRow *row, WeirColumn *cols, int ncols,
				   WeirGuardedWrite write, void *arg, const WeirGuardTarget *target)
{
	int			n = cols[0].n;
	WeirColumn *one;
	WeirColumn	dead[4];
	char	   *message;

	if (n == 0 || try_write(write, arg, cols, &message))
		return 0;
	/*
	 * A table changed under the round (a NOT NULL column added, say) fails
	 * every row: that is the table's fault, not theirs.  The failed write
	 * locked the table, so what it is now is what the rows met.
	 */
	target->recheck(arg);

	/* some row is bad: each on its own */
	one = palloc(sizeof(WeirColumn) * ncols);
	weir_dead_letter_columns_init(dead);
	for (int i = 0; i < n; i++)
	{
		for (int c = 0; c < ncols; c++)
		{
			one[c] = cols[c];
			one[c].values = &cols[c].values[i];
			one[c].nulls = &cols[c].nulls[i];
			one[c].n = 1;
			one[c].cap = 1;
		}
		CHECK_FOR_INTERRUPTS();
		if (try_write(write, arg, one, &message))
			continue;
		if (target->positions)
		{
			/* a record: its partition and position, read again from the topic */
			weir_column_add(&dead[0], cols[0].values[i], false);
			weir_column_add(&dead[1], cols[1].values[i], false);
			weir_column_add(&dead[3], (Datum) 0, true);
		}
		else
		{
			weir_column_add(&dead[0], (Datum) 0, true);
			weir_column_add(&dead[1], (Datum) 0, true);
			weir_column_add(&dead[3], row_json(cols, ncols, target->names, i), false);
		}
		weir_column_add(&dead[2], CStringGetTextDatum(psprintf("%s: %s", target->what, message)),
						false);
	}
	if (dead[0].n > 0)
	{
		weir_catalog_write_dead_letters(row->id, target->relid, weir_column_array(&dead[0]),
										weir_column_array(&dead[1]),
										weir_column_array(&dead[2]),
										weir_column_array(&dead[3]));
		ereport(LOG,
				(errmsg("weir pipeline \"%s\": %d of %d rows could not be written to %s; they are in weir.dead_letters",
						row->name, dead[0].n, n, target->what)));
	}
	return dead[0].n;
}
