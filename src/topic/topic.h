/*-------------------------------------------------------------------------
 *
 * topic.h
 *	  Topics: definition, producer trigger and a backend-local cache.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TOPIC_H
#define WEIR_TOPIC_H

#include "access/attnum.h"
#include "fmgr.h"
#include "utils/relcache.h"

/* a topic table's first columns, which users of a topic read by number */
#include "topic/partition.h"
#include "topic/topic_table.h"

/* What a backend knows about a topic table; rebuilt on relcache invalidation */
typedef struct WeirTopic
{
	Oid			relid;			/* hash key */
	bool		valid;
	int32		topic_id;		/* weir.topic.id */
	int32		partitions;
	AttrNumber	key_attnum;		/* InvalidAttrNumber: no key column */
	Oid			key_collation;
	FmgrInfo	key_hash;		/* extended hash function of the key type */
	int		   *slotnos;		/* [partitions], -1 until resolved */
} WeirTopic;

extern WeirTopic *weir_topic_get(Relation rel);
extern WeirTopic *weir_topic_lookup(Relation rel);
extern void weir_topic_check_partition(WeirTopic *topic, Relation rel, int32 part);
extern int	weir_topic_partition_slotno(WeirTopic *topic, Relation rel, int32 part);
extern void weir_topic_partition_info(WeirTopic *topic, Relation rel, int32 part,
									  WeirPartitionInfo *info);

#endif							/* WEIR_TOPIC_H */
