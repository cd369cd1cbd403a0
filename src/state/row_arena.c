/*-------------------------------------------------------------------------
 *
 * row_arena.c
 *	  Rows bump-allocated in blocks of a pipeline's DSA area, a block freed
 *	  when its last row goes.
 *
 * A join buffers every row it reads until the watermark passes the row's
 * last possible match, and one DSA allocation and free per row (each
 * taking its size class's lock inside dsa.c) was about a tenth of a join's
 * time.  Rows of one side arrive, and leave, in about event-time order, so
 * they are carved from 64 kB blocks one after another, each block counting
 * its live rows; a row's offset in its block (kept in the row) finds the
 * block when the row goes, and the block goes with its last row.  A row
 * larger than a block gets a block of its own.  The memory counted
 * (max_state_memory, state_bytes) is the blocks'.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/row_arena.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "state/row_arena.h"

#define ARENA_BLOCK_SIZE (64 * 1024)

typedef struct ArenaBlock
{
	int64		live;			/* rows in it not freed */
	Size		size;			/* of the block, header included */
} ArenaBlock;

#define BLOCK_HEADER MAXALIGN(sizeof(ArenaBlock))

static inline ArenaBlock *
block_at(WeirRowArena *a, dsa_pointer dp)
{
	return (ArenaBlock *) weir_entry_at(a->store, dp);
}

void
weir_row_arena_init(WeirRowArena *a, WeirStore *store)
{
	a->store = store;
	a->current = InvalidDsaPointer;
	a->used = 0;
}

static dsa_pointer
new_block(WeirRowArena *a, Size size)
{
	dsa_pointer dp = weir_store_alloc(a->store, size);
	ArenaBlock *b;

	if (!DsaPointerIsValid(dp))
		return InvalidDsaPointer;	/* store->out_of_memory is set */
	b = block_at(a, dp);
	b->live = 0;
	b->size = size;
	return dp;
}

/*
 * Room for a row of `size` bytes (8-byte aligned); *offset: where in its
 * block, for weir_row_arena_free.  InvalidDsaPointer if memory ran out.
 */
dsa_pointer
weir_row_arena_alloc(WeirRowArena *a, Size size, uint32 *offset)
{
	dsa_pointer block;

	size = MAXALIGN(size);
	if (size > ARENA_BLOCK_SIZE - BLOCK_HEADER)
	{
		/* a row of its own: the block goes with it */
		block = new_block(a, BLOCK_HEADER + size);
		if (!DsaPointerIsValid(block))
			return InvalidDsaPointer;
		block_at(a, block)->live = 1;
		*offset = BLOCK_HEADER;
		return block + BLOCK_HEADER;
	}
	if (!DsaPointerIsValid(a->current) || a->used + size > ARENA_BLOCK_SIZE)
	{
		dsa_pointer full = a->current;

		block = new_block(a, ARENA_BLOCK_SIZE);
		if (!DsaPointerIsValid(block))
			return InvalidDsaPointer;
		a->current = block;
		a->used = BLOCK_HEADER;
		/* the block left behind goes now if its rows all went already */
		if (DsaPointerIsValid(full) && block_at(a, full)->live == 0)
			weir_store_free(a->store, full, ARENA_BLOCK_SIZE);
	}
	block_at(a, a->current)->live++;
	*offset = a->used;
	a->used += size;
	return a->current + *offset;
}

/* A row goes; its block too if it was the block's last and not being filled. */
void
weir_row_arena_free(WeirRowArena *a, dsa_pointer row, uint32 offset)
{
	dsa_pointer block = row - offset;
	ArenaBlock *b = block_at(a, block);

	Assert(b->live > 0);
	if (--b->live == 0 && block != a->current)
		weir_store_free(a->store, block, b->size);
}
