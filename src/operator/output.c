/*-------------------------------------------------------------------------
 *
 * output.c
 *	  What an operator owes the sink, into a checkpoint's package.
 *
 * Called by operators in a checkpoint's sync phase (their collect), in the
 * worker, in a transaction (the dead letters' JSON), without the slot
 * lock.  The package's writes run later, in the async phase
 * (checkpoint_apply.c), in the order they were added.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/output.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "base/dead_letter.h"
#include "operator/output.h"

/*
 * Sink rows into the package, when there are any, and the windows that
 * could not be rows as dead letters of the sink (no partition, no
 * position: a window is made of many records).
 */
void
weir_output_rows(WeirOperator *op, WeirPackage *pkg, WeirPackageOpKind kind,
				 WeirSinkRows *rows)
{
	ListCell   *lc;
	WeirColumn	d[4];

	if (rows->cols[0].n > 0)
		weir_package_add_columns(pkg, kind, InvalidOid, rows->cols, rows->ncols);
	if (rows->problems == NIL)
		return;
	weir_dead_letter_columns_init(d);
	foreach(lc, rows->problems)
	{
		WeirSinkProblem *p = lfirst(lc);

		weir_column_add(&d[0], (Datum) 0, true);
		weir_column_add(&d[1], (Datum) 0, true);
		weir_column_add(&d[2], CStringGetTextDatum(p->error), false);
		weir_column_add(&d[3], DirectFunctionCall1(jsonb_in, CStringGetDatum(p->record)), false);
		pg_atomic_fetch_add_u64(op->env.records_dead, 1);
	}
	weir_package_add_columns(pkg, WEIR_PKG_DEAD_LETTERS, op->env.sink, d, 4);
	list_free_deep(rows->problems);
	rows->problems = NIL;
}

/* Keys of sink rows to delete into the package, when there are any. */
void
weir_output_deletes(WeirPackage *pkg, WeirColumn **key, int nkey)
{
	if (nkey > 0 && key[0]->n > 0)
		weir_package_add_column_list(pkg, WEIR_PKG_SINK_DELETE, key, nkey);
}

/*
 * Rows passed on record by record (dedup, projection, join pairs), all
 * inserted, and the chunks of the keyed state collected with them, if any
 * (collected: NULL for none).
 */
void
weir_output_kept(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark,
				 WeirColumn *pending, WeirKeyedCollected *collected, WeirCollected *n)
{
	n->sink_rows = pending[0].n;
	if (pending[0].n > 0)
		weir_package_add_columns(pkg, WEIR_PKG_SINK_INSERT, InvalidOid, pending,
								 op->env.plan->nsinkcols);
	if (collected)
	{
		n->state_rows += collected->entries;
		n->bytes += collected->bytes;
		weir_keyed_package(op->keys, pkg, watermark, collected);
	}
}

void
weir_kept_rows_init(WeirKeptRows *k, WeirPlan *plan, MemoryContext parent)
{
	WeirColumn *types = MemoryContextAlloc(parent, sizeof(WeirColumn) * Max(plan->ncolumns, 1));

	k->plan = plan;
	k->cxt = AllocSetContextCreate(parent, "weir kept rows", ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < plan->ncolumns; i++)
		weir_column_init(&types[i], plan->columns[i].type);
	/* the arrays outlive each checkpoint's rows (their by-reference values: cxt) */
	k->pending = weir_columns_like(types, plan->ncolumns, parent);
}

/* A record's column values join the pending rows, copied. */
void
weir_kept_rows_add(WeirKeptRows *k, Datum *values, bool *nulls)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(k->cxt);

	for (int i = 0; i < k->plan->ncolumns; i++)
	{
		WeirColumnSpec *c = &k->plan->columns[i];

		weir_column_add(&k->pending[i],
						nulls[i] ? (Datum) 0 : datumCopy(values[i], c->typbyval, c->typlen),
						nulls[i]);
	}
	MemoryContextSwitchTo(oldcxt);
}

/* After a checkpoint committed the pending rows. */
void
weir_kept_rows_forget(WeirKeptRows *k)
{
	MemoryContextReset(k->cxt);
	weir_columns_clear(k->pending, k->plan->ncolumns);
}
