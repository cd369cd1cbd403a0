/*-------------------------------------------------------------------------
 *
 * store.h
 *	  A pipeline's state store: entries (start, key) -> state in the
 *	  pipeline's DSA area, their index, and the store's memory (store.c).
 *
 * The store knows entries, not what they mean: windows (window.h), keyed
 * entries (keyed.h) and a join's rows (row_arena.h) are its users, as
 * equals.  Only the worker writes it, holding the pipeline slot's lock
 * exclusively (base/shmem.h); readers in other backends attach the area,
 * hold the lock shared, and copy (pipeline/live.c).  An allocation beyond
 * the store's limit (max_state_memory), or one DSA refuses, sets
 * out_of_memory instead of raising: the worker then stops the pipeline at
 * its last checkpoint.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/store.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STORE_H
#define WEIR_STORE_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"

/* a hint to the CPU that `addr` will be read soon (no-op where unknown) */
#if defined(__GNUC__) || defined(__clang__)
#define WEIR_PREFETCH(addr) __builtin_prefetch(addr)
#else
#define WEIR_PREFETCH(addr) ((void) (addr))
#endif

/*
 * WeirEntry.flags: six bits the store keeps for its users (windows,
 * keyed entries), named here so that none is used twice.
 */
#define WEIR_ENTRY_FIRED		0x01	/* its row is due in (or went to) the sink */
#define WEIR_ENTRY_DIRTY		0x02	/* state changed since the last checkpoint */
#define WEIR_ENTRY_SINK_DIRTY	0x04	/* its sink row must be (re)written */
#define WEIR_ENTRY_PERSISTED	0x08	/* a checkpoint chunk holds a version of it */
#define WEIR_ENTRY_EMITTED		0x10	/* a checkpoint wrote its row to the sink */
#define WEIR_ENTRY_HELD		0x20	/* keyed: expired while changed, out of
										 * the index, waiting to go (keyed.c) */

/*
 * One entry, (start, key) -> state, in DSA: a window (start: its start) or
 * a keyed entry (start: its space).  A 16-byte header, then data[].  Flat and
 * pointer-free but for the link to the next window in its list, a
 * dsa_pointer, so other backends can read it.  State is the bulk of a
 * pipeline's shared memory (bench/window.sh measures bytes per window), so
 * `link` packs three things into 8 bytes:
 *	bits  0-49	the dsa_pointer of the next window in its bucket (by start) or
 *				its key's list (a dsa_pointer uses 50 bits: 1024 segments of
 *				2^40 bytes, dsa.c; adding a window checks it)
 *	bits 50-55	the WEIR_WINDOW_* flags
 *	bits 56-63	the length of the key image, when below 255; 255 says it is
 *				longer, and its length is a uint32 at the start of data[]
 *				(8 bytes with padding)
 * Nothing else is needed per window: its hash is computed again when the
 * index is rebuilt, which is rare.  Read and write these only through the
 * functions below.  Layout of data[]: the long key's length, the key image
 * (padded to 8), then for session windows the end (TimestampTz), then the
 * aggregate states (root->state_size bytes).  With an int8 key and count +
 * sum over int8 that is 16 + 8 + 8 + 16 = 48 bytes.
 */
typedef struct WeirEntry
{
	TimestampTz start;
	uint64		link;			/* next | flags << 50 | key length << 56 */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} WeirEntry;

#define WEIR_ENTRY_NEXT_MASK	((UINT64CONST(1) << 50) - 1)
#define WEIR_ENTRY_FLAGS_SHIFT 50
#define WEIR_ENTRY_FLAGS_ALL	0x3F
#define WEIR_ENTRY_KEYLEN_SHIFT 56
#define WEIR_ENTRY_LONG_KEY	255

StaticAssertDecl(WEIR_ENTRY_HELD <= WEIR_ENTRY_FLAGS_ALL, "window flags need more bits");

static inline dsa_pointer
weir_entry_next(const WeirEntry *w)
{
	return (dsa_pointer) (w->link & WEIR_ENTRY_NEXT_MASK);
}

static inline void
weir_entry_set_next(WeirEntry *w, dsa_pointer next)
{
	Assert((next & ~WEIR_ENTRY_NEXT_MASK) == 0);
	w->link = (w->link & ~WEIR_ENTRY_NEXT_MASK) | (uint64) next;
}

