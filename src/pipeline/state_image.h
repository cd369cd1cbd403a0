/*-------------------------------------------------------------------------
 *
 * state_image.h
 *	  Images of state a worker holds in its own memory, written when
 *	  weir.live_state asks (state_image.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/state_image.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_STATE_IMAGE_H
#define WEIR_STATE_IMAGE_H

#include "base/shmem.h"
#include "definition/definition.h"
#include "state/store.h"

extern void weir_state_image_serve(WeirPipelineSlot *slot, dsa_area *area,
								   WeirStore *store, WeirPlan *plan);
extern char *weir_state_image_request(WeirPipelineSlot *slot, int32 pipeline_id,
									  const char *name, Size *len);

#endif							/* WEIR_STATE_IMAGE_H */
