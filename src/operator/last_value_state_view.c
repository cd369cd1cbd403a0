/*-------------------------------------------------------------------------
 *
 * last_value_state_view.c
 *	  The state view of a last value per key (state_view.h): one row per
 *	  key, with its newest row's event time, when the key leaves (that time
 *	  plus the ttl; infinity without one, but for a deleted key), and as
 *	  value where that row is: {"partition": p, "position": n, "deleted":
 *	  b}.  The state keeps no column values (the sink has them): the row is
 *	  the topic's row at that partition and position.  Over a change topic
 *	  a deleted key stays as a tombstone until the watermark passes its time
 *	  (keyed.h): "deleted" is true.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/last_value_state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "operator/last_value.h"
#include "operator/state_view.h"
#include "state/keyed.h"

static void
last_value_put(WeirStateOut *out, WeirStateCopy *copies, int64 n)
{
	WeirPlan   *plan = out->plan;
	Size		state_size = weir_last_value_entry_state(plan);
	StringInfoData value;

	initStringInfo(&value);
	for (int64 i = 0; i < n; i++)
	{
		WeirStateRow row;
		WeirKeyedState s;

		if (copies[i].statelen != state_size)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("malformed last value state in the image of pipeline state")));
		/* over an ordinary topic there are no flags (WEIR_KEYED_STATE_PLAIN) */
		memset(&s, 0, sizeof(s));
		memcpy(&s, copies[i].state, state_size);
		memset(&row, 0, sizeof(row));
		row.copy = &copies[i];
		row.has_event_time = true;
		row.event_time = s.t;
		row.has_expires_at = true;
		row.expires_at = weir_keyed_expiry(plan->retention, plan->change_op != NULL, &s);
		resetStringInfo(&value);
		appendStringInfo(&value, "{\"partition\": %d, \"position\": " INT64_FORMAT ", \"deleted\": %s}",
						 s.part, s.pos, (s.flags & WEIR_KEYED_DELETED) ? "true" : "false");
		row.value = value.data;
		weir_state_put(out, &row);
	}
}

const WeirStateView weir_last_value_state_view = {
	.put = last_value_put,
};
