/*-------------------------------------------------------------------------
 *
 * join.c
 *	  Interval join of two topics.
 *
 * Semantics (README "Interval join").  A left row L and a right row R join
 * when their keys are equal and R.t - lower <= L.t <= R.t + upper.  Each
 * row is buffered per key on its side; a row arriving on one side is
 * matched against the other side's buffered rows of its key, and each
 * pair is emitted once, when its second row arrives.  A left row can match
 * right rows up to L.t + lower, and right rows to come have t >= the
 * watermark, so L leaves the buffer once the watermark is past L.t + lower;
 * a right row once it is past R.t + upper.  A row with t below the
 * watermark is late (a partner may have left): dropped and counted.  So
 * the result is every pair of rows that are not late, whatever the order
 * of reading.  A left outer join also emits, when a left row leaves the
 * buffer without ever having matched, the row with the right's columns
 * null.
 *
 * State.  Per side, keyed state (keyed.c, space = side) holds one entry
 * per key; its state is the latest row time (for expiry: the entry leaves
 * when every row in it has) and a list of rows in the store's DSA area
 * (carved from blocks, row_arena.c), newest first, each with its side's
 * column values (datumSerialize) and a matched flag.  Rows are pruned
 * when their key is next touched, and with their entry.  Chunk images
 * carry the rows (image_hook / restore_hook); before each checkpoint every
 * row that has left is drained for real (weir_join_drain), because a
 * restore skips entries whose time has passed.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/join.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/memutils.h"

#include "join.h"

typedef struct JoinRow
{
	dsa_pointer next;
	TimestampTz t;
	int64		pos;
	int32		part;
	uint32		matched;
	uint32		len;			/* bytes of values */
	uint32		arena_off;		/* where in its block (row_arena.c) */
	char		values[FLEXIBLE_ARRAY_MEMBER];	/* the side's columns, serialised */
} JoinRow;

/* a row's chunk image: t, pos, part, matched, len, then the values */
#define ROW_IMAGE_HEADER (sizeof(TimestampTz) + sizeof(int64) + 3 * sizeof(uint32))

static inline JoinRow *
row_at(WeirJoin *j, dsa_pointer dp)
{
	return (JoinRow *) dsa_get_address(j->store->area, dp);
}

static inline JoinKeyState *
key_state(WeirJoin *j, int side, dsa_pointer entry)
{
	return (JoinKeyState *) weir_keyed_state(j->sides[side], entry);
}

static inline Size
row_size(uint32 len)
{
	return offsetof(JoinRow, values) + len;
}

/* A row's column values back as Datums, in the pending rows' memory. */
static void
restore_values(WeirJoin *j, JoinRow *row, int ncols, Datum *values, bool *nulls)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(j->pending_cxt);
	char	   *p = row->values;

	for (int i = 0; i < ncols; i++)
		values[i] = datumRestore(&p, &nulls[i]);
	MemoryContextSwitchTo(oldcxt);
}

/* One joined row into the pending sink rows; right NULL: left only. */
static void
emit(WeirJoin *j, Datum *lvalues, bool *lnulls, Datum *rvalues, bool *rnulls)
{
	WeirPlan   *plan = j->plan;

	for (int i = 0; i < plan->nsinkcols; i++)
	{
		int			idx = plan->sink_index[i];

		if (plan->sink_side[i] == 0)
			weir_column_add(&j->pending[i], lvalues[idx], lnulls[idx]);
		else if (rvalues)
			weir_column_add(&j->pending[i], rvalues[idx], rnulls[idx]);
		else
			weir_column_add(&j->pending[i], (Datum) 0, true);
	}
}

/* A left row that leaves without a match, in a left outer join. */
static void
emit_unmatched(WeirJoin *j, JoinRow *row)
{
	int			n = Max(j->plan->ncolumns, 1);
	/* in the pending rows' memory: this may run outside any transaction */
	Datum	   *values = MemoryContextAlloc(j->pending_cxt, sizeof(Datum) * n);
	bool	   *nulls = MemoryContextAlloc(j->pending_cxt, sizeof(bool) * n);

	restore_values(j, row, j->plan->ncolumns, values, nulls);
	emit(j, values, nulls, NULL, NULL);
}

