/*-------------------------------------------------------------------------
 *
 * remote_capture.c
 *	  A capture of another server's tables.
 *
 * (In progress: replaced by the remote capture's worker loop.)
 *
 * IDENTIFICATION
 *	  src/capture/remote_capture.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "capture/remote_capture.h"

void
weir_remote_capture_run(WeirCaptureRow *capture, WeirCaptureSlot *slot)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("remote captures are not available in this build")));
	pg_unreachable();
}
