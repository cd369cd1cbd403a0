/*-------------------------------------------------------------------------
 *
 * act_as.c
 *	  The one way weir runs something with another role's rights for a
 *	  while: catalog SQL as weir's owner, retention as a topic's owner,
 *	  definitions stored as weir_pipelines' owner, a pipeline's plan and
 *	  state read or checked as the pipeline's owner (doc/security.md).
 *
 * The role is set with SECURITY_LOCAL_USERID_CHANGE |
 * SECURITY_RESTRICTED_OPERATION (no SET ROLE, no temporary objects, no
 * work deferred to later), and search_path is pg_catalog, pg_temp: what
 * runs is what weir names, as autovacuum runs a table owner's index
 * functions.  Both are undone by weir_act_as_end, or by the transaction's
 * abort on an error.  (A pipeline's worker acts as its owner for its whole
 * life instead: weir_pipeline_act_as_owner.)
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/act_as.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "base/act_as.h"

void
weir_act_as_begin(WeirActAs *as, Oid role)
{
	GetUserIdAndSecContext(&as->save_userid, &as->save_sec_context);
	SetUserIdAndSecContext(role, as->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	as->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
weir_act_as_end(WeirActAs *as)
{
	AtEOXact_GUC(true, as->save_nestlevel);
	SetUserIdAndSecContext(as->save_userid, as->save_sec_context);
}