static void
free_row(WeirJoin *j, int side, dsa_pointer dp)
{
	JoinRow    *row = row_at(j, dp);

	if (side == 0 && j->plan->left_outer && !row->matched)
		emit_unmatched(j, row);
	j->sides[side]->live_bytes -= ROW_IMAGE_HEADER + row->len;
	weir_row_arena_free(&j->arenas[side], dp, row->arena_off);
}

/*
 * Drop the rows of an entry that can match nothing more (t + bound below
 * the watermark); returns whether any went.
 */
static bool
prune(WeirJoin *j, int side, dsa_pointer entry, TimestampTz watermark)
{
	JoinKeyState *s = key_state(j, side, entry);
	dsa_pointer *link = &s->rows;
	bool		pruned = false;

	if (TIMESTAMP_NOT_FINITE(watermark))
		return false;
	while (DsaPointerIsValid(*link))
	{
		dsa_pointer dp = *link;
		JoinRow    *row = row_at(j, dp);

		if (row->t + j->bound[side] < watermark)
		{
			*link = row->next;
			free_row(j, side, dp);
			s->nrows--;
			pruned = true;
		}
		else
			link = &row->next;
	}
	return pruned;
}

/* keyed.c hooks ------------------------------------------------------------ */

static void
image_rows(void *arg, WeirKeyed *k, WeirWindow *w, StringInfo buf)
{
	WeirJoin   *j = (WeirJoin *) arg;
	JoinKeyState *s = (JoinKeyState *) weir_window_states(k->store->root, w);

	for (dsa_pointer dp = s->rows; DsaPointerIsValid(dp);)
	{
		JoinRow    *row = row_at(j, dp);

		appendBinaryStringInfo(buf, (char *) &row->t, sizeof(TimestampTz));
		appendBinaryStringInfo(buf, (char *) &row->pos, sizeof(int64));
		appendBinaryStringInfo(buf, (char *) &row->part, sizeof(int32));
		appendBinaryStringInfo(buf, (char *) &row->matched, sizeof(uint32));
		appendBinaryStringInfo(buf, (char *) &row->len, sizeof(uint32));
		appendBinaryStringInfo(buf, row->values, row->len);
		dp = row->next;
	}
}

