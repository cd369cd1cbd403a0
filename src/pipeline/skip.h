/*-------------------------------------------------------------------------
 *
 * skip.h
 *	  Records a pipeline's owner asked it to move past (weir.skip).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/skip.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_SKIP_H
#define WEIR_SKIP_H

typedef struct WeirSkip
{
	Oid			source;
	int32		part;
	int64		position;
	char	   *error;			/* the dead letter's error */
} WeirSkip;

extern WeirSkip *weir_skip_load(int32 pipeline_id, int *n);
extern void weir_skip_after_failure(int32 pipeline_id, Oid source, int32 part, int64 position,
									const char *error);

#endif							/* WEIR_SKIP_H */
