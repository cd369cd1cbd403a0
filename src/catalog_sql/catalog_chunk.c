/*-------------------------------------------------------------------------
 *
 * catalog_chunk.c
 *	  SQL on weir.pipeline_chunk: the checkpointed state of every operator
 *	  (windows and keyed entries), one chunk of changed entries per
 *	  checkpoint and operator space.
 *
 * As in catalog.c, statements run as the owner of the weir schema with a
 * pinned search_path.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_chunk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "base/columns.h"
#include "base/progress.h"
#include "base/version.h"
#include "catalog_sql/catalog.h"
#include "catalog_sql/catalog_chunk.h"

/* A chunk of `entries` entry images, the bytes of buf, until expires_at. */
WeirChunk *
weir_chunk_make(const StringInfoData *buf, int32 entries, TimestampTz expires_at)
{
	WeirChunk  *c = palloc(sizeof(WeirChunk));

	c->data = weir_make_bytea(buf->data, buf->len);
	c->entries = entries;
	c->expires_at = expires_at;
	return c;
}

/*
 * Refuse a checkpoint written in a state format this build does not read
 * (by an older build whose format it no longer reads, or by a newer one):
 * read as this build's, its bytes would make wrong state, or none.  The
 * error is 0A000, which the worker treats as permanent (worker.c): the
 * pipeline is disabled with it as its last_error, its positions and sink
 * untouched, rather than restarted in a loop; the owner resolves it and
 * calls weir.start().
 */
static void
check_format(int32 id, int space)
{
	Oid			types[4] = {INT4OID, INT2OID, INT2OID, INT2OID};
	Datum		values[4] = {Int32GetDatum(id), Int16GetDatum(space),
		Int16GetDatum(WEIR_STATE_FORMAT_OLDEST),
	Int16GetDatum(WEIR_STATE_FORMAT)};
	bool		isnull;
	int16		format;
	char	   *name;
	char	   *readable;

	weir_catalog_exec("SELECT c.format, p.name FROM weir.pipeline_chunk c "
					  "JOIN weir.pipeline p ON p.id = c.pipeline_id "
					  "WHERE c.pipeline_id = $1 AND c.space = $2 "
					  "AND c.format NOT BETWEEN $3 AND $4 LIMIT 1",
					  4, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	format = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										 &isnull));
	name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	readable = WEIR_STATE_FORMAT_OLDEST == WEIR_STATE_FORMAT ?
		psprintf("format %d", WEIR_STATE_FORMAT) :
		psprintf("formats %d to %d", WEIR_STATE_FORMAT_OLDEST, WEIR_STATE_FORMAT);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot restore the checkpoint of pipeline \"%s\": its state is in format %d",
					name, format),
			 errdetail("This build of weir (library %s) reads state %s; format %d was written by %s build of weir.",
					   WEIR_LIBRARY_VERSION, readable, format,
					   format > WEIR_STATE_FORMAT ? "a newer" : "an older"),
			 errhint("Run a build of weir that reads state format %d, or drop and recreate the pipeline to rebuild its state from its topics; then call weir.start().",
					 format)));
}

/*
 * Refuse a checkpoint whose images hold OIDs of user-defined types that
 * have other OIDs now: after pg_dump and pg_restore (into another database
 * or cluster) every type made by a user is made again with a new OID, and
 * an enum value, a composite, a range or an array element read with the
 * old one would be garbage.  weir.pipeline.state_types names those types
 * (a dump writes names, a restore resolves them anew) and
 * state_type_image holds their OIDs and their enum labels' as the
 * pipeline was created (numbers, kept as they were); the current image of
 * the same types must contain it (weir._state_type_image, weir--0.1--0.2.sql).
 * A database still at weir 0.1 has neither column and nothing to compare.
 * Only when there are chunks: a pipeline without state has nothing to
 * misread.
 */
