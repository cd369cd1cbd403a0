/*-------------------------------------------------------------------------
 *
 * live.c
 *	  weir.live_state(): the open windows of a running pipeline, read from
 *	  its worker's DSA area by another backend; weir.committed_state(): those
 *	  of its last checkpoint, read from its chunks.
 *
 * The reader attaches to the area whose handle the pipeline slot
 * publishes (once its worker has restored its checkpoint: until then, no
 * rows), holds the slot's lock shared (the worker holds it exclusively
 * while it applies a batch, fires windows or checkpoints), copies the
 * windows out, releases the lock, detaches, and only then decodes keys and
 * computes aggregate values with the pipeline's plan.  What it returns is
 * consistent as of a batch boundary; it may be ahead of the last
 * checkpoint (weir.committed_state shows that one's).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/pipeline/live.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/act_as.h"
#include "base/shmem.h"
#include "base/sql_args.h"
#include "catalog_sql/catalog_pipeline.h"
#include "definition/aggregate.h"
#include "definition/definition.h"
#include "definition/key_image.h"
#include "definition/pipeline_plan.h"
#include "operator/operator.h"
#include "state/window.h"
#include "state/window_chunks.h"

typedef struct Copied
{
	TimestampTz start;
	TimestampTz end;
	uint8		flags;
	char	   *key;
	char	   *states;
} Copied;

/*
 * weir.live_state(pipeline text) RETURNS TABLE (key text, window_start
 *		timestamptz, window_end timestamptz, fired boolean, aggregates jsonb)
 */
/*
 * The plan of a pipeline the caller may read the state of, built and used
 * as its owner (a superuser reading a user's pipeline runs nothing of the
 * user's with the superuser's rights), restricted, with search_path
 * pg_catalog, pg_temp (act_as.c).  Pair with weir_act_as_end.
 */
static WeirPlan *
owned_pipeline_plan(const char *name, WeirPipelineRow *row, WeirActAs *as)
{
	if (!weir_catalog_pipeline_by_name(name, row))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", name),
				 errhint("See weir.pipelines for the pipelines of this database.")));
	if (!has_privs_of_role(GetUserId(), row->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of pipeline \"%s\" to read its state", name)));
	weir_act_as_begin(as, row->owner);
	return weir_pipeline_plan(row);
}

/* The copied windows as rows: keys as text, aggregate values as JSON text. */
static void
put_windows(ReturnSetInfo *rsinfo, WeirPlan *plan, Copied *copies, uint32 ncopies)
{
	Datum	   *keyvals = palloc(sizeof(Datum) * Max(plan->nkeys, 1));

	for (uint32 i = 0; i < ncopies; i++)
	{
		Copied	   *c = &copies[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		StringInfoData key;
		JsonbParseState *state = NULL;
		JsonbValue *result;

		weir_key_image_decode(plan, c->key, keyvals);
		initStringInfo(&key);
		for (int k = 0; k < plan->nkeys; k++)
		{
			Oid			out;
			bool		varlena;

			getTypeOutputInfo(plan->keys[k].type, &out, &varlena);
			appendStringInfo(&key, "%s%s", k > 0 ? ", " : "",
							 OidOutputFunctionCall(out, keyvals[k]));
		}
		pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
		for (int a = 0; a < plan->naggs; a++)
		{
			JsonbValue	jk;
			JsonbValue	jv;
			bool		isnull;
			/* generic states live in the worker's own memory: not readable here */
			Datum		v = plan->aggs[a].kind == WEIR_AGG_GENERIC ? (Datum) 0 :
				weir_agg_final(&plan->aggs[a], c->states, &isnull);

			if (plan->aggs[a].kind == WEIR_AGG_GENERIC)
				isnull = true;

			jk.type = jbvString;
			jk.val.string.val = plan->aggs[a].name;
			jk.val.string.len = strlen(plan->aggs[a].name);
			pushJsonbValue(&state, WJB_KEY, &jk);
			if (isnull)
				jv.type = jbvNull;
			else
			{
				Oid			out;
				bool		varlena;
				char	   *text;

				getTypeOutputInfo(plan->aggs[a].resulttype, &out, &varlena);
				text = OidOutputFunctionCall(out, v);
				jv.type = jbvString;
				jv.val.string.val = text;
				jv.val.string.len = strlen(text);
			}
			pushJsonbValue(&state, WJB_VALUE, &jv);
		}
		result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);

		/* a window aggregate without key: one group, no key to show */
		values[0] = CStringGetTextDatum(key.data);
		nulls[0] = plan->nkeys == 0;
		values[1] = TimestampTzGetDatum(c->start);
		values[2] = TimestampTzGetDatum(c->end);
		values[3] = BoolGetDatum((c->flags & WEIR_ENTRY_FIRED) != 0);
		values[4] = JsonbPGetDatum(JsonbValueToJsonb(result));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

PG_FUNCTION_INFO_V1(weir_live_state);
Datum
weir_live_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	WeirPipelineRow row;
	WeirPipelineSlot *slot;
	WeirPlan   *plan;
	dsa_area   *area;
	WeirStoreRoot *root;
	Copied	   *copies = NULL;
	uint32		ncopies = 0;
	WeirActAs	as;

	weir_require_arg(fcinfo, 0, "pipeline");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);
	plan = owned_pipeline_plan(name, &row, &as);

	slot = weir_shmem_pipeline(row.id, false);
	if (slot == NULL)
	{
		weir_act_as_end(&as);
		return (Datum) 0;
	}
	/* called from inside the pipeline's own worker (a user function) */
	if (LWLockHeldByMe(&slot->lock))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the live state of pipeline \"%s\" cannot be read from inside its own worker",
						name)));
	/* the worker yields its lock to waiting readers between records */
	pg_atomic_fetch_add_u32(&slot->readers_waiting, 1);
	LWLockAcquire(&slot->lock, LW_SHARED);
	pg_atomic_fetch_sub_u32(&slot->readers_waiting, 1);
	/* the slot may have changed hands since it was looked up */
	if (slot->area == DSM_HANDLE_INVALID || !DsaPointerIsValid(slot->root) ||
		!weir_shmem_pipeline_is(slot, row.id))
	{
		LWLockRelease(&slot->lock);
		weir_act_as_end(&as);
		return (Datum) 0;		/* not running, or still restoring (the
								 * worker publishes its store once
								 * restored): see weir.committed_state */
	}
	area = dsa_attach(slot->area);
	root = dsa_get_address(area, slot->root);
	/* the store is the one the plan describes (a pipeline may be replaced) */
	if (root->state_size == weir_operator_entry_state(plan))
	{
		dsa_pointer *slots = dsa_get_address(area, root->slots);

		copies = palloc(sizeof(Copied) * Max(root->used, 1));
		for (uint32 i = 0; i < root->capacity && ncopies < root->used; i++)
		{
			WeirEntry *w;
			Copied	   *c;

			if (slots[i] == InvalidDsaPointer || slots[i] == (dsa_pointer) 1)
				continue;
			w = dsa_get_address(area, slots[i] & WEIR_SLOT_PTR_MASK);
			c = &copies[ncopies++];
			if (plan->op != WEIR_OP_WINDOW)
			{
				/* a key: its time (dedup: last seen), and when it expires */
				memcpy(&c->start, weir_entry_states(root, w), sizeof(TimestampTz));
				c->end = plan->retention > 0 ? c->start + plan->retention : DT_NOEND;
			}
			else
			{
				c->start = w->start;
				c->end = weir_window_end(root, plan, w);
			}
			c->flags = weir_entry_flags(w);
			c->key = palloc(weir_entry_keylen(w));
			memcpy(c->key, weir_entry_key(w), weir_entry_keylen(w));
			c->states = palloc(plan->state_size);
			memcpy(c->states, weir_entry_states(root, w), plan->state_size);
		}
	}
	LWLockRelease(&slot->lock);
	dsa_detach(area);

	put_windows(rsinfo, plan, copies, ncopies);
	weir_act_as_end(&as);
	return (Datum) 0;
}

