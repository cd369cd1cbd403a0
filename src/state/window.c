/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Open windows of a pipeline, in the pipeline's DSA area, and their
 *	  firing.
 *
 * Tumbling and hopping windows are aligned to the Unix epoch (like date_bin
 * with origin '1970-01-01'): a tumbling window of size S starts at a
 * multiple of S; a hopping window (size S, slide D) at a multiple of D, and
 * a record falls into every window with start <= t < start + S.  Session
 * windows (gap G) are per key: a record at t covers [t, t + G), sessions of
 * its key that overlap merge (their states combine), so a session is
 * [first event, last event + G).  When a merge moves a session's start, the
 * old (key, start) is retired, and if its row had gone to the sink that row
 * is retracted (deleted) at the checkpoint that writes the merged one.
 *
 * Memory.  Each window is one flat DSA allocation (WeirWindow); the store's
 * index is an open-addressing table of dsa_pointers, also in DSA, reachable
 * from a WeirStoreRoot whose dsa_pointer the pipeline slot publishes, so
 * other backends can attach and read the open windows (weir.live_state).
 * Only the worker writes, holding the pipeline slot's lock exclusively for
 * each batch (worker.c); readers hold it shared and copy.  Firing needs to
 * visit windows by start (tumbling, hopping) or by key (session): those
 * lists are worker-local hash tables of list heads, the lists themselves
 * being linked through WeirWindow.next.
 *
 * A window fires (its row is due in the sink) when the watermark reaches
 * its end, and leaves memory when the watermark passes end + allowed
 * lateness; until then a late record updates it and its row is written
 * again.  What leaves memory owing the sink something waits for the next
 * checkpoint: its last row, built as it leaves (retired_rows), or a merged
 * session's retraction (the "retired" list).
 *
 * Allocation beyond the store's limit (max_state_memory) or a failed DSA
 * allocation sets out_of_memory instead of raising an error; the worker
 * then stops the pipeline cleanly at its last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/window.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "datatype/timestamp.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "definition/aggregate.h"
#include "sink/sink_rows.h"
#include "state/window.h"

#define SLOT_EMPTY		InvalidDsaPointer
#define SLOT_DELETED	((dsa_pointer) 1)	/* no allocation sits at offset 1 */

#define SLOT_PTR_MASK	WEIR_SLOT_PTR_MASK
/* the tag is the hash's low 12 bits: its high bits choose the home slot */
#define SLOT_TAG(hash)	(((dsa_pointer) ((hash) & 0xFFF)) << WEIR_SLOT_TAG_SHIFT)

StaticAssertDecl(sizeof(dsa_pointer) == 8, "slot tags need 64-bit dsa_pointers");
StaticAssertDecl(offsetof(WeirWindow, data) == 16, "a window's header is 16 bytes");

typedef struct Bucket
{
	TimestampTz start;			/* hash key */
	TimestampTz end;
	dsa_pointer head;
} Bucket;

typedef struct SessionKeyHash
{
	uint32		keylen;
	const char *key;
} SessionKeyHash;

typedef struct SessionKey
{
	SessionKeyHash hkey;		/* owns a copy of the key image */
	dsa_pointer head;
} SessionKey;

/* microseconds from PostgreSQL's epoch (2000-01-01) back to Unix's */
#define UNIX_EPOCH_OFFSET \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static void retire(WeirWindowStore *store, dsa_pointer dp, bool merged);
static void maybe_shrink(WeirWindowStore *store);
static void unindex(WeirWindowStore *store, WeirWindow *w);

static inline WeirWindow *
window_at(WeirWindowStore *store, dsa_pointer dp)
{
	return weir_window_at(store, dp);
}

static inline dsa_pointer *
slot_table(WeirWindowStore *store)
{
	return (dsa_pointer *) weir_window_address(store, store->root->slots);
}

/*
 * dsa_get_address, recording where dp's segment is mapped (the slow path
 * of weir_window_address, and after every allocation: see segment_base).
 */
void *
weir_window_address_lookup(WeirWindowStore *store, dsa_pointer dp)
{
	char	   *p = dsa_get_address(store->area, dp);

	if (p != NULL)
		store->segment_base[dp >> WEIR_DSA_OFFSET_WIDTH] = p - (dp & WEIR_DSA_OFFSET_MASK);
	return p;
}

static inline Size
window_size(WeirStoreRoot *root, uint32 keylen)
{
	return offsetof(WeirWindow, data) + weir_window_key_bytes(keylen) +
		(root->session ? sizeof(TimestampTz) : 0) + root->state_size;
}

static inline TimestampTz *
session_end(WeirWindow *w)
{
	return (TimestampTz *) (w->data + weir_window_key_bytes(weir_window_keylen(w)));
}

TimestampTz
weir_window_end(WeirStoreRoot *root, WeirPlan *plan, WeirWindow *w)
{
	return root->session ? *session_end(w) : w->start + plan->windowing.size;
}

