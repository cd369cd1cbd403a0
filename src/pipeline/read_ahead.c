/*-------------------------------------------------------------------------
 *
 * read_ahead.c
 *	  A pipeline's read-ahead process: a second process that reads and
 *	  evaluates the worker's sources while the worker applies what it read.
 *
 * Reading topics (index, heap, deforming) and evaluating the user's
 * expressions is about a quarter of a join worker's time, while the second
 * core is mostly idle.  When its pipeline reads ahead (weir.read_ahead:
 * reads_ahead), a worker starts this process once it has restored,
 * handing it the positions it restored.  The
 * process reads rounds exactly as the worker would (weir_reading_round:
 * the same bounds, snapshot, batches, subtransactions, dead letters) and
 * sends each evaluated partition group over a shm_mq; the worker applies
 * each group as it comes, as if it had read it, and moves its positions
 * past it.  A round ends with a message saying whether it caught up, the
 * lag, and up to which weir.checkpoint() ticket the requests had been made
 * before its bounds were taken: the worker serves those, as before, only
 * with a checkpoint after the end of a round that caught up.
 *
 * Exactly-once does not change: state, positions and checkpoints are the
 * worker's alone, and what was read ahead but not applied is read again by
 * whoever reads next.  The process keeps nothing, so whenever it goes (an
 * error, a stop to give its background worker slot back) the worker reads
 * itself from its own positions on.  A worker that exits detaches from the
 * queue; the process exits at its next send.
 *
 * Messages (native layout: both ends are the same build): a group is a
 * GroupHead, a GroupPart per partition, then each partition's rows in
 * order.  A row is a RowHead and its key image; then, for a processed row,
 * its arguments' null flags, their kept flags if it has some (last value
 * over a change topic), and values (by value: the Datum; by reference:
 * a length and the bytes), for a dead row its error and record as C
 * strings; each part aligned.  The end of a round is a RoundEnd.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/read_ahead.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "base/clock.h"
#include "base/columns.h"
#include "base/process_memory.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/transaction.h"
#include "pipeline/read_ahead.h"

/* The queue: a few rounds of a join's groups */
#define READ_AHEAD_QUEUE_BYTES (8 * 1024 * 1024)
/* an idle process looks for new rows this often, at least */
#define READ_AHEAD_IDLE_MS 1000

typedef struct ReadAheadShared
{
	slock_t		mutex;
	int32		pipeline_id;
	Oid			dboid;
	uint64		worker_generation;	/* the worker it reads for (shmem.h) */
	Latch	   *reader_latch;	/* the process's, once attached; under mutex */
	bool		wake;			/* a round is wanted at once; under mutex */
	int32		partitions;
	int64		positions[FLEXIBLE_ARRAY_MEMBER];	/* where it starts */
} ReadAheadShared;

#define SHARED_BYTES(partitions) \
	MAXALIGN(offsetof(ReadAheadShared, positions) + sizeof(int64) * (partitions))

struct WeirReadAhead
{
	WeirReading *rd;			/* the worker's: groups taken go into its batch */
	WeirPipelineSlot *slot;		/* the worker's */
	WeirGroupDone apply;		/* what becomes of a group taken */
	void	   *apply_arg;
	dsm_segment *seg;
	ReadAheadShared *shared;
	shm_mq_handle *mqh;
	BackgroundWorkerHandle *handle;
	int64		woken_for;		/* the ticket the process was last woken for */
	bool		caught_up;		/* as of the last round's end */
	int64		lag;
	int64		tickets;
	char	   *aligned;		/* a message copied to be aligned */
	Size		aligned_size;
};

typedef enum MessageType
{
	MSG_GROUP = 1,
	MSG_ROUND_END
} MessageType;

typedef struct GroupHead
{
	int32		type;			/* MSG_GROUP */
	int32		side;
	int32		first;
	int32		n;
} GroupHead;

typedef struct GroupPart
{
	int64		max_position;
	int32		nrows;
	int32		pad;
} GroupPart;

