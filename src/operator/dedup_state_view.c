/*-------------------------------------------------------------------------
 *
 * dedup_state_view.c
 *	  The state view of a deduplication (state_view.h): one row per id
 *	  kept, with the event time it was last seen (or, without
 *	  refresh_horizon, last kept) at and when it leaves: that time plus
 *	  the horizon (infinity without one).  A dedup keeps nothing else per
 *	  id: value is NULL.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/dedup_state_view.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "operator/state_view.h"
#include "state/keyed.h"

static void
dedup_put(WeirStateOut *out, WeirStateCopy *copies, int64 n)
{
	for (int64 i = 0; i < n; i++)
	{
		WeirStateRow row;
		WeirKeyedState s;

		if (copies[i].statelen < sizeof(TimestampTz))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("malformed dedup state in the image of pipeline state")));
		memset(&s, 0, sizeof(s));
		memcpy(&s.t, copies[i].state, sizeof(TimestampTz));
		memset(&row, 0, sizeof(row));
		row.copy = &copies[i];
		row.has_event_time = true;
		row.event_time = s.t;
		row.has_expires_at = true;
		row.expires_at = weir_keyed_expiry(out->plan->retention, false, &s);
		weir_state_put(out, &row);
	}
}

const WeirStateView weir_dedup_state_view = {
	.put = dedup_put,
};
