/*-------------------------------------------------------------------------
 *
 * definition_parse.h
 *	  A definition's text parsed and bound (definition_parse.c).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/definition_parse.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_DEFINITION_PARSE_H
#define WEIR_DEFINITION_PARSE_H

#include "definition/definition.h"

extern WeirDefinition *weir_definition_parse(const WeirDefinitionText *text);

#endif							/* WEIR_DEFINITION_PARSE_H */