typedef struct RowHead
{
	int64		position;
	TimestampTz t;
	uint32		keyhash;
	int32		keylen;
	int32		kind;			/* WeirRowKind */
	char		op;				/* WeirEvalRow.op */
	bool		kept;			/* its kept flags follow its null flags */
	int16		pad;
} RowHead;

typedef struct RoundEnd
{
	int32		type;			/* MSG_ROUND_END */
	bool		caught_up;
	int64		got;
	int64		lag;
	int64		tickets;
} RoundEnd;

/* --- the read-ahead process ----------------------------------------------- */

typedef struct Sender
{
	shm_mq_handle *mqh;
	StringInfoData buf;
	Size	   *sizes;			/* [nargs]: a row's by-reference values' */
} Sender;

static void
send_or_exit(shm_mq_handle *mqh, const void *data, Size len)
{
	/* the worker exited: so does its read-ahead process */
	if (shm_mq_send(mqh, len, data, false, true) != SHM_MQ_SUCCESS)
		proc_exit(0);
}

/*
 * A row's arguments as sent: by-reference values flattened (an expanded
 * object, an expression's result) and their sizes; returns the bytes the
 * row's values take.
 */
static Size
value_sizes(WeirSide *side, Datum *values, bool *nulls, Size *sizes)
{
	Size		bytes = MAXALIGN(side->plan->nargs);

	for (int i = 0; i < side->plan->nargs; i++)
	{
		int16		typlen = side->arg_copy_len[i];	/* by reference; 0: by value */

		if (nulls[i])
			continue;
		if (typlen == 0)
		{
			bytes += sizeof(Datum);
			continue;
		}
		if (typlen == -1 && VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(values[i])))
			values[i] = datumCopy(values[i], false, typlen);
		sizes[i] = weir_datum_size(values[i], typlen);
		bytes += sizeof(uint64) + MAXALIGN(sizes[i]);
	}
	return bytes;
}

/* Append one evaluated row, all of it reserved at once. */
static void
put_row(StringInfo buf, WeirReading *rd, WeirEvalRow *r, Size *sizes)
{
	WeirSide   *side = rd->side;
	Datum	   *values = &rd->batch_values[r->args * rd->batch_stride];
	bool	   *nulls = &rd->batch_nulls[r->args * rd->batch_stride];
	Size		bytes = sizeof(RowHead) + MAXALIGN(r->keylen);
	size_t		elen = 0;
	size_t		rlen = 0;
	char	   *p;
	char	   *start PG_USED_FOR_ASSERTS_ONLY;

	if (r->kind == WEIR_ROW_OK)
		bytes += value_sizes(side, values, nulls, sizes) +
			(r->kept ? MAXALIGN(side->plan->nargs) : 0);
	else if (r->kind == WEIR_ROW_DEAD)
	{
		elen = strlen(r->error) + 1;
		rlen = strlen(r->record) + 1;
		bytes += MAXALIGN(elen + rlen);
	}
	/* the padding after each part is left as it is: the worker never reads it */
	enlargeStringInfo(buf, bytes);
	start = p = buf->data + buf->len;
	{
		RowHead		rh = {r->position, r->t, r->keyhash, r->keylen, (int32) r->kind,
		r->op, r->kept, 0};

		memcpy(p, &rh, sizeof(rh));
		p += sizeof(rh);
	}
	memcpy(p, rd->batch_keys.data + r->keyoff, r->keylen);
	p += MAXALIGN(r->keylen);
	if (r->kind == WEIR_ROW_OK)
	{
		memcpy(p, nulls, side->plan->nargs);
		p += MAXALIGN(side->plan->nargs);
		if (r->kept)
		{
			memcpy(p, &rd->batch_kept[r->args * rd->batch_stride], side->plan->nargs);
			p += MAXALIGN(side->plan->nargs);
		}
		for (int i = 0; i < side->plan->nargs; i++)
		{
			uint64		len;

			if (nulls[i])
				continue;
			if (side->arg_copy_len[i] == 0)
			{
				memcpy(p, &values[i], sizeof(Datum));
				p += sizeof(Datum);
				continue;
			}
			len = sizes[i];
			memcpy(p, &len, sizeof(len));
			p += sizeof(len);
			memcpy(p, DatumGetPointer(values[i]), len);
			p += MAXALIGN(len);
		}
	}
	else if (r->kind == WEIR_ROW_DEAD)
	{
		memcpy(p, r->error, elen);
		memcpy(p + elen, r->record, rlen);
		p += MAXALIGN(elen + rlen);
	}
	Assert(p - start == bytes);
	buf->len += bytes;
	buf->data[buf->len] = '\0';
}

