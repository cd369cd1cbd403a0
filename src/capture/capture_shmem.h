/*-------------------------------------------------------------------------
 *
 * capture_shmem.h
 *	  What a capture's worker shows while it runs: one slot of shared
 *	  memory per running capture (capture_shmem.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/capture/capture_shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CAPTURE_SHMEM_H
#define WEIR_CAPTURE_SHMEM_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "storage/spin.h"

typedef struct WeirCaptureSlot
{
	slock_t		mutex;			/* protects everything below */
	Oid			dboid;			/* InvalidOid: free */
	int32		capture_id;
	int			pid;			/* its worker */
	XLogRecPtr	received_lsn;	/* decoded (local) or received (remote) up to */
	bool		caught_up;		/* nothing decoded is waiting to be written */
	TimestampTz caught_up_at;
	int64		changes;		/* topic rows written since the worker started */
	int64		transactions;	/* transactions with changes written */
	int64		connects;		/* remote: connections made */
	TimestampTz next_connect_at;	/* remote: back-off after a failure; 0: none */
} WeirCaptureSlot;

/* What a batch did */
typedef struct WeirCaptureProgress
{
	XLogRecPtr	position;		/* end of the last transaction written */
	TimestampTz position_time;	/* its commit time */
	int64		rows;			/* topic rows written */
	int64		transactions;	/* transactions written */
} WeirCaptureProgress;

extern void weir_capture_shmem_install_hooks(void);
extern WeirCaptureSlot *weir_capture_shmem_claim(int32 capture_id, int *holder_pid);
extern bool weir_capture_shmem_running(int32 capture_id);
extern void weir_capture_note_progress(WeirCaptureSlot *slot, XLogRecPtr received,
									   bool caught_up, const WeirCaptureProgress *progress);

#endif							/* WEIR_CAPTURE_SHMEM_H */
