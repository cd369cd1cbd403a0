/*-------------------------------------------------------------------------
 *
 * remote_define.c
 *	  Defining a capture of another server's publication.
 *
 * (In progress: replaced by the remote capture's definition.)
 *
 * IDENTIFICATION
 *	  src/capture/remote_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "capture/capture_define.h"

int32
weir_remote_capture_create(const char *name, const char *publication, const char *conninfo,
						   ArrayType *remote_tables, const char *topic_schema, int32 partitions,
						   Datum retention, bool has_retention)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("remote captures are not available in this build")));
	return 0;
}
