/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Open windows of a pipeline, entries of its store (store.h), and their
 *	  firing.
 *
 * Tumbling and hopping windows are aligned to the Unix epoch (like date_bin
 * with origin '1970-01-01'): a tumbling window of size S starts at a
 * multiple of S; a hopping window (size S, slide D) at a multiple of D, and
 * a record falls into every window with start <= t < start + S.  Session
 * windows (gap G) are per key: a record at t covers [t, t + G), sessions of
 * its key that overlap merge (their states combine), so a session is
 * [first event, last event + G).  With merge_touching, sessions that touch
 * (one's end is the other's start) merge too: a record exactly G after a
 * session's last event joins it, and such a session fires and closes only
 * when the watermark is past its end (weir_window_margin).  When a merge
 * moves a session's start, the old (key, start) is retired, and if its row
 * had gone to the sink that row is retracted (deleted) at the checkpoint
 * that writes the merged one.
 *
 * A window is an entry (start, key) of the store, its state the
 * aggregates' (a session's end after the key).  Firing needs to visit
 * windows by start (tumbling, hopping) or by key (session): those lists
 * are worker-local hash tables of list heads, the lists themselves linked
 * through the entries' next pointers.
 *
 * A window fires (its row is due in the sink) when the watermark reaches
 * its end, and leaves memory when the watermark passes end + allowed
 * lateness; until then a late record updates it and its row is written
 * again.  What leaves memory owing the sink something waits for the next
 * checkpoint: its last row, built as it leaves (retired_rows), or a merged
 * session's retraction (the "retired" list).
 *
 * Runs in the worker, with the pipeline slot's lock held exclusively.
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
#include "definition/key_image.h"
#include "sink/sink_rows.h"
#include "state/window.h"

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

static void retire(WeirWindows *ws, dsa_pointer dp, bool merged);