/*
 * weir_reading_round's `done`: send the group, a partition a message
 * (the worker starts applying the first while the next is written), and
 * move on past it.
 */
static void
send_group(WeirReading *rd, void *arg)
{
	Sender	   *sender = arg;
	StringInfo	buf = &sender->buf;
	WeirSide   *side = rd->side;

	for (int g = 0; g < rd->ngroup; g++)
	{
		GroupHead	head = {MSG_GROUP, side == &rd->sides[0] ? 0 : 1, rd->group_first + g, 1};
		GroupPart	part = {rd->ranges[g].max_position, rd->group_nbatch[g], 0};

		resetStringInfo(buf);
		appendBinaryStringInfo(buf, (char *) &head, sizeof(head));
		appendBinaryStringInfo(buf, (char *) &part, sizeof(part));
		for (int b = 0; b < rd->group_nbatch[g]; b++)
			put_row(buf, rd, &rd->batch[g * WEIR_BATCH_ROWS + b], sender->sizes);
		send_or_exit(sender->mqh, buf->data, buf->len);
		rd->pos[side->first + rd->group_first + g] = rd->ranges[g].max_position;
	}
}

/*
 * Caught up: wait idle_ms for new rows, or less if the worker asks for a
 * round (a checkpoint was asked for).  The latch alone does not say so:
 * the worker sets it each time it takes messages from the queue.
 */
