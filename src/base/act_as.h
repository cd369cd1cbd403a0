/*-------------------------------------------------------------------------
 *
 * act_as.h
 *	  Acting as another role for a while: restricted, search_path pinned.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/act_as.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_ACT_AS_H
#define WEIR_ACT_AS_H

typedef struct WeirActAs
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} WeirActAs;

extern void weir_act_as_begin(WeirActAs *as, Oid role);
extern void weir_act_as_end(WeirActAs *as);

#endif							/* WEIR_ACT_AS_H */
