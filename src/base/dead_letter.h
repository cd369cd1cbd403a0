/*-------------------------------------------------------------------------
 *
 * dead_letter.h
 *	  The shape of a dead letter (dead_letter.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/dead_letter.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEAD_LETTER_H
#define WEIR_DEAD_LETTER_H

#include "lib/stringinfo.h"

#include "base/columns.h"

extern void weir_dead_letter_columns_init(WeirColumn *d);
extern bool weir_error_is_about_data(int sqlerrcode);
extern void weir_json_field(StringInfo buf, const char *name, Oid type, Datum value,
							bool isnull);

#endif							/* WEIR_DEAD_LETTER_H */