static void
idle_wait(ReadAheadShared *shared, long idle_ms)
{
	TimestampTz deadline = weir_clock_now() + idle_ms * 1000;

	for (;;)
	{
		bool		wake;
		long		left = (deadline - weir_clock_now()) / 1000;

		SpinLockAcquire(&shared->mutex);
		wake = shared->wake;
		shared->wake = false;
		SpinLockRelease(&shared->mutex);
		if (wake || left <= 0)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

void
weir_read_ahead_main(Datum main_arg)
{
	dsm_segment *seg;
	ReadAheadShared *shared;
	shm_mq	   *mq;
	WeirReading *rd;
	WeirPipelineSlot *slot;
	Sender		sender;
	long		idle_ms;
	int64		interval;		/* us: the checkpoint interval */
	TimestampTz idle_since = 0; /* no rows read since; 0 while reading */
	bool		memory_released = false;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		proc_exit(0);			/* its worker is gone already */
	shared = dsm_segment_address(seg);
	BackgroundWorkerInitializeConnectionByOid(shared->dboid, InvalidOid, 0);
	/* batches come and go by the megabyte: their memory is kept, as the worker's */
	weir_memory_keep_freed();
	mq = (shm_mq *) ((char *) shared + SHARED_BYTES(shared->partitions));
	shm_mq_set_sender(mq, MyProc);
	sender.mqh = shm_mq_attach(mq, seg, NULL);

	rd = palloc0(sizeof(WeirReading));
	weir_reading_setup(rd, shared->pipeline_id,
					   AllocSetContextCreate(TopMemoryContext, "weir read-ahead",
											 ALLOCSET_DEFAULT_SIZES));
	if (rd->partitions != shared->partitions)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the sources of pipeline \"%s\" changed under its read-ahead process",
						rd->row.name)));
	memcpy(rd->pos, shared->positions, sizeof(int64) * rd->partitions);
	slot = weir_shmem_pipeline(shared->pipeline_id, false);
	if (slot == NULL)
		proc_exit(0);			/* the worker gave its slot back: gone */
	SpinLockAcquire(&shared->mutex);
	shared->reader_latch = &MyProc->procLatch;
	SpinLockRelease(&shared->mutex);
	initStringInfo(&sender.buf);
	sender.sizes = palloc0(sizeof(Size) * Max(rd->batch_stride, 1));
	interval = weir_interval_usecs(&rd->row.checkpoint_interval, "checkpoint_interval");
	idle_ms = Max(Min(READ_AHEAD_IDLE_MS, interval / 1000), 1);

	for (;;)
	{
		RoundEnd	end = {MSG_ROUND_END, false, 0, 0, 0};
		MemoryContext oldcxt = CurrentMemoryContext;
		uint64		generation;

		CHECK_FOR_INTERRUPTS();
		/* requests made before this round's bounds are covered by it */
		SpinLockAcquire(&slot->mutex);
		end.tickets = slot->checkpoint_requested;
		generation = slot->generation;
		SpinLockRelease(&slot->mutex);
		if (generation != shared->worker_generation)
			proc_exit(0);		/* its worker is gone (its pipeline may be) */
		PG_TRY();
		{
			weir_transaction_begin();
			pgstat_report_activity(STATE_RUNNING, "weir: reading ahead");
			end.got = weir_reading_round(rd, weir_clock_now(), &end.lag, &end.caught_up,
										 send_group, &sender);
			weir_transaction_end();
		}
		PG_CATCH();
		{
			/*
			 * A worker that exited meanwhile (a dropped pipeline: its topic
			 * may be gone too) leaves nothing to report.  Otherwise the
			 * error is logged, and the worker, reading itself, meets it.
			 */
			SpinLockAcquire(&slot->mutex);
			generation = slot->generation;
			SpinLockRelease(&slot->mutex);
			if (generation == shared->worker_generation)
				PG_RE_THROW();
			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(oldcxt);
			FlushErrorState();
			AbortOutOfAnyTransaction();
			proc_exit(0);
		}
		PG_END_TRY();
		pgstat_report_activity(STATE_IDLE, NULL);
		send_or_exit(sender.mqh, &end, sizeof(end));
		if (end.got > 0)
		{
			idle_since = 0;
			memory_released = false;
			continue;
		}
		/* memory kept for the next busy spell goes back when idle a while, as the worker's */
		if (idle_since == 0)
			idle_since = weir_clock_now();
		else if (!memory_released && weir_clock_now() - idle_since >= interval)
		{
			weir_memory_release_freed();
			memory_released = true;
		}
		idle_wait(shared, idle_ms);
	}
}

/* --- the worker's end ---------------------------------------------------- */

static void
terminate_at_exit(int code, Datum arg)
{
	TerminateBackgroundWorker((BackgroundWorkerHandle *) DatumGetPointer(arg));
}

/*
 * Whether a pipeline reads ahead (weir.read_ahead).  auto: when its
 * operator's worker is as a rule the busier process (the keyed operators:
 * operator.h worker_bound); not window aggregates, whose checkpoint writer
 * is (on 2 cores the read-ahead process and the writer would share the
 * second core), nor projections (nothing to apply: their writer does the
 * work).  bench/README.md has the figures.
 */
static bool
reads_ahead(bool worker_bound)
{
	if (weir_read_ahead == WEIR_READ_AHEAD_AUTO)
		return worker_bound;
	return weir_read_ahead == WEIR_READ_AHEAD_ON;
}

/*
 * Start the pipeline's read-ahead process, from the worker's positions.
 * NULL when read-ahead is off (weir.read_ahead) or no process can be
 * started (no background worker slot to spare beyond those of the launcher
 * and of the workers of the `pipelines` enabled pipelines): the worker then
 * reads itself.  Allocates in the worker's context; needs no transaction.
 */