static inline uint32
start_hash_slot(TimestampTz start)
{
	return ((uint32) start ^ (uint32) (start >> 32)) * 0x9E3779B1u >> (32 - WEIR_START_HASHES_LOG2);
}

/*
 * The hash of a window start, from the store's few remembered ones when it
 * is there: a batch's records fall in a few windows (a keyed entry's start
 * never changes), and hashing each record's starts again was some 120
 * instructions a record in a join.
 */
static inline uint32
start_hash(WeirWindowStore *store, TimestampTz start)
{
	uint32		slot = start_hash_slot(start);

	if (store->hashed_starts[slot] != start)
	{
		store->hashed_starts[slot] = start;
		store->start_hashes[slot] = hash_bytes_uint32((uint32) start ^ (uint32) (start >> 32));
	}
	return store->start_hashes[slot];
}

static inline uint32
window_hash_of(WeirWindowStore *store, TimestampTz start, uint32 keyhash)
{
	return hash_combine(keyhash, start_hash(store, start));
}

static uint32
window_hash(WeirWindowStore *store, TimestampTz start, const char *key, uint32 keylen)
{
	return window_hash_of(store, start, weir_window_key_hash(key, keylen));
}

static uint32
session_hash(const void *key, Size keysize)
{
	const SessionKeyHash *k = key;

	return hash_bytes((const unsigned char *) k->key, k->keylen);
}

static int
session_match(const void *a, const void *b, Size keysize)
{
	const SessionKeyHash *ka = a;
	const SessionKeyHash *kb = b;

	if (ka->keylen != kb->keylen)
		return 1;
	return memcmp(ka->key, kb->key, ka->keylen);
}

/*
 * The one place the store allocates from DSA: every allocation records
 * where its segment is mapped, since it may be a new segment that took a
 * freed one's number (see segment_base).  InvalidDsaPointer when DSA has no
 * more.
 */
static dsa_pointer
area_alloc(WeirWindowStore *store, Size size, int flags)
{
	dsa_pointer dp = dsa_allocate_extended(store->area, size, flags | DSA_ALLOC_NO_OOM);

	if (DsaPointerIsValid(dp))
		(void) weir_window_address_lookup(store, dp);
	return dp;
}

/*
 * Small allocations (windows and keyed entries, a few tens of bytes each)
 * come from the store's pools: one per size class of WEIR_POOL_CLASS bytes,
 * carved from blocks of WEIR_POOL_BLOCK bytes, a freed one kept on its
 * class's free list (linked through its first 8 bytes) for the next.  One
 * dsa_allocate and dsa_free per window or entry, each taking its size
 * class's lock, would cost some 750 instructions (a twelfth of a join's
 * worker).  Blocks stay until the worker exits, as DSA keeps its segments:
 * the memory of entries that left serves the next ones of their size.
 */
static inline int
pool_class(Size size)
{
	return (int) ((size - 1) / WEIR_POOL_CLASS);
}

static dsa_pointer
pool_alloc(WeirWindowStore *store, Size size)
{
	WeirEntryPool *pool = &store->pools[pool_class(size)];
	Size		slot_size = (pool_class(size) + 1) * WEIR_POOL_CLASS;
	dsa_pointer dp = pool->free;

	if (DsaPointerIsValid(dp))
	{
		pool->free = *(dsa_pointer *) weir_window_address(store, dp);
		/* the next allocation reads it (a freed slot is cold, as a rule) */
		if (DsaPointerIsValid(pool->free))
			WEIR_PREFETCH(weir_window_address(store, pool->free));
		return dp;
	}
	if (pool->left == 0)
	{
		dsa_pointer block = area_alloc(store, WEIR_POOL_BLOCK, 0);

		if (!DsaPointerIsValid(block))
			return InvalidDsaPointer;
		pool->next = block;
		pool->left = WEIR_POOL_BLOCK / slot_size;
	}
	dp = pool->next;
	pool->next += slot_size;
	pool->left--;
	return dp;
}

/*
 * Allocation within the store's limit; InvalidDsaPointer when over, or
 * when DSA has no more (out_of_memory is then set).  root->bytes counts
 * what is asked for, not the pools' free slots (as not DSA's free pages).
 */
static dsa_pointer
store_alloc(WeirWindowStore *store, Size size, int flags)
{
	dsa_pointer dp;

	if (store->root->bytes + (int64) size > store->limit)
	{
		store->out_of_memory = true;
		return InvalidDsaPointer;
	}
	if (size <= WEIR_POOL_MAX)
	{
		dp = pool_alloc(store, size);
		if (DsaPointerIsValid(dp) && (flags & DSA_ALLOC_ZERO))
			memset(weir_window_address(store, dp), 0, size);
	}
	else
		dp = area_alloc(store, size, flags);
	if (!DsaPointerIsValid(dp))
		store->out_of_memory = true;
	else
		store->root->bytes += size;
	return dp;
}

