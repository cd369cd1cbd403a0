/*-------------------------------------------------------------------------
 *
 * change_read.h
 *	  Reading the messages of weir's output plugin back (change_read.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/change_read.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHANGE_READ_H
#define WEIR_CHANGE_READ_H

#include "access/tupdesc.h"
#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

/* One attribute of a tuple in a message: points into the message */
typedef struct WeirChangeAtt
{
	Oid			typid;
	char		flag;			/* WEIR_ATT_NULL, _UNCHANGED or _VALUE */
	const char *image;			/* _VALUE: its image */
	int			len;
} WeirChangeAtt;

typedef struct WeirChangeTuple
{
	bool		present;
	int			natts;
	WeirChangeAtt *atts;
} WeirChangeTuple;

/* One message (change_format.h) */
typedef struct WeirChange
{
	char		kind;
	/* begin, commit */
	XLogRecPtr	lsn;			/* the commit record */
	XLogRecPtr	end_lsn;		/* after it */
	TimestampTz commit_ts;
	TransactionId xid;			/* begin */
	/* insert, update, delete */
	Oid			relid;
	WeirChangeTuple new_tuple;
	WeirChangeTuple old_tuple;
	/* truncate */
	int			nrelids;
	Oid		   *relids;
	int			truncate_flags;
} WeirChange;

extern void weir_change_read(const char *data, int len, WeirChange *change);
extern void weir_change_datums(const WeirChangeTuple *tuple, TupleDesc desc,
							   Datum *values, bool *nulls, bool *unchanged);
extern void weir_change_columns(const WeirChangeTuple *tuple, int ncolumns,
								const int16 *attnums, Form_pg_attribute *atts,
								const char *table, Datum *values, bool *nulls,
								bool *unchanged);

#endif							/* WEIR_CHANGE_READ_H */
