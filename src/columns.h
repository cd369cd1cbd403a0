/*-------------------------------------------------------------------------
 *
 * columns.h
 *	  Growing arrays of Datums of one type, one per column of the rows a
 *	  checkpoint writes; turned into SQL arrays for unnest().
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/columns.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_COLUMNS_H
#define WEIR_COLUMNS_H

#include "postgres.h"

typedef struct WeirColumn
{
	Oid			type;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;
	int			cap;
	Datum	   *values;
	bool	   *nulls;
} WeirColumn;

extern void weir_column_init(WeirColumn *c, Oid type);
extern void weir_column_init_like(WeirColumn *c, const WeirColumn *like);
extern WeirColumn *weir_columns_like(const WeirColumn *types, int n, MemoryContext cxt);
extern void weir_column_add(WeirColumn *c, Datum value, bool isnull);
extern Datum weir_column_array(WeirColumn *c);
extern bytea *weir_make_bytea(const char *data, Size len);

#endif							/* WEIR_COLUMNS_H */