TimestampTz
weir_window_end(WeirStoreRoot *root, WeirPlan *plan, WeirEntry *w)
{
	return root->session ? *weir_entry_end(w) : w->start + plan->windowing.size;
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

/* The windows of `plan` over `store`, the worker's own. */
WeirWindows *
weir_windows_create(WeirStore *store, WeirPlan *plan, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "weir windows",
											  ALLOCSET_DEFAULT_SIZES);
	WeirWindows *ws = MemoryContextAllocZero(cxt, sizeof(WeirWindows));
	HASHCTL		ctl;

	ws->store = store;
	ws->plan = plan;
	ws->cxt = cxt;
	ws->retired_cxt = AllocSetContextCreate(cxt, "weir retired windows",
											ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(TimestampTz);
	ctl.entrysize = sizeof(Bucket);
	ctl.hcxt = cxt;
	ws->buckets = hash_create("weir window buckets", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	ctl.keysize = sizeof(SessionKeyHash);
	ctl.entrysize = sizeof(SessionKey);
	ctl.hash = session_hash;
	ctl.match = session_match;
	ctl.hcxt = cxt;
	ws->sessions = hash_create("weir session keys", 1024, &ctl,
							   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	return ws;
}

/*
 * The window of a key starting at `start`, created (zeroed states) if
 * absent; NULL if memory ran out (ws->store->out_of_memory is then set).
 */
WeirEntry *
weir_window_lookup(WeirWindows *ws, TimestampTz start, TimestampTz end,
				   const char *key, uint32 keylen, bool *created)
{
	return weir_window_lookup_hashed(ws, start, end, key, keylen,
									 weir_key_image_hash(key, keylen), created);
}

/*
 * weir_window_lookup with the key's hash (weir_key_image_hash) given: a
 * record falls in several hopping windows, which need it once.
 */
WeirEntry *
weir_window_lookup_hashed(WeirWindows *ws, TimestampTz start, TimestampTz end,
						  const char *key, uint32 keylen, uint32 keyhash,
						  bool *created)
{
	WeirStoreRoot *root = ws->store->root;
	dsa_pointer dp;
	WeirEntry *w;
	bool		bfound;

	dp = weir_store_find(ws->store, start, key, keylen, keyhash, true, created);
	if (!DsaPointerIsValid(dp))
		return NULL;
	w = weir_entry_at(ws->store, dp);
	if (!*created)
		return w;

	if (root->session)
	{
		SessionKeyHash skey = {keylen, key};
		SessionKey *sk = hash_search(ws->sessions, &skey, HASH_ENTER, &bfound);

		*weir_entry_end(w) = end;
		if (!bfound)
		{
			char	   *kcopy = MemoryContextAlloc(ws->cxt, keylen);

			memcpy(kcopy, key, keylen);
			sk->hkey.key = kcopy;
			sk->head = InvalidDsaPointer;
		}
		weir_entry_set_next(w, sk->head);
		sk->head = dp;
	}
	else
	{
		Bucket	   *bucket = hash_search(ws->buckets, &start, HASH_ENTER, &bfound);

		if (!bfound)
		{
			bucket->end = end;
			bucket->head = InvalidDsaPointer;
		}
		weir_entry_set_next(w, bucket->head);
		bucket->head = dp;
	}
	return w;
}

/* A window that left memory owes the next checkpoint its retraction. */
static void
add_retired(WeirWindows *ws, WeirEntry *w, bool persisted, bool retract_sink)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(ws->retired_cxt);
	WeirRetired *r = palloc(sizeof(WeirRetired));
	uint32		keylen = weir_entry_keylen(w);

	r->key = palloc(keylen);
	memcpy(r->key, weir_entry_key(w), keylen);
	r->keylen = keylen;
	r->start = w->start;
	r->end = weir_window_end(ws->store->root, ws->plan, w);
	r->persisted = persisted;
	r->retract_sink = retract_sink;
	ws->retired = lappend(ws->retired, r);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Take a window out of memory.  `merged`: it became part of another session
 * window, so its own sink row (if it fired) is retracted, not written.  The
 * caller has unlinked it from its bucket or key list.
 */
static void
retire(WeirWindows *ws, dsa_pointer dp, bool merged)
{
	WeirEntry *w = weir_entry_at(ws->store, dp);
	WeirStoreRoot *root = ws->store->root;
	/* a row in the sink (written, or due): a merge must retract it */
	uint32		flags = weir_entry_flags(w);
	bool		fired = (flags & (WEIR_ENTRY_FIRED | WEIR_ENTRY_EMITTED)) != 0;
	bool		persisted = (flags & WEIR_ENTRY_PERSISTED) != 0;
	bool		sink_dirty = !merged && (flags & WEIR_ENTRY_SINK_DIRTY) != 0;

	/*
	 * A closed window owes nothing but its last sink row (a restore skips
	 * closed windows): built now, so that nothing else of it (generic
	 * states can be large) outlives it until the checkpoint.  A merged one,
	 * not closed, must hide its versions in earlier chunks (window_chunks.c)
	 * and retract its row.  Over a change topic, a window whose rows all
	 * went is no row: its row, if written, is retracted
	 * (window_aggregate.c).
	 */
	if (sink_dirty && ws->plan->retract &&
		*(int64 *) (weir_entry_states(root, w) + ws->plan->rows_offset) == 0)
	{
		if (flags & WEIR_ENTRY_EMITTED)
			add_retired(ws, w, false, true);
	}
	else if (sink_dirty)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ws->retired_cxt);
		int			emitted = (flags & WEIR_ENTRY_EMITTED) != 0;

		if (ws->retired_rows[emitted] == NULL)
		{
			ws->retired_rows[emitted] = palloc(sizeof(WeirSinkRows));
			weir_sink_rows_init(ws->retired_rows[emitted], ws->plan);
		}
		weir_sink_rows_add(ws->retired_rows[emitted], weir_entry_key(w), w->start,
						   weir_window_end(root, ws->plan, w),
						   weir_entry_states(root, w));
		MemoryContextSwitchTo(oldcxt);
	}
	else if (merged && (fired || persisted))
		add_retired(ws, w, persisted, fired);
	if (ws->plan->has_generic)
		weir_agg_free_generic(ws->plan, weir_entry_states(root, w));
	weir_store_remove(ws->store, dp);
}

/* Unlink a session window from its key's list; drop the key when empty. */
static void
session_unlink(WeirWindows *ws, dsa_pointer dp)
{
	WeirEntry *w = weir_entry_at(ws->store, dp);
	SessionKeyHash skey = {weir_entry_keylen(w), weir_entry_key(w)};
	SessionKey *sk = hash_search(ws->sessions, &skey, HASH_FIND, NULL);

	Assert(sk != NULL);
	if (sk->head == dp)
		sk->head = weir_entry_next(w);
	else
	{
		WeirEntry *prev = weir_entry_at(ws->store, sk->head);

		while (weir_entry_next(prev) != dp)
			prev = weir_entry_at(ws->store, weir_entry_next(prev));
		weir_entry_set_next(prev, weir_entry_next(w));
	}
	if (!DsaPointerIsValid(sk->head))
	{
		char	   *kcopy = (char *) sk->hkey.key;

		hash_search(ws->sessions, &skey, HASH_REMOVE, NULL);
		pfree(kcopy);
	}
}

/*
 * Place a record at t into the session windows of its key, merging the
 * sessions it overlaps (or, with merge_touching, touches); returns the
 * window to accumulate into, or NULL if the merged session would already
 * be past its allowed lateness (a late record) or memory ran out
 * (ws->store->out_of_memory).
 *
 * The sessions of a key never overlap (nor, with merge_touching, touch)
 * each other, and each spans at least a gap, so a record's [t, t + gap)
 * meets at most two of them.
 */
WeirEntry *
weir_session_place(WeirWindows *ws, const char *key, uint32 keylen,
				   TimestampTz t, TimestampTz watermark, int64 lateness)
{
	WeirPlan   *plan = ws->plan;
	WeirStoreRoot *root = ws->store->root;
	int64		gap = plan->windowing.size;
	bool		merge_touching = plan->windowing.merge_touching;
	SessionKeyHash skey = {keylen, key};
	SessionKey *sk = hash_search(ws->sessions, &skey, HASH_FIND, NULL);
	dsa_pointer touching[64];
	int			ntouching = 0;
	TimestampTz start = t;
	TimestampTz end = t + gap;
	WeirEntry *target = NULL;
	dsa_pointer target_dp = InvalidDsaPointer;
	bool		created;

	for (dsa_pointer dp = sk ? sk->head : InvalidDsaPointer;
		 DsaPointerIsValid(dp); dp = weir_entry_next(weir_entry_at(ws->store, dp)))
	{
		WeirEntry *w = weir_entry_at(ws->store, dp);
		TimestampTz wend = *weir_entry_end(w);
		bool		meets = merge_touching ?
			w->start <= t + gap && t <= wend :
			w->start < t + gap && t < wend;

		if (meets && ntouching < lengthof(touching))
		{
			touching[ntouching++] = dp;
			start = Min(start, w->start);
			end = Max(end, wend);
		}
	}
	if (end + weir_window_margin(&plan->windowing, lateness) <= watermark)
		return NULL;

	/* the session that keeps its start, if one does */
	for (int i = 0; i < ntouching; i++)
		if (weir_entry_at(ws->store, touching[i])->start == start)
			target_dp = touching[i];
	if (DsaPointerIsValid(target_dp))
		target = weir_entry_at(ws->store, target_dp);
	else
	{
		target = weir_window_lookup(ws, start, end, key, keylen, &created);
		if (target == NULL)
			return NULL;
	}
	for (int i = 0; i < ntouching; i++)
	{
		WeirEntry *w;

		if (touching[i] == target_dp)
			continue;
		w = weir_entry_at(ws->store, touching[i]);
		for (int a = 0; a < plan->naggs; a++)
			weir_agg_combine(&plan->aggs[a], weir_entry_states(root, target),
							 weir_entry_states(root, w));
		if (weir_entry_flags(w) & (WEIR_ENTRY_FIRED | WEIR_ENTRY_EMITTED))
			weir_entry_set_flags(target, WEIR_ENTRY_SINK_DIRTY);	/* replaces the retracted row */
		session_unlink(ws, touching[i]);
		retire(ws, touching[i], true);
	}
	if (end > *weir_entry_end(target))
	{
		*weir_entry_end(target) = end;
		if (end + weir_window_margin(&plan->windowing, 0) > watermark)
			weir_entry_clear_flags(target, WEIR_ENTRY_FIRED);	/* it will fire again, later */
	}
	weir_entry_set_flags(target, WEIR_ENTRY_DIRTY);
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
fire_one(WeirEntry *w)
{
	if (weir_entry_flags(w) & WEIR_ENTRY_FIRED)
		return false;
	weir_entry_set_flags(w, WEIR_ENTRY_FIRED | WEIR_ENTRY_SINK_DIRTY | WEIR_ENTRY_DIRTY);
	return true;
}

/*
 * Fire the windows whose end the watermark has reached, and retire those
 * it has passed by more than the allowed lateness.  Returns the number of
 * windows fired.
 */
int64
weir_window_fire(WeirWindows *ws, TimestampTz watermark, int64 lateness,
				 bool emit_updates)
{
	HASH_SEQ_STATUS status;
	List	   *emptied = NIL;
	ListCell   *lc;
	int64		fired = 0;

	if (ws->store->root->session)
	{
		WeirStoreIter iter;
		WeirEntry *w;
		List	   *expired = NIL;
		int64		fire_margin = weir_window_margin(&ws->plan->windowing, 0);
		int64		close_margin = weir_window_margin(&ws->plan->windowing, lateness);

		/* sessions end anywhere: look at each (one per open key) */
		weir_store_iter_init(&iter, ws->store);
		while ((w = weir_store_iter_next(&iter)) != NULL)
		{
			TimestampTz end = *weir_entry_end(w);

			if (end + fire_margin > watermark)
				continue;
			if (fire_one(w))
				fired++;
			if (end + close_margin <= watermark)
				expired = lappend(expired, (void *) iter.current);
		}
		foreach(lc, expired)
		{
			dsa_pointer dp = (dsa_pointer) lfirst(lc);

			session_unlink(ws, dp);
			retire(ws, dp, false);
		}
		list_free(expired);
		weir_store_fit(ws->store);
		return fired;
	}

	{
		Bucket	   *bucket;

		hash_seq_init(&status, ws->buckets);
		while ((bucket = hash_seq_search(&status)) != NULL)
		{
			bool		expire;
			dsa_pointer dp;

			if (bucket->end > watermark)
				continue;
			expire = bucket->end + lateness <= watermark;
			for (dp = bucket->head; DsaPointerIsValid(dp);)
			{
				WeirEntry *w = weir_entry_at(ws->store, dp);
				dsa_pointer next = weir_entry_next(w);

				if (fire_one(w))
					fired++;
				if (expire)
					retire(ws, dp, false);
				dp = next;
			}
			if (expire)
				emptied = lappend(emptied, &bucket->start);
		}
		foreach(lc, emptied)
			hash_search(ws->buckets, lfirst(lc), HASH_REMOVE, NULL);
		/*
		 * Caught up, look whether or not a window closed in this round: the
		 * backlog's last close came while it was being read.
		 */
		if (!ws->store->backlog || emptied != NIL)
			weir_store_fit(ws->store);
		list_free(emptied);
	}
	return fired;
}

/* Whether windows that left memory owe the next checkpoint something. */
bool
weir_window_owes_retired(WeirWindows *ws)
{
	return ws->retired != NIL || ws->retired_rows[0] || ws->retired_rows[1];
}

/* After a checkpoint committed what the retired windows still owed. */
void
weir_window_forget_retired(WeirWindows *ws)
{
	ws->retired = NIL;
	ws->retired_rows[0] = ws->retired_rows[1] = NULL;
	MemoryContextReset(ws->retired_cxt);
}