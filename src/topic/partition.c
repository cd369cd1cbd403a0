/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  Positions of topic partitions and the last stable position (LSO).
 *
 * A position is taken at INSERT time, but the row becomes visible at COMMIT,
 * so a transaction holding position 5 may commit after one holding 6.  A
 * reader that passed 6 would then skip 5 for good.  weir uses Kafka's "last
 * stable offset": the first time a transaction takes a position on a
 * partition it registers that position, atomically with taking it (under the
 * slot's lock); it deregisters in its commit or abort callback, which runs
 * after ProcArrayEndTransaction, i.e. once its outcome is visible to new
 * snapshots.  A reader computes the bound = min(registered positions,
 * next_position) under the same lock and only then takes its snapshot:
 * every position below the bound belongs to a transaction whose outcome that
 * snapshot sees.  Producers never wait for each other; later positions of a
 * registered transaction are taken with a lock-free fetch-add, since they are
 * above its registration and cannot lower any reader's bound.
 *
 * Counters live only in shared memory.  After a restart or crash every
 * producing transaction is gone, so the first user of a partition rebuilds
 * next_position from the highest committed position in the table (retention
 * always keeps each partition's newest row, and topics refuse UPDATE, DELETE
 * and TRUNCATE, so that maximum never goes back).  Positions of aborted rows
 * may be handed out again; committed ones never are.
 *
 * A registration could not outlive a crash, so a transaction that produced
 * cannot be prepared (XACT_EVENT_PRE_PREPARE raises an error).
 *
 * A hot standby has no producers, and its counters must stay untouched:
 * rows keep arriving by replay, so a counter rebuilt there would be behind
 * the table when the standby is promoted, and would hand out positions
 * that are taken.  While the server is in recovery no slot is assigned or
 * initialised (weir_partition_slotno refuses); readers take the bound from
 * the table instead (weir_partition_info_in_recovery).  Promotion ends
 * replay before RecoveryInProgress() turns false, so the first user after
 * it rebuilds the counter from every replayed row.
 *
 * Locks: WeirShmem.lock while assigning slots; a slot's lock for registering,
 * deregistering, initialising and reading the bound.  Never both at once
 * except WeirShmem.lock then a slot's lock (forgetting a topic).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/partition.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/shmem.h"
#include "topic/partition.h"
#include "topic/reader.h"

typedef struct SlotCacheKey
{
	Oid			dboid;
	int32		topic_id;
	int32		part;
} SlotCacheKey;

typedef struct SlotCacheEntry
{
	SlotCacheKey key;
	int			slotno;
} SlotCacheEntry;

/* backend-local state, all in TopMemoryContext */
static HTAB *slot_cache = NULL;
static bool *registered = NULL; /* [nslots]: this transaction registered */
static int *registered_list = NULL; /* slot numbers registered */
static int	nregistered = 0;
static List *forget_at_commit = NIL;	/* topic ids dropped by this xact */
static bool callbacks_installed = false;

static void partition_xact_callback(XactEvent event, void *arg);
static void partition_exit_callback(int code, Datum arg);

static void
ensure_backend_state(void)
{
	WeirShmem  *sh = weir_shmem();
	HASHCTL		ctl;

	if (callbacks_installed)
		return;

	registered = MemoryContextAllocZero(TopMemoryContext,
										sizeof(bool) * sh->nslots);
	registered_list = MemoryContextAlloc(TopMemoryContext,
										 sizeof(int) * sh->nslots);
	ctl.keysize = sizeof(SlotCacheKey);
	ctl.entrysize = sizeof(SlotCacheEntry);
	slot_cache = hash_create("weir partition slots", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS);
	RegisterXactCallback(partition_xact_callback, NULL);
	before_shmem_exit(partition_exit_callback, 0);
	callbacks_installed = true;
}

static bool
slot_matches(WeirPartitionSlot *slot, int32 topic_id, int32 part)
{
	return slot->dboid == MyDatabaseId && slot->topic_id == topic_id &&
		slot->part == part;
}

/*
 * Rebuild a partition's counter from its table, once per server lifetime.
 * Called without locks; takes the slot's lock.  No transaction can hold a
 * position of an uninitialised slot, so the newest committed row is the
 * highest position that must never be handed out again.
 */
static void
ensure_initialised(WeirPartitionSlot *slot, Relation rel)
{
	if (slot->initialised)
		return;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (!slot->initialised)
	{
		int64		maxpos = weir_reader_edge_position(rel, slot->part, true);

		pg_atomic_write_u64(&slot->next_position, (uint64) maxpos + 1);
		slot->nregs = 0;
		slot->initialised = true;
	}
	LWLockRelease(&slot->lock);
}

/*
 * The shared slot of a topic partition, assigned on first use.  `rel` is the
 * topic table, opened and locked by the caller; it is scanned if the counter
 * must be rebuilt.  Raises 53400 when weir.max_partitions slots are in use.
 */
int
weir_partition_slotno(int32 topic_id, int32 part, Relation rel)
{
	WeirShmem  *sh = weir_shmem();
	SlotCacheKey key;
	SlotCacheEntry *entry;
	bool		found;
	int			slotno = -1;
	int			free_slotno = -1;

	/* see the header: a counter rebuilt during replay goes stale */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take a position of topic partition %d during recovery", part),
				 errhint("Produce to topics on the primary server.")));

	ensure_backend_state();

	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.topic_id = topic_id;
	key.part = part;
	entry = hash_search(slot_cache, &key, HASH_FIND, NULL);
	if (entry && slot_matches(weir_shmem_slot(entry->slotno), topic_id, part))
		return entry->slotno;

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	for (int i = 0; i < sh->nslots; i++)
	{
		WeirPartitionSlot *slot = weir_shmem_slot(i);

		if (slot_matches(slot, topic_id, part))
		{
			slotno = i;
			break;
		}
		if (slot->dboid == InvalidOid && free_slotno < 0)
			free_slotno = i;
	}
	if (slotno < 0 && free_slotno >= 0)
	{
		WeirPartitionSlot *slot = weir_shmem_slot(free_slotno);

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->dboid = MyDatabaseId;
		slot->topic_id = topic_id;
		slot->part = part;
		slot->initialised = false;
		slot->nregs = 0;
		LWLockRelease(&slot->lock);
		slotno = free_slotno;
	}
	LWLockRelease(sh->lock);

	if (slotno < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many topic partitions in use"),
				 errdetail("All %d partition slots of weir's shared memory are taken.",
						   sh->nslots),
				 errhint("Raise weir.max_partitions and restart the server, or drop unused topics.")));

	ensure_initialised(weir_shmem_slot(slotno), rel);

	entry = hash_search(slot_cache, &key, HASH_ENTER, &found);
	entry->slotno = slotno;
	return slotno;
}