WeirReadAhead *
weir_read_ahead_start(WeirReading *rd, WeirPipelineSlot *slot, int pipelines,
					  bool worker_bound, WeirGroupDone apply, void *apply_arg)
{
	MemoryContext oldcxt;
	WeirReadAhead *ra;
	Size		shared_bytes = SHARED_BYTES(rd->partitions);
	shm_mq	   *mq;
	pid_t		pid;
	bool		registered;

	if (!reads_ahead(worker_bound))
		return NULL;
	if (!weir_shmem_reserve_helper(&slot->has_reader, pipelines))
	{
		ereport(LOG,
				(errmsg("weir pipeline \"%s\" reads its sources itself: no background worker slot to spare for a read-ahead process",
						rd->row.name),
				 errhint("Raise max_worker_processes: with weir.read_ahead a running pipeline takes three background workers.")));
		return NULL;
	}
	oldcxt = MemoryContextSwitchTo(rd->cxt);
	ra = palloc0(sizeof(WeirReadAhead));
	ra->rd = rd;
	ra->slot = slot;
	ra->apply = apply;
	ra->apply_arg = apply_arg;
	ra->seg = dsm_create(shared_bytes + READ_AHEAD_QUEUE_BYTES, 0);
	dsm_pin_mapping(ra->seg);
	ra->shared = dsm_segment_address(ra->seg);
	memset(ra->shared, 0, shared_bytes);
	SpinLockInit(&ra->shared->mutex);
	ra->shared->pipeline_id = rd->row.id;
	ra->shared->dboid = MyDatabaseId;
	ra->shared->partitions = rd->partitions;
	ra->shared->worker_generation = weir_shmem_pipeline_generation(slot);
	memcpy(ra->shared->positions, rd->pos, sizeof(int64) * rd->partitions);
	mq = shm_mq_create((char *) ra->shared + shared_bytes, READ_AHEAD_QUEUE_BYTES);
	shm_mq_set_receiver(mq, MyProc);

	registered = weir_shmem_register_helper("weir_read_ahead_main", "weir read-ahead",
											rd->row.name, ra->seg, &ra->handle);
	/*
	 * It goes with its worker, however the worker exits, even while it
	 * waits for it to start (a process whose worker never attached the
	 * queue would wait for it, holding a background worker slot).
	 */
	if (registered)
		before_shmem_exit(terminate_at_exit, PointerGetDatum(ra->handle));
	if (!registered || WaitForBackgroundWorkerStartup(ra->handle, &pid) != BGWH_STARTED)
	{
		if (registered)
		{
			cancel_before_shmem_exit(terminate_at_exit, PointerGetDatum(ra->handle));
			TerminateBackgroundWorker(ra->handle);
		}
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("weir pipeline \"%s\" could not start its read-ahead process; its worker reads itself",
						rd->row.name),
				 errhint("Raise max_worker_processes: with weir.read_ahead a running pipeline takes three background workers.")));
		dsm_detach(ra->seg);
		weir_shmem_release_helper(&slot->has_reader);
		pfree(ra);
		MemoryContextSwitchTo(oldcxt);
		return NULL;
	}
	/* a process that exits before it attaches detaches the queue */
	ra->mqh = shm_mq_attach(mq, ra->seg, ra->handle);
	/* weir.pipelines shows it */
	SpinLockAcquire(&slot->mutex);
	slot->reader_pid = pid;
	SpinLockRelease(&slot->mutex);
	MemoryContextSwitchTo(oldcxt);
	return ra;
}

/* Let the process go: the worker reads itself from its positions on. */
void
weir_read_ahead_stop(WeirReadAhead *ra, const char *why)
{
	WeirPipelineSlot *slot = ra->slot;

	cancel_before_shmem_exit(terminate_at_exit, PointerGetDatum(ra->handle));
	TerminateBackgroundWorker(ra->handle);
	shm_mq_detach(ra->mqh);
	dsm_detach(ra->seg);
	weir_shmem_release_helper(&slot->has_reader);
	SpinLockAcquire(&slot->mutex);
	slot->reader_pid = 0;
	SpinLockRelease(&slot->mutex);
	ereport(LOG,
			(errmsg("weir pipeline \"%s\" stopped its read-ahead process %s; its worker reads itself",
					ra->rd->row.name, why)));
	if (ra->aligned)
		pfree(ra->aligned);
	pfree(ra);
}