static void
store_free(WeirWindowStore *store, dsa_pointer dp, Size size)
{
	if (size <= WEIR_POOL_MAX)
	{
		WeirEntryPool *pool = &store->pools[pool_class(size)];

		*(dsa_pointer *) weir_window_address(store, dp) = pool->free;
		pool->free = dp;
	}
	else
		dsa_free(store->area, dp);
	store->root->bytes -= size;
}

/*
 * The slot table's fill.  Slots are 8 bytes a window divided by the fill, so
 * once caught up the fill is kept between 1/2 and 17/20 (16 to 9.4 bytes a
 * window): a table is built 5/8 full, grows when it would pass 17/20
 * (counting deleted slots, which probes pass too), and shrinks when windows
 * leave it under 1/2.  Reading a backlog it may be emptier (rebuilt_capacity,
 * maybe_shrink).  Any capacity will do (slots are chosen by multiplying, not
 * masking), so it follows the count closely instead of doubling.  Probing
 * stays cheap at these fills because a slot's tag spares most looks into
 * other windows.
 */
#define TABLE_MIN_CAPACITY 1024

static uint32
table_capacity_for(uint32 used)
{
	uint64		capacity = ((uint64) used * 8 + 4) / 5;

	capacity = TYPEALIGN(64, capacity);
	if (capacity > PG_UINT32_MAX / 2)
		elog(ERROR, "too many windows for one pipeline: %u", used);
	return Max((uint32) capacity, TABLE_MIN_CAPACITY);
}

static inline bool
table_too_full(WeirStoreRoot *root, uint32 more)
{
	return ((uint64) root->used + root->deleted + more) * 20 > (uint64) root->capacity * 17;
}

static inline bool
table_too_empty(WeirStoreRoot *root)
{
	return root->capacity > TABLE_MIN_CAPACITY && (uint64) root->used * 2 < root->capacity;
}

/* A hash's first slot: the high bits of hash * capacity */
static inline uint32
home_slot(uint32 hash, uint32 capacity)
{
	return (uint32) (((uint64) hash * capacity) >> 32);
}

static inline uint32
next_slot(uint32 i, uint32 capacity)
{
	return i + 1 == capacity ? 0 : i + 1;
}

/*
 * The capacity a table too full (of windows, or of deleted slots) is rebuilt
 * at: one that fits the windows (5/8 full).  Reading a backlog, windows close
 * and open by the thousand each round (ids expire by the thousand), so a
 * table mostly of deleted slots is only cleaned, at its size, rather than
 * shrunk to be grown again; it shrinks to fit once the pipeline has caught
 * up (maybe_shrink).
 */
static uint32
rebuilt_capacity(WeirWindowStore *store)
{
	uint32		fit = table_capacity_for(store->root->used + 1);

	return store->backlog ? Max(fit, store->root->capacity) : fit;
}

/* The hash a window is indexed by, computed again from the window */
static uint32
stored_window_hash(WeirWindowStore *store, WeirWindow *w)
{
	return window_hash(store, w->start, weir_window_key(w), weir_window_keylen(w));
}

#define RESIZE_PREFETCH_AHEAD 16	/* slots */

/* Grow (or just clean) the slot table; false if memory ran out. */
static bool
resize(WeirWindowStore *store, uint32 capacity)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer new_dp = store_alloc(store, sizeof(dsa_pointer) * (Size) capacity,
									 DSA_ALLOC_HUGE | DSA_ALLOC_ZERO);
	dsa_pointer *new_slots;
	dsa_pointer *old_slots;

	if (!DsaPointerIsValid(new_dp))
		return false;
	new_slots = weir_window_address(store, new_dp);
	old_slots = DsaPointerIsValid(root->slots) ? slot_table(store) : NULL;
	for (uint32 i = 0; old_slots && i < root->capacity; i++)
	{
		WeirWindow *w;
		uint32		j;

		/*
		 * Each window is read for its hash, a cache miss as a rule: ask for
		 * the ones some slots ahead meanwhile (weir_window_prefetch)
		 */
		if (i + RESIZE_PREFETCH_AHEAD < root->capacity)
		{
			dsa_pointer ahead = old_slots[i + RESIZE_PREFETCH_AHEAD];

			if (ahead != SLOT_EMPTY && ahead != SLOT_DELETED)
				WEIR_PREFETCH(window_at(store, ahead & SLOT_PTR_MASK));
		}
		if (old_slots[i] == SLOT_EMPTY || old_slots[i] == SLOT_DELETED)
			continue;
		w = window_at(store, old_slots[i] & SLOT_PTR_MASK);
		for (j = home_slot(stored_window_hash(store, w), capacity); new_slots[j] != SLOT_EMPTY;
			 j = next_slot(j, capacity))
			;
		new_slots[j] = old_slots[i];
	}
	if (old_slots)
		store_free(store, root->slots, sizeof(dsa_pointer) * (Size) root->capacity);
	root->slots = new_dp;
	root->capacity = capacity;
	root->deleted = 0;
	return true;
}

