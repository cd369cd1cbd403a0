/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Open windows of a pipeline, kept in the pipeline's DSA area.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/window.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_WINDOW_H
#define WEIR_WINDOW_H

#include "common/hashfn.h"
#include "datatype/timestamp.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"

#include "definition/definition.h"

/* a hint to the CPU that `addr` will be read soon (no-op where unknown) */
#if defined(__GNUC__) || defined(__clang__)
#define WEIR_PREFETCH(addr) __builtin_prefetch(addr)
#else
#define WEIR_PREFETCH(addr) ((void) (addr))
#endif

/* WeirWindow.flags */
#define WEIR_WINDOW_FIRED		0x01	/* its row is due in (or went to) the sink */
#define WEIR_WINDOW_DIRTY		0x02	/* state changed since the last checkpoint */
#define WEIR_WINDOW_SINK_DIRTY	0x04	/* its sink row must be (re)written */
#define WEIR_WINDOW_PERSISTED	0x08	/* a checkpoint chunk holds a version of it */
#define WEIR_WINDOW_EMITTED		0x10	/* a checkpoint wrote its row to the sink */
#define WEIR_WINDOW_HELD		0x20	/* keyed: expired while changed, out of
										 * the index, waiting to go (keyed.c) */

/*
 * One (key, window) in DSA: a 16-byte header, then data[].  Flat and
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
typedef struct WeirWindow
{
	TimestampTz start;
	uint64		link;			/* next | flags << 50 | key length << 56 */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} WeirWindow;

#define WEIR_WINDOW_NEXT_MASK	((UINT64CONST(1) << 50) - 1)
#define WEIR_WINDOW_FLAGS_SHIFT 50
#define WEIR_WINDOW_FLAGS_ALL	0x3F
#define WEIR_WINDOW_KEYLEN_SHIFT 56
#define WEIR_WINDOW_LONG_KEY	255

StaticAssertDecl(WEIR_WINDOW_HELD <= WEIR_WINDOW_FLAGS_ALL, "window flags need more bits");

static inline dsa_pointer
weir_window_next(const WeirWindow *w)
{
	return (dsa_pointer) (w->link & WEIR_WINDOW_NEXT_MASK);
}

static inline void
weir_window_set_next(WeirWindow *w, dsa_pointer next)
{
	Assert((next & ~WEIR_WINDOW_NEXT_MASK) == 0);
	w->link = (w->link & ~WEIR_WINDOW_NEXT_MASK) | (uint64) next;
}

static inline uint32
weir_window_flags(const WeirWindow *w)
{
	return (uint32) (w->link >> WEIR_WINDOW_FLAGS_SHIFT) & WEIR_WINDOW_FLAGS_ALL;
}

static inline void
weir_window_set_flags(WeirWindow *w, uint32 flags)
{
	w->link |= (uint64) (flags & WEIR_WINDOW_FLAGS_ALL) << WEIR_WINDOW_FLAGS_SHIFT;
}

static inline void
weir_window_clear_flags(WeirWindow *w, uint32 flags)
{
	w->link &= ~((uint64) (flags & WEIR_WINDOW_FLAGS_ALL) << WEIR_WINDOW_FLAGS_SHIFT);
}

/* Set the flags to exactly `flags` */
static inline void
weir_window_reset_flags(WeirWindow *w, uint32 flags)
{
	weir_window_clear_flags(w, WEIR_WINDOW_FLAGS_ALL);
	weir_window_set_flags(w, flags);
}

static inline uint32
weir_window_keylen(const WeirWindow *w)
{
	uint32		len = (uint32) (w->link >> WEIR_WINDOW_KEYLEN_SHIFT);

	if (len == WEIR_WINDOW_LONG_KEY)
		memcpy(&len, w->data, sizeof(uint32));
	return len;
}

static inline char *
weir_window_key(WeirWindow *w)
{
	return (w->link >> WEIR_WINDOW_KEYLEN_SHIFT) == WEIR_WINDOW_LONG_KEY ?
		w->data + sizeof(uint64) : w->data;
}

