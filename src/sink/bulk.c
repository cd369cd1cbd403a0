/*-------------------------------------------------------------------------
 *
 * bulk.c
 *	  Writing new rows into a pipeline's sink table in bulk, the way COPY
 *	  does: table_multi_insert() in batches, then each row's index entries.
 *
 * A checkpoint's first emission of windows is most of a pipeline's write
 * work (one row per closed window), and going through INSERT ... SELECT
 * FROM unnest() costs the executor per row.  This path skips the executor,
 * so it is used only where the executor would add nothing: a plain table
 * with no triggers, no rules, no row-level security that applies to the current
 * user, no CHECK constraints, no generated columns, exactly the pipeline's
 * columns (in any order), NOT NULL only where weir never writes null, and
 * INSERT granted to the current user (the pipeline's owner).  Anything else goes through SQL
 * (sink_table.c).  Unique keys are still enforced by the index insertion,
 * so a row already in the sink raises a unique violation, which
 * sink_table.c answers by upserting.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/bulk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "base/subxact.h"
#include "sink/bulk.h"
#include "sink/sink_order.h"

#define SINK_BATCH 1000
#define SINK_PREFETCH 16		/* rows ahead, in the key-ordered index pass */

#if defined(__GNUC__) || defined(__clang__)
#define prefetch_read(p) __builtin_prefetch(p)
#else
#define prefetch_read(p) ((void) 0)
#endif

/*
 * Whether the bulk path may write this sink; if so, map[i] is the sink
 * attribute number (1-based) of the plan's i-th sink column, and with a
 * checkpoint_column (NULL: none), map[nsinkcols] is that column's: callers
 * then pass its values as one more column.
 */
