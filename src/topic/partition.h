/*-------------------------------------------------------------------------
 *
 * partition.h
 *	  Topic partition positions and the last stable position (LSO).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/partition.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_PARTITION_H
#define WEIR_PARTITION_H

#include "base/shmem.h"
#include "utils/relcache.h"

/* A consistent look at one partition, for readers and views. */
typedef struct WeirPartitionInfo
{
	int64		next_position;	/* next position to be handed out */
	int64		stable_bound;	/* positions below this are safe to read */
	int			open_producers; /* transactions registered on it */
	WeirProducerReg oldest;		/* valid when open_producers > 0 */
} WeirPartitionInfo;

extern int	weir_partition_slotno(int32 topic_id, int32 part, Relation rel);
extern int64 weir_partition_take_position(int slotno);
extern void weir_partition_info(int slotno, WeirPartitionInfo *info);
extern void weir_partition_info_in_recovery(Relation rel, int32 part,
											WeirPartitionInfo *info);
extern void weir_partition_forget_topic_at_commit(int32 topic_id);
extern void weir_partition_forget_stale_topic(int32 topic_id);

#endif							/* WEIR_PARTITION_H */
