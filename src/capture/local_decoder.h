/*-------------------------------------------------------------------------
 *
 * local_decoder.h
 *	  A capture's logical decoding in its own process: one slot, one
 *	  decoding context kept for the worker's life (local_decoder.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/local_decoder.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_LOCAL_DECODER_H
#define WEIR_LOCAL_DECODER_H

#include "access/xlogdefs.h"
#include "utils/tuplestore.h"

typedef struct WeirLocalDecoder WeirLocalDecoder;

extern bool weir_local_slot_exists(const char *slot_name, bool *invalidated);
extern void weir_local_slot_create(const char *slot_name);
extern void weir_local_slot_drop(const char *slot_name);
extern WeirLocalDecoder *weir_local_decoder_start(const char *slot_name, const Oid *tables,
												  int ntables);
extern int	weir_local_decode(WeirLocalDecoder *d, Size max_bytes, bool *at_end);
extern Tuplestorestate *weir_local_decoder_messages(WeirLocalDecoder *d);
extern void weir_local_decoder_done(WeirLocalDecoder *d);
extern XLogRecPtr weir_local_decoder_read_upto(WeirLocalDecoder *d);
extern void weir_local_confirm(XLogRecPtr lsn);

#endif							/* WEIR_LOCAL_DECODER_H */