/* Bytes of data[] a key image of `keylen` bytes takes, with its padding */
static inline Size
weir_window_key_bytes(uint32 keylen)
{
	return (keylen < WEIR_WINDOW_LONG_KEY ? 0 : sizeof(uint64)) + MAXALIGN(keylen);
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

/* Pools of small allocations of a store (window.c) */
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

/*
 * A session window merged into another while a checkpoint holds a version
 * of it or its row is in the sink: the next checkpoint writes it as gone,
 * and retracts its row.
 */
typedef struct WeirRetired
{
	char	   *key;
	uint32		keylen;
	TimestampTz start;
	TimestampTz end;
	bool		persisted;		/* a checkpoint's chunk holds a version of it */
	bool		retract_sink;	/* its sink row must go */
} WeirRetired;

typedef struct WeirWindowStore
{
	MemoryContext cxt;
	WeirPlan   *plan;
	dsa_area   *area;
	dsa_pointer root_dp;
	WeirStoreRoot *root;
	int64		limit;			/* bytes; allocation beyond it fails */
	bool		out_of_memory;	/* an allocation failed: stop */
	bool		backlog;		/* the worker is behind its sources (keyed
								 * tables then shrink less, see window.c) */
	/*
	 * Where each segment of `area` is mapped in this process (NULL: not
	 * looked up yet), for weir_window_address.  A segment's mapping is
	 * found once, through dsa_get_address; it changes only when every
	 * allocation in the segment was freed and a new segment takes its
	 * number, which only an allocation can do, so area_alloc (window.c)
	 * records the segment of every allocation it returns.  Valid because this process
	 * makes every allocation of the area (the worker; readers in other
	 * backends translate with dsa_get_address).
	 */
	char	   *segment_base[WEIR_DSA_MAX_SEGMENTS];
	WeirEntryPool pools[WEIR_POOL_MAX / WEIR_POOL_CLASS];	/* window.c */
	/* hashes of window starts seen lately, by a hash of the start (window.c) */
	TimestampTz hashed_starts[1 << WEIR_START_HASHES_LOG2];
	uint32		start_hashes[1 << WEIR_START_HASHES_LOG2];
	HTAB	   *buckets;		/* tumbling, hopping: window lists by start */
	HTAB	   *sessions;		/* session: window lists by key */
	List	   *retired;		/* WeirRetired *, until the next checkpoint */
	/* rows of windows that left memory: [0] first emissions, [1] updates */
	struct WeirSinkRows *retired_rows[2];	/* NULL: none yet */
	MemoryContext retired_cxt;	/* holds them; reset after each checkpoint */
} WeirWindowStore;

/* Iterating over the windows of a store */
typedef struct WeirWindowIter
{
	WeirWindowStore *store;
	uint32		next_slot;
} WeirWindowIter;

extern WeirWindowStore *weir_window_store_create(WeirPlan *plan, dsa_area *area,
												 int64 limit, MemoryContext parent);
extern WeirWindow *weir_window_lookup(WeirWindowStore *store, TimestampTz start,
									  TimestampTz end, const char *key,
									  uint32 keylen, bool *created);
/*
 * The hash of a key image, which the windows of a record share.  A key of
 * one by-value column (append_key stores its Datum) is the common case: its
 * 8 bytes are mixed with murmur3's 64-bit finalizer, a tenth of the
 * instructions of hash_bytes with as good an avalanche.  Hashes live only
 * in memory (a restore recomputes them), so the choice is free to change.
 */
static inline uint32
weir_window_key_hash(const char *key, uint32 keylen)
{
	if (keylen == sizeof(uint64))
	{
		uint64		h;

		memcpy(&h, key, sizeof(h));
		h ^= h >> 33;
		h *= UINT64CONST(0xff51afd7ed558ccd);
		h ^= h >> 33;
		h *= UINT64CONST(0xc4ceb9fe1a85ec53);
		h ^= h >> 33;
		return (uint32) h;
	}
	return hash_bytes((const unsigned char *) key, keylen);
}

extern WeirWindow *weir_window_lookup_hashed(WeirWindowStore *store, TimestampTz start,
											 TimestampTz end, const char *key,
											 uint32 keylen, uint32 keyhash,
											 bool *created);
extern WeirWindow *weir_session_place(WeirWindowStore *store, const char *key,
									  uint32 keylen, TimestampTz t,
									  TimestampTz watermark, int64 lateness);
extern dsa_pointer weir_window_prefetch(WeirWindowStore *store, TimestampTz start,
										uint32 keyhash, bool window);
extern dsa_pointer weir_window_entry_find(WeirWindowStore *store, int space,
										  const char *key, uint32 keylen,
										  uint32 keyhash, bool create,
										  bool *created);
extern dsa_pointer weir_window_store_alloc(WeirWindowStore *store, Size size);
extern void weir_window_store_free(WeirWindowStore *store, dsa_pointer dp, Size size);
extern void weir_window_entry_prefetch_slot(WeirWindowStore *store, dsa_pointer dp);
extern void weir_window_entry_remove(WeirWindowStore *store, dsa_pointer dp);
extern void weir_window_entry_unindex(WeirWindowStore *store, dsa_pointer dp);
extern void weir_window_entry_free(WeirWindowStore *store, dsa_pointer dp);
extern void weir_window_entry_shrink(WeirWindowStore *store);
extern void *weir_window_address_lookup(WeirWindowStore *store, dsa_pointer dp);
extern int	weir_window_assign(WeirWindowing *w, TimestampTz t, TimestampTz *starts,
							   int max);
extern int64 weir_window_fire(WeirWindowStore *store, TimestampTz watermark,
							  int64 lateness, bool emit_updates);
extern bool weir_window_owes_retired(WeirWindowStore *store);
extern void weir_window_forget_retired(WeirWindowStore *store);
extern void weir_window_iter_init(WeirWindowIter *iter, WeirWindowStore *store);
extern WeirWindow *weir_window_iter_next(WeirWindowIter *iter);

extern TimestampTz weir_window_end(WeirStoreRoot *root, WeirPlan *plan, WeirWindow *w);

/*
 * The address in this process of an allocation of the store's area (NULL
 * for InvalidDsaPointer): dsa_get_address's answer, from the segment's
 * known mapping.
 */
static inline void *
weir_window_address(WeirWindowStore *store, dsa_pointer dp)
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
	return weir_window_address_lookup(store, dp);
}

static inline WeirWindow *
weir_window_at(WeirWindowStore *store, dsa_pointer dp)
{
	return (WeirWindow *) weir_window_address(store, dp);
}

/* A window's aggregate states (a keyed entry's state) */
static inline char *
weir_window_states(WeirStoreRoot *root, WeirWindow *w)
{
	return w->data + weir_window_key_bytes(weir_window_keylen(w)) +
		(root->session ? sizeof(TimestampTz) : 0);
}

#define WEIR_MAX_HOPS 64		/* windows a record may fall in (size / slide) */

#endif							/* WEIR_WINDOW_H */
