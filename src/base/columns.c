/*-------------------------------------------------------------------------
 *
 * columns.c
 *	  Growing arrays of Datums of one type (see columns.h).  Values are
 *	  kept as given: the caller keeps by-reference values alive.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/columns.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/lsyscache.h"

#include "base/columns.h"

void
weir_column_init(WeirColumn *c, Oid type)
{
	c->type = type;
	get_typlenbyvalalign(type, &c->typlen, &c->typbyval, &c->typalign);
	weir_column_init_like(c, c);
}

/* An empty column of another's type, without catalog access. */
void
weir_column_init_like(WeirColumn *c, const WeirColumn *like)
{
	c->type = like->type;
	c->typlen = like->typlen;
	c->typbyval = like->typbyval;
	c->typalign = like->typalign;
	c->n = 0;
	c->cap = 64;
	c->values = palloc(sizeof(Datum) * c->cap);
	c->nulls = palloc(sizeof(bool) * c->cap);
}

/*
 * n empty columns of the given columns' types, allocated in cxt; needs no
 * catalog access, so it serves after a commit too (pending sink rows).
 */
WeirColumn *
weir_columns_like(const WeirColumn *types, int n, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	WeirColumn *cols = palloc(sizeof(WeirColumn) * Max(n, 1));

	for (int i = 0; i < n; i++)
		weir_column_init_like(&cols[i], &types[i]);
	MemoryContextSwitchTo(oldcxt);
	return cols;
}

/*
 * Empty the columns for the next checkpoint's rows, keeping their room: a
 * backlog fills them to the same size checkpoint after checkpoint, and
 * growing them again, by copies into new memory, was a sixth of a join
 * worker's memcpy.  Room past a million values goes back.
 */
void
weir_columns_clear(WeirColumn *cols, int n)
{
	for (int i = 0; i < n; i++)
	{
		WeirColumn *c = &cols[i];

		c->n = 0;
		if (c->cap > WEIR_COLUMN_KEEP_CAP)
		{
			c->cap = 64;
			c->values = repalloc(c->values, sizeof(Datum) * c->cap);
			c->nulls = repalloc(c->nulls, sizeof(bool) * c->cap);
		}
	}
}

/* Twice the room (weir_column_add, when the column is full). */
void
weir_column_grow(WeirColumn *c)
{
	c->cap *= 2;
	c->values = repalloc_huge(c->values, sizeof(Datum) * c->cap);
	c->nulls = repalloc_huge(c->nulls, sizeof(bool) * c->cap);
}

Datum
weir_column_array(WeirColumn *c)
{
	int			dims[1] = {c->n};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(c->values, c->nulls, 1, dims, lbs,
											  c->type, c->typlen, c->typbyval,
											  c->typalign));
}

bytea *
weir_make_bytea(const char *data, Size len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return b;
}
