/*-------------------------------------------------------------------------
 *
 * checkpoint_package.c
 *	  What one checkpoint writes, as one flat buffer.
 *
 * A checkpoint's sync phase (checkpoint.c) collects what changed into a
 * package: a header (the checkpoint's number, times, counts) and a list of
 * writes, each a kind and its columns (sink rows, keys to delete,
 * positions, dead letters) or state chunks.  The package holds copies, so
 * the worker goes on changing its state as soon as it is built; it is
 * written either by the worker itself or, sent over a shm_mq, by the
 * pipeline's checkpoint writer (checkpoint_writer.c) while the worker reads
 * on.  Everything in the buffer is MAXALIGNed, so a reader points into it
 * instead of copying: by-value columns are used in place, by-reference
 * values are found by their own length (datumGetSize).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/checkpoint/checkpoint_package.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "catalog_sql/catalog_chunk.h"
#include "checkpoint/checkpoint_package.h"

/* A column in a package: this, nulls[n], then the values */
typedef struct ColumnHeader
{
	Oid			type;
	int32		n;
	int16		typlen;
	bool		typbyval;
	char		typalign;
} ColumnHeader;

/* A chunk in a package: this, then its data as a bytea */
typedef struct ChunkHeader
{
	TimestampTz expires_at;
	int32		entries;
	int32		size;			/* of the bytea, header included */
} ChunkHeader;

/*
 * Room for `len` bytes at a MAXALIGNed offset, the padding around them
 * zeroed but not they; returns that offset.
 */
static int
reserve_for_copy(WeirPackage *pkg, Size len)
{
	StringInfo	buf = &pkg->buf;
	int			off = MAXALIGN(buf->len);

	enlargeStringInfo(buf, (off - buf->len) + MAXALIGN(len));
	memset(buf->data + buf->len, 0, off - buf->len);
	memset(buf->data + off + len, 0, MAXALIGN(len) - len);
	buf->len = off + MAXALIGN(len);
	return off;
}

/* Room for `len` zeroed bytes at a MAXALIGNed offset; returns that offset. */
static int
reserve(WeirPackage *pkg, Size len)
{
	int			off = reserve_for_copy(pkg, len);

	memset(pkg->buf.data + off, 0, len);
	return off;
}

static void
append(WeirPackage *pkg, const void *data, Size len)
{
	int			off = reserve_for_copy(pkg, len);

	memcpy(pkg->buf.data + off, data, len);
}

/* Start an empty package; the caller fills in its header. */
void
weir_package_begin(WeirPackage *pkg)
{
	initStringInfo(&pkg->buf);
	(void) reserve(pkg, sizeof(WeirPackageHeader));
	pkg->op_start = -1;
}

/* The header, valid until the next append (the buffer may move). */
WeirPackageHeader *
weir_package_header(WeirPackage *pkg)
{
	return (WeirPackageHeader *) pkg->buf.data;
}

static WeirPackageOp *
op_begin(WeirPackage *pkg, WeirPackageOpKind kind, int ncols)
{
	WeirPackageOp *op;

	pkg->op_start = reserve(pkg, sizeof(WeirPackageOp));
	op = (WeirPackageOp *) (pkg->buf.data + pkg->op_start);
	op->kind = kind;
	op->ncols = ncols;
	op->watermark = DT_NOBEGIN;
	return op;
}

static void
op_end(WeirPackage *pkg)
{
	WeirPackageOp *op = (WeirPackageOp *) (pkg->buf.data + pkg->op_start);

	op->len = pkg->buf.len - (pkg->op_start + MAXALIGN(sizeof(WeirPackageOp)));
	weir_package_header(pkg)->nops++;
	pkg->op_start = -1;
}

static void
append_column(WeirPackage *pkg, const WeirColumn *c)
{
	ColumnHeader h;

	h.type = c->type;
	h.n = c->n;
	h.typlen = c->typlen;
	h.typbyval = c->typbyval;
	h.typalign = c->typalign;
	append(pkg, &h, sizeof(h));
	append(pkg, c->nulls, sizeof(bool) * c->n);
	if (c->typbyval)
	{
		append(pkg, c->values, sizeof(Datum) * c->n);
		return;
	}

	/*
	 * By reference: the values one after the other, each at a MAXALIGNed
	 * offset as append() puts it, the room taken once (a join's text column
	 * went value by value: a fifth of its checkpoints' sync phase).
	 */
	{
		Size		total = 0;
		int			off;
		char	   *p;

		for (int i = 0; i < c->n; i++)
			if (!c->nulls[i])
				total += MAXALIGN(weir_datum_size(c->values[i], c->typlen));
		if (total == 0)
			return;
		off = reserve_for_copy(pkg, total);	/* the buffer may move */
		p = pkg->buf.data + off;
		for (int i = 0; i < c->n; i++)
			if (!c->nulls[i])
			{
				Size		len = weir_datum_size(c->values[i], c->typlen);

				memcpy(p, DatumGetPointer(c->values[i]), len);
				memset(p + len, 0, MAXALIGN(len) - len);
				p += MAXALIGN(len);
			}
	}
}

