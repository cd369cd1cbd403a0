/*-------------------------------------------------------------------------
 *
 * capture_catalog.h
 *	  SQL on weir's capture catalog: weir.capture, weir.capture_table and
 *	  weir.capture_connection (capture_catalog.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_CATALOG_H
#define WEIR_CAPTURE_CATALOG_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/palloc.h"

/* One captured table and its topic (weir.capture_table) */
typedef struct WeirCaptureTableRow
{
	Oid			relid;			/* local; InvalidOid for a remote table */
	char	   *remote_table;	/* remote: qualified name there */
	Oid			topic;
	int			ncolumns;
	char	  **columns;		/* the table's columns the topic carries */
	int16	   *attnums;		/* local: their attribute numbers */
	int			nkeys;
	char	  **key_columns;	/* choose the partition; none: partition 0 */
	bool		full_identity;
	bool		dropped;
	int			natts_checked;	/* changes with this many attributes or fewer
								 * need no new topic column (capture_apply.c;
								 * not stored) */
} WeirCaptureTableRow;

/* One capture (weir.capture) */
typedef struct WeirCaptureRow
{
	int32		id;
	char	   *name;
	Oid			owner;
	char	   *slot_name;
	char	   *publication;	/* NULL: local */
	XLogRecPtr	position;
	TimestampTz position_time;	/* 0: none yet */
	bool		enabled;
	char	   *status;
	int			ntables;
	WeirCaptureTableRow *tables;
} WeirCaptureRow;

/* A dropped remote capture's slot (weir.capture_remote_slot_to_drop) */
typedef struct WeirRemoteSlotToDrop
{
	char	   *slot_name;
	char	   *conninfo;
	int32		capture_id;
} WeirRemoteSlotToDrop;

#define WEIR_CAPTURE_STARTING			"starting"
#define WEIR_CAPTURE_RUNNING			"running"
#define WEIR_CAPTURE_FAILED				"failed"
#define WEIR_CAPTURE_SLOT_INVALIDATED	"slot_invalidated"
#define WEIR_CAPTURE_STOPPED			"stopped"

extern bool weir_catalog_capture_by_name(const char *name, WeirCaptureRow *row);
extern bool weir_catalog_capture_by_id(int32 id, WeirCaptureRow *row);
extern int32 weir_catalog_capture_insert(const char *name, Oid owner, const char *publication,
										 const char *conninfo);
extern void weir_catalog_capture_table_insert(int32 capture_id, const WeirCaptureTableRow *t);
extern char *weir_catalog_capture_conninfo(int32 id);
extern void weir_catalog_capture_set_status(int32 id, const char *status, const char *error,
											bool disable);
extern void weir_catalog_capture_set_enabled(int32 id, bool enabled);
extern void weir_catalog_capture_set_position(int32 id, XLogRecPtr position,
											  TimestampTz position_time);
extern void weir_catalog_capture_delete(int32 id);
extern List *weir_catalog_remote_slots_to_drop(MemoryContext cxt);
extern void weir_catalog_remote_slot_dropped(const char *slot_name);
extern List *weir_catalog_enabled_captures(void);
extern List *weir_catalog_capture_slot_names(void);
extern bool weir_catalog_capture_table_dropped(Oid relid);
extern void weir_catalog_capture_table_columns(int32 capture_id,
											   const WeirCaptureTableRow *t);

#endif							/* WEIR_CAPTURE_CATALOG_H */