static void
check_type_oids(int32 id, int space)
{
	Oid			types[2] = {INT4OID, INT2OID};
	Datum		values[2] = {Int32GetDatum(id), Int16GetDatum(space)};
	char	   *name;
	char	   *changed;

	weir_catalog_exec("SELECT FROM pg_catalog.pg_attribute "
					  "WHERE attrelid = 'weir.pipeline'::pg_catalog.regclass "
					  "AND attname = 'state_type_image' AND NOT attisdropped",
					  0, NULL, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	weir_catalog_exec("SELECT p.name, "
					  "(SELECT pg_catalog.string_agg(DISTINCT "
					  "p.state_types[pg_catalog.substring(x, '^[0-9]+')::integer]::pg_catalog.text, ', ') "
					  "FROM pg_catalog.unnest(p.state_type_image) x "
					  "WHERE x <> ALL (cur.image)) "
					  "FROM weir.pipeline p, "
					  "LATERAL (SELECT weir._state_type_image(p.state_types) AS image) cur "
					  "WHERE p.id = $1 AND NOT cur.image @> p.state_type_image "
					  "AND EXISTS (SELECT FROM weir.pipeline_chunk c "
					  "WHERE c.pipeline_id = p.id AND c.space = $2)",
					  2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	changed = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	/*
	 * 0A000, as for a state format this build does not read: no restart
	 * brings the old OIDs back, so the worker disables the pipeline
	 * (worker.c, error_is_permanent) rather than retry it in a loop.
	 */
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("the checkpoint of pipeline \"%s\" holds values of types whose OIDs have changed",
					name),
			 errdetail("Types: %s.  Their OIDs (or their enum labels') are not those the state was written with, as after pg_restore: the state would be misread.",
					   changed ? changed : "unknown"),
			 errhint("Drop and recreate the pipeline (its state is rebuilt from its topics), or copy the database physically (pg_basebackup), which keeps OIDs.")));
}

void
weir_catalog_write_chunk(int32 id, int space, int64 chunk, TimestampTz expires_at,
						 int32 entries, bytea *data)
{
	WeirCatalogPrivilege p;
	Oid			types[7] = {INT4OID, INT2OID, INT8OID, TIMESTAMPTZOID, INT4OID, BYTEAOID,
	INT2OID};
	Datum		values[7] = {Int32GetDatum(id), Int16GetDatum(space), Int64GetDatum(chunk),
		TimestampTzGetDatum(expires_at), Int32GetDatum(entries),
	PointerGetDatum(data), Int16GetDatum(WEIR_STATE_FORMAT)};
	char		nulls[7] = {' ', ' ', ' ', TIMESTAMP_NOT_FINITE(expires_at) ? 'n' : ' ', ' ', ' ',
	' '};

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("INSERT INTO weir.pipeline_chunk (pipeline_id, space, chunk, expires_at, entries, data, format) "
					  "VALUES ($1, $2, $3, $4, $5, $6, $7)",
					  7, types, values, nulls, SPI_OK_INSERT);
	weir_catalog_privileged_end(&p);
}

/*
 * Delete the chunks that expired by `watermark`, or (below_chunk > 0) all
 * chunks numbered below it; returns how many bytes of data went, and in
 * *entries how many entry images they held.
 */
int64
weir_catalog_delete_chunks(int32 id, int space, TimestampTz watermark, int64 below_chunk,
						   int64 *entries)
{
	WeirCatalogPrivilege p;
	Oid			types[4] = {INT4OID, TIMESTAMPTZOID, INT8OID, INT2OID};
	Datum		values[4] = {Int32GetDatum(id), TimestampTzGetDatum(watermark),
	Int64GetDatum(below_chunk), Int16GetDatum(space)};
	char		nulls[4] = {' ', TIMESTAMP_NOT_FINITE(watermark) ? 'n' : ' ', ' ', ' '};
	int64		bytes = 0;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("WITH gone AS (DELETE FROM weir.pipeline_chunk "
					  "WHERE pipeline_id = $1 AND space = $4 AND (expires_at <= $2 OR chunk < $3) "
					  "RETURNING octet_length(data) AS len, entries) "
					  "SELECT coalesce(sum(len), 0)::bigint, coalesce(sum(entries), 0)::bigint FROM gone",
					  4, types, values, nulls, SPI_OK_SELECT);
	*entries = 0;
	if (SPI_processed == 1)
	{
		bool		isnull;

		bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
		*entries = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 2, &isnull));
	}
	weir_catalog_privileged_end(&p);
	return bytes;
}

/*
 * A checkpoint's chunks (WeirChunk *) written as numbers first_chunk on;
 * then, after a compaction (they hold the whole state), every older chunk
 * deleted, else, unless `watermark` is not finite, the chunks expired by
 * it.  Returns the entries the deleted chunks held, and in *deleted_bytes
 * their data bytes when they were deleted for having expired (after a
 * compaction the worker counts the new chunks' bytes only: 0).
 */