WeirWindowStore *
weir_window_store_create(WeirPlan *plan, dsa_area *area, int64 limit,
						 MemoryContext parent)
{
	WeirWindowStore *store;
	MemoryContext cxt = AllocSetContextCreate(parent, "weir windows",
											  ALLOCSET_DEFAULT_SIZES);
	HASHCTL		ctl;

	store = MemoryContextAllocZero(cxt, sizeof(WeirWindowStore));
	store->cxt = cxt;
	store->retired_cxt = AllocSetContextCreate(cxt, "weir retired windows",
											   ALLOCSET_DEFAULT_SIZES);
	store->plan = plan;
	store->area = area;
	store->limit = limit;
	/* every remembered start is 0 to begin with, with its hash */
	for (int i = 0; i < lengthof(store->start_hashes); i++)
		store->start_hashes[i] = hash_bytes_uint32(0);
	store->root_dp = area_alloc(store, sizeof(WeirStoreRoot), DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(store->root_dp))
		elog(ERROR, "could not allocate the window store's root");
	store->root = weir_window_address(store, store->root_dp);
	store->root->state_size = plan->state_size;
	store->root->session = plan->windowing.kind == WEIR_WINDOW_SESSION;
	store->root->bytes = sizeof(WeirStoreRoot);
	if (!resize(store, TABLE_MIN_CAPACITY))
		elog(ERROR, "could not allocate the window table");

	ctl.keysize = sizeof(TimestampTz);
	ctl.entrysize = sizeof(Bucket);
	ctl.hcxt = cxt;
	store->buckets = hash_create("weir window buckets", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	ctl.keysize = sizeof(SessionKeyHash);
	ctl.entrysize = sizeof(SessionKey);
	ctl.hash = session_hash;
	ctl.match = session_match;
	ctl.hcxt = cxt;
	store->sessions = hash_create("weir session keys", 1024, &ctl,
								  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	return store;
}

/* The slot holding (start, key), or the first free one for it. */
static uint32
probe(WeirWindowStore *store, uint32 hash, TimestampTz start, const char *key,
	  uint32 keylen, bool *found)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer *slots = slot_table(store);
	uint32		capacity = root->capacity;
	int64		free_slot = -1;
	dsa_pointer tag = SLOT_TAG(hash);

	for (uint32 i = home_slot(hash, capacity);; i = next_slot(i, capacity))
	{
		WeirWindow *w;

		if (slots[i] == SLOT_EMPTY)
		{
			*found = false;
			return free_slot >= 0 ? (uint32) free_slot : i;
		}
		if (slots[i] == SLOT_DELETED)
		{
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if ((slots[i] & ~SLOT_PTR_MASK) != tag)
			continue;			/* another hash: no need to look */
		w = window_at(store, slots[i] & SLOT_PTR_MASK);
		if (w->start == start && weir_window_keylen(w) == keylen &&
			memcmp(weir_window_key(w), key, keylen) == 0)
		{
			*found = true;
			return i;
		}
	}
}

/*
 * Find (start, key); if absent and `create`, add it with zeroed states.
 * Returns its dsa_pointer, InvalidDsaPointer if absent or if memory ran out
 * (store->out_of_memory is then set).  The caller links a new one into a
 * list.
 */
static dsa_pointer
find_or_add(WeirWindowStore *store, TimestampTz start, const char *key,
			uint32 keylen, uint32 hash, bool create, bool *created)
{
	WeirStoreRoot *root = store->root;
	uint32		slot;
	bool		found;
	dsa_pointer dp;
	WeirWindow *w;

	slot = probe(store, hash, start, key, keylen, &found);
	*created = false;
	if (found)
		return slot_table(store)[slot] & SLOT_PTR_MASK;
	if (!create)
		return InvalidDsaPointer;

	if (table_too_full(root, 1))
	{
		if (!resize(store, rebuilt_capacity(store)))
			return InvalidDsaPointer;
		slot = probe(store, hash, start, key, keylen, &found);
	}
	dp = store_alloc(store, window_size(root, keylen), DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(dp))
		return InvalidDsaPointer;
	if ((dp & ~WEIR_WINDOW_NEXT_MASK) != 0)
		elog(ERROR, "dsa_pointer " UINT64_FORMAT " uses more bits than weir's windows allow", dp);
	w = window_at(store, dp);
	w->start = start;
	w->link = (uint64) Min(keylen, WEIR_WINDOW_LONG_KEY) << WEIR_WINDOW_KEYLEN_SHIFT;
	weir_window_set_flags(w, WEIR_WINDOW_DIRTY);
	if (keylen >= WEIR_WINDOW_LONG_KEY)
		memcpy(w->data, &keylen, sizeof(uint32));
	memcpy(weir_window_key(w), key, keylen);
	if (slot_table(store)[slot] == SLOT_DELETED)
		root->deleted--;
	slot_table(store)[slot] = dp | SLOT_TAG(hash);
	root->used++;
	*created = true;
	return dp;
}

/*
 * The window of a key starting at `start`, created (zeroed states) if
 * absent; NULL if memory ran out (store->out_of_memory is then set).
 */
WeirWindow *
weir_window_lookup(WeirWindowStore *store, TimestampTz start, TimestampTz end,
				   const char *key, uint32 keylen, bool *created)
{
	return weir_window_lookup_hashed(store, start, end, key, keylen,
									 weir_window_key_hash(key, keylen), created);
}

/*
 * weir_window_lookup with the key's hash (weir_window_key_hash) given: a
 * record falls in several hopping windows, which need it once.
 */
WeirWindow *
weir_window_lookup_hashed(WeirWindowStore *store, TimestampTz start, TimestampTz end,
						  const char *key, uint32 keylen, uint32 keyhash,
						  bool *created)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer dp;
	WeirWindow *w;
	bool		bfound;

	dp = find_or_add(store, start, key, keylen, window_hash_of(store, start, keyhash), true,
					 created);
	if (!DsaPointerIsValid(dp))
		return NULL;
	w = window_at(store, dp);
	if (!*created)
		return w;

	if (root->session)
	{
		SessionKeyHash skey = {keylen, key};
		SessionKey *sk = hash_search(store->sessions, &skey, HASH_ENTER, &bfound);

		*session_end(w) = end;
		if (!bfound)
		{
			char	   *kcopy = MemoryContextAlloc(store->cxt, keylen);

			memcpy(kcopy, key, keylen);
			sk->hkey.key = kcopy;
			sk->head = InvalidDsaPointer;
		}
		weir_window_set_next(w, sk->head);
		sk->head = dp;
	}
	else
	{
		Bucket	   *bucket = hash_search(store->buckets, &start, HASH_ENTER, &bfound);

		if (!bfound)
		{
			bucket->end = end;
			bucket->head = InvalidDsaPointer;
		}
		weir_window_set_next(w, bucket->head);
		bucket->head = dp;
	}
	return w;
}

/*
 * Prefetching.  A lookup reads a slot and then the window it points to, as a
 * rule two cache misses (a table of 100k keys and their windows do not stay
 * in cache), and the record waits on both.  A batch knows its records' keys
 * ahead: asking the CPU for a record's slot some records ahead, and for its
 * window once that slot has come (a few records later), overlaps the misses
 * with the work on the records between.  `window` false: the slot; true: the
 * window the slot's tag points to (the first match, as a lookup finds it;
 * none if the first slots do not have it).  Returns that window's
 * dsa_pointer, or InvalidDsaPointer.  A hint only: a wrong guess costs a
 * wasted fetch, never a wrong answer.
 */
dsa_pointer
weir_window_prefetch(WeirWindowStore *store, TimestampTz start, uint32 keyhash,
					 bool window)
{
	uint32		capacity = store->root->capacity;
	dsa_pointer *slots = slot_table(store);
	uint32		hash = window_hash_of(store, start, keyhash);
	dsa_pointer tag = SLOT_TAG(hash);
	uint32		i = home_slot(hash, capacity);

	if (!window)
	{
		WEIR_PREFETCH(&slots[i]);
		return InvalidDsaPointer;
	}
	for (int n = 0; n < 4 && slots[i] != SLOT_EMPTY; n++, i = next_slot(i, capacity))
		if (slots[i] != SLOT_DELETED && (slots[i] & ~SLOT_PTR_MASK) == tag)
		{
			dsa_pointer dp = slots[i] & SLOT_PTR_MASK;

			WEIR_PREFETCH(window_at(store, dp));
			return dp;
		}
	return InvalidDsaPointer;
}

/*
 * Keyed entries (dedup, last value, join): one entry per key and `space`
 * (a join's side), stored as a window starting at `space`, which the store
 * does not link anywhere (nor do the operators: their expiry buckets are
 * arrays, keyed.c).
 */
dsa_pointer
weir_window_entry_find(WeirWindowStore *store, int space, const char *key,
					   uint32 keylen, uint32 keyhash, bool create, bool *created)
{
	return find_or_add(store, (TimestampTz) space, key, keylen,
					   window_hash_of(store, (TimestampTz) space, keyhash), create, created);
}

/* Memory for an operator's own records, accounted to the store. */
dsa_pointer
weir_window_store_alloc(WeirWindowStore *store, Size size)
{
	return store_alloc(store, size, 0);
}

void
weir_window_store_free(WeirWindowStore *store, dsa_pointer dp, Size size)
{
	store_free(store, dp, size);
}

/* A hint: the index slot of entry dp will be read soon (to take it out). */
void
weir_window_entry_prefetch_slot(WeirWindowStore *store, dsa_pointer dp)
{
	WEIR_PREFETCH(&slot_table(store)[home_slot(stored_window_hash(store, window_at(store, dp)),
											   store->root->capacity)]);
}

/* Take a keyed entry out of memory; the operator has unlinked it. */
void
weir_window_entry_remove(WeirWindowStore *store, dsa_pointer dp)
{
	weir_window_entry_unindex(store, dp);
	weir_window_entry_free(store, dp);
}

/* Take a keyed entry out of the index only: lookups no longer find it. */
void
weir_window_entry_unindex(WeirWindowStore *store, dsa_pointer dp)
{
	unindex(store, window_at(store, dp));
}

/* Free a keyed entry already taken out of the index. */
void
weir_window_entry_free(WeirWindowStore *store, dsa_pointer dp)
{
	store_free(store, dp, window_size(store->root, weir_window_keylen(window_at(store, dp))));
}

/* Give memory back after many keyed entries left (see maybe_shrink). */
void
weir_window_entry_shrink(WeirWindowStore *store)
{
	WeirStoreRoot *root = store->root;

	/*
	 * Deleted slots lengthen every probe that passes them (a lookup that
	 * misses walks to an empty slot): when they are a quarter of the table,
	 * rebuild it without them.
	 */
	if (root->deleted > root->capacity / 4)
		(void) resize(store, rebuilt_capacity(store));
	else
		maybe_shrink(store);
}

/*
 * A slot's window left.  A probe passes a deleted slot and stops at an empty
 * one, so a slot followed by an empty one can be empty itself (no probe
 * needs to pass it), and so can the deleted slots before it.  This clears
 * most deleted slots as they are made, without knowing any window's hash:
 * a keyed store whose keys come and go (a join's, a dedup's ids) otherwise
 * filled with deleted slots, and rebuilding it every few tens of thousands
 * of new keys (hashing every live key again, each a cache miss) was ~8% of
 * a join's time.
 */
static void
mark_deleted(WeirWindowStore *store, uint32 slot)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer *slots = slot_table(store);
	uint32		capacity = root->capacity;

	if (slots[next_slot(slot, capacity)] != SLOT_EMPTY)
	{
		slots[slot] = SLOT_DELETED;
		root->deleted++;
		return;
	}
	slots[slot] = SLOT_EMPTY;
	for (uint32 i = slot == 0 ? capacity - 1 : slot - 1;
		 slots[i] == SLOT_DELETED;
		 i = i == 0 ? capacity - 1 : i - 1)
	{
		slots[i] = SLOT_EMPTY;
		root->deleted--;
	}
}