/* A write of whole columns (all of the same length). */
void
weir_package_add_columns(WeirPackage *pkg, WeirPackageOpKind kind, Oid oid,
						 WeirColumn *cols, int ncols)
{
	WeirPackageOp *op = op_begin(pkg, kind, ncols);

	op->oid = oid;
	for (int i = 0; i < ncols; i++)
		append_column(pkg, &cols[i]);
	op_end(pkg);
}

/* The same, from columns that are not side by side. */
void
weir_package_add_column_list(WeirPackage *pkg, WeirPackageOpKind kind,
							 WeirColumn **cols, int ncols)
{
	(void) op_begin(pkg, kind, ncols);
	for (int i = 0; i < ncols; i++)
		append_column(pkg, cols[i]);
	op_end(pkg);
}

/*
 * State chunks (WeirChunk *) of one space, numbered *next_chunk on (which
 * advances past them); after them, the older chunks go if `compacted`, or
 * those expired by `watermark` if it is finite.
 */
void
weir_package_add_chunks(WeirPackage *pkg, int space, List *chunks, bool compacted,
						TimestampTz watermark, int64 *next_chunk)
{
	WeirPackageOp *op = op_begin(pkg, WEIR_PKG_CHUNKS, list_length(chunks));
	ListCell   *lc;

	op->space = space;
	op->compacted = compacted;
	op->first_chunk = *next_chunk;
	op->watermark = watermark;
	foreach(lc, chunks)
	{
		WeirChunk  *c = lfirst(lc);
		ChunkHeader h;

		h.expires_at = c->expires_at;
		h.entries = c->entries;
		h.size = VARSIZE(c->data);
		append(pkg, &h, sizeof(h));
		append(pkg, c->data, h.size);
	}
	*next_chunk += list_length(chunks);
	op_end(pkg);
}

/*
 * Late records (partition, position) of topic `source`, for the pipeline's
 * late-records table, as of `watermark`.
 */
void
weir_package_add_late(WeirPackage *pkg, Oid source, WeirColumn *cols,
					  TimestampTz watermark)
{
	WeirPackageOp *op = op_begin(pkg, WEIR_PKG_LATE, 2);

	op->oid = source;
	op->watermark = watermark;
	for (int i = 0; i < 2; i++)
		append_column(pkg, &cols[i]);
	op_end(pkg);
}

/* Reading ----------------------------------------------------------------- */

static const char *
take(WeirPackageReader *r, Size len)
{
	const char *p = r->data + r->off;

	if (r->off + MAXALIGN(len) > r->len)
		elog(ERROR, "checkpoint package ends early");
	r->off += MAXALIGN(len);
	return p;
}

/*
 * Start reading the package in `data` (MAXALIGNed, kept while it is read).
 */
const WeirPackageHeader *
weir_package_read_begin(WeirPackageReader *r, const char *data, Size len)
{
	r->data = data;
	r->len = len;
	r->off = 0;
	r->op = 0;
	return (const WeirPackageHeader *) take(r, sizeof(WeirPackageHeader));
}

/* A column pointing into the package (values palloc'd when by reference). */
static void
read_column(WeirPackageReader *r, WeirColumn *c)
{
	const ColumnHeader *h = (const ColumnHeader *) take(r, sizeof(ColumnHeader));

	c->type = h->type;
	c->n = c->cap = h->n;
	c->typlen = h->typlen;
	c->typbyval = h->typbyval;
	c->typalign = h->typalign;
	c->nulls = (bool *) take(r, sizeof(bool) * h->n);
	if (h->typbyval)
	{
		c->values = (Datum *) take(r, sizeof(Datum) * h->n);
		return;
	}
	c->values = palloc(sizeof(Datum) * Max(h->n, 1));
	for (int i = 0; i < h->n; i++)
	{
		Datum		d;

		if (c->nulls[i])
		{
			c->values[i] = (Datum) 0;
			continue;
		}
		d = PointerGetDatum(r->data + r->off);
		(void) take(r, datumGetSize(d, false, h->typlen));
		c->values[i] = d;
	}
}

/*
 * The next write, NULL after the last.  Its columns (at most maxcols) go to
 * cols; a CHUNKS write's chunks to *chunks, as a List of WeirChunk * whose
 * data point into the package.
 */
const WeirPackageOp *
weir_package_read_op(WeirPackageReader *r, WeirColumn *cols, int maxcols, List **chunks)
{
	const WeirPackageHeader *h = (const WeirPackageHeader *) r->data;
	const WeirPackageOp *op;

	if (r->op >= h->nops)
		return NULL;
	op = (const WeirPackageOp *) take(r, sizeof(WeirPackageOp));
	r->op++;
	*chunks = NIL;
	if (op->kind == WEIR_PKG_CHUNKS)
	{
		for (int i = 0; i < op->ncols; i++)
		{
			const ChunkHeader *ch = (const ChunkHeader *) take(r, sizeof(ChunkHeader));
			WeirChunk  *c = palloc(sizeof(WeirChunk));

			c->expires_at = ch->expires_at;
			c->entries = ch->entries;
			c->data = (bytea *) take(r, ch->size);
			*chunks = lappend(*chunks, c);
		}
		return op;
	}
	if (op->ncols > maxcols)
		elog(ERROR, "checkpoint package write has %d columns, at most %d expected",
			 op->ncols, maxcols);
	for (int i = 0; i < op->ncols; i++)
		read_column(r, &cols[i]);
	return op;
}