/*
 * Take the next position of a partition for the current transaction.  The
 * first position a transaction takes on a partition is registered, so that
 * readers stop below it until the transaction ends.
 */
int64
weir_partition_take_position(int slotno)
{
	WeirPartitionSlot *slot = weir_shmem_slot(slotno);
	WeirProducerReg *reg;
	int64		position;

	Assert(IsTransactionState());
	if (registered[slotno])
		return (int64) pg_atomic_fetch_add_u64(&slot->next_position, 1);

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	Assert(slot->initialised && slot->nregs < MaxBackends);
	position = (int64) pg_atomic_fetch_add_u64(&slot->next_position, 1);
	reg = &slot->regs[slot->nregs++];
	reg->position = position;
	reg->pgprocno = MyProc->pgprocno;
	reg->pid = MyProcPid;
	reg->since = GetCurrentTimestamp();
	LWLockRelease(&slot->lock);

	registered[slotno] = true;
	registered_list[nregistered++] = slotno;
	return position;
}

void
weir_partition_info(int slotno, WeirPartitionInfo *info)
{
	WeirPartitionSlot *slot = weir_shmem_slot(slotno);

	memset(info, 0, sizeof(*info));
	LWLockAcquire(&slot->lock, LW_SHARED);
	info->next_position = (int64) pg_atomic_read_u64(&slot->next_position);
	info->stable_bound = info->next_position;
	info->open_producers = slot->nregs;
	for (int i = 0; i < slot->nregs; i++)
	{
		if (slot->regs[i].position < info->stable_bound)
		{
			info->stable_bound = slot->regs[i].position;
			info->oldest = slot->regs[i];
		}
	}
	LWLockRelease(&slot->lock);
}

