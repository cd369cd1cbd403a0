/*-------------------------------------------------------------------------
 *
 * join.c
 *	  Interval join of two topics.
 *
 * Semantics (README "Interval join").  A left row L and a right row R join
 * when their keys are equal and L.t - right_before <= R.t <= L.t +
 * right_after.  Each row is buffered per key on its side; a row arriving
 * on one side is matched against the other side's buffered rows of its
 * key, and each pair is emitted once, when its second row arrives.  A left
 * row can match right rows up to L.t + right_after, and right rows to come
 * have t >= the watermark, so L leaves the buffer once the watermark is
 * past L.t + right_after; a right row (matching left rows up to R.t +
 * right_before) once it is past R.t + right_before.  A row with t below the
 * watermark is late (a partner may have left): dropped and counted.  So
 * the result is every pair of rows that are not late, whatever the order
 * of reading.  A left outer join also emits, when a left row leaves the
 * buffer without ever having matched, the row with the right's columns
 * null.
 *
 * State.  One keyed entry per key (keyed.c) holds both sides' rows, so a
 * record costs one lookup: it finds its key's entry (creating it), matches
 * the other side's rows there and adds its own.  The entry's time is the
 * latest row time plus its side's bound: once the watermark passes it, no
 * row of the key can match anything more, and the entry expires (keyed.c's
 * buckets).  Rows are lists in the store's DSA area (carved from blocks per
 * side, row_arena.c), newest first, each with its side's column values
 * (as datumSerialize writes them: restore_values) and a matched flag; a row whose own bound has passed is
 * pruned when its key is next touched, the rest go with their entry.
 * Chunk images carry the rows (image_hook / restore_hook: the left's, then
 * the right's); before each checkpoint every row that has left is drained
 * for real (weir_join_drain), because a restore skips entries whose time
 * has passed.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/join.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "operator/join.h"
#include "operator/join_rows.h"
#include "operator/keyed_ops.h"
#include "operator/output.h"
#include "state/row_arena.h"

typedef struct WeirJoin
{
	WeirPlan   *plan;			/* the left side's; plan->right the right's */
	WeirStore *store;
	WeirKeyed  *keys;			/* one entry per key: both sides' rows */
	WeirRowArena arenas[2];		/* per side: the rows' memory (a side's rows
								 * leave in about arrival order) */
	int64		bound[2];		/* a row can match until t + bound[side]:
								 * left right_after, right right_before */
	TimestampTz watermark;		/* as of the last apply or drain */

	/* joined rows since the last checkpoint: the sink's next rows */
	MemoryContext pending_cxt;
	WeirColumn *pending;		/* [plan->nsinkcols] */
	WeirColumn *column_types;

	/* a buffered row's values, read back to emit a pair; the record's own */
	Datum	   *theirs;
	bool	   *their_nulls;
	Datum	   *own;
} WeirJoin;

static inline WeirJoinRow *
row_at(WeirJoin *j, dsa_pointer dp)
{
	return (WeirJoinRow *) weir_store_address(j->store, dp);
}

static inline WeirJoinKeyState *
key_state(WeirJoin *j, dsa_pointer entry)
{
	return (WeirJoinKeyState *) weir_keyed_state(j->keys, entry);
}

static inline Size
row_size(uint32 len)
{
	return offsetof(WeirJoinRow, values) + len;
}

static inline WeirPlan *
side_plan(WeirJoin *j, int side)
{
	return side == 0 ? j->plan : j->plan->right;
}

/*
 * A row's values are kept as datumSerialize writes them (a header word: -2
 * null, -1 by value, else the bytes that follow), by the functions below,
 * which do inline what a join's rows need of datumEstimateSpace,
 * datumSerialize and datumRestore (their calls were a tenth of a join's
 * work per record).  The values themselves, never references: a value
 * stored out of line (TOAST, or an expanded object) is fetched first, since
 * its source row may be gone (retention) by the time a partner arrives or
 * a restore reads the row back.  (Layout: join_rows.h.)
 */
static inline Datum
self_contained(Datum value, bool isnull, int16 typlen)
{
	if (!isnull && typlen == -1 && VARATT_IS_EXTERNAL(DatumGetPointer(value)))
		return PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(value)));
	return value;
}

static inline Size
value_space(Datum value, bool isnull, bool byval, int16 typlen)
{
	if (isnull)
		return sizeof(int);
	return sizeof(int) + (byval ? sizeof(Datum) : weir_datum_size(value, typlen));
}

