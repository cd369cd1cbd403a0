/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Open windows of a pipeline and their firing.
 *
 * Session windows (gap G) are per key: a record at t covers [t, t + G), and
 * sessions that overlap merge (their states combine), so a session is
 * [first event, last event + G).  They are listed per key; when a merge
 * moves a session's start, the old (key, start) is retired, and if its row
 * had gone to the sink that row is retracted (deleted) at the checkpoint
 * that writes the merged one.
 *
 * Tumbling and hopping windows are aligned to the Unix epoch (like date_bin with origin
 * '1970-01-01'): a tumbling window of size S starts at a multiple of S; a
 * hopping window (size S, slide D) at a multiple of D, and a record falls
 * into every window with start <= t < start + S.
 *
 * Each window holds the aggregate states of one key in one time range.
 * Windows are found by (start, key image) in a hash table, and are also
 * listed per start in buckets, so that firing visits only the windows that
 * close, oldest first.  A window fires (its row is due in the sink) when the
 * watermark reaches its end, and leaves memory when the watermark passes
 * end + allowed lateness; until then a late record updates it and its sink
 * row is written again.  What leaves memory is kept on a "retired" list
 * until the next checkpoint has written its last sink row and deleted its
 * state row.
 *
 * Single-threaded: only the pipeline's worker touches its store.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/window.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "datatype/timestamp.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "aggregate.h"
#include "window.h"

typedef struct SessionKeyHash
{
	uint32		keylen;
	const char *key;
} SessionKeyHash;

typedef struct SessionKey
{
	SessionKeyHash hkey;		/* owns a copy of the key image */
	dlist_head	windows;
} SessionKey;

typedef struct Bucket
{
	TimestampTz start;			/* hash key */
	TimestampTz end;
	dlist_head	windows;
} Bucket;

/* microseconds from PostgreSQL's epoch (2000-01-01) back to Unix's */
#define UNIX_EPOCH_OFFSET \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static uint32
window_hash(const void *key, Size keysize)
{
	const WeirWindowKey *k = key;
	uint32		h = hash_bytes((const unsigned char *) k->key, k->keylen);

	return hash_combine(h, hash_bytes_uint32((uint32) k->start ^
											 (uint32) (k->start >> 32)));
}

static void retire(WeirWindowStore *store, WeirWindow *w, bool merged);

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

static int
window_match(const void *a, const void *b, Size keysize)
{
	const WeirWindowKey *ka = a;
	const WeirWindowKey *kb = b;

	if (ka->start != kb->start || ka->keylen != kb->keylen)
		return 1;
	return memcmp(ka->key, kb->key, ka->keylen);
}

