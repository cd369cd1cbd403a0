/*-------------------------------------------------------------------------
 *
 * topic_table.h
 *	  The columns every topic table begins with.
 *
 * A topic table is (part int, pos bigint, user columns..., PRIMARY KEY
 * (part, pos)): weir.create_topic() makes it so and topic.c checks it; the
 * reader reads it so.  Definitions only: this header has no .c file.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/topic/topic_table.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_TOPIC_TABLE_H
#define WEIR_TOPIC_TABLE_H

/* weir.create_topic() puts these two columns first, in this order */
#define WEIR_TOPIC_PART_ATTNUM 1
#define WEIR_TOPIC_POS_ATTNUM 2

#endif							/* WEIR_TOPIC_TABLE_H */