static inline char *
serialize_value(char *p, Datum value, bool isnull, bool byval, int16 typlen)
{
	int			header = isnull ? WEIR_JOIN_VALUE_NULL : byval ? WEIR_JOIN_VALUE_BY_VALUE : (int) weir_datum_size(value, typlen);

	memcpy(p, &header, sizeof(int));
	p += sizeof(int);
	if (header == WEIR_JOIN_VALUE_BY_VALUE)
	{
		memcpy(p, &value, sizeof(Datum));
		p += sizeof(Datum);
	}
	else if (header > 0)
	{
		memcpy(p, DatumGetPointer(value), header);
		p += header;
	}
	return p;
}

/* A row's column values back as Datums, by-reference ones copied into the pending rows' memory. */
static void
restore_values(WeirJoin *j, WeirJoinRow *row, int ncols, Datum *values, bool *nulls)
{
	const char *p = row->values;

	for (int i = 0; i < ncols; i++)
	{
		int			header;

		memcpy(&header, p, sizeof(int));
		p += sizeof(int);
		nulls[i] = header == WEIR_JOIN_VALUE_NULL;
		if (header == WEIR_JOIN_VALUE_BY_VALUE)
		{
			memcpy(&values[i], p, sizeof(Datum));
			p += sizeof(Datum);
		}
		else if (header > 0)
		{
			char	   *copy = MemoryContextAlloc(j->pending_cxt, header);

			memcpy(copy, p, header);
			values[i] = PointerGetDatum(copy);
			p += header;
		}
		else
			values[i] = (Datum) 0;
	}
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
emit_unmatched(WeirJoin *j, WeirJoinRow *row)
{
	/* the values go to the pending rows' memory: this may run outside any transaction */
	restore_values(j, row, j->plan->ncolumns, j->theirs, j->their_nulls);
	emit(j, j->theirs, j->their_nulls, NULL, NULL);
}

/*
 * A row leaves memory; a left outer join's unmatched left row is emitted
 * then, unless `settle` is false (a restore replacing an older version).
 */
static void
free_row(WeirJoin *j, int side, dsa_pointer dp, bool settle)
{
	WeirJoinRow    *row = row_at(j, dp);

	if (settle && side == 0 && j->plan->left_outer && !row->matched)
		emit_unmatched(j, row);
	j->keys->live_bytes -= WEIR_JOIN_ROW_IMAGE_HEADER + row->len;
	weir_row_arena_free(&j->arenas[side], dp, row->arena_off);
}

/* Drop the rows of an entry's side that can match nothing more (t + bound below the watermark). */
static void
prune(WeirJoin *j, WeirJoinKeyState *s, int side, TimestampTz watermark)
{
	dsa_pointer *link = &s->rows[side];

	if (TIMESTAMP_NOT_FINITE(watermark))
		return;
	while (DsaPointerIsValid(*link))
	{
		dsa_pointer dp = *link;
		WeirJoinRow    *row = row_at(j, dp);

		if (row->t + j->bound[side] < watermark)
		{
			*link = row->next;
			free_row(j, side, dp, true);
			s->nrows[side]--;
		}
		else
			link = &row->next;
	}
}

/* keyed.c hooks ------------------------------------------------------------ */

/* An entry's rows after its state: the left's, then the right's. */
static void
image_rows(void *arg, WeirKeyed *k, WeirEntry *w, StringInfo buf)
{
	WeirJoin   *j = (WeirJoin *) arg;
	WeirJoinKeyState *s = (WeirJoinKeyState *) weir_entry_states(k->store->root, w);

	for (int side = 0; side < 2; side++)
		for (dsa_pointer dp = s->rows[side]; DsaPointerIsValid(dp);)
		{
			WeirJoinRow    *row = row_at(j, dp);
			char	   *p = weir_append_space(buf, WEIR_JOIN_ROW_IMAGE_HEADER + row->len);

			memcpy(p, &row->t, sizeof(TimestampTz));
			memcpy(p + 8, &row->matched, sizeof(uint32));
			memcpy(p + 12, &row->len, sizeof(uint32));
			memcpy(p + WEIR_JOIN_ROW_IMAGE_HEADER, row->values, row->len);
			dp = row->next;
		}
}

/* Free every row of an entry's side (settle: as free_row). */
static void
free_rows(WeirJoin *j, WeirJoinKeyState *s, int side, bool settle)
{
	while (DsaPointerIsValid(s->rows[side]))
	{
		dsa_pointer next = row_at(j, s->rows[side])->next;

		free_row(j, side, s->rows[side], settle);
		s->rows[side] = next;
	}
	s->nrows[side] = 0;
}

static int64
restore_rows(void *arg, WeirKeyed *k, dsa_pointer entry, const char *state,
			 const char *p, Size avail)
{
	WeirJoin   *j = (WeirJoin *) arg;
	WeirJoinKeyState image;
	const char *start = p;
	WeirJoinKeyState *s = NULL;

	memcpy(&image, state, sizeof(WeirJoinKeyState));
	if (image.nrows[0] < 0 || image.nrows[1] < 0)
		return -1;
	if (DsaPointerIsValid(entry))
	{
		/*
		 * A later version replaces the rows of an earlier one (those that
		 * are not in it left as it says: none is emitted now)
		 */
		s = key_state(j, entry);
		free_rows(j, s, 0, false);
		free_rows(j, s, 1, false);
		s->t = image.t;
	}
	for (int side = 0; side < 2; side++)
	{
		dsa_pointer *tail = s ? &s->rows[side] : NULL;

		for (int32 i = 0; i < image.nrows[side]; i++)
		{
			WeirJoinRow		hdr;

			if (avail - (p - start) < WEIR_JOIN_ROW_IMAGE_HEADER)
				return -1;
			memcpy(&hdr.t, p, sizeof(TimestampTz));
			memcpy(&hdr.matched, p + 8, sizeof(uint32));
			memcpy(&hdr.len, p + 12, sizeof(uint32));
			p += WEIR_JOIN_ROW_IMAGE_HEADER;
			if (avail - (p - start) < hdr.len)
				return -1;
			if (s)
			{
				uint32		off;
				dsa_pointer dp = weir_row_arena_alloc(&j->arenas[side], row_size(hdr.len), &off);
				WeirJoinRow    *row;

				if (!DsaPointerIsValid(dp))
					ereport(ERROR,
							(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							 errmsg("checkpoint of the join does not fit in its max_state_memory"),
							 errhint("Raise it with weir.alter_pipeline(), then start the pipeline.")));
				row = row_at(j, dp);
				row->arena_off = off;
				row->next = InvalidDsaPointer;
				row->t = hdr.t;
				row->matched = hdr.matched;
				row->len = hdr.len;
				memcpy(row->values, p, hdr.len);
				*tail = dp;
				tail = &row->next;
				s->nrows[side]++;
				j->keys->live_bytes += WEIR_JOIN_ROW_IMAGE_HEADER + hdr.len;
			}
			p += hdr.len;
		}
	}
	return p - start;
}

/* A hint: the newest row of each side of an entry will be read soon. */
static void
prefetch_rows(void *arg, WeirKeyed *k, dsa_pointer entry)
{
	WeirJoin   *j = (WeirJoin *) arg;
	WeirJoinKeyState *s = key_state(j, entry);

	for (int side = 0; side < 2; side++)
		if (DsaPointerIsValid(s->rows[side]))
			WEIR_PREFETCH(row_at(j, s->rows[side]));
}

/* An entry leaves: every row in it has (its time passed). */
static void
remove_rows(void *arg, WeirKeyed *k, dsa_pointer entry)
{
	WeirJoin   *j = (WeirJoin *) arg;
	WeirJoinKeyState *s = key_state(j, entry);

	free_rows(j, s, 0, true);
	free_rows(j, s, 1, true);
}

/* ------------------------------------------------------------------------- */

static WeirJoin *
join_create(WeirPlan *plan, WeirStore *store, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir join", ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	WeirJoin   *j = palloc0(sizeof(WeirJoin));
	int			ncols = Max(Max(plan->ncolumns, plan->right->ncolumns), 1);
	WeirKeyed  *k;

	j->plan = plan;
	j->store = store;
	j->bound[0] = plan->right_after;
	j->bound[1] = plan->right_before;
	j->watermark = DT_NOBEGIN;

	/*
	 * An entry's t already has its side's bound in it: it expires once t <
	 * the watermark (t + 1 <= it).  Its buckets are as wide as an eighth of
	 * the larger bound, as a side's own were (an entry stays at most that
	 * much after its time; not one bucket a second over an hour's span).
	 */
	k = weir_keyed_create(plan, store, 0, weir_join_entry_state(), 1, false, cxt);
	k->bucket_width = Max(Max(j->bound[0], j->bound[1]) / 8, USECS_PER_SEC);
	k->hook_arg = j;
	k->image_hook = image_rows;
	k->restore_hook = restore_rows;
	k->remove_hook = remove_rows;
	k->prefetch_hook = prefetch_rows;
	j->keys = k;
	for (int side = 0; side < 2; side++)
		weir_row_arena_init(&j->arenas[side], store);
	j->theirs = palloc(sizeof(Datum) * ncols);
	j->their_nulls = palloc(sizeof(bool) * ncols);
	j->own = palloc(sizeof(Datum) * ncols);
	j->pending_cxt = AllocSetContextCreate(cxt, "weir join pending rows",
										   ALLOCSET_DEFAULT_SIZES);
	j->column_types = palloc(sizeof(WeirColumn) * plan->nsinkcols);
	for (int i = 0; i < plan->nsinkcols; i++)
		weir_column_init(&j->column_types[i], plan->sinkcols[i].type);
	MemoryContextSwitchTo(oldcxt);
	/* the arrays outlive each checkpoint's rows (their by-reference values: pending_cxt) */
	j->pending = weir_columns_like(j->column_types, plan->nsinkcols, cxt);
	return j;
}

/*
 * This record's values as its pairs take them: by-reference ones copied
 * into the pending rows' memory (the batch's memory goes with the batch),
 * by-value ones as they are.
 */
static Datum *
own_values(WeirJoin *j, WeirPlan *plan, Datum *values, bool *nulls)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(j->pending_cxt);

	for (int i = 0; i < plan->ncolumns; i++)
		j->own[i] = nulls[i] || plan->columns[i].typbyval ? values[i] :
			datumCopy(values[i], false, plan->columns[i].typlen);
	MemoryContextSwitchTo(oldcxt);
	return j->own;
}