static int64
restore_rows(void *arg, WeirKeyed *k, dsa_pointer entry, const char *state,
			 const char *p, Size avail)
{
	WeirJoin   *j = (WeirJoin *) arg;
	int			side = k->space;
	JoinKeyState image;
	const char *start = p;
	dsa_pointer *tail = NULL;
	JoinKeyState *s = NULL;

	memcpy(&image, state, sizeof(JoinKeyState));
	if (image.nrows < 0)
		return -1;
	if (DsaPointerIsValid(entry))
	{
		/* a later version replaces the rows of an earlier one */
		s = key_state(j, side, entry);
		while (DsaPointerIsValid(s->rows))
		{
			dsa_pointer next = row_at(j, s->rows)->next;

			j->sides[side]->live_bytes -= ROW_IMAGE_HEADER + row_at(j, s->rows)->len;
			weir_row_arena_free(&j->arenas[side], s->rows, row_at(j, s->rows)->arena_off);
			s->rows = next;
		}
		s->t = image.t;
		s->nrows = 0;
		tail = &s->rows;
	}
	for (int64 i = 0; i < image.nrows; i++)
	{
		JoinRow		hdr;

		if (avail - (p - start) < ROW_IMAGE_HEADER)
			return -1;
		memcpy(&hdr.t, p, sizeof(TimestampTz));
		memcpy(&hdr.pos, p + 8, sizeof(int64));
		memcpy(&hdr.part, p + 16, sizeof(int32));
		memcpy(&hdr.matched, p + 20, sizeof(uint32));
		memcpy(&hdr.len, p + 24, sizeof(uint32));
		p += ROW_IMAGE_HEADER;
		if (avail - (p - start) < hdr.len)
			return -1;
		if (s)
		{
			uint32		off;
			dsa_pointer dp = weir_row_arena_alloc(&j->arenas[side], row_size(hdr.len), &off);
			JoinRow    *row;

			if (!DsaPointerIsValid(dp))
				ereport(ERROR,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("checkpoint of the join does not fit in its max_state_memory"),
						 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
			row = row_at(j, dp);
			row->arena_off = off;
			row->next = InvalidDsaPointer;
			row->t = hdr.t;
			row->pos = hdr.pos;
			row->part = hdr.part;
			row->matched = hdr.matched;
			row->len = hdr.len;
			memcpy(row->values, p, hdr.len);
			*tail = dp;
			tail = &row->next;
			s->nrows++;
			j->sides[side]->live_bytes += ROW_IMAGE_HEADER + hdr.len;
		}
		p += hdr.len;
	}
	return p - start;
}

/* An entry leaves: every row in it has (its latest row's time passed). */
static void
remove_rows(void *arg, WeirKeyed *k, dsa_pointer entry)
{
	WeirJoin   *j = (WeirJoin *) arg;
	JoinKeyState *s = key_state(j, k->space, entry);

	while (DsaPointerIsValid(s->rows))
	{
		dsa_pointer next = row_at(j, s->rows)->next;

		free_row(j, k->space, s->rows);
		s->rows = next;
	}
	s->nrows = 0;
}

/* ------------------------------------------------------------------------- */

WeirJoin *
weir_join_create(WeirPlan *plan, WeirWindowStore *store, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir join", ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	WeirJoin   *j = palloc0(sizeof(WeirJoin));

	j->plan = plan;
	j->store = store;
	j->bound[0] = plan->join_lower;
	j->bound[1] = plan->join_upper;
	j->watermark = DT_NOBEGIN;
	for (int side = 0; side < 2; side++)
	{
		/* an entry expires once its latest row has: t + bound < watermark */
		WeirKeyed  *k = weir_keyed_create(plan, store, side, sizeof(JoinKeyState),
										  j->bound[side] + 1, false, cxt);

		k->hook_arg = j;
		k->image_hook = image_rows;
		k->restore_hook = restore_rows;
		k->remove_hook = remove_rows;
		j->sides[side] = k;
		weir_row_arena_init(&j->arenas[side], store);
	}
	j->pending_cxt = AllocSetContextCreate(cxt, "weir join pending rows",
										   ALLOCSET_DEFAULT_SIZES);
	j->column_types = palloc(sizeof(WeirColumn) * plan->nsinkcols);
	for (int i = 0; i < plan->nsinkcols; i++)
		weir_column_init(&j->column_types[i], plan->sinkcols[i].type);
	MemoryContextSwitchTo(oldcxt);
	j->pending = weir_columns_like(j->column_types, plan->nsinkcols, j->pending_cxt);
	return j;
}

/* A row whose partner may have left the other side's buffer already. */
bool
weir_join_is_late(WeirJoin *j, TimestampTz t, TimestampTz watermark)
{
	return !TIMESTAMP_NOT_FINITE(watermark) && t < watermark;
}

/*
 * One row of `side`: join it with the other side's rows of its key, then
 * buffer it.  *matches: pairs emitted.  Returns false if state memory ran
 * out (store->out_of_memory).
 */
bool
weir_join_apply(WeirJoin *j, int side, const char *key, uint32 keylen, TimestampTz t,
				int32 part, int64 pos, Datum *values, bool *nulls,
				TimestampTz watermark, int64 *matches)
{
	int			other = 1 - side;
	WeirPlan   *plan = side == 0 ? j->plan : j->plan->right;
	WeirPlan   *other_plan = other == 0 ? j->plan : j->plan->right;
	bool		created;
	dsa_pointer entry;
	Datum	   *own = NULL;			/* this row's values, copied once matched */
	bool	   *own_nulls = NULL;
	Datum	   *theirs = palloc(sizeof(Datum) * Max(other_plan->ncolumns, 1));
	bool	   *their_nulls = palloc(sizeof(bool) * Max(other_plan->ncolumns, 1));
	bool		matched = false;
	Size		len = 0;
	dsa_pointer dp;
	uint32		off;
	JoinRow    *row;
	JoinKeyState *s;

	j->watermark = watermark;
	*matches = 0;
	entry = weir_window_entry_find(j->store, other, key, keylen, false, &created);
	if (DsaPointerIsValid(entry))
	{
		if (prune(j, other, entry, watermark))
			weir_keyed_touch(j->sides[other], entry);
		for (dsa_pointer odp = key_state(j, other, entry)->rows; DsaPointerIsValid(odp);)
		{
			JoinRow    *o = row_at(j, odp);
			TimestampTz lt = side == 0 ? t : o->t;
			TimestampTz rt = side == 0 ? o->t : t;

			if (rt - plan->join_lower <= lt && lt <= rt + plan->join_upper)
			{
				if (own == NULL)
				{
					MemoryContext oldcxt = MemoryContextSwitchTo(j->pending_cxt);

					own = palloc(sizeof(Datum) * Max(plan->ncolumns, 1));
					own_nulls = palloc(sizeof(bool) * Max(plan->ncolumns, 1));
					for (int i = 0; i < plan->ncolumns; i++)
					{
						own_nulls[i] = nulls[i];
						own[i] = nulls[i] ? (Datum) 0 :
							datumCopy(values[i], plan->columns[i].typbyval,
									  plan->columns[i].typlen);
					}
					MemoryContextSwitchTo(oldcxt);
				}
				restore_values(j, o, other_plan->ncolumns, theirs, their_nulls);
				if (side == 0)
					emit(j, own, own_nulls, theirs, their_nulls);
				else
					emit(j, theirs, their_nulls, own, own_nulls);
				matched = true;
				(*matches)++;
				if (other == 0 && !o->matched)
				{
					o->matched = 1;
					weir_keyed_touch(j->sides[other], entry);
				}
			}
			odp = o->next;
		}
	}

	/* buffer the row on its side */
	for (int i = 0; i < plan->ncolumns; i++)
		len += datumEstimateSpace(values[i], nulls[i], plan->columns[i].typbyval,
								  plan->columns[i].typlen);
	entry = weir_keyed_enter(j->sides[side], key, keylen, t, &created);
	if (!DsaPointerIsValid(entry))
		return false;
	dp = weir_row_arena_alloc(&j->arenas[side], row_size(len), &off);
	if (!DsaPointerIsValid(dp))
		return false;
	row = row_at(j, dp);
	row->arena_off = off;
	row->t = t;
	row->pos = pos;
	row->part = part;
	row->matched = matched;
	row->len = len;
	{
		char	   *p = row->values;

		for (int i = 0; i < plan->ncolumns; i++)
			datumSerialize(values[i], nulls[i], plan->columns[i].typbyval,
						   plan->columns[i].typlen, &p);
	}
	s = key_state(j, side, entry);
	if (!created)
		(void) prune(j, side, entry, watermark);
	row->next = s->rows;
	s->rows = dp;
	s->nrows++;
	if (t > s->t)
		s->t = t;
	j->sides[side]->live_bytes += ROW_IMAGE_HEADER + len;
	weir_keyed_touch(j->sides[side], entry);
	return true;
}

/* Each round: entries whose rows have all left go (left outer: emitting). */
void
weir_join_expire(WeirJoin *j, TimestampTz watermark)
{
	j->watermark = watermark;
	for (int side = 0; side < 2; side++)
		(void) weir_keyed_expire(j->sides[side], watermark);
}

/*
 * Before a checkpoint: every row that has left the buffers goes for real,
 * so that what the checkpoint stores, and what a restore skips, agree.
 */
void
weir_join_drain(WeirJoin *j, TimestampTz watermark)
{
	j->watermark = watermark;
	for (int side = 0; side < 2; side++)
	{
		WeirKeyed  *k = j->sides[side];

		(void) weir_keyed_expire_exact(k, watermark);
		/* entries changed since the last checkpoint stay: empty their lists */
		for (int i = 0; i < k->ndirty; i++)
			(void) prune(j, side, k->dirty[i], watermark);
	}
}

/* After a checkpoint committed the pending rows. */
void
weir_join_forget_pending(WeirJoin *j)
{
	MemoryContextReset(j->pending_cxt);
	j->pending = weir_columns_like(j->column_types, j->plan->nsinkcols, j->pending_cxt);
}
