/*-------------------------------------------------------------------------
 *
 * columns.h
 *	  Growing arrays of Datums of one type, one per column of the rows a
 *	  checkpoint writes; turned into SQL arrays for unnest().
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/columns.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_COLUMNS_H
#define WEIR_COLUMNS_H

#include "postgres.h"

#include "lib/stringinfo.h"

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

/* room weir_columns_clear keeps, at most (values) */
#define WEIR_COLUMN_KEEP_CAP (1024 * 1024)

extern void weir_column_init(WeirColumn *c, Oid type);
extern void weir_columns_clear(WeirColumn *cols, int n);
extern void weir_column_init_like(WeirColumn *c, const WeirColumn *like);
extern WeirColumn *weir_columns_like(const WeirColumn *types, int n, MemoryContext cxt);
extern void weir_column_grow(WeirColumn *c);
extern Datum weir_column_array(WeirColumn *c);
extern bytea *weir_make_bytea(const char *data, Size len);

/*
 * datumGetSize of a by-reference value, inline: a column of sink rows, or a
 * join's buffered rows, have one per row.  Not for expanded objects.
 */
static inline Size
weir_datum_size(Datum value, int16 typlen)
{
	if (typlen > 0)
		return typlen;
	if (typlen == -1)
		return VARSIZE_ANY(DatumGetPointer(value));
	return strlen(DatumGetCString(value)) + 1;
}

/* Add a value (inline: a join adds one per column of every pair). */
static inline void
weir_column_add(WeirColumn *c, Datum value, bool isnull)
{
	if (unlikely(c->n == c->cap))
		weir_column_grow(c);
	c->values[c->n] = value;
	c->nulls[c->n] = isnull;
	c->n++;
}

/*
 * Room for `len` more bytes at the end of buf; returns where they go.  What
 * appendBinaryStringInfo does, without a call (or a copy) per field of an
 * image built field by field.
 */
static inline char *
weir_append_space(StringInfo buf, int len)
{
	char	   *p;

	if (buf->len + len >= buf->maxlen)
		enlargeStringInfo(buf, len);
	p = buf->data + buf->len;
	buf->len += len;
	buf->data[buf->len] = '\0';
	return p;
}

#endif							/* WEIR_COLUMNS_H */
