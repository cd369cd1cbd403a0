/*-------------------------------------------------------------------------
 *
 * reader.h
 *	  Reading topic partitions by position through the primary key.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/reader.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_READER_H
#define WEIR_READER_H

#include "executor/tuptable.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"

typedef void (*WeirRowCallback) (void *arg, TupleTableSlot *slot, int64 position);
typedef void (*WeirPartRowCallback) (void *arg, TupleTableSlot *slot, int32 part,
									 int64 position);

/* Positions after < pos <= upto of one partition, and the largest read. */
typedef struct WeirPositionRange
{
	int32		part;
	int64		after;
	int64		upto;
	int64		max_position;	/* out: unchanged when no row was read */
} WeirPositionRange;

extern int64 weir_reader_scan_each(Relation rel, int32 part, int64 after,
								   int64 bound, int64 max_rows,
								   Snapshot snapshot, WeirRowCallback callback,
								   void *arg, int64 *last_position);
extern int64 weir_reader_scan_heap_order(Relation rel, WeirPositionRange *ranges,
										 int nranges, Snapshot snapshot,
										 AttrNumber deform,
										 WeirPartRowCallback callback, void *arg);
extern int64 weir_reader_edge_position(Relation rel, int32 part, bool newest);
extern int64 weir_reader_scan(Relation rel, int32 part, int64 after,
							  int64 bound, int64 max_rows, Snapshot snapshot,
							  Tuplestorestate *out, int64 *last_position);
extern void weir_reader_check_access(Relation rel);

#endif							/* WEIR_READER_H */