static const char *
align_pointer(const char *base, const char *p)
{
	return base + MAXALIGN(p - base);
}

/* A group's rows into the worker's batch, as if it had read them itself. */
static int64
take_group(WeirReadAhead *ra, const char *data, Size len, TimestampTz now)
{
	WeirReading *rd = ra->rd;
	const char *p = data;
	GroupHead	head;
	int64		rows = 0;

	memcpy(&head, p, sizeof(head));
	p += sizeof(head);
	rd->side = &rd->sides[head.side];
	rd->group_first = head.first;
	rd->ngroup = head.n;
	resetStringInfo(&rd->batch_keys);
	MemoryContextReset(rd->batch_cxt);
	for (int g = 0; g < head.n; g++)
	{
		GroupPart	part;

		memcpy(&part, p, sizeof(part));
		p += sizeof(part);
		rd->ranges[g].part = head.first + g;
		rd->ranges[g].max_position = part.max_position;
		rd->group_nbatch[g] = part.nrows;
		rows += part.nrows;
	}
	for (int g = 0; g < head.n; g++)
		for (int b = 0; b < rd->group_nbatch[g]; b++)
		{
			int			index = g * WEIR_BATCH_ROWS + b;
			WeirEvalRow *r = &rd->batch[index];
			RowHead		rh;

			memcpy(&rh, p, sizeof(rh));
			p += sizeof(rh);
			r->position = rh.position;
			r->t = rh.t;
			r->keyhash = rh.keyhash;
			r->keylen = rh.keylen;
			r->kind = (WeirRowKind) rh.kind;
			r->op = rh.op;
			r->kept = rh.kept;
			r->args = index;
			r->keyoff = rd->batch_keys.len;
			/* a by-value key's image is one Datum: a constant-size copy */
			if (rh.keylen == sizeof(Datum))
				memcpy(weir_append_space(&rd->batch_keys, sizeof(Datum)), p, sizeof(Datum));
			else
				memcpy(weir_append_space(&rd->batch_keys, rh.keylen), p, rh.keylen);
			p = align_pointer(data, p + rh.keylen);
			if (r->kind == WEIR_ROW_OK)
			{
				int			nargs = rd->side->plan->nargs;
				Datum	   *values = &rd->batch_values[index * rd->batch_stride];
				bool	   *nulls = &rd->batch_nulls[index * rd->batch_stride];

				for (int i = 0; i < nargs; i++)
					nulls[i] = p[i];
				p = align_pointer(data, p + nargs);
				if (r->kept)
				{
					memcpy(&rd->batch_kept[index * rd->batch_stride], p, nargs);
					p = align_pointer(data, p + nargs);
				}
				for (int i = 0; i < nargs; i++)
				{
					uint64		vlen;

					if (nulls[i])
						continue;
					if (rd->side->arg_copy_len[i] == 0)
					{
						memcpy(&values[i], p, sizeof(Datum));
						p += sizeof(Datum);
						continue;
					}
					/* by reference: the message lives until the next receive */
					memcpy(&vlen, p, sizeof(vlen));
					p += sizeof(vlen);
					values[i] = PointerGetDatum(p);
					p = align_pointer(data, p + vlen);
				}
			}
			else if (r->kind == WEIR_ROW_DEAD)
			{
				r->error = (char *) p;
				p += strlen(p) + 1;
				r->record = (char *) p;
				p = align_pointer(data, p + strlen(p) + 1);
			}
		}
	if (p != data + len)
		elog(ERROR, "read-ahead message of %zu bytes has %zu", len, (Size) (p - data));
	ra->apply(rd, ra->apply_arg);
	for (int g = 0; g < head.n; g++)
		if (rd->group_nbatch[g] > 0)
			rd->last_data_at[rd->side->first + head.first + g] = now;
	return rows;
}