/* weir.committed_state: a restore of the last checkpoint, into copies */
typedef struct CommittedCopies
{
	WeirPlan   *plan;
	Copied	   *copies;
	uint32		n;
	uint32		cap;
} CommittedCopies;

static void
copy_committed(void *arg, const char *key, uint32 keylen, TimestampTz start,
			   TimestampTz end, bool fired, const char *state, uint32 statelen)
{
	CommittedCopies *cc = arg;
	Copied	   *c;

	if (statelen < cc->plan->state_size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupted checkpoint: bad window state")));
	if (cc->n == cc->cap)
	{
		cc->cap *= 2;
		cc->copies = repalloc_huge(cc->copies, sizeof(Copied) * cc->cap);
	}
	c = &cc->copies[cc->n++];
	c->start = start;
	c->end = end;
	c->flags = fired ? WEIR_ENTRY_FIRED : 0;
	c->key = palloc(Max(keylen, 1));
	memcpy(c->key, key, keylen);
	/* the fixed part; generic states (after it) are shown as null */
	c->states = palloc(cc->plan->state_size);
	memcpy(c->states, state, cc->plan->state_size);
}

PG_FUNCTION_INFO_V1(weir_committed_state);
Datum
weir_committed_state(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	WeirPipelineRow row;
	CommittedCopies cc;
	WeirWindowChunks wc;
	TimestampTz watermark;
	int64		bytes;
	WeirActAs	as;

	weir_require_arg(fcinfo, 0, "pipeline");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	cc.plan = owned_pipeline_plan(name, &row, &as);
	if (cc.plan->op != WEIR_OP_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pipeline \"%s\" is not a window pipeline", name),
				 errhint("The committed state of dedup, last value and join pipelines is in weir.pipeline_chunk.")));
	InitMaterializedSRF(fcinfo, 0);
	cc.cap = 64;
	cc.n = 0;
	cc.copies = palloc(sizeof(Copied) * cc.cap);
	(void) weir_catalog_last_checkpoint(row.id, &watermark);
	(void) weir_window_chunks_restore(&wc, row.id, watermark,
									  weir_window_margin(&cc.plan->windowing,
														 weir_interval_usecs(&row.allowed_lateness,
																			 "allowed_lateness")),
									  copy_committed, &cc, &bytes);
	put_windows(rsinfo, cc.plan, cc.copies, cc.n);
	weir_act_as_end(&as);
	return (Datum) 0;
}