static inline uint32
weir_entry_flags(const WeirEntry *w)
{
	return (uint32) (w->link >> WEIR_ENTRY_FLAGS_SHIFT) & WEIR_ENTRY_FLAGS_ALL;
}

static inline void
weir_entry_set_flags(WeirEntry *w, uint32 flags)
{
	w->link |= (uint64) (flags & WEIR_ENTRY_FLAGS_ALL) << WEIR_ENTRY_FLAGS_SHIFT;
}

static inline void
weir_entry_clear_flags(WeirEntry *w, uint32 flags)
{
	w->link &= ~((uint64) (flags & WEIR_ENTRY_FLAGS_ALL) << WEIR_ENTRY_FLAGS_SHIFT);
}

/* Set the flags to exactly `flags` */
static inline void
weir_entry_reset_flags(WeirEntry *w, uint32 flags)
{
	weir_entry_clear_flags(w, WEIR_ENTRY_FLAGS_ALL);
	weir_entry_set_flags(w, flags);
}

static inline uint32
weir_entry_keylen(const WeirEntry *w)
{
	uint32		len = (uint32) (w->link >> WEIR_ENTRY_KEYLEN_SHIFT);

	if (len == WEIR_ENTRY_LONG_KEY)
		memcpy(&len, w->data, sizeof(uint32));
	return len;
}

static inline char *
weir_entry_key(WeirEntry *w)
{
	return (w->link >> WEIR_ENTRY_KEYLEN_SHIFT) == WEIR_ENTRY_LONG_KEY ?
		w->data + sizeof(uint64) : w->data;
}

/* Bytes of data[] a key image of `keylen` bytes takes, with its padding */
static inline Size
weir_entry_key_bytes(uint32 keylen)
{
	return (keylen < WEIR_ENTRY_LONG_KEY ? 0 : sizeof(uint64)) + MAXALIGN(keylen);
}

/*
 * A slot of a store's table holds an entry's dsa_pointer and, in its top 12
 * bits, 12 bits of the entry's hash, so that a probe passes most other
 * entries without reading them (a cache miss each).  A dsa_pointer uses 50
 * bits (1024 segments of 2^40 bytes, dsa.c); adding an entry checks it.
 */
#define WEIR_SLOT_TAG_SHIFT 52
#define WEIR_SLOT_PTR_MASK ((((dsa_pointer) 1) << WEIR_SLOT_TAG_SHIFT) - 1)

/*
 * A dsa_pointer is a segment number above an offset of 40 bits (dsa.c's
 * DSA_OFFSET_WIDTH for 8-byte dsa_pointers; an area has at most 1024
 * segments).  The store keeps where each segment of its area is mapped in
 * this process, so that finding an entry is an add, not a call of
 * dsa_get_address (about 30 instructions, some 25 calls per record in a
 * join: a sixth of its worker's instructions).
 */
#define WEIR_DSA_OFFSET_WIDTH 40
#define WEIR_DSA_OFFSET_MASK ((((dsa_pointer) 1) << WEIR_DSA_OFFSET_WIDTH) - 1)
#define WEIR_DSA_MAX_SEGMENTS 1024

#define WEIR_START_HASHES_LOG2 3	/* window starts whose hash a store keeps */

/* Pools of small allocations of a store (store.c) */
#define WEIR_POOL_CLASS 16		/* bytes: size classes are multiples of it */
#define WEIR_POOL_MAX 256		/* bytes: larger ones are DSA's own */
#define WEIR_POOL_BLOCK (64 * 1024)	/* bytes carved at a time */

typedef struct WeirEntryPool
{
	dsa_pointer free;			/* freed slots, linked through their first 8 bytes */
	dsa_pointer next;			/* the first slot of the newest block never
								 * handed out */
	uint32		left;			/* slots from `next` to the block's end */
} WeirEntryPool;

/*
 * The root of a store, in DSA: what a reader in another backend needs to
 * walk it.  `slots` is an open-addressing table of dsa_pointers to windows
 * (0: empty, 1: deleted).  Written only by the worker, under the pipeline
 * slot's lock held exclusively; readers hold it shared.
 */
typedef struct WeirStoreRoot
{
	dsa_pointer slots;			/* dsa_pointer[capacity] */
	uint32		capacity;		/* a power of 2 */
	uint32		used;			/* live windows */
	uint32		deleted;		/* slots marked deleted */
	uint32		state_size;		/* bytes of aggregate state per window */
	bool		session;		/* windows carry their own end */
	int64		bytes;			/* accounted: windows and the slot table */
} WeirStoreRoot;

