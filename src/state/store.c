/*-------------------------------------------------------------------------
 *
 * store.c
 *	  A pipeline's state store: entries (start, key) -> state in the
 *	  pipeline's DSA area, an index over them, and the store's memory.
 *
 * Memory.  Each entry is one flat allocation (WeirEntry) from the store's
 * pools (or DSA, when large); the index is an open-addressing table of
 * dsa_pointers, also in DSA, reachable from a WeirStoreRoot whose
 * dsa_pointer the pipeline slot publishes, so other backends can attach
 * and read the entries (weir.live_state).  Only the worker writes, holding
 * the pipeline slot's lock exclusively (worker.c); readers hold it shared
 * and copy.  What entries mean, and how they are listed besides the index,
 * is their users' (window.c, keyed.c, row_arena.c).
 *
 * Allocation beyond the store's limit (max_state_memory) or a failed DSA
 * allocation sets out_of_memory instead of raising an error; the worker
 * then stops the pipeline cleanly at its last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/store.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/memutils.h"

#include "definition/key_image.h"
#include "state/store.h"

#define SLOT_EMPTY		InvalidDsaPointer
#define SLOT_DELETED	((dsa_pointer) 1)	/* no allocation sits at offset 1 */

#define SLOT_PTR_MASK	WEIR_SLOT_PTR_MASK
/* the tag is the hash's low 12 bits: its high bits choose the home slot */
#define SLOT_TAG(hash)	(((dsa_pointer) ((hash) & 0xFFF)) << WEIR_SLOT_TAG_SHIFT)

StaticAssertDecl(sizeof(dsa_pointer) == 8, "slot tags need 64-bit dsa_pointers");
StaticAssertDecl(offsetof(WeirEntry, data) == 16, "a window's header is 16 bytes");

static void unindex(WeirStore *store, WeirEntry *w);

static inline WeirEntry *
entry_at(WeirStore *store, dsa_pointer dp)
{
	return weir_entry_at(store, dp);
}

static inline dsa_pointer *
slot_table(WeirStore *store)
{
	return (dsa_pointer *) weir_store_address(store, store->root->slots);
}

/*
 * dsa_get_address, recording where dp's segment is mapped (the slow path
 * of weir_store_address, and after every allocation: see segment_base).
 */
void *
weir_store_address_lookup(WeirStore *store, dsa_pointer dp)
{
	char	   *p = dsa_get_address(store->area, dp);

	if (p != NULL)
		store->segment_base[dp >> WEIR_DSA_OFFSET_WIDTH] = p - (dp & WEIR_DSA_OFFSET_MASK);
	return p;
}

static inline Size
entry_size(WeirStoreRoot *root, uint32 keylen)
{
	return offsetof(WeirEntry, data) + weir_entry_key_bytes(keylen) +
		(root->session ? sizeof(TimestampTz) : 0) + root->state_size;
}

static inline uint32
start_hash_slot(TimestampTz start)
{
	return ((uint32) start ^ (uint32) (start >> 32)) * 0x9E3779B1u >> (32 - WEIR_START_HASHES_LOG2);
}

/*
 * The hash of a window start, from the store's few remembered ones when it
 * is there: a batch's records fall in a few windows (a keyed entry's start
 * never changes), and hashing each record's starts again would cost some
 * 120 instructions a record in a join.
 */
static inline uint32
start_hash(WeirStore *store, TimestampTz start)
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
entry_hash_of(WeirStore *store, TimestampTz start, uint32 keyhash)
{
	return hash_combine(keyhash, start_hash(store, start));
}

static uint32
entry_hash(WeirStore *store, TimestampTz start, const char *key, uint32 keylen)
{
	return entry_hash_of(store, start, weir_key_image_hash(key, keylen));
}

/*
 * The one place the store allocates from DSA: every allocation records
 * where its segment is mapped, since it may be a new segment that took a
 * freed one's number (see segment_base).  InvalidDsaPointer when DSA has no
 * more.
 */
