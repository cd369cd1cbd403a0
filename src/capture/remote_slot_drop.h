/*-------------------------------------------------------------------------
 *
 * remote_slot_drop.h
 *	  Dropping the remote slots of dropped remote captures, from the
 *	  launcher (remote_slot_drop.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/remote_slot_drop.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_REMOTE_SLOT_DROP_H
#define WEIR_REMOTE_SLOT_DROP_H

extern void weir_remote_drop_slots(void);

#endif							/* WEIR_REMOTE_SLOT_DROP_H */
