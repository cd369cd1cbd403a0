/*-------------------------------------------------------------------------
 *
 * state_view.c
 *	  What the state views of every operator share: entries copied out of
 *	  a store as raw bytes, parsed back, and rows put in the result
 *	  (state_view.h).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "definition/key_image.h"
#include "operator/state_view.h"

/* uint32 keylen, uint32 flags, int64 start, int64 end, uint32 statelen, uint32 extralen */
#define HEADER_BYTES (4 * sizeof(uint32) + 2 * sizeof(TimestampTz))
#define EXTRALEN_OFFSET (3 * sizeof(uint32) + 2 * sizeof(TimestampTz))

/*
 * Whether `more` bytes may still be appended to buf: a StringInfo cannot
 * grow past MaxAllocSize (1 GB), and enlargeStringInfo's error for it
 * would fail a worker writing an image (state_image.c) for a reader.
 */
bool
weir_state_buf_has_room(StringInfo buf, Size more)
{
	return (Size) buf->len + more + 1 < MaxAllocSize;
}

/* A reader's buffer is full: the state is too large to show in one call. */
static void
too_large(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the state of this pipeline is too large to show"),
			 errdetail("A state view copies the whole state into one buffer of at most 1 GB."),
			 errhint("Use weir.pipelines and weir.checkpoints for its size and counts.")));
}

/*
 * One entry into buf, with no extra bytes yet; returns where its extralen
 * is, for a caller that appends extra bytes after it.
 */
int
weir_state_copy_append(StringInfo buf, const char *key, uint32 keylen, uint32 flags,
					   TimestampTz start, TimestampTz end, const char *state,
					   uint32 statelen)
{
	uint32		zero = 0;
	int			at = buf->len;

	appendBinaryStringInfo(buf, (char *) &keylen, sizeof(uint32));
	appendBinaryStringInfo(buf, (char *) &flags, sizeof(uint32));
	appendBinaryStringInfo(buf, (char *) &start, sizeof(TimestampTz));
	appendBinaryStringInfo(buf, (char *) &end, sizeof(TimestampTz));
	appendBinaryStringInfo(buf, (char *) &statelen, sizeof(uint32));
	appendBinaryStringInfo(buf, (char *) &zero, sizeof(uint32));
	appendBinaryStringInfo(buf, key, keylen);
	appendBinaryStringInfo(buf, state, statelen);
	return at + EXTRALEN_OFFSET;
}

/*
 * Every entry of a store into buf: its key, start, (a session's) end,
 * flags and root->state_size bytes of state, and what the view's
 * copy_extra adds.  The caller holds the pipeline slot's lock shared (or
 * owns the store), with `area` attached.  Only copies: decoding is for
 * after the lock (weir_state_copies).
 */
void
weir_state_copy_store(const WeirStateView *view, dsa_area *area, WeirStoreRoot *root,
					  StringInfo buf)
{
	dsa_pointer *slots = dsa_get_address(area, root->slots);
	uint32		seen = 0;

	for (uint32 i = 0; i < root->capacity && seen < root->used; i++)
	{
		WeirEntry  *w;
		int			extralen_at;

		/* 0: empty, 1: deleted (store.h) */
		if (slots[i] == InvalidDsaPointer || slots[i] == (dsa_pointer) 1)
			continue;
		seen++;
		w = dsa_get_address(area, slots[i] & WEIR_SLOT_PTR_MASK);
		/* a reader's own buffer: an error here fails only the call */
		if (!weir_state_buf_has_room(buf, HEADER_BYTES + weir_entry_keylen(w) +
									 root->state_size))
			too_large();
		extralen_at = weir_state_copy_append(buf, weir_entry_key(w), weir_entry_keylen(w),
											 weir_entry_flags(w), w->start,
											 root->session ? *weir_entry_end(w) : 0,
											 weir_entry_states(root, w), root->state_size);
		if (view->copy_extra)
		{
			int			before = buf->len;
			uint32		extralen;

			view->copy_extra(area, root, w, buf);
			if (!weir_state_buf_has_room(buf, 0))
				too_large();
			extralen = buf->len - before;
			memcpy(buf->data + extralen_at, &extralen, sizeof(uint32));
		}
	}
}

