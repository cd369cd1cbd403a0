/*-------------------------------------------------------------------------
 *
 * change_format.h
 *	  The messages weir's output plugin writes (output_plugin.c) and a
 *	  capture reads back (change_read.c): one per callback, binary.
 *
 * Integers are in network order (pqformat.h).  Every message starts with
 * its kind:
 *
 *	'B' begin	int64 final_lsn (the commit record), int64 end_lsn (after
 *				it), int64 commit time, uint32 xid
 *	'C' commit	int64 commit_lsn, int64 end_lsn, int64 commit time
 *	'I', 'U', 'D' a change of a captured table
 *				uint32 relid, then two tuples: the new row (insert, update)
 *				and the old one (update and delete: the replica identity's
 *				columns, or the whole row under REPLICA IDENTITY FULL),
 *				each a byte 'N' (none) or 'T' followed by int16 natts and,
 *				per attribute: uint32 type OID and a byte
 *					'n'	null, or a dropped column
 *					'u'	a TOASTed value the change did not carry (an update
 *						that left it alone)
 *					'v'	a value: int32 length and its image, as a tuple
 *						holds it (a by-value type's typlen bytes, a
 *						fixed-length type's bytes, a varlena with its header,
 *						never compressed or external, a cstring with its
 *						terminator)
 *	'T' truncate	int32 count, count x uint32 relid, byte flags (1:
 *				CASCADE, 2: RESTART IDENTITY)
 *
 * Images are only meaningful in the database that wrote them, for the
 * types they name: a reader checks each attribute's type against the
 * relation before it uses an image (change_read.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/change_format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CHANGE_FORMAT_H
#define WEIR_CHANGE_FORMAT_H

#define WEIR_CHANGE_BEGIN		'B'
#define WEIR_CHANGE_COMMIT		'C'
#define WEIR_CHANGE_INSERT		'I'
#define WEIR_CHANGE_UPDATE		'U'
#define WEIR_CHANGE_DELETE		'D'
#define WEIR_CHANGE_TRUNCATE	'T'

#define WEIR_TUPLE_NONE			'N'
#define WEIR_TUPLE_PRESENT		'T'

#define WEIR_ATT_NULL			'n'
#define WEIR_ATT_UNCHANGED		'u'
#define WEIR_ATT_VALUE			'v'

#define WEIR_TRUNCATE_CASCADE			1
#define WEIR_TRUNCATE_RESTART_IDENTITY	2

#endif							/* WEIR_CHANGE_FORMAT_H */