int64
weir_catalog_apply_chunks(int32 id, int space, List *chunks, int64 first_chunk,
						  bool compacted, TimestampTz watermark, int64 *deleted_bytes)
{
	int64		next = first_chunk;
	int64		deleted_entries = 0;
	ListCell   *lc;

	*deleted_bytes = 0;
	if (compacted)
	{
		int64		bytes = 0;
		int64		entries = 0;

		foreach(lc, chunks)
		{
			WeirChunk  *c = lfirst(lc);

			bytes += VARSIZE_ANY_EXHDR(c->data);
			entries += c->entries;
		}
		weir_progress_begin(WEIR_PROGRESS_COMPACTION, WEIR_PHASE_WRITING_CHUNKS, bytes, entries);
	}
	foreach(lc, chunks)
	{
		WeirChunk  *c = lfirst(lc);

		weir_catalog_write_chunk(id, space, next++, c->expires_at, c->entries, c->data);
		if (compacted)
			weir_progress_advance(WEIR_PROGRESS_COMPACTION, VARSIZE_ANY_EXHDR(c->data),
								  c->entries);
	}
	if (compacted)
	{
		weir_progress_phase(WEIR_PROGRESS_COMPACTION, WEIR_PHASE_DELETING_CHUNKS);
		(void) weir_catalog_delete_chunks(id, space, DT_NOBEGIN, first_chunk,
										  &deleted_entries);
		weir_progress_end(WEIR_PROGRESS_COMPACTION);
	}
	else if (!TIMESTAMP_NOT_FINITE(watermark))
		*deleted_bytes = weir_catalog_delete_chunks(id, space, watermark, 0,
													&deleted_entries);
	return deleted_entries;
}

/*
 * What a pipeline's chunks hold, in every space: data bytes and entry
 * images (the totals of a restore, for weir.progress).  octet_length reads
 * the size a TOASTed value has once detoasted without detoasting it.
 */
void
weir_catalog_chunks_size(int32 id, int64 *bytes, int64 *entries)
{
	WeirCatalogPrivilege p;
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	bool		isnull;

	weir_catalog_privileged_begin(&p);
	weir_catalog_exec("SELECT coalesce(sum(octet_length(data)), 0)::bigint, "
					  "coalesce(sum(entries), 0)::bigint "
					  "FROM weir.pipeline_chunk WHERE pipeline_id = $1",
					  1, types, values, NULL, SPI_OK_SELECT);
	*bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										 &isnull));
	*entries = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
										   &isnull));
	weir_catalog_privileged_end(&p);
}

/*
 * Feed every chunk of a pipeline to `cb`, oldest first, one at a time
 * (a chunk can be large).  Returns the number of chunks; *bytes their size,
 * *next_chunk the number after the newest.  A chunk of another state
 * format than this build's is an error, before any chunk is read, and so
 * are chunks holding OIDs of types that have changed (check_type_oids).
 */
int64
weir_catalog_load_chunks(int32 id, int space, WeirChunkCallback cb, void *arg,
						 int64 *bytes, int64 *next_chunk)
{
	WeirCatalogPrivilege p;
	Oid			types[2] = {INT4OID, INT2OID};
	Datum		values[2] = {Int32GetDatum(id), Int16GetDatum(space)};
	SPIPlanPtr	plan;
	Portal		portal;
	int64		chunks = 0;

	*bytes = 0;
	*next_chunk = 1;
	weir_catalog_privileged_begin(&p);
	check_format(id, space);
	check_type_oids(id, space);
	plan = SPI_prepare("SELECT chunk, data, entries FROM weir.pipeline_chunk "
					   "WHERE pipeline_id = $1 AND space = $2 ORDER BY chunk", 2, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, values, NULL, true);
	for (;;)
	{
		HeapTuple	tup;
		bool		isnull;
		bytea	   *data;
		int64		chunk;

		SPI_cursor_fetch(portal, true, 1);
		if (SPI_processed == 0)
			break;
		tup = SPI_tuptable->vals[0];
		chunk = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		data = DatumGetByteaPP(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		cb(arg, VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data));
		*bytes += VARSIZE_ANY_EXHDR(data);
		*next_chunk = chunk + 1;
		chunks++;
		/* a restoring worker's weir.progress, chunk by chunk */
		weir_progress_advance(WEIR_PROGRESS_RESTORE, VARSIZE_ANY_EXHDR(data),
							  DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3,
														  &isnull)));
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	weir_catalog_privileged_end(&p);
	return chunks;
}
