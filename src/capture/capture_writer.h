/*-------------------------------------------------------------------------
 *
 * capture_writer.h
 *	  Appending captured changes to their topics, in the capture's
 *	  transaction (capture_writer.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_writer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_WRITER_H
#define WEIR_CAPTURE_WRITER_H

#include "access/attnum.h"
#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "access/heapam.h"
#include "nodes/execnodes.h"

#include "capture/capture_catalog.h"
#include "topic/topic.h"

#define WEIR_CAPTURE_BATCH 1000		/* rows per multi-insert */

/* A topic's columns for the change itself (change topics, README) */
#define WEIR_CHANGE_OP_COLUMN		"change_op"
#define WEIR_CHANGE_LSN_COLUMN		"commit_lsn"
#define WEIR_CHANGE_TIME_COLUMN		"commit_time"
#define WEIR_CHANGE_UNCHANGED_COLUMN "unchanged_columns"

/* Operations, as change_op holds them */
#define WEIR_OP_INSERT		'I'
#define WEIR_OP_UPDATE		'U'		/* an update's new row */
#define WEIR_OP_BEFORE		'B'		/* an update's old row */
#define WEIR_OP_DELETE		'D'
#define WEIR_OP_TRUNCATE	'T'

/* One captured table's topic, open for a write */
typedef struct WeirCaptureTarget
{
	const WeirCaptureTableRow *table;
	char	   *table_name;		/* for messages */
	Relation	rel;			/* the topic */
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	int32		partitions;
	AttrNumber	op_attnum;
	AttrNumber	lsn_attnum;
	AttrNumber	time_attnum;
	AttrNumber	unchanged_attnum;
	AttrNumber *column_attnums; /* [ncolumns]: the topic's */
	Form_pg_attribute *column_atts; /* [ncolumns]: the topic's attributes */
	int		   *key_index;		/* [nkeys]: capture column of each key */
	bool		batched;		/* rows go in batches (capture_writer.c) */
	WeirTopic  *topic;			/* batched: positions are taken here */
	TupleTableSlot **pending;	/* batched: [WEIR_CAPTURE_BATCH] filled slots */
	int			npending;
	BulkInsertState bistate;
	FmgrInfo   *key_hash;		/* [nkeys] extended hash functions */
	Oid		   *key_collation;
} WeirCaptureTarget;

typedef struct WeirCaptureWriter
{
	EState	   *estate;
	int			ntargets;
	WeirCaptureTarget *targets;
	int64		rows;			/* written so far */
} WeirCaptureWriter;

extern WeirCaptureWriter *weir_capture_writer_begin(const WeirCaptureRow *capture);
extern void weir_capture_writer_row(WeirCaptureWriter *w, int table, char op,
									XLogRecPtr lsn, TimestampTz commit_time,
									Datum *values, bool *nulls, const bool *unchanged);
extern void weir_capture_writer_truncate(WeirCaptureWriter *w, int table,
										 XLogRecPtr lsn, TimestampTz commit_time);
extern void weir_capture_writer_end(WeirCaptureWriter *w);

#endif							/* WEIR_CAPTURE_WRITER_H */