/* The entries of a buffer written as above; pointers into it. */
WeirStateCopy *
weir_state_copies(const char *buf, Size len, int64 *n)
{
	const char *p = buf;
	const char *end = buf + len;
	int64		cap = 64;
	WeirStateCopy *copies = palloc(sizeof(WeirStateCopy) * cap);

	*n = 0;
	while (p < end)
	{
		WeirStateCopy *c;

		if (end - p < HEADER_BYTES)
			goto corrupt;
		if (*n == cap)
		{
			cap *= 2;
			copies = repalloc_huge(copies, sizeof(WeirStateCopy) * cap);
		}
		c = &copies[(*n)++];
		memcpy(&c->keylen, p, sizeof(uint32));
		memcpy(&c->flags, p + 4, sizeof(uint32));
		memcpy(&c->start, p + 8, sizeof(TimestampTz));
		memcpy(&c->end, p + 16, sizeof(TimestampTz));
		memcpy(&c->statelen, p + 24, sizeof(uint32));
		memcpy(&c->extralen, p + 28, sizeof(uint32));
		p += HEADER_BYTES;
		if ((Size) (end - p) < (Size) c->keylen + c->statelen + c->extralen)
			goto corrupt;
		c->key = p;
		c->state = p + c->keylen;
		c->extra = c->state + c->statelen;
		p = c->extra + c->extralen;
	}
	return copies;
corrupt:
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("malformed image of pipeline state")));
	return NULL;				/* keep compiler quiet */
}

/* A key image as text: its columns' output, ", " between them. */
static char *
key_text(WeirStateOut *out, const WeirStateCopy *c)
{
	WeirPlan   *plan = out->plan;
	StringInfoData key;

	weir_key_image_decode(plan, c->key, out->keyvals);
	initStringInfo(&key);
	for (int k = 0; k < plan->nkeys; k++)
	{
		Oid			output;
		bool		varlena;

		getTypeOutputInfo(plan->keys[k].type, &output, &varlena);
		appendStringInfo(&key, "%s%s", k > 0 ? ", " : "",
						 OidOutputFunctionCall(output, out->keyvals[k]));
	}
	return key.data;
}

/*
 * One row into the result: (operator, key, window_start, window_end, fired,
 * event_time, expires_at, value).  A pipeline without a key (a window over
 * all rows) has a NULL key.  A row the watermark has expired is left out.
 */
void
weir_state_put(WeirStateOut *out, const WeirStateRow *row)
{
	Datum		values[8];
	bool		nulls[8];

	/* what the watermark has passed has left, though memory may free it later */
	if (row->has_expires_at && !TIMESTAMP_NOT_FINITE(out->watermark) &&
		row->expires_at <= out->watermark)
		return;
	memset(nulls, true, sizeof(nulls));
	values[0] = CStringGetTextDatum(out->operator);
	nulls[0] = false;
	if (out->plan->nkeys > 0)
	{
		values[1] = CStringGetTextDatum(key_text(out, row->copy));
		nulls[1] = false;
	}
	if (row->has_window)
	{
		values[2] = TimestampTzGetDatum(row->window_start);
		values[3] = TimestampTzGetDatum(row->window_end);
		values[4] = BoolGetDatum(row->fired);
		nulls[2] = nulls[3] = nulls[4] = false;
	}
	if (row->has_event_time)
	{
		values[5] = TimestampTzGetDatum(row->event_time);
		nulls[5] = false;
	}
	if (row->has_expires_at)
	{
		values[6] = TimestampTzGetDatum(row->expires_at);
		nulls[6] = false;
	}
	if (row->value)
	{
		values[7] = DirectFunctionCall1(jsonb_in, CStringGetDatum(row->value));
		nulls[7] = false;
	}
	tuplestore_putvalues(out->rsinfo->setResult, out->rsinfo->setDesc, values, nulls);
}
