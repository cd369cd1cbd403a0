/*-------------------------------------------------------------------------
 *
 * process_memory.h
 *	  Keeping freed memory in a pipeline's processes while they are busy.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/process_memory.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_PROCESS_MEMORY_H
#define WEIR_PROCESS_MEMORY_H

extern void weir_memory_keep_freed(void);
extern void weir_memory_release_freed(void);

#endif							/* WEIR_PROCESS_MEMORY_H */