WeirWindowStore *
weir_window_store_create(WeirPlan *plan, MemoryContext parent)
{
	WeirWindowStore *store;
	MemoryContext cxt = AllocSetContextCreate(parent, "weir windows",
											  ALLOCSET_DEFAULT_SIZES);
	HASHCTL		ctl;

	store = MemoryContextAllocZero(cxt, sizeof(WeirWindowStore));
	store->cxt = cxt;
	store->plan = plan;

	ctl.keysize = sizeof(WeirWindowKey);
	ctl.entrysize = offsetof(WeirWindow, states) + plan->state_size;
	ctl.hash = window_hash;
	ctl.match = window_match;
	ctl.hcxt = cxt;
	store->windows = hash_create("weir windows", 4096, &ctl,
								 HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);

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

/*
 * The window of a key starting at `start`, created (zeroed states) if
 * absent.  `key` need not outlive the call.
 */
WeirWindow *
weir_window_lookup(WeirWindowStore *store, TimestampTz start, TimestampTz end,
				   const char *key, uint32 keylen, bool *created)
{
	WeirWindowKey hkey;
	uint32		hash;
	WeirWindow *w;
	bool		found;

	hkey.start = start;
	hkey.keylen = keylen;
	hkey.key = key;
	hash = get_hash_value(store->windows, &hkey);
	w = hash_search_with_hash_value(store->windows, &hkey, hash, HASH_ENTER, &found);
	*created = !found;
	if (!found)
	{
		Bucket	   *bucket;
		bool		bfound;
		char	   *copy = MemoryContextAlloc(store->cxt, keylen);

		memcpy(copy, key, keylen);
		w->hkey.key = copy;
		w->hash = hash;
		w->end = end;
		w->fired = false;
		w->dirty = true;
		w->sink_dirty = false;
		w->persisted = false;
		memset(w->states, 0, store->plan->state_size);

		if (store->plan->windowing.kind == WEIR_WINDOW_SESSION)
		{
			SessionKeyHash skey = {keylen, key};
			SessionKey *sk = hash_search(store->sessions, &skey, HASH_ENTER, &bfound);

			if (!bfound)
			{
				char	   *kcopy = MemoryContextAlloc(store->cxt, keylen);

				memcpy(kcopy, key, keylen);
				sk->hkey.key = kcopy;
				dlist_init(&sk->windows);
				store->bytes += sizeof(SessionKey) + keylen;
			}
			dlist_push_tail(&sk->windows, &w->key_node);
		}
		else
		{
			bucket = hash_search(store->buckets, &start, HASH_ENTER, &bfound);
			if (!bfound)
			{
				bucket->end = end;
				dlist_init(&bucket->windows);
			}
			dlist_push_tail(&bucket->windows, &w->bucket_node);
		}
		store->nwindows++;
		store->bytes += offsetof(WeirWindow, states) + store->plan->state_size + keylen;
	}
	return w;
}

/*
 * Place a record at t into the session windows of its key, merging the
 * sessions it touches; returns the window to accumulate into, or NULL if the
 * merged session would already be past its allowed lateness (a late record).
 */
WeirWindow *
weir_session_place(WeirWindowStore *store, const char *key, uint32 keylen,
				   TimestampTz t, TimestampTz watermark, int64 lateness)
{
	WeirPlan   *plan = store->plan;
	int64		gap = plan->windowing.size;
	SessionKeyHash skey = {keylen, key};
	SessionKey *sk = hash_search(store->sessions, &skey, HASH_FIND, NULL);
	List	   *touching = NIL;
	TimestampTz start = t;
	TimestampTz end = t + gap;
	WeirWindow *target = NULL;
	bool		created;
	ListCell   *lc;

	if (sk)
	{
		dlist_iter	iter;

		dlist_foreach(iter, &sk->windows)
		{
			WeirWindow *w = dlist_container(WeirWindow, key_node, iter.cur);

			if (w->hkey.start < t + gap && t < w->end)
			{
				touching = lappend(touching, w);
				start = Min(start, w->hkey.start);
				end = Max(end, w->end);
			}
		}
	}
	if (end + lateness <= watermark)
	{
		list_free(touching);
		return NULL;
	}

	/* the session that keeps its start, if one does */
	foreach(lc, touching)
	{
		WeirWindow *w = lfirst(lc);

		if (w->hkey.start == start)
			target = w;
	}
	if (target == NULL)
		target = weir_window_lookup(store, start, end, key, keylen, &created);
	foreach(lc, touching)
	{
		WeirWindow *w = lfirst(lc);

		if (w == target)
			continue;
		for (int i = 0; i < plan->naggs; i++)
			weir_agg_combine(&plan->aggs[i], target->states, w->states);
		if (w->fired)
			target->sink_dirty = true;	/* its row replaces the retracted one */
		retire(store, w, true);
	}
	list_free(touching);
	if (end > target->end)
	{
		target->end = end;
		if (end > watermark && target->fired)
			target->fired = false;	/* it will fire again, later */
	}
	target->dirty = true;
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

/*
 * Take a window out of memory.  `merged`: it became part of another session
 * window, so its own sink row (if it fired) is retracted, not written.
 */
static void
retire(WeirWindowStore *store, WeirWindow *w, bool merged)
{
	WeirRetired *r;
	MemoryContext oldcxt;

	if (store->plan->windowing.kind == WEIR_WINDOW_SESSION)
	{
		SessionKeyHash skey = {w->hkey.keylen, w->hkey.key};
		SessionKey *sk;

		dlist_delete(&w->key_node);
		sk = hash_search(store->sessions, &skey, HASH_FIND, NULL);
		if (sk && dlist_is_empty(&sk->windows))
		{
			char	   *kcopy = (char *) sk->hkey.key;

			hash_search(store->sessions, &skey, HASH_REMOVE, NULL);
			store->bytes -= sizeof(SessionKey) + w->hkey.keylen;
			pfree(kcopy);
		}
	}
	else
		dlist_delete(&w->bucket_node);

	if (merged)
		w->sink_dirty = false;
	if (w->persisted || w->sink_dirty || (merged && w->fired))
	{
		oldcxt = MemoryContextSwitchTo(store->cxt);
		r = palloc0(sizeof(WeirRetired));
		r->key = (char *) w->hkey.key;	/* ownership moves to r */
		r->keylen = w->hkey.keylen;
		r->start = w->hkey.start;
		r->end = w->end;
		r->delete_state = w->persisted;
		r->write_sink = w->sink_dirty;
		r->retract_sink = merged && w->fired;
		if (r->write_sink)
		{
			r->states = palloc(store->plan->state_size);
			memcpy(r->states, w->states, store->plan->state_size);
		}
		store->retired = lappend(store->retired, r);
		MemoryContextSwitchTo(oldcxt);
	}
	else
		pfree((char *) w->hkey.key);

	store->bytes -= offsetof(WeirWindow, states) + store->plan->state_size + w->hkey.keylen;
	store->nwindows--;
	hash_search_with_hash_value(store->windows, &w->hkey, w->hash, HASH_REMOVE, NULL);
}

/*
 * Fire the windows whose end the watermark has reached, and retire those
 * it has passed by more than the allowed lateness.  With emit_updates, open
 * windows' rows are written at every checkpoint anyway (worker.c marks
 * them); here only closing matters.  Returns the number of windows fired.
 */
int64
weir_window_fire(WeirWindowStore *store, TimestampTz watermark, int64 lateness,
				 bool emit_updates)
{
	HASH_SEQ_STATUS status;
	Bucket	   *bucket;
	List	   *emptied = NIL;
	ListCell   *lc;
	int64		fired = 0;

	if (store->plan->windowing.kind == WEIR_WINDOW_SESSION)
	{
		WeirWindow *w;
		List	   *expired = NIL;

		/* sessions end anywhere: look at each (one per open key) */
		hash_seq_init(&status, store->windows);
		while ((w = hash_seq_search(&status)) != NULL)
		{
			if (w->end > watermark)
				continue;
			if (!w->fired)
			{
				w->fired = true;
				w->sink_dirty = true;
				w->dirty = true;
				fired++;
			}
			if (w->end + lateness <= watermark)
				expired = lappend(expired, w);
		}
		foreach(lc, expired)
			retire(store, lfirst(lc), false);
		list_free(expired);
		return fired;
	}

	hash_seq_init(&status, store->buckets);
	while ((bucket = hash_seq_search(&status)) != NULL)
	{
		dlist_mutable_iter iter;
		bool		expire;

		if (bucket->end > watermark)
			continue;
		expire = bucket->end + lateness <= watermark;
		dlist_foreach_modify(iter, &bucket->windows)
		{
			WeirWindow *w = dlist_container(WeirWindow, bucket_node, iter.cur);

			if (!w->fired)
			{
				w->fired = true;
				w->sink_dirty = true;
				w->dirty = true;
				fired++;
			}
			if (expire)
				retire(store, w, false);
		}
		if (expire)
			emptied = lappend(emptied, &bucket->start);
	}
	foreach(lc, emptied)
		hash_search(store->buckets, lfirst(lc), HASH_REMOVE, NULL);
	list_free(emptied);
	return fired;
}

/* After a checkpoint committed what the retired windows still owed. */
void
weir_window_forget_retired(WeirWindowStore *store)
{
	ListCell   *lc;

	foreach(lc, store->retired)
	{
		WeirRetired *r = lfirst(lc);

		pfree(r->key);
		if (r->states)
			pfree(r->states);
		pfree(r);
	}
	list_free(store->retired);
	store->retired = NIL;
}
