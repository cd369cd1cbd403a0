/*-------------------------------------------------------------------------
 *
 * state_image.c
 *	  weir.live_state of state a worker holds in its own memory (generic
 *	  aggregates' states: aggregate.c): the reader asks, the worker writes
 *	  an image of its entries into its DSA area at its next round, and the
 *	  reader copies it.
 *
 * Protocol.  A reader takes a ticket (image_requested, under the slot's
 * mutex), counts itself among image_readers, and sets the worker's latch.
 * The worker, once a round (worker.c, between batches: its state is
 * consistent), sees requests beyond image_served: with the slot's lock
 * held exclusively it writes the image (the operator's state view,
 * state_view.h), publishes it in `image` (freeing the one before), sets
 * image_served to the requests it saw and broadcasts checkpoint_cv.  The
 * reader, woken, holds the lock shared and copies the image, then counts
 * itself out.  An image that no reader waits for is freed at the worker's
 * next round.  A worker that leaves broadcasts checkpoint_cv too: a reader
 * then gets no image (the slot's generation tells).
 *
 * An image could not be made when the area is full (its size limit,
 * max_state_memory and a margin) or when it would exceed 1 GB (a buffer's
 * limit, which must not fail the worker): the reader is told so
 * (image_failed).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_image.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "operator/operator.h"
#include "operator/state_view.h"
#include "pipeline/state_image.h"

/*
 * In the worker, once a round, holding no weir lock: write the image asked
 * for, or free one that all its readers have copied.  The image is built
 * in a memory context of its own, then copied into the area.
 */
void
weir_state_image_serve(WeirPipelineSlot *slot, dsa_area *area, WeirStore *store,
					   WeirPlan *plan)
{
	const WeirStateView *view = weir_operator_state_view(plan);
	uint64		requested;
	uint64		served;
	int32		readers;
	dsa_pointer old;
	dsa_pointer image = InvalidDsaPointer;
	MemoryContext cxt;
	MemoryContext oldcxt;
	StringInfoData buf;
	bool		whole = true;

	SpinLockAcquire(&slot->mutex);
	requested = slot->image_requested;
	served = slot->image_served;
	readers = slot->image_readers;
	SpinLockRelease(&slot->mutex);

	/* only this worker writes `image`: it reads it without the lock */
	if (requested == served)
	{
		if (readers == 0 && DsaPointerIsValid(slot->image))
		{
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			old = slot->image;
			slot->image = InvalidDsaPointer;
			slot->image_len = 0;
			LWLockRelease(&slot->lock);
			dsa_free(area, old);
		}
		return;
	}

	cxt = AllocSetContextCreate(CurrentMemoryContext, "weir state image",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	initStringInfo(&buf);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (view && view->image)
		whole = view->image(store, plan, &buf);
	if (whole && buf.len > 0)
		image = dsa_allocate_extended(area, buf.len, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	if (DsaPointerIsValid(image))
		memcpy(dsa_get_address(area, image), buf.data, buf.len);
	old = slot->image;
	slot->image = image;
	slot->image_len = DsaPointerIsValid(image) ? buf.len : 0;
	slot->image_failed = buf.len > 0 && !DsaPointerIsValid(image);
	LWLockRelease(&slot->lock);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	if (DsaPointerIsValid(old))
		dsa_free(area, old);

	SpinLockAcquire(&slot->mutex);
	slot->image_served = requested;
	SpinLockRelease(&slot->mutex);
	ConditionVariableBroadcast(&slot->checkpoint_cv);
}

/* A reader's ticket, for its cleanup */
typedef struct Reader
{
	WeirPipelineSlot *slot;
	uint64		generation;
} Reader;

/* The reader is done (or failed): it counts itself out of that worker's readers. */
static void
reader_done(int code, Datum arg)
{
	Reader	   *r = (Reader *) DatumGetPointer(arg);

	SpinLockAcquire(&r->slot->mutex);
	if (r->slot->generation == r->generation)
		r->slot->image_readers--;
	SpinLockRelease(&r->slot->mutex);
}

/* Wait until the worker served `ticket`: false if it left first. */
static bool
wait_served(WeirPipelineSlot *slot, uint64 generation, uint64 ticket)
{
	bool		served_it = false;

	/* before looking: a broadcast after the look wakes the sleep below */
	ConditionVariablePrepareToSleep(&slot->checkpoint_cv);
	for (;;)
	{
		uint64		served;
		uint64		now_generation;

		SpinLockAcquire(&slot->mutex);
		served = slot->image_served;
		now_generation = slot->generation;
		SpinLockRelease(&slot->mutex);
		if (now_generation != generation)
			break;
		if (served >= ticket)
		{
			served_it = true;
			break;
		}
		/* timed: a worker stuck in a long round still lets a cancel in */
		(void) ConditionVariableTimedSleep(&slot->checkpoint_cv, 1000, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return served_it;
}

/* The image the worker published, copied; NULL if it left. */
static char *
copy_image(WeirPipelineSlot *slot, uint64 generation, int32 pipeline_id, const char *name,
		   Size *len)
{
	char	   *copy = NULL;
	bool		failed = false;

	weir_shmem_pipeline_lock_shared(slot);
	if (weir_shmem_pipeline_generation(slot) == generation &&
		weir_shmem_pipeline_is(slot, pipeline_id) && slot->area != DSM_HANDLE_INVALID)
	{
		failed = slot->image_failed;
		*len = slot->image_len;
		copy = palloc_extended(Max(*len, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (copy && DsaPointerIsValid(slot->image))
		{
			dsa_area   *area = dsa_attach(slot->area);

			memcpy(copy, dsa_get_address(area, slot->image), *len);
			dsa_detach(area);
		}
	}
	LWLockRelease(&slot->lock);
	if (failed || (copy == NULL && *len > 0))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not copy the live state of pipeline \"%s\": out of memory", name),
				 errdetail("Its state is held in its worker's memory; an image of it did not fit in its state memory or in 1 GB."),
				 errhint("Read weir.committed_state, or raise max_state_memory with weir.alter_pipeline().")));
	return copy;
}

/*
 * Ask the worker holding the pipeline's slot for an image of its state,
 * wait for it and return a copy (*len bytes, in the caller's context), or
 * NULL if the worker left meanwhile.  Call it holding no weir lock, in a
 * transaction.
 */
char *
weir_state_image_request(WeirPipelineSlot *slot, int32 pipeline_id, const char *name,
						 Size *len)
{
	Reader		r;
	uint64		ticket;
	Latch	   *latch;
	char	   *copy = NULL;

	*len = 0;
	SpinLockAcquire(&slot->mutex);
	if (slot->dboid != MyDatabaseId || slot->pipeline_id != pipeline_id || slot->pid == 0)
	{
		SpinLockRelease(&slot->mutex);
		return NULL;
	}
	r.slot = slot;
	r.generation = slot->generation;
	ticket = ++slot->image_requested;
	slot->image_readers++;
	latch = slot->latch;
	SpinLockRelease(&slot->mutex);

	PG_ENSURE_ERROR_CLEANUP(reader_done, PointerGetDatum(&r));
	{
		/* an idle worker starts a round */
		if (latch)
			SetLatch(latch);
		if (wait_served(slot, r.generation, ticket))
			copy = copy_image(slot, r.generation, pipeline_id, name, len);
	}
	PG_END_ENSURE_ERROR_CLEANUP(reader_done, PointerGetDatum(&r));
	reader_done(0, PointerGetDatum(&r));
	return copy;
}