/*
 * The worker's round with a read-ahead process: apply the groups it sends
 * until its round's end (round->complete), or until nothing came while
 * the worker waited once (its latch was set for something else, or a
 * checkpoint may be due: run() looks, and calls again).  It does not wait
 * when a checkpoint can serve tickets at once (none in flight: in_flight).  Returns the rows
 * applied.  A round that is not complete did not catch up and serves no
 * tickets, unless nothing came at all: then what the last round's end said
 * (caught up, and the tickets it covers) holds.
 */
int64
weir_read_ahead_round(WeirReadAhead *ra, TimestampTz now, TimestampTz next_checkpoint,
					  int64 served, bool in_flight, WeirReadAheadRound *round)
{
	int64		got = 0;
	bool		waited = false;

	round->complete = false;
	round->stopped = false;
	for (;;)
	{
		Size		len;
		void	   *data;
		const char *msg;
		shm_mq_result res;
		int32		type;

		CHECK_FOR_INTERRUPTS();
		res = shm_mq_receive(ra->mqh, &len, &data, true);
		if (res == SHM_MQ_WOULD_BLOCK)
		{
			int64		requested;
			long		wait_ms;
			Latch	   *reader_latch;

			if (waited)
				break;
			/* the last round's end covers tickets a checkpoint can serve now */
			if (got == 0 && !in_flight && ra->caught_up && ra->tickets > served)
				break;
			/* a checkpoint asked for: a round that covers it, at once */
			SpinLockAcquire(&ra->slot->mutex);
			requested = ra->slot->checkpoint_requested;
			SpinLockRelease(&ra->slot->mutex);
			if (requested > ra->tickets && requested > ra->woken_for)
			{
				SpinLockAcquire(&ra->shared->mutex);
				reader_latch = ra->shared->reader_latch;
				ra->shared->wake = true;
				SpinLockRelease(&ra->shared->mutex);
				if (reader_latch)
					SetLatch(reader_latch);
				ra->woken_for = requested;
			}
			wait_ms = (next_checkpoint - weir_clock_now()) / 1000;
			wait_ms = Max(Min(wait_ms, READ_AHEAD_IDLE_MS), 1);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			waited = true;
			continue;
		}
		if (res != SHM_MQ_SUCCESS)
		{
			/* it exited (the server log says why): what it sent is applied */
			weir_read_ahead_stop(ra, "after it exited");
			round->stopped = true;
			round->caught_up = false;
			round->lag = 0;
			round->tickets = served;
			return got;
		}
		waited = false;
		msg = data;
		if ((uintptr_t) data % MAXIMUM_ALIGNOF != 0)
		{
			if (ra->aligned_size < len)
			{
				if (ra->aligned)
					pfree(ra->aligned);
				ra->aligned_size = Max(len, 2 * ra->aligned_size);
				ra->aligned = MemoryContextAllocHuge(ra->rd->cxt, ra->aligned_size);
			}
			memcpy(ra->aligned, data, len);
			msg = ra->aligned;
		}
		memcpy(&type, msg, sizeof(type));
		if (type == MSG_GROUP)
		{
			got += take_group(ra, msg, len, now);
			continue;
		}
		else
		{
			RoundEnd	end;

			Assert(type == MSG_ROUND_END && len == sizeof(end));
			memcpy(&end, msg, sizeof(end));
			ra->caught_up = end.caught_up;
			ra->lag = end.lag;
			ra->tickets = end.tickets;
			round->complete = true;
			round->caught_up = end.caught_up;
			round->lag = end.lag;
			round->tickets = end.tickets;
			return got;
		}
	}
	/* nothing applied since the last round's end: what it said holds */
	round->caught_up = got == 0 && ra->caught_up;
	round->lag = ra->lag;
	round->tickets = got == 0 ? ra->tickets : served;
	return got;
}