/* Remove a window from the slot table (its list is the caller's business). */
static void
unindex(WeirWindowStore *store, WeirWindow *w)
{
	bool		found;
	uint32		slot = probe(store, stored_window_hash(store, w), w->start, weir_window_key(w),
							 weir_window_keylen(w), &found);

	Assert(found);
	store->root->used--;
	mark_deleted(store, slot);
}

/*
 * Take a window out of memory.  `merged`: it became part of another session
 * window, so its own sink row (if it fired) is retracted, not written.  The
 * caller has unlinked it from its bucket or key list.
 */
static void
retire(WeirWindowStore *store, dsa_pointer dp, bool merged)
{
	WeirWindow *w = window_at(store, dp);
	WeirStoreRoot *root = store->root;
	/* a row in the sink (written, or due): a merge must retract it */
	uint32		flags = weir_window_flags(w);
	bool		fired = (flags & (WEIR_WINDOW_FIRED | WEIR_WINDOW_EMITTED)) != 0;
	bool		persisted = (flags & WEIR_WINDOW_PERSISTED) != 0;
	bool		sink_dirty = !merged && (flags & WEIR_WINDOW_SINK_DIRTY) != 0;
	uint32		keylen = weir_window_keylen(w);

	/*
	 * A closed window owes nothing but its last sink row (a restore skips
	 * closed windows): built now, so that nothing else of it (generic
	 * states can be large) outlives it until the checkpoint.  A merged one,
	 * not closed, must hide its versions in earlier chunks (window_chunks.c)
	 * and retract its row.
	 */
	if (sink_dirty)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(store->retired_cxt);
		int			emitted = (flags & WEIR_WINDOW_EMITTED) != 0;

		if (store->retired_rows[emitted] == NULL)
		{
			store->retired_rows[emitted] = palloc(sizeof(WeirSinkRows));
			weir_sink_rows_init(store->retired_rows[emitted], store->plan);
		}
		weir_sink_rows_add(store->retired_rows[emitted], weir_window_key(w), w->start,
						   weir_window_end(root, store->plan, w),
						   weir_window_states(root, w));
		MemoryContextSwitchTo(oldcxt);
	}
	else if (merged && (fired || persisted))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(store->retired_cxt);
		WeirRetired *r = palloc(sizeof(WeirRetired));

		r->key = palloc(keylen);
		memcpy(r->key, weir_window_key(w), keylen);
		r->keylen = keylen;
		r->start = w->start;
		r->end = weir_window_end(root, store->plan, w);
		r->persisted = persisted;
		r->retract_sink = fired;
		store->retired = lappend(store->retired, r);
		MemoryContextSwitchTo(oldcxt);
	}
	if (store->plan->has_generic)
		weir_agg_free_generic(store->plan, weir_window_states(root, w));
	unindex(store, w);
	store_free(store, dp, window_size(root, keylen));
}

