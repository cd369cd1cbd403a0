/*-------------------------------------------------------------------------
 *
 * sink_order.c
 *	  The order of a checkpoint's sink rows along the sink's unique key, so
 *	  that index insertion (and the lookups of in-place updates) walk the
 *	  btree instead of landing on a random page per row.
 *
 * Rows come column by column (values[c][r]); comparing them there would
 * read each column array at two random places per comparison, a cache
 * miss each.  So the key columns are first copied into one contiguous
 * array of items (key datums, then the row number) and those are sorted.
 * When every key column compares as a signed integer (int2, int4, int8,
 * timestamp, timestamptz: the types whose sort support PostgreSQL gives
 * ssup_datum_signed_cmp or ssup_datum_int32_cmp), and there are at most
 * two, the items are sorted by a specialisation of PostgreSQL's own sort
 * (lib/sort_template.h) that compares inline; other keys go through each
 * type's sort support.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/sink/sink_order.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "parser/parse_oper.h"
#include "utils/sortsupport.h"


/* Two signed-integer key columns (the second 0 when there is one) */
typedef struct IntItem
{
	int64		k0;
	int64		k1;
	int64		row;
} IntItem;

static inline int
int_item_cmp(const IntItem *a, const IntItem *b)
{
	if (a->k0 != b->k0)
		return a->k0 < b->k0 ? -1 : 1;
	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	return 0;
}

#define ST_SORT sort_int_items
#define ST_ELEMENT_TYPE IntItem
#define ST_COMPARE(a, b) int_item_cmp(a, b)
#define ST_SCOPE static
#define ST_CHECK_FOR_INTERRUPTS
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"
#include "sink/sink_order.h"

/* Any key: nkeys datums then the row number, compared by sort support */
typedef struct ItemOrder
{
	int			nkeys;
	SortSupportData *ssup;
} ItemOrder;

static int
compare_items(const void *a, const void *b, void *arg)
{
	ItemOrder  *order = (ItemOrder *) arg;
	const Datum *x = a;
	const Datum *y = b;

	for (int k = 0; k < order->nkeys; k++)
	{
		int			cmp = ApplySortComparator(x[k], false, y[k], false, &order->ssup[k]);

		if (cmp != 0)
			return cmp;
	}
	return 0;
}

static void
prepare_sort_support(WeirPlan *plan, SortSupport ssup, int c)
{
	Oid			lt;

	get_sort_group_operators(plan->sinkcols[c].type, true, false, false, &lt,
							 NULL, NULL, NULL);
	ssup->ssup_cxt = CurrentMemoryContext;
	ssup->ssup_collation = plan->sinkcols[c].collation;
	ssup->ssup_nulls_first = false;
	PrepareSortSupportFromOrderingOp(lt, ssup);
}

static int *
int_order(Datum **values, int nrows, int nkeys, const bool *int32key)
{
	IntItem    *items = palloc_extended(sizeof(IntItem) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	int		   *rows = palloc(sizeof(int) * Max(nrows, 1));

	for (int r = 0; r < nrows; r++)
	{
		items[r].k0 = int32key[0] ? DatumGetInt32(values[0][r]) : DatumGetInt64(values[0][r]);
		items[r].k1 = nkeys < 2 ? 0 :
			int32key[1] ? DatumGetInt32(values[1][r]) : DatumGetInt64(values[1][r]);
		items[r].row = r;
	}
	sort_int_items(items, nrows);
	for (int r = 0; r < nrows; r++)
		rows[r] = (int) items[r].row;
	pfree(items);
	return rows;
}

/*
 * Row numbers 0 .. nrows - 1 in the order of the sink columns keycol[0 ..
 * nkeys - 1] (the columns of the sink's unique index, in the index's order;
 * never null); as given when nkeys is 0.  palloc'd.
 */
int *
weir_sink_key_order(WeirPlan *plan, Datum **values, int nrows,
					const int *keycol, int nkeys)
{
	SortSupportData *ssup = palloc0(sizeof(SortSupportData) * Max(nkeys, 1));
	bool		int32key[2] = {false, false};
	bool		all_int = nkeys <= 2;
	int			width = nkeys + 1;
	Datum	   *items;
	Datum	   *keyvalues[2];
	int		   *rows;
	ItemOrder	order;

	for (int k = 0; k < nkeys; k++)
	{
		prepare_sort_support(plan, &ssup[k], keycol[k]);
		if (k < 2)
		{
			int32key[k] = ssup[k].comparator == ssup_datum_int32_cmp;
			keyvalues[k] = values[keycol[k]];
		}
		if (ssup[k].comparator != ssup_datum_signed_cmp &&
			ssup[k].comparator != ssup_datum_int32_cmp)
			all_int = false;
	}
	if (nkeys > 0 && all_int)
	{
		pfree(ssup);
		return int_order(keyvalues, nrows, nkeys, int32key);
	}

	rows = palloc(sizeof(int) * Max(nrows, 1));
	if (nkeys == 0)
	{
		for (int r = 0; r < nrows; r++)
			rows[r] = r;
		pfree(ssup);
		return rows;
	}
	items = palloc_extended(sizeof(Datum) * width * Max(nrows, 1), MCXT_ALLOC_HUGE);
	for (int r = 0; r < nrows; r++)
	{
		for (int k = 0; k < nkeys; k++)
			items[r * width + k] = values[keycol[k]][r];
		items[r * width + nkeys] = Int32GetDatum(r);
	}
	order.nkeys = nkeys;
	order.ssup = ssup;
	qsort_arg(items, nrows, sizeof(Datum) * width, compare_items, &order);
	for (int r = 0; r < nrows; r++)
		rows[r] = DatumGetInt32(items[r * width + nkeys]);
	pfree(items);
	pfree(ssup);
	return rows;
}

/*
 * Row numbers 0 .. nrows - 1 in the order of two int64 (timestamptz)
 * columns, the first then the second: a window's rows by end, then start.
 */
int *
weir_sink_time_order(Datum *first, Datum *second, int nrows)
{
	Datum	   *keys[2] = {first, second};
	bool		int32key[2] = {false, false};

	return int_order(keys, nrows, 2, int32key);
}