/*
 * What weir_partition_info() says, for a server in recovery (a hot
 * standby), where no transaction produces and shared counters are not
 * used: every row the caller's later snapshot can see is committed, and
 * the bound is one past the newest of them, from the latest snapshot.
 * `rel` is the topic table, opened and locked by the caller.
 *
 * This bound is the standby's own: a producing transaction still open on
 * the primary (registrations live in the primary's memory only) may later
 * commit rows below positions already visible here, and readers on the
 * standby see those rows only when they read that range again.
 */
void
weir_partition_info_in_recovery(Relation rel, int32 part, WeirPartitionInfo *info)
{
	memset(info, 0, sizeof(*info));
	info->next_position = weir_reader_edge_position(rel, part, true) + 1;
	info->stable_bound = info->next_position;
	info->open_producers = 0;
}

/* Drop this backend's registrations; its transaction's outcome is visible. */
static void
release_registrations(void)
{
	for (int i = 0; i < nregistered; i++)
	{
		int			slotno = registered_list[i];
		WeirPartitionSlot *slot = weir_shmem_slot(slotno);

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		for (int r = 0; r < slot->nregs; r++)
		{
			if (slot->regs[r].pgprocno == MyProc->pgprocno)
			{
				slot->regs[r] = slot->regs[--slot->nregs];
				break;
			}
		}
		LWLockRelease(&slot->lock);
		registered[slotno] = false;
	}
	nregistered = 0;
}

/* Free the slots of topic `topic_id` of this database; caller holds sh->lock. */
static void
free_topic_slots(WeirShmem *sh, int32 topic_id)
{
	for (int i = 0; i < sh->nslots; i++)
	{
		WeirPartitionSlot *slot = weir_shmem_slot(i);

		if (slot->dboid != MyDatabaseId || slot->topic_id != topic_id)
			continue;
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->dboid = InvalidOid;
		slot->topic_id = 0;
		slot->initialised = false;
		slot->nregs = 0;
		LWLockRelease(&slot->lock);
	}
}

/* Free the slots of topics dropped by the transaction that just committed. */
static void
release_forgotten_topics(void)
{
	WeirShmem  *sh = weir_shmem();
	ListCell   *lc;

	if (forget_at_commit == NIL)
		return;

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	foreach(lc, forget_at_commit)
		free_topic_slots(sh, lfirst_int(lc));
	LWLockRelease(sh->lock);
	list_free(forget_at_commit);
	forget_at_commit = NIL;
}

/*
 * A topic is created with id `topic_id`: slots left with that id in this
 * database belong to a topic that no longer exists (DROP EXTENSION drops
 * weir.topic, whose ids then start from 1 again, without an event trigger
 * to tell us), so the new topic starts from position 1, not where the old
 * one stopped.
 */
void
weir_partition_forget_stale_topic(int32 topic_id)
{
	WeirShmem  *sh = weir_shmem();

	LWLockAcquire(sh->lock, LW_EXCLUSIVE);
	free_topic_slots(sh, topic_id);
	LWLockRelease(sh->lock);
}

/*
 * Free a dropped topic's partition slots when the dropping transaction
 * commits.  Producers and readers hold a lock on the topic table, which DROP
 * TABLE waits for, so no registration can be left on these slots.
 */
void
weir_partition_forget_topic_at_commit(int32 topic_id)
{
	MemoryContext oldcxt;

	ensure_backend_state();
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	forget_at_commit = lappend_int(forget_at_commit, topic_id);
	MemoryContextSwitchTo(oldcxt);
}

static void
partition_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (nregistered > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that produced to a topic"),
						 errdetail("Readers of a topic wait for its producing transactions to end, and that wait could not survive a server restart."),
						 errhint("Produce to topics in transactions that commit directly.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			release_registrations();
			release_forgotten_topics();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			release_registrations();
			list_free(forget_at_commit);
			forget_at_commit = NIL;
			break;
		default:
			break;
	}
}

/*
 * A backend leaving in the middle of a transaction aborts it, and aborted
 * rows never become visible: releasing the claim here is safe.
 */
static void
partition_exit_callback(int code, Datum arg)
{
	release_registrations();
}
