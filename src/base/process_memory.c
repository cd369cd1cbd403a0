/*-------------------------------------------------------------------------
 *
 * process_memory.c
 *	  Keeping freed memory in a pipeline's processes while they are busy.
 *
 * A pipeline worker frees, at every checkpoint, what it built for it: the
 * rows of the windows that fired, the package sent to the checkpoint
 * writer; the writer frees each package once written.  Reading a backlog,
 * that is tens of megabytes a checkpoint, in memory contexts whose large
 * blocks glibc maps and unmaps one by one, or trims off the top of the
 * heap, so that the next checkpoint's memory is new pages again: a page
 * fault costs microseconds, a large share of a worker's time through a
 * backlog (bench/README.md).  So these processes ask glibc to keep
 * what is freed for reuse (blocks below 32 MB from the heap, the heap's
 * top trimmed only past 256 MB free), and give the rest back themselves
 * once idle for a while (weir_memory_release_freed), so that a burst does
 * not hold memory for good.  With another C library nothing is done.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/process_memory.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/process_memory.h"

/* Blocks up to this size come from the heap, not one mapping each. */
#define KEEP_MMAP_THRESHOLD (32 * 1024 * 1024)	/* glibc's largest on 64 bits */
/* The heap's top is given back only past this much free. */
#define KEEP_TRIM_THRESHOLD (256 * 1024 * 1024)

/* Call once, at the start of the process. */
void
weir_memory_keep_freed(void)
{
#ifdef __GLIBC__
	/* a failure leaves glibc's defaults: slower, not wrong */
	(void) mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD);
	(void) mallopt(M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD);
#endif
}

/* Give what is free back to the operating system (when idle). */
void
weir_memory_release_freed(void)
{
#ifdef __GLIBC__
	(void) malloc_trim(0);
#endif
}