typedef struct WeirStore
{
	MemoryContext cxt;
	dsa_area   *area;
	dsa_pointer root_dp;
	WeirStoreRoot *root;
	int64		limit;			/* bytes; allocation beyond it fails */
	bool		out_of_memory;	/* an allocation failed: stop */
	bool		backlog;		/* the worker is behind its sources (tables
								 * then shrink less, see store.c) */

	/*
	 * Where each segment of `area` is mapped in this process (NULL: not
	 * looked up yet), for weir_store_address.  A segment's mapping is
	 * found once, through dsa_get_address; it changes only when every
	 * allocation in the segment was freed and a new segment takes its
	 * number, which only an allocation can do, so area_alloc (store.c)
	 * records the segment of every allocation it returns.  Valid because
	 * this process makes every allocation of the area (the worker; readers
	 * in other backends translate with dsa_get_address).
	 */
	char	   *segment_base[WEIR_DSA_MAX_SEGMENTS];
	WeirEntryPool pools[WEIR_POOL_MAX / WEIR_POOL_CLASS];	/* store.c */
	/* hashes of starts seen lately, by a hash of the start (store.c) */
	TimestampTz hashed_starts[1 << WEIR_START_HASHES_LOG2];
	uint32		start_hashes[1 << WEIR_START_HASHES_LOG2];
} WeirStore;

/* Iterating over the entries of a store */
typedef struct WeirStoreIter
{
	WeirStore  *store;
	uint32		next_slot;
	dsa_pointer current;		/* the entry last returned */
} WeirStoreIter;

extern WeirStore *weir_store_create(dsa_area *area, int64 limit, uint32 state_size,
									bool session, MemoryContext parent);
extern dsa_pointer weir_store_find(WeirStore *store, TimestampTz start, const char *key,
								   uint32 keylen, uint32 keyhash, bool create,
								   bool *created);
extern dsa_pointer weir_store_prefetch(WeirStore *store, TimestampTz start,
									   uint32 keyhash, bool entry);
extern dsa_pointer weir_store_alloc(WeirStore *store, Size size);
extern void weir_store_free(WeirStore *store, dsa_pointer dp, Size size);
extern void weir_store_prefetch_slot(WeirStore *store, dsa_pointer dp);
extern void weir_store_remove(WeirStore *store, dsa_pointer dp);
extern void weir_store_unindex(WeirStore *store, dsa_pointer dp);
extern void weir_store_free_entry(WeirStore *store, dsa_pointer dp);
extern void weir_store_shrink(WeirStore *store);
extern void weir_store_fit(WeirStore *store);
extern void *weir_store_address_lookup(WeirStore *store, dsa_pointer dp);
extern void weir_store_iter_init(WeirStoreIter *iter, WeirStore *store);
extern WeirEntry *weir_store_iter_next(WeirStoreIter *iter);

/*
 * The address in this process of an allocation of the store's area (NULL
 * for InvalidDsaPointer): dsa_get_address's answer, from the segment's
 * known mapping.
 */
static inline void *
weir_store_address(WeirStore *store, dsa_pointer dp)
{
	char	   *base;

	Assert((dp >> WEIR_DSA_OFFSET_WIDTH) < WEIR_DSA_MAX_SEGMENTS);
	base = store->segment_base[dp >> WEIR_DSA_OFFSET_WIDTH];

	if (likely(base != NULL && DsaPointerIsValid(dp)))
	{
		void	   *p = base + (dp & WEIR_DSA_OFFSET_MASK);

		Assert(p == dsa_get_address(store->area, dp));
		return p;
	}
	return weir_store_address_lookup(store, dp);
}

static inline WeirEntry *
weir_entry_at(WeirStore *store, dsa_pointer dp)
{
	return (WeirEntry *) weir_store_address(store, dp);
}

/* An entry's state: a window's aggregate states, a keyed entry's state */
static inline char *
weir_entry_states(WeirStoreRoot *root, WeirEntry *w)
{
	return w->data + weir_entry_key_bytes(weir_entry_keylen(w)) +
		(root->session ? sizeof(TimestampTz) : 0);
}

/*
 * Where an entry's end is, when the store's entries carry one (session
 * windows): after the key.
 */
static inline TimestampTz *
weir_entry_end(WeirEntry *w)
{
	return (TimestampTz *) (w->data + weir_entry_key_bytes(weir_entry_keylen(w)));
}

#endif							/* WEIR_STORE_H */