/* Unlink a session window from its key's list; drop the key when empty. */
static void
session_unlink(WeirWindowStore *store, dsa_pointer dp)
{
	WeirWindow *w = window_at(store, dp);
	SessionKeyHash skey = {weir_window_keylen(w), weir_window_key(w)};
	SessionKey *sk = hash_search(store->sessions, &skey, HASH_FIND, NULL);

	Assert(sk != NULL);
	if (sk->head == dp)
		sk->head = weir_window_next(w);
	else
	{
		WeirWindow *prev = window_at(store, sk->head);

		while (weir_window_next(prev) != dp)
			prev = window_at(store, weir_window_next(prev));
		weir_window_set_next(prev, weir_window_next(w));
	}
	if (!DsaPointerIsValid(sk->head))
	{
		char	   *kcopy = (char *) sk->hkey.key;

		hash_search(store->sessions, &skey, HASH_REMOVE, NULL);
		pfree(kcopy);
	}
}

/*
 * Place a record at t into the session windows of its key, merging the
 * sessions it touches; returns the window to accumulate into, or NULL if
 * the merged session would already be past its allowed lateness (a late
 * record) or memory ran out (store->out_of_memory).
 */
WeirWindow *
weir_session_place(WeirWindowStore *store, const char *key, uint32 keylen,
				   TimestampTz t, TimestampTz watermark, int64 lateness)
{
	WeirPlan   *plan = store->plan;
	WeirStoreRoot *root = store->root;
	int64		gap = plan->windowing.size;
	SessionKeyHash skey = {keylen, key};
	SessionKey *sk = hash_search(store->sessions, &skey, HASH_FIND, NULL);
	dsa_pointer touching[64];
	int			ntouching = 0;
	TimestampTz start = t;
	TimestampTz end = t + gap;
	WeirWindow *target = NULL;
	dsa_pointer target_dp = InvalidDsaPointer;
	bool		created;

	for (dsa_pointer dp = sk ? sk->head : InvalidDsaPointer;
		 DsaPointerIsValid(dp); dp = weir_window_next(window_at(store, dp)))
	{
		WeirWindow *w = window_at(store, dp);

		if (w->start < t + gap && t < *session_end(w) && ntouching < lengthof(touching))
		{
			touching[ntouching++] = dp;
			start = Min(start, w->start);
			end = Max(end, *session_end(w));
		}
	}
	if (end + lateness <= watermark)
		return NULL;

	/* the session that keeps its start, if one does */
	for (int i = 0; i < ntouching; i++)
		if (window_at(store, touching[i])->start == start)
			target_dp = touching[i];
	if (DsaPointerIsValid(target_dp))
		target = window_at(store, target_dp);
	else
	{
		target = weir_window_lookup(store, start, end, key, keylen, &created);
		if (target == NULL)
			return NULL;
	}
	for (int i = 0; i < ntouching; i++)
	{
		WeirWindow *w;

		if (touching[i] == target_dp)
			continue;
		w = window_at(store, touching[i]);
		for (int a = 0; a < plan->naggs; a++)
			weir_agg_combine(&plan->aggs[a], weir_window_states(root, target),
							 weir_window_states(root, w));
		if (weir_window_flags(w) & (WEIR_WINDOW_FIRED | WEIR_WINDOW_EMITTED))
			weir_window_set_flags(target, WEIR_WINDOW_SINK_DIRTY);	/* replaces the retracted row */
		session_unlink(store, touching[i]);
		retire(store, touching[i], true);
	}
	if (end > *session_end(target))
	{
		*session_end(target) = end;
		if (end > watermark)
			weir_window_clear_flags(target, WEIR_WINDOW_FIRED);	/* it will fire again, later */
	}
	weir_window_set_flags(target, WEIR_WINDOW_DIRTY);
	return target;
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * The starts of the windows that contain event time t, newest first.
 * Returns how many (at most `max`).
 */
int
weir_window_assign(WeirWindowing *w, TimestampTz t, TimestampTz *starts, int max)
{
	int64		unix_t = t + UNIX_EPOCH_OFFSET;
	TimestampTz last = floor_div(unix_t, w->slide) * w->slide - UNIX_EPOCH_OFFSET;
	int			n = 0;

	for (TimestampTz s = last; s > t - w->size && n < max; s -= w->slide)
		starts[n++] = s;
	return n;
}

static bool
fire_one(WeirWindow *w)
{
	if (weir_window_flags(w) & WEIR_WINDOW_FIRED)
		return false;
	weir_window_set_flags(w, WEIR_WINDOW_FIRED | WEIR_WINDOW_SINK_DIRTY | WEIR_WINDOW_DIRTY);
	return true;
}

/*
 * Fire the windows whose end the watermark has reached, and retire those
 * it has passed by more than the allowed lateness.  Returns the number of
 * windows fired.
 */
int64
weir_window_fire(WeirWindowStore *store, TimestampTz watermark, int64 lateness,
				 bool emit_updates)
{
	HASH_SEQ_STATUS status;
	List	   *emptied = NIL;
	ListCell   *lc;
	int64		fired = 0;

	if (store->root->session)
	{
		WeirWindowIter iter;
		WeirWindow *w;
		List	   *expired = NIL;

		/* sessions end anywhere: look at each (one per open key) */
		weir_window_iter_init(&iter, store);
		while ((w = weir_window_iter_next(&iter)) != NULL)
		{
			TimestampTz end = *session_end(w);

			if (end > watermark)
				continue;
			if (fire_one(w))
				fired++;
			if (end + lateness <= watermark)
				expired = lappend(expired,
								  (void *) (slot_table(store)[iter.next_slot - 1] & SLOT_PTR_MASK));
		}
		foreach(lc, expired)
		{
			dsa_pointer dp = (dsa_pointer) lfirst(lc);

			session_unlink(store, dp);
			retire(store, dp, false);
		}
		list_free(expired);
		maybe_shrink(store);
		return fired;
	}

	{
		Bucket	   *bucket;

		hash_seq_init(&status, store->buckets);
		while ((bucket = hash_seq_search(&status)) != NULL)
		{
			bool		expire;
			dsa_pointer dp;

			if (bucket->end > watermark)
				continue;
			expire = bucket->end + lateness <= watermark;
			for (dp = bucket->head; DsaPointerIsValid(dp);)
			{
				WeirWindow *w = window_at(store, dp);
				dsa_pointer next = weir_window_next(w);

				if (fire_one(w))
					fired++;
				if (expire)
					retire(store, dp, false);
				dp = next;
			}
			if (expire)
				emptied = lappend(emptied, &bucket->start);
		}
		foreach(lc, emptied)
			hash_search(store->buckets, lfirst(lc), HASH_REMOVE, NULL);
		/*
		 * Caught up, look whether or not a window closed in this round: the
		 * backlog's last close came while it was being read.
		 */
		if (!store->backlog || emptied != NIL)
			maybe_shrink(store);
		list_free(emptied);
	}
	return fired;
}

/*
 * Give memory back after many windows (or keyed entries) left: caught up, a
 * table under half full shrinks to fit.  Reading a backlog, a window's close
 * (a checkpoint's expiry of ids) empties most of the table and the next
 * fills it again: only a table 8 times larger than it needs shrinks then, so
 * that it is not rebuilt twice a window.
 */
static void
maybe_shrink(WeirWindowStore *store)
{
	WeirStoreRoot *root = store->root;
	uint32		target = table_capacity_for(root->used);
	bool		shrink;

	if (store->backlog)
		shrink = root->capacity > TABLE_MIN_CAPACITY && root->capacity >= (uint64) target * 8;
	else
		shrink = table_too_empty(root);
	if (shrink)
		(void) resize(store, target);
}

/* Whether windows that left memory owe the next checkpoint something. */
bool
weir_window_owes_retired(WeirWindowStore *store)
{
	return store->retired != NIL || store->retired_rows[0] || store->retired_rows[1];
}

/* After a checkpoint committed what the retired windows still owed. */
void
weir_window_forget_retired(WeirWindowStore *store)
{
	store->retired = NIL;
	store->retired_rows[0] = store->retired_rows[1] = NULL;
	MemoryContextReset(store->retired_cxt);
}

void
weir_window_iter_init(WeirWindowIter *iter, WeirWindowStore *store)
{
	iter->store = store;
	iter->next_slot = 0;
}

/* The next live window, or NULL; do not add or remove windows meanwhile. */
WeirWindow *
weir_window_iter_next(WeirWindowIter *iter)
{
	WeirWindowStore *store = iter->store;
	dsa_pointer *slots = slot_table(store);

	while (iter->next_slot < store->root->capacity)
	{
		dsa_pointer dp = slots[iter->next_slot++];

		if (dp != SLOT_EMPTY && dp != SLOT_DELETED)
			return window_at(store, dp & SLOT_PTR_MASK);
	}
	return NULL;
}
