/*-------------------------------------------------------------------------
 *
 * operator.h
 *	  The one shape of every operator of a pipeline (window aggregate,
 *	  deduplication, last value per key, interval join, projection): what
 *	  the worker asks of it, chosen once when the worker starts.
 *
 * An operator owns its state in the pipeline's store (window.h) and the
 * sink rows it owes since the last checkpoint.  The worker reads and
 * evaluates records, keeps positions, watermark, dead letters and late
 * records, and calls the operator:
 *
 *	apply				one record, neither dead nor filtered (slot lock held
 *						exclusively); over a change topic, with its operation
 *	expire				the watermark moved (slot lock held exclusively)
 *	collect				a checkpoint's sync phase: the sink rows owed and the
 *						state chunks that changed, into the package (takes the
 *						slot lock itself, for as short a time as it can)
 *	after_checkpoint	the checkpoint committed: what it wrote is forgotten,
 *						what waited for it goes (slot lock held exclusively)
 *	chunks_deleted		bytes of chunks the committed checkpoint deleted
 *	restore				state from the last checkpoint's chunks: entries and
 *						bytes restored; *owes_rows: the state owes the sink
 *						rows already (keys that expired since) (in a
 *						transaction; before the store is published in the
 *						pipeline slot, so no reader sees it yet)
 *	pending_sink_rows	about how many rows the next checkpoint writes
 *	held_entries		expired entries that wait for the next checkpoint
 *
 * Statistics are pending_sink_rows and held_entries, with the store's own
 * counts (entries, bytes: store.h), which the worker publishes in its
 * pipeline slot.  Live state is not a call: weir.live_state runs in another
 * backend, which has no operator, and reads the store's entries through
 * its root, as the entry layout (store.h) lets it, and decodes them with
 * the operator's state view (state_view.h, weir_operator_state_view).
 *
 * Every call runs in the worker, in the memory context the caller is in
 * unless it says otherwise; the operator keeps what outlives a call in
 * env.cxt.  Errors are ereport()ed; running out of state memory is not an
 * error but WEIR_NO_MEMORY (the store says so: store->out_of_memory).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/operator/operator.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_OPERATOR_H
#define WEIR_OPERATOR_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "base/columns.h"
#include "definition/definition.h"
#include "state/keyed.h"
#include "state/store.h"

struct WeirPackage;				/* checkpoint_package.h */

/* A record for an operator: evaluated, neither dead nor filtered */
typedef struct WeirRecord
{
	int			side;			/* 0; a join's right side: 1 */
	int32		part;			/* in its source's numbering */
	int64		position;
	TimestampTz t;				/* event time (a projection: none; a
								 * truncate: DT_NOBEGIN if it has none) */
	char		op;				/* change_op (change_topic.h): 'I' for a
								 * row of an ordinary topic */
	const char *key;			/* key image (key_image.h) */
	uint32		keylen;
	uint32		keyhash;		/* weir_key_image_hash of it */
	Datum	   *values;			/* the side's arguments or columns */
	bool	   *nulls;
	const bool *kept;			/* last value: columns that keep the sink's
								 * value (an update left them unchanged);
								 * NULL: none */
} WeirRecord;

/* What applying a record did */
typedef enum WeirApplied
{
	WEIR_APPLIED,				/* state changed, or a row is owed */
	WEIR_DROPPED,				/* changed nothing: a duplicate, an older row */
	WEIR_LATE,					/* too late for state: the worker counts it */
	WEIR_REFUSED,				/* contradicts the state (a before image of a
								 * row that is not there): a dead letter,
								 * WeirOperator.refused says why */
	WEIR_NO_MEMORY				/* state memory ran out: the worker stops */
} WeirApplied;

/* What a pipeline gives its operator, once */
typedef struct WeirOperatorEnv
{
	const char *name;			/* the pipeline's, for messages */
	WeirPlan   *plan;
	WeirStore *store;		/* the pipeline's state, in DSA */
	LWLock	   *lock;			/* the pipeline slot's: readers of the store
								 * hold it shared (shmem.h) */
	Oid			sink;			/* for dead letters of the sink */
	pg_atomic_uint64 *records_dead; /* the slot's counter */
	int64		lateness;		/* us */
	bool		emit_updates;	/* windows: a row at every checkpoint */
	bool		sink_is_topic;	/* windows: rows in order of end (a topic's
								 * readers see them so) */
	MemoryContext cxt;			/* the worker's lifetime */
} WeirOperatorEnv;

/* What a checkpoint's collect wrote, for its weir.checkpoints row */
typedef struct WeirCollected
{
	int64		bytes;			/* state chunks */
	int64		sink_rows;
	int64		state_rows;		/* entries in the chunks */
} WeirCollected;

typedef struct WeirOperator WeirOperator;

typedef struct WeirOperatorOps
{
	const char *state_noun;		/* what its entries are, plural: a log line's */

	/*
	 * Whether each sink row is written once however often checkpoints come
	 * (fired windows, records kept, pairs joined), so that checkpoints may
	 * come more often to keep up with a backlog (worker.c sink_rows_due).
	 */
	bool		rows_once;

	/*
	 * Whether its worker, rather than its checkpoint writer, is as a rule
	 * the busier process, so that a read-ahead process pays its way
	 * (weir.read_ahead = auto: pipeline/read_ahead.c).
	 */
	bool		worker_bound;

	WeirApplied (*apply) (WeirOperator *op, const WeirRecord *r, TimestampTz watermark);
	bool		(*expire) (WeirOperator *op, TimestampTz watermark);	/* true: rows owed */
	void		(*collect) (WeirOperator *op, struct WeirPackage *pkg,
							TimestampTz watermark, WeirCollected *n);
	bool		(*after_checkpoint) (WeirOperator *op); /* true: rows owed */
	void		(*chunks_deleted) (WeirOperator *op, int64 bytes);
	int64		(*restore) (WeirOperator *op, int32 pipeline_id, TimestampTz watermark,
							int64 *bytes, bool *owes_rows);
	int64		(*pending_sink_rows) (WeirOperator *op);
	int64		(*held_entries) (WeirOperator *op);
} WeirOperatorOps;

struct WeirOperator
{
	const WeirOperatorOps *ops;
	WeirOperatorEnv env;
	WeirKeyed  *keys;			/* keyed state whose entries a record's key
								 * is prefetched in; NULL: none */
	void	   *state;			/* the operator's own */

	/*
	 * How far below the watermark the event times of the rows it writes
	 * from now on can be: what readers of a topic sink are promised
	 * (topic_watermark.c).  0 but for a join, which still pairs an arriving
	 * row with partners up to its larger bound before it.
	 */
	int64		rows_behind;

	/* WEIR_REFUSED: why (a constant string, or in the current context) */
	const char *refused;
};

struct WeirStateView;			/* state_view.h */

extern Size weir_operator_entry_state(WeirPlan *plan);
extern const struct WeirStateView *weir_operator_state_view(WeirPlan *plan);
extern bool weir_operator_entry_end(WeirPlan *plan);
extern WeirOperator *weir_operator_create(const WeirOperatorEnv *env);

#endif							/* WEIR_OPERATOR_H */
