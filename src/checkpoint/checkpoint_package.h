/*-------------------------------------------------------------------------
 *
 * checkpoint_package.h
 *	  What one checkpoint writes, as one flat buffer (checkpoint_package.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_package.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHECKPOINT_PACKAGE_H
#define WEIR_CHECKPOINT_PACKAGE_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

#include "base/columns.h"
#include "checkpoint/checkpoint_counters.h"

/* The writes of a checkpoint, in the order they are done */
typedef enum WeirPackageOpKind
{
	WEIR_PKG_SINK_DELETE,		/* columns: the sink's key */
	WEIR_PKG_SINK_INSERT,		/* columns: the sink's; first emissions */
	WEIR_PKG_SINK_UPSERT,		/* columns: the sink's; rows already there */
	WEIR_PKG_SINK_UPSERT_KEEPING,	/* columns: the sink's, then a text of a
									 * character per sink column, 'k': it
									 * keeps the value the sink has (last
									 * value: an update left it unchanged) */
	WEIR_PKG_CHUNKS,			/* state chunks of one space */
	WEIR_PKG_POSITIONS,			/* columns: partition, position, max event time */
	WEIR_PKG_DEAD_LETTERS,		/* columns: partition, position, error, record */
	WEIR_PKG_LATE				/* columns: partition, position (of the
								 * op's source) */
} WeirPackageOpKind;

/* The checkpoint's own facts, for its weir.checkpoints row and its waiters */
typedef struct WeirPackageHeader
{
	int64		checkpoint_id;
	TimestampTz due;			/* when it was due */
	TimestampTz started;		/* when the worker stopped to collect */
	TimestampTz synced;			/* when the worker went on */
	TimestampTz watermark;
	TimestampTz published;		/* for readers of its topic sink
								 * (topic_watermark.c); DT_NOBEGIN: none */
	int64		records_since;	/* records in since the previous one */
	WeirCounters counters;		/* the worker's, since the pipeline was
								 * created, at the batch boundary where it
								 * was collected (records_out and
								 * dead_at_write: 0, the writes count them) */
	int64		bytes;			/* state bytes written */
	int64		sink_rows;
	int64		state_rows;
	int64		served;			/* weir.checkpoint() tickets it answers */
	int32		nops;
} WeirPackageHeader;

/* One write, followed by `len` bytes (MAXALIGNed) of its columns or chunks */
typedef struct WeirPackageOp
{
	int32		kind;			/* WeirPackageOpKind */
	int32		ncols;			/* columns that follow; CHUNKS: chunks */
	int64		len;			/* bytes that follow */
	Oid			oid;			/* DEAD_LETTERS, LATE: the source topic */
	int32		space;			/* CHUNKS */
	bool		compacted;		/* CHUNKS: every older chunk goes */
	int64		first_chunk;	/* CHUNKS: number of the first */
	TimestampTz watermark;		/* CHUNKS: chunks expired by it go (not
								 * finite: none); LATE: as of */
} WeirPackageOp;

/* A package being built: the header first, ops appended */
typedef struct WeirPackage
{
	StringInfoData buf;
	int			op_start;		/* offset of the op being built; -1: none */
} WeirPackage;

extern void weir_package_begin(WeirPackage *pkg);
extern WeirPackageHeader *weir_package_header(WeirPackage *pkg);
extern void weir_package_add_columns(WeirPackage *pkg, WeirPackageOpKind kind, Oid oid,
									 WeirColumn *cols, int ncols);
extern void weir_package_add_column_list(WeirPackage *pkg, WeirPackageOpKind kind,
										 WeirColumn **cols, int ncols);
extern void weir_package_add_chunks(WeirPackage *pkg, int space, List *chunks,
									bool compacted, TimestampTz watermark,
									int64 *next_chunk);
extern void weir_package_add_late(WeirPackage *pkg, Oid source, WeirColumn *cols,
								  TimestampTz watermark);

/* Reading one: ops in order */
typedef struct WeirPackageReader
{
	const char *data;
	Size		len;
	Size		off;
	int			op;				/* ops read */
} WeirPackageReader;

extern const WeirPackageHeader *weir_package_read_begin(WeirPackageReader *r,
														const char *data, Size len);
extern const WeirPackageOp *weir_package_read_op(WeirPackageReader *r, WeirColumn *cols,
												 int maxcols, List **chunks);

#endif							/* WEIR_CHECKPOINT_PACKAGE_H */