static dsa_pointer
area_alloc(WeirStore *store, Size size, int flags)
{
	dsa_pointer dp = dsa_allocate_extended(store->area, size, flags | DSA_ALLOC_NO_OOM);

	if (DsaPointerIsValid(dp))
		(void) weir_store_address_lookup(store, dp);
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
pool_alloc(WeirStore *store, Size size)
{
	WeirEntryPool *pool = &store->pools[pool_class(size)];
	Size		slot_size = (pool_class(size) + 1) * WEIR_POOL_CLASS;
	dsa_pointer dp = pool->free;

	if (DsaPointerIsValid(dp))
	{
		pool->free = *(dsa_pointer *) weir_store_address(store, dp);
		/* the next allocation reads it (a freed slot is cold, as a rule) */
		if (DsaPointerIsValid(pool->free))
			WEIR_PREFETCH(weir_store_address(store, pool->free));
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
store_alloc(WeirStore *store, Size size, int flags)
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
			memset(weir_store_address(store, dp), 0, size);
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
store_free(WeirStore *store, dsa_pointer dp, Size size)
{
	if (size <= WEIR_POOL_MAX)
	{
		WeirEntryPool *pool = &store->pools[pool_class(size)];

		*(dsa_pointer *) weir_store_address(store, dp) = pool->free;
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
rebuilt_capacity(WeirStore *store)
{
	uint32		fit = table_capacity_for(store->root->used + 1);

	return store->backlog ? Max(fit, store->root->capacity) : fit;
}

/* The hash a window is indexed by, computed again from the window */
static uint32
stored_entry_hash(WeirStore *store, WeirEntry *w)
{
	return entry_hash(store, w->start, weir_entry_key(w), weir_entry_keylen(w));
}

#define RESIZE_PREFETCH_AHEAD 16	/* slots */

/* Grow (or just clean) the slot table; false if memory ran out. */
static bool
resize(WeirStore *store, uint32 capacity)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer new_dp = store_alloc(store, sizeof(dsa_pointer) * (Size) capacity,
									 DSA_ALLOC_HUGE | DSA_ALLOC_ZERO);
	dsa_pointer *new_slots;
	dsa_pointer *old_slots;

	if (!DsaPointerIsValid(new_dp))
		return false;
	new_slots = weir_store_address(store, new_dp);
	old_slots = DsaPointerIsValid(root->slots) ? slot_table(store) : NULL;
	for (uint32 i = 0; old_slots && i < root->capacity; i++)
	{
		WeirEntry *w;
		uint32		j;

		/*
		 * Each window is read for its hash, a cache miss as a rule: ask for
		 * the ones some slots ahead meanwhile (weir_store_prefetch)
		 */
		if (i + RESIZE_PREFETCH_AHEAD < root->capacity)
		{
			dsa_pointer ahead = old_slots[i + RESIZE_PREFETCH_AHEAD];

			if (ahead != SLOT_EMPTY && ahead != SLOT_DELETED)
				WEIR_PREFETCH(entry_at(store, ahead & SLOT_PTR_MASK));
		}
		if (old_slots[i] == SLOT_EMPTY || old_slots[i] == SLOT_DELETED)
			continue;
		w = entry_at(store, old_slots[i] & SLOT_PTR_MASK);
		for (j = home_slot(stored_entry_hash(store, w), capacity); new_slots[j] != SLOT_EMPTY;
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

/*
 * A store in `area`, its memory counted up to `limit` bytes; entries carry
 * state_size bytes of state (keyed state may set it before the first entry:
 * keyed.c), and an end when `session`.  Its root is what readers attach to.
 */
WeirStore *
weir_store_create(dsa_area *area, int64 limit, uint32 state_size, bool session,
				  MemoryContext parent)
{
	WeirStore  *store;
	MemoryContext cxt = AllocSetContextCreate(parent, "weir store",
											  ALLOCSET_DEFAULT_SIZES);

	store = MemoryContextAllocZero(cxt, sizeof(WeirStore));
	store->cxt = cxt;
	store->area = area;
	store->limit = limit;
	/* every remembered start is 0 to begin with, with its hash */
	for (int i = 0; i < lengthof(store->start_hashes); i++)
		store->start_hashes[i] = hash_bytes_uint32(0);
	store->root_dp = area_alloc(store, sizeof(WeirStoreRoot), DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(store->root_dp))
		elog(ERROR, "could not allocate the state store's root");
	store->root = weir_store_address(store, store->root_dp);
	store->root->state_size = state_size;
	store->root->session = session;
	store->root->bytes = sizeof(WeirStoreRoot);
	if (!resize(store, TABLE_MIN_CAPACITY))
		elog(ERROR, "could not allocate the state store's table");
	return store;
}

/* The slot holding (start, key), or the first free one for it. */
static uint32
probe(WeirStore *store, uint32 hash, TimestampTz start, const char *key,
	  uint32 keylen, bool *found)
{
	WeirStoreRoot *root = store->root;
	dsa_pointer *slots = slot_table(store);
	uint32		capacity = root->capacity;
	int64		free_slot = -1;
	dsa_pointer tag = SLOT_TAG(hash);

	for (uint32 i = home_slot(hash, capacity);; i = next_slot(i, capacity))
	{
		WeirEntry *w;

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
		w = entry_at(store, slots[i] & SLOT_PTR_MASK);
		if (w->start == start && weir_entry_keylen(w) == keylen &&
			memcmp(weir_entry_key(w), key, keylen) == 0)
		{
			*found = true;
			return i;
		}
	}
}

/*
 * Find the entry (start, key), keyhash being weir_key_image_hash of the
 * key; if absent and `create`, add it with zeroed state (flagged
 * WEIR_ENTRY_DIRTY).  Returns its dsa_pointer, InvalidDsaPointer if absent
 * or if memory ran out (store->out_of_memory is then set).  A window's start
 * is its start; keyed entries use their space (a join's side), and are
 * linked nowhere by the store (their expiry buckets are keyed.c's).
 */
dsa_pointer
weir_store_find(WeirStore *store, TimestampTz start, const char *key, uint32 keylen,
				uint32 keyhash, bool create, bool *created)
{
	WeirStoreRoot *root = store->root;
	uint32		hash = entry_hash_of(store, start, keyhash);
	uint32		slot;
	bool		found;
	dsa_pointer dp;
	WeirEntry  *w;

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
	dp = store_alloc(store, entry_size(root, keylen), DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(dp))
		return InvalidDsaPointer;
	if ((dp & ~WEIR_ENTRY_NEXT_MASK) != 0)
		elog(ERROR, "dsa_pointer " UINT64_FORMAT " uses more bits than weir's windows allow", dp);
	w = entry_at(store, dp);
	w->start = start;
	w->link = (uint64) Min(keylen, WEIR_ENTRY_LONG_KEY) << WEIR_ENTRY_KEYLEN_SHIFT;
	weir_entry_set_flags(w, WEIR_ENTRY_DIRTY);
	if (keylen >= WEIR_ENTRY_LONG_KEY)
		memcpy(w->data, &keylen, sizeof(uint32));
	memcpy(weir_entry_key(w), key, keylen);
	if (slot_table(store)[slot] == SLOT_DELETED)
		root->deleted--;
	slot_table(store)[slot] = dp | SLOT_TAG(hash);
	root->used++;
	*created = true;
	return dp;
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
weir_store_prefetch(WeirStore *store, TimestampTz start, uint32 keyhash,
					bool entry)
{
	uint32		capacity = store->root->capacity;
	dsa_pointer *slots = slot_table(store);
	uint32		hash = entry_hash_of(store, start, keyhash);
	dsa_pointer tag = SLOT_TAG(hash);
	uint32		i = home_slot(hash, capacity);

	if (!entry)
	{
		WEIR_PREFETCH(&slots[i]);
		return InvalidDsaPointer;
	}
	for (int n = 0; n < 4 && slots[i] != SLOT_EMPTY; n++, i = next_slot(i, capacity))
		if (slots[i] != SLOT_DELETED && (slots[i] & ~SLOT_PTR_MASK) == tag)
		{
			dsa_pointer dp = slots[i] & SLOT_PTR_MASK;

			WEIR_PREFETCH(entry_at(store, dp));
			return dp;
		}
	return InvalidDsaPointer;
}

/* Memory for an operator's own records, accounted to the store. */
dsa_pointer
weir_store_alloc(WeirStore *store, Size size)
{
	return store_alloc(store, size, 0);
}

void
weir_store_free(WeirStore *store, dsa_pointer dp, Size size)
{
	store_free(store, dp, size);
}

/* A hint: the index slot of entry dp will be read soon (to take it out). */
void
weir_store_prefetch_slot(WeirStore *store, dsa_pointer dp)
{
	WEIR_PREFETCH(&slot_table(store)[home_slot(stored_entry_hash(store, entry_at(store, dp)),
											   store->root->capacity)]);
}

/* Take a keyed entry out of memory; the operator has unlinked it. */
void
weir_store_remove(WeirStore *store, dsa_pointer dp)
{
	weir_store_unindex(store, dp);
	weir_store_free_entry(store, dp);
}

/* Take a keyed entry out of the index only: lookups no longer find it. */
void
weir_store_unindex(WeirStore *store, dsa_pointer dp)
{
	unindex(store, entry_at(store, dp));
}

/* Free a keyed entry already taken out of the index. */
void
weir_store_free_entry(WeirStore *store, dsa_pointer dp)
{
	store_free(store, dp, entry_size(store->root, weir_entry_keylen(entry_at(store, dp))));
}

/* Give memory back after many keyed entries left (see maybe_shrink). */
void
weir_store_shrink(WeirStore *store)
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
		weir_store_fit(store);
}

/*
 * A slot's window left.  A probe passes a deleted slot and stops at an empty
 * one, so a slot followed by an empty one can be empty itself (no probe
 * needs to pass it), and so can the deleted slots before it.  This clears
 * most deleted slots as they are made, without knowing any window's hash:
 * a keyed store whose keys come and go (a join's, a dedup's ids) would
 * otherwise fill with deleted slots, and rebuilding it every few tens of
 * thousands of new keys (hashing every live key again, each a cache miss)
 * costs a join a noticeable share of its time.
 */
static void
mark_deleted(WeirStore *store, uint32 slot)
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
unindex(WeirStore *store, WeirEntry *w)
{
	bool		found;
	uint32		slot = probe(store, stored_entry_hash(store, w), w->start, weir_entry_key(w),
							 weir_entry_keylen(w), &found);

	Assert(found);
	store->root->used--;
	mark_deleted(store, slot);
}

/*
 * Give memory back after many entries left: caught up, a table under half
 * full shrinks to fit.  Reading a backlog, a window's close (a checkpoint's
 * expiry of ids) empties most of the table and the next fills it again:
 * only a table 8 times larger than it needs shrinks then, so that it is
 * not rebuilt twice a window.
 */
void
weir_store_fit(WeirStore *store)
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

void
weir_store_iter_init(WeirStoreIter *iter, WeirStore *store)
{
	iter->store = store;
	iter->next_slot = 0;
	iter->current = InvalidDsaPointer;
}

/* The next live window, or NULL; do not add or remove windows meanwhile. */
WeirEntry *
weir_store_iter_next(WeirStoreIter *iter)
{
	WeirStore *store = iter->store;
	dsa_pointer *slots = slot_table(store);

	while (iter->next_slot < store->root->capacity)
	{
		dsa_pointer dp = slots[iter->next_slot++];

		if (dp != SLOT_EMPTY && dp != SLOT_DELETED)
		{
			iter->current = dp & SLOT_PTR_MASK;
			return entry_at(store, iter->current);
		}
	}
	return NULL;
}