bool
weir_sink_bulk_eligible(Oid sink, WeirPlan *plan, const char *checkpoint_column, int *map)
{
	Relation	rel = table_open(sink, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	int			ncols = plan->nsinkcols;
	int			live = 0;
	bool		ok;

	ok = rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->trigdesc == NULL &&
		/* rules (DO ALSO, DO INSTEAD) are the rewriter's: SQL applies them */
		!rel->rd_rel->relhasrules &&
		/* policies that apply to this user need the executor */
		check_enable_rls(sink, InvalidOid, true) != RLS_ENABLED &&
		(desc->constr == NULL ||
		 (desc->constr->num_check == 0 && !desc->constr->has_generated_stored)) &&
		pg_class_aclcheck(sink, GetUserId(), ACL_INSERT) == ACLCHECK_OK;

	for (int a = 0; ok && a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		const char *name = NameStr(att->attname);
		bool		found = false;

		if (att->attisdropped)
			continue;
		live++;
		for (int c = 0; c < ncols && !found; c++)
		{
			if (strcmp(plan->sinkcols[c].name, name) == 0)
			{
				map[c] = a + 1;
				found = true;
				/* values that may be null: NOT NULL there needs the executor */
				if (att->attnotnull && plan->sinkcols[c].nullable)
					ok = false;
			}
		}
		/* never null: a checkpoint's id */
		if (!found && checkpoint_column && strcmp(checkpoint_column, name) == 0)
		{
			map[ncols] = a + 1;
			found = true;
		}
		if (!found)
			ok = false;			/* a column weir does not fill (defaults...) */
	}
	table_close(rel, AccessShareLock);
	return ok && live == ncols + (checkpoint_column ? 1 : 0);
}

/*
 * The sink's unique index on exactly its key columns (what ON CONFLICT
 * would use), or InvalidOid.  keycol[k]: the plan's sink column of index
 * attribute k.
 */
static Oid
key_index(Relation rel, WeirPlan *plan, const int *map, int *keycol)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool		fits = form->indisunique && form->indimmediate && form->indisvalid &&
			form->indnkeyatts == plan->nsinkkey &&
			RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL;

		for (int k = 0; fits && k < form->indnkeyatts; k++)
		{
			keycol[k] = -1;
			for (int c = 0; c < plan->nsinkkey; c++)
				if (map[c] == form->indkey.values[k])
					keycol[k] = c;
			fits = keycol[k] >= 0;
		}
		index_close(index, AccessShareLock);
		if (fits)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/*
 * Insert nrows rows given column by column (values[c][r], nulls[c][r]),
 * as the current user, in the current transaction.
 *
 * Two passes.  The heap tuples go in as the rows come (reading the column
 * arrays and the values they point to, numerics say, in the order they
 * were made: sequential); then the index entries, in the order of the
 * sink's key (sink_order.c), from slots holding only the columns some
 * index reads (key, expression and predicate columns), so that btree
 * insertion walks the tree.  Sorting the rows for the heap too would make
 * forming each tuple a string of cache misses.
 */
void
weir_sink_bulk_insert(Oid sink, WeirPlan *plan, const int *map, int ncols,
					  Datum **values, bool **nulls, int nrows)
{
	Relation	rel = table_open(sink, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	BulkInsertState bistate = GetBulkInsertState();
	CommandId	cid = GetCurrentCommandId(true);
	TupleTableSlot *slots[SINK_BATCH];
	ItemPointerData *tids;

	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	for (int i = 0; i < SINK_BATCH; i++)
		slots[i] = table_slot_create(rel, NULL);
	tids = palloc_extended(sizeof(ItemPointerData) * Max(nrows, 1), MCXT_ALLOC_HUGE);

	for (int start = 0; start < nrows; start += SINK_BATCH)
	{
		int			n = Min(SINK_BATCH, nrows - start);

		for (int i = 0; i < n; i++)
		{
			TupleTableSlot *slot = slots[i];

			ExecClearTuple(slot);
			memset(slot->tts_isnull, true, sizeof(bool) * desc->natts);
			for (int c = 0; c < ncols; c++)
			{
				slot->tts_values[map[c] - 1] = values[c][start + i];
				slot->tts_isnull[map[c] - 1] = nulls[c][start + i];
			}
			ExecStoreVirtualTuple(slot);
		}
		table_multi_insert(rel, slots, n, cid, 0, bistate);
		for (int i = 0; i < n; i++)
			tids[start + i] = slots[i]->tts_tid;
		CHECK_FOR_INTERRUPTS();
	}

	if (rri->ri_NumIndices > 0)
	{
		int		   *keycol = palloc(sizeof(int) * Max(plan->nsinkkey, 1));
		int			nkeys = plan->nsinkkey;
		int		   *order;
		Bitmapset  *indexed = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
		int		   *cols = palloc(sizeof(int) * ncols);
		int			ncols_indexed = 0;
		TupleTableSlot *slot = slots[0];

		/* the order of the unique index on the key, else the key's own */
		if (!OidIsValid(key_index(rel, plan, map, keycol)))
			for (int k = 0; k < nkeys; k++)
				keycol[k] = k;
		order = weir_sink_key_order(plan, values, nrows, keycol, nkeys);
		for (int c = 0; c < ncols; c++)
			if (bms_is_member(map[c] - FirstLowInvalidHeapAttributeNumber, indexed))
				cols[ncols_indexed++] = c;
		for (int i = 0; i < nrows; i++)
		{
			int			r = order[i];

			/*
			 * The rows are visited in key order, so each one's values are at
			 * a random place of their arrays: ask for a later row's early.
			 */
			if (i + SINK_PREFETCH < nrows)
			{
				int			ahead = order[i + SINK_PREFETCH];

				for (int j = 0; j < ncols_indexed; j++)
					prefetch_read(&values[cols[j]][ahead]);
				prefetch_read(&tids[ahead]);
			}
			ExecClearTuple(slot);
			memset(slot->tts_isnull, true, sizeof(bool) * desc->natts);
			for (int j = 0; j < ncols_indexed; j++)
			{
				int			c = cols[j];

				slot->tts_values[map[c] - 1] = values[c][r];
				slot->tts_isnull[map[c] - 1] = nulls[c][r];
			}
			ExecStoreVirtualTuple(slot);
			slot->tts_tid = tids[r];
			list_free(ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL));
			ResetPerTupleExprContext(estate);
			if ((i & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		pfree(cols);
		pfree(order);
		pfree(keycol);
	}

	for (int i = 0; i < SINK_BATCH; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	pfree(tids);
	FreeBulkInsertState(bistate);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
}

/*
 * Rewrite rows already in the sink, given column by column like
 * weir_sink_bulk_insert: each row's tuple is found through the sink's
 * unique index on the key columns and updated in place (HOT when only
 * non-indexed columns change, so without index entries), as the current
 * user.  This is what INSERT ... ON CONFLICT DO UPDATE does for a row that
 * conflicts, without the executor per row.  Returns false, having updated
 * some rows or none, when there is no such index, UPDATE is not granted, or
 * a row's key is not in the sink: the caller then upserts through SQL
 * (which writes the same values again).  The sink must be bulk-eligible.
 */
bool
weir_sink_bulk_update(Oid sink, WeirPlan *plan, const int *map, int ncols,
					  Datum **values, bool **nulls, int nrows)
{
	Relation	rel = table_open(sink, RowExclusiveLock);
	int		   *keycol = palloc(sizeof(int) * Max(plan->nsinkkey, 1));
	Oid			indexoid = key_index(rel, plan, map, keycol);
	TupleDesc	desc = RelationGetDescr(rel);
	Relation	index;
	ScanKeyData *keys;
	IndexScanDesc scan;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	Snapshot	snapshot;
	CommandId	cid = GetCurrentCommandId(true);
	int		   *order;
	bool		all_found = true;

	if (!OidIsValid(indexoid) ||
		pg_class_aclcheck(sink, GetUserId(), ACL_UPDATE | ACL_SELECT) != ACLCHECK_OK)
	{
		table_close(rel, RowExclusiveLock);
		return false;
	}
	order = weir_sink_key_order(plan, values, nrows, keycol, plan->nsinkkey);
	index = index_open(indexoid, RowExclusiveLock);
	keys = palloc0(sizeof(ScanKeyData) * plan->nsinkkey);
	for (int k = 0; k < plan->nsinkkey; k++)
	{
		Oid			type = plan->sinkcols[keycol[k]].type;
		Oid			eq = get_opfamily_member(index->rd_opfamily[k], type, type,
											 BTEqualStrategyNumber);

		if (!OidIsValid(eq))
		{
			index_close(index, RowExclusiveLock);
			table_close(rel, RowExclusiveLock);
			return false;
		}
		ScanKeyInit(&keys[k], k + 1, BTEqualStrategyNumber, get_opcode(eq), (Datum) 0);
		keys[k].sk_collation = index->rd_indcollation[k];
	}
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	oldslot = table_slot_create(rel, NULL);
	newslot = table_slot_create(rel, NULL);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = index_beginscan(rel, index, snapshot, plan->nsinkkey, 0);

	for (int i = 0; i < nrows && all_found; i++)
	{
		int			r = order[i];
		TM_Result	result;
		TM_FailureData tmfd;
		LockTupleMode lockmode;
		bool		update_indexes;

		for (int k = 0; k < plan->nsinkkey; k++)
			keys[k].sk_argument = values[keycol[k]][r];
		index_rescan(scan, keys, plan->nsinkkey, NULL, 0);
		if (!index_getnext_slot(scan, ForwardScanDirection, oldslot))
		{
			all_found = false;	/* not there (someone deleted it?): SQL decides */
			break;
		}
		ExecClearTuple(newslot);
		memset(newslot->tts_isnull, true, sizeof(bool) * desc->natts);
		for (int c = 0; c < ncols; c++)
		{
			newslot->tts_values[map[c] - 1] = values[c][r];
			newslot->tts_isnull[map[c] - 1] = nulls[c][r];
		}
		ExecStoreVirtualTuple(newslot);
		result = table_tuple_update(rel, &oldslot->tts_tid, newslot, cid, snapshot,
									InvalidSnapshot, true, &tmfd, &lockmode,
									&update_indexes);
		if (result != TM_Ok)
			elog(ERROR, "weir could not update a row of sink \"%s\" (result %d)",
				 RelationGetRelationName(rel), (int) result);
		/*
		 * Not HOT: new index entries.  update = false: true would look up the
		 * updated columns in a range table this EState does not have (it is
		 * only a hint for bottom-up index deletion).
		 */
		if (update_indexes && rri->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(rri, newslot, estate, false, false, NULL, NIL));
		ResetPerTupleExprContext(estate);
		CHECK_FOR_INTERRUPTS();
	}

	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(oldslot);
	ExecDropSingleTupleTableSlot(newslot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	index_close(index, RowExclusiveLock);
	table_close(rel, NoLock);
	pfree(order);
	CommandCounterIncrement();
	return all_found;
}

/*
 * Run insert(arg) in a subtransaction: true if it completed; false if it
 * raised a unique violation (a row already there), its work rolled back;
 * any other error propagates.  Callers then write the rows by upserting.
 */
bool
weir_sink_try_insert(void (*insert) (void *arg), void *arg)
{
	ErrorData  *edata;

	if (weir_in_subtransaction(insert, arg, &edata))
		return true;
	if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
		ReThrowError(edata);
	return false;
}
