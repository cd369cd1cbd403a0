/*-------------------------------------------------------------------------
 *
 * row_arena.h
 *	  Rows bump-allocated in blocks of a pipeline's DSA area, a block freed
 *	  when its last row goes.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/state/row_arena.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_ROW_ARENA_H
#define WEIR_ROW_ARENA_H

#include "state/store.h"

typedef struct WeirRowArena
{
	WeirStore *store;		/* blocks are its memory, and counted there */
	dsa_pointer current;		/* the block being filled; Invalid: none */
	uint32		used;			/* bytes of it taken, its header included */
} WeirRowArena;

extern void weir_row_arena_init(WeirRowArena *a, WeirStore *store);
extern dsa_pointer weir_row_arena_alloc(WeirRowArena *a, Size size, uint32 *offset);
extern void weir_row_arena_free(WeirRowArena *a, dsa_pointer row, uint32 offset);

#endif							/* WEIR_ROW_ARENA_H */
