/*-------------------------------------------------------------------------
 *
 * key_image.h
 *	  A record's key as bytes: what state is keyed by, in memory and in
 *	  checkpoint chunks.
 *
 * Layout, key column after key column: a by-value type as its Datum (8
 * bytes), a fixed-length by-reference type as its bytes, a varlena as a
 * uint32 length and its data bytes (detoasted, no header).  No alignment
 * and no null (a null key is refused when the record is evaluated).  A
 * window aggregate without key has the empty image (length 0): one group,
 * which every part of the state handles like any other key.  The
 * layout is written into checkpoint chunks: changing it needs a new chunk
 * format (catalog_chunk.c), never a silent reinterpretation.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/key_image.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_KEY_IMAGE_H
#define WEIR_KEY_IMAGE_H

#include "common/hashfn.h"
#include "lib/stringinfo.h"

#include "base/columns.h"
#include "definition/definition.h"

/*
 * Append one key column's value to the image being built in buf.  Inline:
 * it runs for every key of every record read.
 */
static inline void
weir_key_image_append(StringInfo buf, WeirKeySpec *k, Datum value)
{
	if (k->typbyval)
		memcpy(weir_append_space(buf, sizeof(Datum)), &value, sizeof(Datum));
	else if (k->typlen > 0)
		appendBinaryStringInfo(buf, DatumGetPointer(value), k->typlen);
	else
	{
		struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
		uint32		len = VARSIZE_ANY_EXHDR(v);

		appendBinaryStringInfo(buf, (char *) &len, sizeof(uint32));
		appendBinaryStringInfo(buf, VARDATA_ANY(v), len);
	}
}

/*
 * The hash of a key image, which the entries of a record share.  A key of
 * one by-value column (one Datum) is the common case: its 8 bytes are
 * mixed with murmur3's 64-bit finalizer, a tenth of the instructions of
 * hash_bytes with as good an avalanche.  Hashes live only in memory (a
 * restore recomputes them), so the choice is free to change.
 */
static inline uint32
weir_key_image_hash(const char *key, uint32 keylen)
{
	if (keylen == sizeof(uint64))
	{
		uint64		h;

		memcpy(&h, key, sizeof(h));
		h ^= h >> 33;
		h *= UINT64CONST(0xff51afd7ed558ccd);
		h ^= h >> 33;
		h *= UINT64CONST(0xc4ceb9fe1a85ec53);
		h ^= h >> 33;
		return (uint32) h;
	}
	return hash_bytes((const unsigned char *) key, keylen);
}

extern void weir_key_image_decode(WeirPlan *plan, const char *image, Datum *values);

#endif							/* WEIR_KEY_IMAGE_H */
