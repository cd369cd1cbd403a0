/*-------------------------------------------------------------------------
 *
 * catalog_remote_sink.h
 *	  SQL on weir.pipeline_remote_sink: where a pipeline's remote sink is
 *	  and how its rows commit.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog_remote_sink.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_REMOTE_SINK_H
#define WEIR_CATALOG_REMOTE_SINK_H

#include "nodes/pg_list.h"

typedef enum WeirRemoteCommit
{
	WEIR_REMOTE_TWO_PHASE,
	WEIR_REMOTE_IDEMPOTENT
} WeirRemoteCommit;

typedef struct WeirRemoteSinkRow
{
	int32		pipeline_id;
	char	   *conninfo;		/* may hold a password: never shown */
	char	   *remote_schema;
	char	   *remote_table;
	WeirRemoteCommit commit;
	char	  **key_columns;	/* what upserts and deletes match on */
	int			nkey;
	char	   *prefix;			/* of its prepared transactions; its fence key */
	bool		abandoned;
	Oid			owner;			/* the pipeline's */
} WeirRemoteSinkRow;

/* A two-phase remote sink whose pipeline went unresolved */
typedef struct WeirRemoteSinkOrphan
{
	char	   *prefix;
	int32		pipeline_id;
	char	   *conninfo;
	Oid			owner;
	int64		last_checkpoint;
} WeirRemoteSinkOrphan;

extern const char *weir_remote_commit_name(WeirRemoteCommit commit);
extern void weir_catalog_remote_sink_insert(const WeirRemoteSinkRow *row);
extern bool weir_catalog_remote_sink(int32 pipeline_id, WeirRemoteSinkRow *row);
extern void weir_catalog_remote_sink_abandon(int32 pipeline_id);
extern List *weir_catalog_remote_sink_orphans(MemoryContext cxt);
extern void weir_catalog_remote_sink_orphan_resolved(const char *prefix);
extern void weir_catalog_remote_sink_resolved(int32 pipeline_id);

#endif							/* WEIR_CATALOG_REMOTE_SINK_H */
