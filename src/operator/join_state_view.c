/*-------------------------------------------------------------------------
 *
 * join_state_view.c
 *	  The state view of an interval join (state_view.h): one row per
 *	  buffered row, with its key, event time, when it leaves (the watermark
 *	  past its time plus its side's bound: right_after for a left row,
 *	  right_before for a right one) and as value {"side": "left" | "right",
 *	  "matched": b, "row": {its columns as text}}.  matched: it has been
 *	  paired with a row of the other side.  A row whose bound the watermark
 *	  has passed has left, even while its memory waits for its key to be
 *	  touched again (join.c prune): it is not shown.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/join_state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "base/dead_letter.h"
#include "operator/join_rows.h"
#include "operator/state_view.h"

/* Both sides' rows of an entry: per row uint32 side, then its chunk image. */
static void
join_copy_extra(dsa_area *area, WeirStoreRoot *root, WeirEntry *w, StringInfo buf)
{
	WeirJoinKeyState *s = (WeirJoinKeyState *) weir_entry_states(root, w);

	for (uint32 side = 0; side < 2; side++)
		for (dsa_pointer dp = s->rows[side]; DsaPointerIsValid(dp);)
		{
			WeirJoinRow *row = dsa_get_address(area, dp);

			appendBinaryStringInfo(buf, (char *) &side, sizeof(uint32));
			appendBinaryStringInfo(buf, (char *) &row->t, sizeof(TimestampTz));
			appendBinaryStringInfo(buf, (char *) &row->matched, sizeof(uint32));
			appendBinaryStringInfo(buf, (char *) &row->len, sizeof(uint32));
			appendBinaryStringInfo(buf, row->values, row->len);
			dp = row->next;
		}
}

static void
malformed(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("malformed join row in the image of pipeline state")));
}

/* A row's columns (values: as join.c serialises them) as a JSON object */
static void
row_json(StringInfo buf, WeirPlan *side, const char *p, uint32 len)
{
	const char *end = p + len;

	appendStringInfoChar(buf, '{');
	for (int i = 0; i < side->ncolumns; i++)
	{
		int			header;
		Datum		value = (Datum) 0;

		if (end - p < sizeof(int))
			malformed();
		memcpy(&header, p, sizeof(int));
		p += sizeof(int);
		if (header == WEIR_JOIN_VALUE_BY_VALUE)
		{
			if (end - p < sizeof(Datum))
				malformed();
			memcpy(&value, p, sizeof(Datum));
			p += sizeof(Datum);
		}
		else if (header > 0)
		{
			char	   *copy;

			if (end - p < header)
				malformed();
			copy = palloc(header);	/* aligned, as its type reads it */
			memcpy(copy, p, header);
			value = PointerGetDatum(copy);
			p += header;
		}
		else if (header != WEIR_JOIN_VALUE_NULL)
			malformed();
		weir_json_field(buf, side->columns[i].name, side->columns[i].type, value,
						header == WEIR_JOIN_VALUE_NULL);
	}
	appendStringInfoChar(buf, '}');
	if (p != end)
		malformed();
}

static void
join_put(WeirStateOut *out, WeirStateCopy *copies, int64 n)
{
	WeirPlan   *plan = out->plan;
	int64		bound[2] = {plan->right_after, plan->right_before};
	StringInfoData value;

	initStringInfo(&value);
	for (int64 i = 0; i < n; i++)
	{
		const char *p = copies[i].extra;
		const char *end = p + copies[i].extralen;

		while (p < end)
		{
			uint32		side;
			uint32		matched;
			uint32		len;
			TimestampTz t;
			WeirStateRow row;

			if (end - p < sizeof(uint32) + WEIR_JOIN_ROW_IMAGE_HEADER)
				malformed();
			memcpy(&side, p, sizeof(uint32));
			memcpy(&t, p + 4, sizeof(TimestampTz));
			memcpy(&matched, p + 12, sizeof(uint32));
			memcpy(&len, p + 16, sizeof(uint32));
			p += sizeof(uint32) + WEIR_JOIN_ROW_IMAGE_HEADER;
			if (side > 1 || end - p < len)
				malformed();

			memset(&row, 0, sizeof(row));
			row.copy = &copies[i];
			row.has_event_time = true;
			row.event_time = t;
			/* pruned once t + bound < the watermark (join.c prune) */
			row.has_expires_at = true;
			row.expires_at = t + bound[side] + 1;
			resetStringInfo(&value);
			appendStringInfo(&value, "{\"side\": \"%s\", \"matched\": %s, \"row\": ",
							 side == 0 ? "left" : "right", matched ? "true" : "false");
			row_json(&value, side == 0 ? plan : plan->right, p, len);
			appendStringInfoChar(&value, '}');
			row.value = value.data;
			weir_state_put(out, &row);
			p += len;
		}
	}
}

const WeirStateView weir_join_state_view = {
	.copy_extra = join_copy_extra,
	.put = join_put,
};
