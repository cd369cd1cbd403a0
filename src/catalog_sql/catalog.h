/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  All SQL that weir runs: its catalog tables and statements on topics.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/catalog_sql/catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_CATALOG_H
#define WEIR_CATALOG_H

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#include "base/act_as.h"

typedef struct WeirTopicRow
{
	int32		id;
	Oid			relid;
	int32		partitions;
	char	   *key_column;		/* NULL: none */
	bool		has_retention;
	Interval	retention;
} WeirTopicRow;

/* SQL run as another role (act_as.c), inside SPI */
typedef WeirActAs WeirCatalogPrivilege;

extern bool weir_catalog_trimming;

extern Oid	weir_namespace_owner(const char *nspname);
extern void weir_catalog_privileged_begin(WeirCatalogPrivilege *p);
extern void weir_catalog_as_role_begin(WeirCatalogPrivilege *p, Oid role);
extern void weir_catalog_privileged_end(WeirCatalogPrivilege *p);
extern void weir_catalog_rethrow_without_sql(MemoryContext cxt) pg_attribute_noreturn();
extern SPIPlanPtr weir_catalog_prepare_hiding_sql(const char *sql, int nargs, Oid *types);
extern int	weir_catalog_execute_hiding_sql(SPIPlanPtr plan, Datum *arrays);
extern void weir_catalog_exec_read_only(const char *sql, int nargs, Oid *types,
										Datum *values);
extern void weir_catalog_exec(const char *sql, int nargs, Oid *types,
							  Datum *values, const char *nulls, int expect);

/* topics */
extern bool weir_catalog_topic_by_relid(Oid relid, WeirTopicRow *row);
extern List *weir_catalog_topics(bool with_retention_only);
extern void weir_catalog_create_topic_table(const char *qualified_name,
											const char *columns);
extern int32 weir_catalog_topic_insert(Oid relid, int32 partitions,
									   const char *key_column,
									   Interval *retention);
extern int32 weir_catalog_topic_delete(Oid relid);
extern char *weir_catalog_pipeline_reading(Oid relid);
extern char *weir_catalog_capture_writing(Oid topic);
extern void weir_catalog_topic_set_retention(Oid relid, Interval *retention);
extern void weir_catalog_drop_table(Oid relid);
extern int64 *weir_catalog_count_rows(Oid relid, int32 partitions);

/* consumers */
extern int64 *weir_catalog_lock_consumer(int32 topic_id, const char *consumer,
										 int32 partitions);
extern void weir_catalog_set_consumer_position(int32 topic_id,
											   const char *consumer,
											   int32 part, int64 position);
extern bool weir_catalog_drop_consumer(int32 topic_id, const char *consumer);
extern bool weir_catalog_min_consumer_position(int32 topic_id, int32 part,
											   int64 *position);

/* retention */
extern bool weir_catalog_latest_sample(int32 topic_id, int32 part,
									   int64 *position, TimestampTz *at);
extern void weir_catalog_add_sample(int32 topic_id, int32 part, int64 position,
									TimestampTz at);
extern int64 weir_catalog_retention_bound(int32 topic_id, int32 part,
										  TimestampTz cutoff);
extern void weir_catalog_forget_samples(int32 topic_id, int32 part,
										int64 upto_position);
extern int64 weir_catalog_delete_rows(Oid relid, int32 part, int64 from_position,
									  int64 to_position);

#endif							/* WEIR_CATALOG_H */