/*
 * One row of `side`: join it with the other side's rows of its key, then
 * buffer it.  Returns false if state memory ran out (store->out_of_memory).
 */
static bool
join_row(WeirJoin *j, int side, const char *key, uint32 keylen, uint32 keyhash,
		 TimestampTz t, Datum *values, bool *nulls, TimestampTz watermark)
{
	int			other = 1 - side;
	WeirPlan   *plan = side_plan(j, side);
	WeirPlan   *other_plan = side_plan(j, other);
	bool		created;
	dsa_pointer entry;
	Datum	   *own = NULL;			/* this row's values, once matched */
	bool		matched = false;
	Size		len = 0;
	dsa_pointer dp;
	uint32		off;
	WeirJoinRow    *row;
	WeirJoinKeyState *s;

	j->watermark = watermark;
	/* what the row keeps, and its pairs take, are its values (self_contained) */
	for (int i = 0; i < plan->ncolumns; i++)
		values[i] = self_contained(values[i], nulls[i], plan->columns[i].typlen);
	entry = weir_keyed_enter(j->keys, key, keylen, keyhash, t + j->bound[side], &created);
	if (!DsaPointerIsValid(entry))
		return false;
	s = key_state(j, entry);
	if (!created)
	{
		prune(j, s, other, watermark);
		prune(j, s, side, watermark);
		for (dsa_pointer odp = s->rows[other]; DsaPointerIsValid(odp);)
		{
			WeirJoinRow    *o = row_at(j, odp);
			TimestampTz lt = side == 0 ? t : o->t;
			TimestampTz rt = side == 0 ? o->t : t;

			/* rt BETWEEN lt - right_before AND lt + right_after */
			if (lt - j->bound[1] <= rt && rt <= lt + j->bound[0])
			{
				if (own == NULL)
					own = own_values(j, plan, values, nulls);
				restore_values(j, o, other_plan->ncolumns, j->theirs, j->their_nulls);
				if (side == 0)
					emit(j, own, nulls, j->theirs, j->their_nulls);
				else
					emit(j, j->theirs, j->their_nulls, own, nulls);
				matched = true;
				o->matched = 1;	/* a left outer join and the state views read it */
			}
			odp = o->next;
		}
		if (t + j->bound[side] > s->t)
			s->t = t + j->bound[side];
	}

	/* buffer the row on its side */
	for (int i = 0; i < plan->ncolumns; i++)
		len += value_space(values[i], nulls[i], plan->columns[i].typbyval,
						   plan->columns[i].typlen);
	dp = weir_row_arena_alloc(&j->arenas[side], row_size(len), &off);
	if (!DsaPointerIsValid(dp))
		return false;
	row = row_at(j, dp);
	row->arena_off = off;
	row->t = t;
	row->matched = matched;
	row->len = len;
	{
		char	   *p = row->values;

		for (int i = 0; i < plan->ncolumns; i++)
			p = serialize_value(p, values[i], nulls[i], plan->columns[i].typbyval,
								plan->columns[i].typlen);
	}
	row->next = s->rows[side];
	s->rows[side] = dp;
	s->nrows[side]++;
	j->keys->live_bytes += WEIR_JOIN_ROW_IMAGE_HEADER + len;
	weir_keyed_touch(j->keys, entry);
	return true;
}

