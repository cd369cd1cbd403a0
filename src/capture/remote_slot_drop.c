/*-------------------------------------------------------------------------
 *
 * remote_slot_drop.c
 *	  Dropping the remote slots of dropped remote captures.
 *
 * weir.drop_capture cannot reach the remote server (its worker may still
 * stream the slot, and the drop may roll back), so for a remote capture it
 * leaves the slot's name and the connection string in
 * weir.capture_remote_slot_to_drop, in the same transaction.  Each round,
 * the launcher calls weir_remote_drop_slots: for every row whose capture
 * no longer has a worker, it connects to the remote and runs the
 * replication command DROP_REPLICATION_SLOT (without WAIT: a slot still
 * held by a walsender is tried again later).  A slot that is already gone
 * counts as dropped.  The row is deleted once the slot is gone; on any
 * failure it stays and the next try is RETRY_MS later.  Failures are
 * logged as WARNING, never with the connection string.
 *
 * Called outside a transaction; opens its own.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_slot_drop.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "replication/walreceiver.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/transaction.h"
#include "capture/capture_catalog.h"
#include "capture/capture_shmem.h"
#include "capture/remote_slot_drop.h"

/* Wait between tries after a failure */
#define RETRY_MS 2000

static TimestampTz next_try = 0;

/* Drop one slot on its server; whether it is gone */
static bool
drop_one(const WeirRemoteSlotToDrop *d)
{
	WalReceiverConn *conn;
	WalRcvExecResult *res;
	char	   *err = NULL;
	bool		gone;

	load_file("libpqwalreceiver", false);
	conn = walrcv_connect(d->conninfo, true, "weir_launcher", &err);
	if (conn == NULL)
	{
		ereport(WARNING,
				(errmsg("could not connect to drop replication slot \"%s\" of dropped capture %d on its remote server",
						d->slot_name, d->capture_id),
				 errhint("The launcher tries again; the slot holds WAL on the remote server until then.")));
		return false;
	}
	res = walrcv_exec(conn, psprintf("DROP_REPLICATION_SLOT %s", quote_identifier(d->slot_name)),
					  0, NULL);
	gone = res->status == WALRCV_OK_COMMAND ||
		(res->status == WALRCV_ERROR && res->sqlstate == ERRCODE_UNDEFINED_OBJECT);
	if (!gone)
		ereport(WARNING,
				(errmsg("could not drop replication slot \"%s\" of dropped capture %d on its remote server",
						d->slot_name, d->capture_id),
				 errdetail_internal("%s", res->err ? res->err : "no error message")));
	walrcv_clear_result(res);
	walrcv_disconnect(conn);
	if (gone)
		ereport(LOG,
				(errmsg("weir dropped replication slot \"%s\" on the remote server: its capture is gone",
						d->slot_name)));
	return gone;
}

/* Try to drop the remote slots of dropped captures (file header) */
void
weir_remote_drop_slots(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *slots;
	List	   *dropped = NIL;
	ListCell   *lc;
	bool		failed = false;
	TimestampTz now = GetCurrentTimestamp();

	if (now < next_try)
		return;
	weir_transaction_begin();
	slots = weir_catalog_remote_slots_to_drop(cxt);
	weir_transaction_end();
	MemoryContextSwitchTo(cxt);
	foreach(lc, slots)
	{
		WeirRemoteSlotToDrop *d = lfirst(lc);

		if (weir_capture_shmem_running(d->capture_id))
		{
			failed = true;		/* its worker is still stopping */
			continue;
		}
		if (drop_one(d))
			dropped = lappend(dropped, d->slot_name);
		else
			failed = true;
	}
	if (dropped)
	{
		weir_transaction_begin();
		foreach(lc, dropped)
			weir_catalog_remote_slot_dropped(lfirst(lc));
		weir_transaction_end();
		MemoryContextSwitchTo(cxt);
	}
	next_try = failed ? now + RETRY_MS * INT64CONST(1000) : 0;
}
