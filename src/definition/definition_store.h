/*-------------------------------------------------------------------------
 *
 * definition_store.h
 *	  A bound definition stored as a view, and loaded back (definition_store.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_store.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEFINITION_STORE_H
#define WEIR_DEFINITION_STORE_H

#include "definition/definition.h"

extern Oid	weir_definition_store(WeirDefinition *def, const char *name, Oid owner);
extern WeirDefinition *weir_definition_load(Oid view, WeirOperatorKind op, int nkeys,
											List *names, Oid source, Oid right_source);
extern void weir_definition_drop(Oid view);
extern bool weir_definition_is_view(Oid relid);

#endif							/* WEIR_DEFINITION_STORE_H */