/* Each round: entries whose rows have all left go (left outer: emitting). */
static void
expire(WeirJoin *j, TimestampTz watermark)
{
	j->watermark = watermark;
	(void) weir_keyed_expire(j->keys, watermark);
}

/*
 * Before a checkpoint: every row that has left the buffers goes for real,
 * so that what the checkpoint stores, and what a restore skips, agree.
 */
static void
drain(WeirJoin *j, TimestampTz watermark)
{
	WeirKeyed  *k = j->keys;

	j->watermark = watermark;
	(void) weir_keyed_expire_exact(k, watermark);
	/* entries changed since the last checkpoint stay: empty their lists */
	for (int i = 0; i < k->ndirty; i++)
	{
		WeirJoinKeyState *s;

		weir_keyed_prefetch_walk(k, k->dirty, k->ndirty, i, true);
		s = key_state(j, k->dirty[i]);

		prune(j, s, 0, watermark);
		prune(j, s, 1, watermark);
	}
}

/* ------------------------------------------------------------------------- */

/* A row whose partner may have left the other side's buffer already is late. */
static WeirApplied
join_apply(WeirOperator *op, const WeirRecord *r, TimestampTz watermark)
{
	if (!TIMESTAMP_NOT_FINITE(watermark) && r->t < watermark)
		return WEIR_LATE;
	if (!join_row(op->state, r->side, r->key, r->keylen, r->keyhash, r->t, r->values,
				  r->nulls, watermark))
		return WEIR_NO_MEMORY;
	return WEIR_APPLIED;
}

/* Left outer: rows leaving without a match owe the sink a row. */
static bool
join_expire(WeirOperator *op, TimestampTz watermark)
{
	WeirJoin   *j = op->state;

	expire(j, watermark);
	return j->pending[0].n > 0;
}

/* Sync phase: the pairs joined, and the chunks of the keys that changed. */
static void
join_collect(WeirOperator *op, WeirPackage *pkg, TimestampTz watermark, WeirCollected *n)
{
	WeirJoin   *j = op->state;
	WeirKeyedCollected collected;

	LWLockAcquire(op->env.lock, LW_EXCLUSIVE);
	drain(j, watermark);		/* rows that left go for real first */
	weir_keyed_collect(j->keys, watermark, &collected);
	LWLockRelease(op->env.lock);
	weir_output_kept(op, pkg, watermark, j->pending, &collected, n);
}

/* The pairs were committed; a drain may have left unmatched rows owed. */
static bool
join_after_checkpoint(WeirOperator *op)
{
	WeirJoin   *j = op->state;

	MemoryContextReset(j->pending_cxt);
	weir_columns_clear(j->pending, j->plan->nsinkcols);
	(void) weir_keyed_after_checkpoint(j->keys);
	return j->pending[0].n > 0;
}

static int64
join_pending_sink_rows(WeirOperator *op)
{
	WeirJoin   *j = op->state;

	return j->pending[0].n;
}

static const WeirOperatorOps join_ops = {
	.state_noun = "keys",
	.rows_once = true,
	.worker_bound = true,
	.apply = join_apply,
	.expire = join_expire,
	.collect = join_collect,
	.after_checkpoint = join_after_checkpoint,
	.chunks_deleted = weir_keyed_ops_chunks_deleted,
	.restore = weir_keyed_ops_restore,
	.pending_sink_rows = join_pending_sink_rows,
	.held_entries = weir_keyed_ops_held_entries,
};

/* Per key: both sides' rows (WeirJoinKeyState). */
Size
weir_join_entry_state(void)
{
	return sizeof(WeirJoinKeyState);
}

void
weir_join_operator_init(WeirOperator *op)
{
	WeirJoin   *j = join_create(op->env.plan, op->env.store, op->env.cxt);

	op->ops = &join_ops;
	op->keys = j->keys;
	op->state = j;
	op->rows_behind = Max(j->bound[0], j->bound[1]);
}
