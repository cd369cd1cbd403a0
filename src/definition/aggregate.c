/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  Aggregates of windows: the fast path for count, sum, min, max and avg
 *	  (states a few flat bytes per window, no pointers, no palloc per
 *	  record), and the generic path for any combinable aggregate (its
 *	  transition, combine, serialise and final functions from pg_aggregate).
 *
 * Layouts, at WeirAggSpec.offset within a window's state bytes:
 *	count:			int64 n
 *	sum (int):		int128 sum, stored with its top bit flipped (memcpy'd:
 *					8-byte aligned only); all zero bytes, as a new window
 *					starts, mean no non-null input.  The one sum this cannot
 *					hold, -2^127, would take 2^64 inputs of int8's minimum:
 *					more than an int64 count could number.  Eight bytes a
 *					window fewer than a separate count (bench/window.sh)
 *	avg (int):		int64 n, int128 sum
 *	sum (int) over a change topic (WEIR_AGG_SUM_INT_COUNTED): as avg (int):
 *					an input taken back must know when none is left (NULL)
 *	sum (f8):		int64 n, float8 sum
 *	avg (f8):		int64 n, float8 sum, float8 sum of squared deviations
 *					(Youngs-Cramer, as float8_accum keeps it: only for its
 *					overflow, which PostgreSQL raises too)
 *					In both, bit 62 of n (FLOAT_OVERFLOWED) is set once
 *					finite inputs overflowed to an infinity, where PostgreSQL's
 *					float8pl, float8_accum and float8_combine raise "value
 *					out of range: overflow"
 *	min, max:		int64 n, Datum value (by-value types only)
 * n counts non-null inputs, so an all-null window yields NULL as SQL does.
 * Final values are computed with PostgreSQL's own functions (numeric
 * division for avg over integers), so they match what GROUP BY returns.
 *
 * Over a change topic, a row's before image or delete takes its inputs back
 * (weir_agg_retract): count, and sum and avg over integers, whose states
 * are exact (int128 sums), are what they would be had the row never come.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/aggregate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "common/int128.h"
#include "nodes/execnodes.h"
#include "nodes/makefuncs.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "base/dead_letter.h"
#include "base/subxact.h"
#include "definition/aggregate.h"

static inline int64 *
state_n(WeirAggSpec *agg, char *states)
{
	return (int64 *) (states + agg->offset);
}

static inline char *
state_value(WeirAggSpec *agg, char *states)
{
	return states + agg->offset + sizeof(int64);
}

#define SUM_INT_FLIP	(((uint128) 1) << 127)
#define FLOAT_OVERFLOWED	(INT64CONST(1) << 62)

/* A float sum, and whether it overflowed (PostgreSQL's float8pl check). */
static inline float8
float_add(float8 a, float8 b, bool *overflowed)
{
	float8		r = a + b;

	if (unlikely(isinf(r)) && !isinf(a) && !isinf(b))
		*overflowed = true;
	return r;
}

/*
 * avg(float8)'s state after one more input: float8_accum's computation
 * (Youngs-Cramer), n inputs before it.  True if it overflowed where
 * float8_accum raises.
 */
static inline bool
avg_float8_accum(WeirAggSpec *agg, char *states, int64 n, float8 x)
{
	float8	   *sx = (float8 *) (states + agg->offset + sizeof(int64));
	float8	   *sxx = sx + 1;
	float8		N = (float8) n;
	float8		newN = N + 1.0;
	float8		newSx = *sx + x;
	float8		newSxx = *sxx;
	bool		overflowed = false;

	if (n > 0)
	{
		float8		tmp = x * newN - newSx;

		newSxx = *sxx + tmp * tmp / (N * newN);
		if (unlikely(isinf(newSx) || isinf(newSxx)))
		{
			if (!isinf(*sx) && !isinf(x))
				overflowed = true;
			newSxx = get_float8_nan();
		}
	}
	else if (isinf(x) || isnan(x))
		newSxx = get_float8_nan();
	else
		newSxx = 0.0;
	*sx = newSx;
	*sxx = newSxx;
	return overflowed;
}

/*
 * avg(float8)'s states merged, as float8_combine does (n1, n2: their
 * counts).  True if it overflowed where float8_combine raises.
 */
static bool
avg_float8_combine(WeirAggSpec *agg, char *into, int64 n1, char *from, int64 n2)
{
	float8	   *sx1 = (float8 *) (into + agg->offset + sizeof(int64));
	float8	   *sxx1 = sx1 + 1;
	float8		sx2 = *(float8 *) (from + agg->offset + sizeof(int64));
	float8		sxx2 = *((float8 *) (from + agg->offset + sizeof(int64)) + 1);
	bool		overflowed = false;
	float8		N;
	float8		tmp;
	float8		sxx;

	if (n2 == 0)
		return false;
	if (n1 == 0)
	{
		*sx1 = sx2;
		*sxx1 = sxx2;
		return false;
	}
	N = (float8) n1 + (float8) n2;
	tmp = *sx1 / (float8) n1 - sx2 / (float8) n2;
	*sx1 = float_add(*sx1, sx2, &overflowed);
	sxx = *sxx1 + sxx2 + (float8) n1 * (float8) n2 * tmp * tmp / N;
	if (unlikely(isinf(sxx)) && !isinf(*sxx1) && !isinf(sxx2))
		overflowed = true;
	*sxx1 = sxx;
	return overflowed;
}

/* A sum (int) state: false when no non-null input was added yet. */
static inline bool
sum_int_get(WeirAggSpec *agg, char *states, int128 *sum)
{
	uint128		stored;

	memcpy(&stored, states + agg->offset, sizeof(uint128));
	if (stored == 0)
	{
		*sum = 0;
		return false;
	}
	*sum = (int128) (stored ^ SUM_INT_FLIP);
	return true;
}

static inline void
sum_int_put(WeirAggSpec *agg, char *states, int128 sum)
{
	uint128		stored = ((uint128) sum) ^ SUM_INT_FLIP;

	memcpy(states + agg->offset, &stored, sizeof(uint128));
}

/* Compare two by-value datums of the aggregate's argument type. */
static int
compare_values(Oid type, Datum a, Datum b)
{
	switch (type)
	{
		case INT2OID:
			return (DatumGetInt16(a) > DatumGetInt16(b)) - (DatumGetInt16(a) < DatumGetInt16(b));
		case INT4OID:
			return (DatumGetInt32(a) > DatumGetInt32(b)) - (DatumGetInt32(a) < DatumGetInt32(b));
		case FLOAT8OID:
			return float8_cmp_internal(DatumGetFloat8(a), DatumGetFloat8(b));
		default:				/* int8, timestamptz */
			return (DatumGetInt64(a) > DatumGetInt64(b)) - (DatumGetInt64(a) < DatumGetInt64(b));
	}
}

static int64
integer_value(Oid type, Datum value)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

void
weir_agg_accum(WeirAggSpec *agg, char *states, Datum value, bool isnull)
{
	int64	   *n = state_n(agg, states);

	if (agg->kind == WEIR_AGG_COUNT_STAR)
	{
		(*n)++;
		return;
	}
	if (isnull)
		return;
	if (agg->kind == WEIR_AGG_SUM_INT)
	{
		int128		sum;

		(void) sum_int_get(agg, states, &sum);
		sum_int_put(agg, states, sum + integer_value(agg->argtype, value));
		return;
	}
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT:
			break;
		case WEIR_AGG_AVG_INT:
		case WEIR_AGG_SUM_INT_COUNTED:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				sum += integer_value(agg->argtype, value);
				memcpy(state_value(agg, states), &sum, sizeof(int128));
				break;
			}
		case WEIR_AGG_SUM_FLOAT8:
			{
				float8	   *sum = (float8 *) state_value(agg, states);
				bool		overflowed = false;

				*sum = float_add(*sum, DatumGetFloat8(value), &overflowed);
				if (unlikely(overflowed))
					*n |= FLOAT_OVERFLOWED;
				break;
			}
		case WEIR_AGG_AVG_FLOAT8:
			if (unlikely(avg_float8_accum(agg, states, *n & ~FLOAT_OVERFLOWED,
										  DatumGetFloat8(value))))
				*n |= FLOAT_OVERFLOWED;
			break;
		case WEIR_AGG_MIN:
		case WEIR_AGG_MAX:
			{
				Datum	   *current = (Datum *) state_value(agg, states);
				int			cmp;

				if (*n == 0)
				{
					*current = value;
					break;
				}
				cmp = compare_values(agg->argtype, value, *current);
				if ((agg->kind == WEIR_AGG_MIN && cmp < 0) ||
					(agg->kind == WEIR_AGG_MAX && cmp > 0))
					*current = value;
				break;
			}
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_SUM_INT:	/* above */
		case WEIR_AGG_GENERIC:
			break;
	}
	(*n)++;
}

/*
 * Whether weir_agg_retract can take this input back: the states hold an
 * input like it (a count that would go below zero means the before image
 * or delete does not match what was added).  Only for the kinds
 * definition.c lets a change topic have.
 */
bool
weir_agg_can_retract(WeirAggSpec *agg, char *states, Datum value, bool isnull)
{
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT_STAR:
			return *state_n(agg, states) > 0;
		case WEIR_AGG_COUNT:
		case WEIR_AGG_SUM_INT_COUNTED:
		case WEIR_AGG_AVG_INT:
			return isnull || *state_n(agg, states) > 0;
		default:
			elog(ERROR, "aggregate kind %d cannot take back an input", agg->kind);
	}
	return false;				/* keep compiler quiet */
}

/*
 * Take one input back (an update's before image, a delete): the states
 * become what they would be had it never been added (weir_agg_accum).  The
 * caller has asked weir_agg_can_retract.
 */
void
weir_agg_retract(WeirAggSpec *agg, char *states, Datum value, bool isnull)
{
	int64	   *n = state_n(agg, states);

	Assert(weir_agg_can_retract(agg, states, value, isnull));
	if (agg->kind == WEIR_AGG_COUNT_STAR)
	{
		(*n)--;
		return;
	}
	if (isnull)
		return;
	if (agg->kind == WEIR_AGG_SUM_INT_COUNTED || agg->kind == WEIR_AGG_AVG_INT)
	{
		int128		sum;

		memcpy(&sum, state_value(agg, states), sizeof(int128));
		sum -= integer_value(agg->argtype, value);
		memcpy(state_value(agg, states), &sum, sizeof(int128));
	}
	(*n)--;
}

/*
 * The error weir_agg_final would raise for these states, as GROUP BY over
 * the same rows raises it, or NULL: a checkpoint asks first, so that such
 * a window becomes a dead letter instead of failing every checkpoint.
 */
const char *
weir_agg_final_problem(WeirAggSpec *agg, char *states)
{
	if (agg->kind == WEIR_AGG_SUM_INT && agg->resulttype == INT8OID)
	{
		int128		sum;

		if (sum_int_get(agg, states, &sum) && (sum < PG_INT64_MIN || sum > PG_INT64_MAX))
			return "bigint out of range";
	}
	else if (agg->kind == WEIR_AGG_SUM_INT_COUNTED && agg->resulttype == INT8OID &&
			 *state_n(agg, states) > 0)
	{
		int128		sum;

		memcpy(&sum, state_value(agg, states), sizeof(int128));
		if (sum < PG_INT64_MIN || sum > PG_INT64_MAX)
			return "bigint out of range";
	}
	else if ((agg->kind == WEIR_AGG_SUM_FLOAT8 || agg->kind == WEIR_AGG_AVG_FLOAT8) &&
			 (*state_n(agg, states) & FLOAT_OVERFLOWED))
		return "value out of range: overflow";
	return NULL;
}

/* Merge the state `from` into `into` (session windows that meet). */
void
weir_agg_combine(WeirAggSpec *agg, char *into, char *from)
{
	int64	   *n_into;
	int64		n_from;

	if (agg->kind == WEIR_AGG_GENERIC)
	{
		weir_agg_generic_combine(agg, into, from);
		return;
	}
	if (agg->kind == WEIR_AGG_SUM_INT)
	{
		int128		a;
		int128		b;

		if (sum_int_get(agg, from, &b))
		{
			(void) sum_int_get(agg, into, &a);
			sum_int_put(agg, into, a + b);
		}
		return;
	}
	n_into = state_n(agg, into);
	n_from = *state_n(agg, from);
	if (n_from == 0)
		return;
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_COUNT:
			break;
		case WEIR_AGG_AVG_INT:
		case WEIR_AGG_SUM_INT_COUNTED:
			{
				int128		a;
				int128		b;

				memcpy(&a, state_value(agg, into), sizeof(int128));
				memcpy(&b, state_value(agg, from), sizeof(int128));
				a += b;
				memcpy(state_value(agg, into), &a, sizeof(int128));
				break;
			}
		case WEIR_AGG_SUM_FLOAT8:
			{
				float8	   *sum = (float8 *) state_value(agg, into);
				bool		overflowed = ((*n_into | n_from) & FLOAT_OVERFLOWED) != 0;

				*sum = float_add(*sum, *(float8 *) state_value(agg, from), &overflowed);
				*n_into = ((*n_into & ~FLOAT_OVERFLOWED) + (n_from & ~FLOAT_OVERFLOWED)) |
					(overflowed ? FLOAT_OVERFLOWED : 0);
				return;
			}
		case WEIR_AGG_AVG_FLOAT8:
			{
				bool		overflowed = ((*n_into | n_from) & FLOAT_OVERFLOWED) != 0;

				overflowed |= avg_float8_combine(agg, into, *n_into & ~FLOAT_OVERFLOWED,
												 from, n_from & ~FLOAT_OVERFLOWED);
				*n_into = ((*n_into & ~FLOAT_OVERFLOWED) + (n_from & ~FLOAT_OVERFLOWED)) |
					(overflowed ? FLOAT_OVERFLOWED : 0);
				return;
			}
		case WEIR_AGG_SUM_INT:	/* above */
		case WEIR_AGG_GENERIC:
			break;
		case WEIR_AGG_MIN:
		case WEIR_AGG_MAX:
			{
				Datum		v = *(Datum *) state_value(agg, from);
				Datum	   *current = (Datum *) state_value(agg, into);
				int			cmp = *n_into == 0 ? 0 : compare_values(agg->argtype, v, *current);

				if (*n_into == 0 ||
					(agg->kind == WEIR_AGG_MIN && cmp < 0) ||
					(agg->kind == WEIR_AGG_MAX && cmp > 0))
					*current = v;
				break;
			}
	}
	*n_into += n_from;
}

/* int128 to numeric, through int8 when it fits (the common case). */
static Datum
int128_numeric(int128 value)
{
	char		buf[48];
	char	   *p = buf + sizeof(buf) - 1;
	bool		negative = value < 0;
	uint128		u = negative ? -(uint128) value : (uint128) value;

	if (value >= PG_INT64_MIN && value <= PG_INT64_MAX)
		return NumericGetDatum(int64_to_numeric((int64) value));
	*p = '\0';
	do
	{
		*--p = '0' + (int) (u % 10);
		u /= 10;
	} while (u > 0);
	if (negative)
		*--p = '-';
	return DirectFunctionCall3(numeric_in, CStringGetDatum(p),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

Datum
weir_agg_final(WeirAggSpec *agg, char *states, bool *isnull)
{
	int64		n;

	if (agg->kind == WEIR_AGG_GENERIC)
		return weir_agg_generic_final(agg, states, isnull);
	if (agg->kind == WEIR_AGG_SUM_INT)
	{
		int128		sum;

		*isnull = !sum_int_get(agg, states, &sum);
		if (*isnull)
			return (Datum) 0;
		if (agg->resulttype == INT8OID)
		{
			if (sum < PG_INT64_MIN || sum > PG_INT64_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			return Int64GetDatum((int64) sum);
		}
		return int128_numeric(sum);
	}
	n = *state_n(agg, states);
	if (agg->kind == WEIR_AGG_SUM_FLOAT8 || agg->kind == WEIR_AGG_AVG_FLOAT8)
	{
		if (n & FLOAT_OVERFLOWED)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("value out of range: overflow")));
	}
	*isnull = false;
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_COUNT:
			return Int64GetDatum(n);
		default:
			break;
	}
	if (n == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (agg->kind)
	{
		case WEIR_AGG_AVG_INT:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				return DirectFunctionCall2(numeric_div, int128_numeric(sum),
										   NumericGetDatum(int64_to_numeric(n)));
			}
		case WEIR_AGG_SUM_INT_COUNTED:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				if (agg->resulttype != INT8OID)
					return int128_numeric(sum);
				if (sum < PG_INT64_MIN || sum > PG_INT64_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("bigint out of range")));
				return Int64GetDatum((int64) sum);
			}
		case WEIR_AGG_SUM_FLOAT8:
			return Float8GetDatum(*(float8 *) state_value(agg, states));
		case WEIR_AGG_AVG_FLOAT8:
			return Float8GetDatum(*(float8 *) state_value(agg, states) / (float8) n);
		case WEIR_AGG_MIN:
		case WEIR_AGG_MAX:
			return *(Datum *) state_value(agg, states);
		default:
			elog(ERROR, "unrecognized aggregate kind: %d", agg->kind);
	}
	return (Datum) 0;
}

/*
 * The generic path: any aggregate whose state PostgreSQL can combine and
 * serialise, driven by its pg_aggregate entry (definition.c plan_generic).
 * Its state cannot be flat: it lives in this worker's memory and the
 * window's 8 state bytes hold a pointer to it.  Functions are called as
 * nodeAgg calls them, with a WindowAggState as the aggregate context, so
 * that AggCheckCallContext() hands them the state's own memory context.
 *
 * PostgreSQL's contract for partial aggregation is that a transition
 * function only ever sees states it built itself (from the initial value),
 * while a combine function accepts transition states, combined states and
 * deserialised states alike (hll_add_trans0 crashes on a deserialised
 * state).  So each state has two parts:
 *	live: fed by the transition function since the last fold;
 *	base: everything before, restored from a checkpoint or folded; only
 *		  combine, serialise and final functions touch it.
 * fold() moves live into base (by combining, or just by taking it when base
 * is empty); it runs when a value is needed (final, checkpoint, merge), not
 * per record.  Each part has a small memory context of its own.
 */
typedef struct GenericPart
{
	MemoryContext cxt;			/* holds this struct and the value */
	Datum		value;
	bool		isnull;
} GenericPart;

typedef struct WeirGenericState
{
	GenericPart *base;			/* NULL: nothing folded or restored yet */
	GenericPart *live;			/* NULL: no record since the last fold */
} WeirGenericState;

static MemoryContext generic_parent = NULL;

/*
 * The LWLock a pipeline's worker holds while it applies records and fires
 * or collects windows (its slot's), or NULL.  A generic aggregate's
 * functions are user code in any language: they run with that lock let go
 * (an LWLock holds interrupts off, and readers of weir.live_state would
 * wait for whatever the function does) and retaken after.  Every place
 * that calls them has the state store consistent for readers: a window
 * being fed, fired or written is whole and in the store.
 */
static LWLock *user_code_lock = NULL;

void
weir_agg_set_user_code_lock(LWLock *lock)
{
	user_code_lock = lock;
}

static Datum
call_user_function(FunctionCallInfo fcinfo)
{
	bool		held = user_code_lock != NULL && LWLockHeldByMe(user_code_lock);
	Datum		value;

	if (held)
		LWLockRelease(user_code_lock);
	value = FunctionCallInvoke(fcinfo);
	if (held)
		LWLockAcquire(user_code_lock, LW_EXCLUSIVE);
	return value;
}
static WindowAggState *agg_context = NULL;

static WeirGenericState **
generic_slot(WeirAggSpec *agg, char *states)
{
	return (WeirGenericState **) (states + agg->offset);
}

static Node *
context_for(MemoryContext cxt)
{
	if (agg_context == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		agg_context = makeNode(WindowAggState);
		MemoryContextSwitchTo(oldcxt);
	}
	agg_context->curaggcontext = cxt;
	return (Node *) agg_context;
}

static GenericPart *
new_part(void)
{
	MemoryContext cxt = AllocSetContextCreate(generic_parent, "weir aggregate state",
											  ALLOCSET_SMALL_SIZES);
	GenericPart *part = MemoryContextAllocZero(cxt, sizeof(GenericPart));

	part->cxt = cxt;
	part->isnull = true;
	return part;
}

static void
free_part(GenericPart *part)
{
	if (part)
		MemoryContextDelete(part->cxt);
}

static WeirGenericState *
generic_state(WeirAggSpec *agg, char *states)
{
	WeirGenericState **slot = generic_slot(agg, states);

	if (generic_parent == NULL)
		generic_parent = AllocSetContextCreate(TopMemoryContext, "weir aggregate states",
											   ALLOCSET_DEFAULT_SIZES);
	if (*slot == NULL)
		*slot = MemoryContextAllocZero(generic_parent, sizeof(WeirGenericState));
	return *slot;
}

/*
 * Keep a new value in a part, copying it into the part's context, and free
 * the value it replaces, as nodeAgg does (ExecAggTransReparent): a part
 * lives as long as its window, and a by-reference state replaced at every
 * record (an array grown by array_append, a text by textcat) would
 * otherwise leave each former value behind in it, the part's memory
 * growing with the square of its inputs.  Only a value in the part's own
 * context is freed (every kept value is: it was copied there); an internal
 * state belongs to the part's context as a whole.  Where nodeAgg keeps a
 * read-write expanded object as it is, a part keeps it flat (below).
 */
static void
keep_value(WeirAggSpec *agg, GenericPart *part, Datum value, bool isnull)
{
	Datum		old = part->value;
	bool		old_isnull = part->isnull;

	if (!agg->transtypebyval && agg->transtype != INTERNALOID &&
		DatumGetPointer(value) != DatumGetPointer(old))
	{
		if (!isnull && DatumIsReadWriteExpandedObject(value, false, agg->transtypelen))
		{
			/*
			 * A read-write expanded object (array_append makes one, in a
			 * context under the aggregate context it finds: this part's) is
			 * the caller's to free: kept flat, as every value of a part is
			 * (checkpoints and images copy its bytes), then deleted.
			 */
			MemoryContext oldcxt = MemoryContextSwitchTo(part->cxt);
			Datum		flat = datumCopy(value, false, agg->transtypelen);

			MemoryContextSwitchTo(oldcxt);
			DeleteExpandedObject(value);
			value = flat;
		}
		else if (!isnull && !MemoryContextContains(part->cxt, DatumGetPointer(value)))
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(part->cxt);

			value = datumCopy(value, false, agg->transtypelen);
			MemoryContextSwitchTo(oldcxt);
		}
		if (!old_isnull && DatumGetPointer(old) != NULL &&
			MemoryContextContains(part->cxt, DatumGetPointer(old)))
		{
			if (DatumIsReadWriteExpandedObject(old, false, agg->transtypelen))
				DeleteExpandedObject(old);
			else
				pfree(DatumGetPointer(old));
		}
	}
	part->value = value;
	part->isnull = isnull;
}

void
weir_agg_generic_accum(WeirAggSpec *agg, char *states, Datum *args, bool *nulls)
{
	WeirGenericState *gs = generic_state(agg, states);
	GenericPart *live;
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		value;

	if (gs->live == NULL)
	{
		gs->live = new_part();
		if (agg->has_initval)
			keep_value(agg, gs->live,
					   agg->transtypebyval ? agg->initval :
					   datumCopy(agg->initval, false, agg->transtypelen), false);
	}
	live = gs->live;
	if (agg->transfn.fn_strict)
	{
		for (int j = 0; j < agg->nargs; j++)
			if (nulls[j])
				return;
		if (live->isnull)
		{
			/* as nodeAgg: the first input becomes the state (copied) */
			keep_value(agg, live, args[0], false);
			return;
		}
	}
	InitFunctionCallInfoData(*fcinfo, &agg->transfn, agg->nargs + 1, agg->collation,
							 context_for(live->cxt), NULL);
	fcinfo->args[0].value = live->value;
	fcinfo->args[0].isnull = live->isnull;
	for (int j = 0; j < agg->nargs; j++)
	{
		fcinfo->args[j + 1].value = args[j];
		fcinfo->args[j + 1].isnull = nulls[j];
	}
	value = call_user_function(fcinfo);
	keep_value(agg, live, value, fcinfo->isnull);
}

/* base := combine(base, other); `other` is consumed (freed or taken). */
static void
combine_into_base(WeirAggSpec *agg, WeirGenericState *gs, GenericPart *other)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		value;

	if (other == NULL)
		return;
	if (other->isnull)
	{
		free_part(other);
		return;
	}
	if (gs->base == NULL || (gs->base->isnull && agg->combinefn.fn_strict))
	{
		free_part(gs->base);
		gs->base = other;		/* as nodeAgg: the first input becomes the state */
		return;
	}
	InitFunctionCallInfoData(*fcinfo, &agg->combinefn, 2, agg->collation,
							 context_for(gs->base->cxt), NULL);
	fcinfo->args[0].value = gs->base->value;
	fcinfo->args[0].isnull = gs->base->isnull;
	fcinfo->args[1].value = other->value;
	fcinfo->args[1].isnull = false;
	value = call_user_function(fcinfo);
	keep_value(agg, gs->base, value, fcinfo->isnull);
	free_part(other);
}

static void
fold(WeirAggSpec *agg, WeirGenericState *gs)
{
	GenericPart *live = gs->live;

	gs->live = NULL;
	combine_into_base(agg, gs, live);
}

/* The state serialised: serialfn for internal states, send otherwise. */
static bytea *
generic_serialize(WeirAggSpec *agg, GenericPart *part)
{
	if (agg->transtype == INTERNALOID)
	{
		LOCAL_FCINFO(fcinfo, 1);

		InitFunctionCallInfoData(*fcinfo, &agg->serialfn, 1, agg->collation,
								 context_for(part->cxt), NULL);
		fcinfo->args[0].value = part->value;
		fcinfo->args[0].isnull = false;
		return DatumGetByteaPP(call_user_function(fcinfo));
	}
	else
	{
		Oid			send;
		bool		varlena;

		getTypeBinaryOutputInfo(agg->transtype, &send, &varlena);
		return OidSendFunctionCall(send, part->value);
	}
}

/*
 * A part holding a serialised state.  As in nodeAgg, the deserialised value
 * is transient (hll_deserialize, for one, pallocs it in the current memory
 * context), so it is combined at once into a part of its own, through the
 * combine function, which copies it into the part's context.
 */
static GenericPart *
generic_deserialize(WeirAggSpec *agg, bytea *data)
{
	GenericPart *part = new_part();
	Datum		value;

	if (agg->transtype == INTERNALOID)
	{
		LOCAL_FCINFO(fcinfo, 2);

		InitFunctionCallInfoData(*fcinfo, &agg->deserialfn, 2, agg->collation,
								 context_for(part->cxt), NULL);
		fcinfo->args[0].value = PointerGetDatum(data);
		fcinfo->args[0].isnull = false;
		fcinfo->args[1].value = (Datum) 0;
		fcinfo->args[1].isnull = false;
		value = call_user_function(fcinfo);

		/* combine(NULL, value): internal combine functions are not strict */
		InitFunctionCallInfoData(*fcinfo, &agg->combinefn, 2, agg->collation,
								 context_for(part->cxt), NULL);
		fcinfo->args[0].value = (Datum) 0;
		fcinfo->args[0].isnull = true;
		fcinfo->args[1].value = value;
		fcinfo->args[1].isnull = false;
		value = call_user_function(fcinfo);
		keep_value(agg, part, value, fcinfo->isnull);
	}
	else
	{
		Oid			recv;
		Oid			ioparam;
		StringInfoData buf;

		getTypeBinaryInputInfo(agg->transtype, &recv, &ioparam);
		buf.data = VARDATA_ANY(data);
		buf.len = VARSIZE_ANY_EXHDR(data);
		buf.maxlen = buf.len;
		buf.cursor = 0;
		value = OidReceiveFunctionCall(recv, &buf, ioparam, -1);
		keep_value(agg, part, value, false);	/* copies into the part */
	}
	return part;
}

/* Merge `from` into `into` (sessions); `from`'s state is consumed. */
void
weir_agg_generic_combine(WeirAggSpec *agg, char *into, char *from)
{
	WeirGenericState *src = *generic_slot(agg, from);
	WeirGenericState *dst;
	GenericPart *taken;

	if (src == NULL)
		return;
	fold(agg, src);
	dst = generic_state(agg, into);
	fold(agg, dst);
	taken = src->base;
	src->base = NULL;
	combine_into_base(agg, dst, taken);
}

/*
 * The aggregate's result, in the caller's memory context.  A final
 * function that may modify its state works on a copy, since late records
 * and merging sessions may still update the window.
 */
/* One generic aggregate's final value, for weir_in_subtransaction */
typedef struct GuardedFinal
{
	WeirAggSpec *agg;
	char	   *states;
	Datum		value;
	bool		isnull;
} GuardedFinal;

static void
guarded_final(void *arg)
{
	GuardedFinal *f = arg;

	f->value = weir_agg_generic_final(f->agg, f->states, &f->isnull);
}

/*
 * weir_agg_generic_final with the errors of the user's functions (combine
 * while folding, serialise, final) caught: NULL and the value, or the
 * error's message, so that such a window is a dead letter (sink_rows.c)
 * instead of an error at every checkpoint.  The slot lock the worker held,
 * let go while the function ran, is held again either way.
 */
const char *
weir_agg_generic_final_guarded(WeirAggSpec *agg, char *states, Datum *value, bool *isnull)
{
	GuardedFinal f = {agg, states, (Datum) 0, true};
	bool		held = user_code_lock != NULL && LWLockHeldByMe(user_code_lock);
	ErrorData  *edata;

	if (weir_in_subtransaction(guarded_final, &f, &edata))
	{
		*value = f.value;
		*isnull = f.isnull;
		return NULL;
	}
	/* the subtransaction's abort let go of every LWLock */
	if (held && !LWLockHeldByMe(user_code_lock))
		LWLockAcquire(user_code_lock, LW_EXCLUSIVE);
	if (!weir_error_is_about_data(edata->sqlerrcode))
		ReThrowError(edata);
	return edata->message;
}

Datum
weir_agg_generic_final(WeirAggSpec *agg, char *states, bool *isnull)
{
	WeirGenericState *gs = *generic_slot(agg, states);
	GenericPart *use;
	GenericPart *copy = NULL;
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		result;
	int16		len;
	bool		byval;

	if (gs)
		fold(agg, gs);
	use = gs ? gs->base : NULL;
	if (use == NULL || (use->isnull && agg->finalfn.fn_oid != InvalidOid &&
						agg->finalfn.fn_strict))
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (agg->finalfn.fn_oid == InvalidOid)
	{
		*isnull = use->isnull;
		return use->isnull ? (Datum) 0 :
			datumCopy(use->value, agg->transtypebyval, agg->transtypelen);
	}
	if (agg->finalmodify != AGGMODIFY_READ_ONLY && !use->isnull)
		use = copy = generic_deserialize(agg, generic_serialize(agg, use));
	InitFunctionCallInfoData(*fcinfo, &agg->finalfn, agg->finalextra ? agg->nargs + 1 : 1,
							 InvalidOid, context_for(use->cxt), NULL);
	fcinfo->args[0].value = use->value;
	fcinfo->args[0].isnull = use->isnull;
	for (int j = 1; j < fcinfo->nargs; j++)
	{
		fcinfo->args[j].value = (Datum) 0;
		fcinfo->args[j].isnull = true;
	}
	result = call_user_function(fcinfo);
	*isnull = fcinfo->isnull;
	get_typlenbyval(agg->resulttype, &len, &byval);
	if (!*isnull)
		result = datumCopy(result, byval, len);
	free_part(copy);
	return result;
}

/*
 * Make `cxt` the parent of the generic states built from now on, and
 * return the one before (NULL: none yet, one is made under
 * TopMemoryContext when first needed).  A backend that decodes states for
 * a while (the state views) gives them a context that goes with its call,
 * so that an error on the way leaks none; it swaps the old one back after.
 */
MemoryContext
weir_agg_generic_parent_swap(MemoryContext cxt)
{
	MemoryContext before = generic_parent;

	generic_parent = cxt;
	return before;
}

/* Bytes held by generic states in this process (a walk over their contexts). */
int64
weir_agg_generic_bytes(void)
{
	return generic_parent ? (int64) MemoryContextMemAllocated(generic_parent, true) : 0;
}

/* Free the local states of a window's generic aggregates. */
void
weir_agg_free_generic(WeirPlan *plan, char *states)
{
	for (int i = 0; i < plan->naggs; i++)
	{
		WeirGenericState **slot;

		if (plan->aggs[i].kind != WEIR_AGG_GENERIC)
			continue;
		slot = generic_slot(&plan->aggs[i], states);
		if (*slot)
		{
			free_part((*slot)->base);
			free_part((*slot)->live);
			pfree(*slot);
		}
		*slot = NULL;
	}
}

/*
 * A window's states as stored in a checkpoint: the flat bytes, then for
 * each generic aggregate an int32 length (-1: null state) and its
 * serialised state.
 */
bytea *
weir_agg_states_image(WeirPlan *plan, char *states)
{
	StringInfoData buf;
	bytea	   *image;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, states, plan->state_size);
	for (int i = 0; i < plan->naggs && plan->has_generic; i++)
	{
		WeirAggSpec *agg = &plan->aggs[i];
		WeirGenericState *gs;
		int32		len = -1;

		if (agg->kind != WEIR_AGG_GENERIC)
			continue;
		gs = *generic_slot(agg, states);
		if (gs)
			fold(agg, gs);
		if (gs && gs->base && !gs->base->isnull)
		{
			bytea	   *data = generic_serialize(agg, gs->base);

			len = VARSIZE_ANY_EXHDR(data);
			appendBinaryStringInfo(&buf, (char *) &len, sizeof(int32));
			appendBinaryStringInfo(&buf, VARDATA_ANY(data), len);
		}
		else
			appendBinaryStringInfo(&buf, (char *) &len, sizeof(int32));
	}
	image = palloc(VARHDRSZ + buf.len);
	SET_VARSIZE(image, VARHDRSZ + buf.len);
	memcpy(VARDATA(image), buf.data, buf.len);
	pfree(buf.data);
	return image;
}

/* The reverse of weir_agg_states_image(); false if the image is malformed. */
bool
weir_agg_states_restore(WeirPlan *plan, char *states, const char *image, Size len)
{
	const char *p = image + plan->state_size;
	const char *end = image + len;

	if (len < plan->state_size)
		return false;
	memcpy(states, image, plan->state_size);
	for (int i = 0; i < plan->naggs && plan->has_generic; i++)
	{
		WeirAggSpec *agg = &plan->aggs[i];
		int32		n;

		if (agg->kind != WEIR_AGG_GENERIC)
			continue;
		*generic_slot(agg, states) = NULL;
		if (p + sizeof(int32) > end)
			return false;
		memcpy(&n, p, sizeof(int32));
		p += sizeof(int32);
		if (n >= 0)
		{
			bytea	   *data;

			if (p + n > end)
				return false;
			data = palloc(VARHDRSZ + n);
			SET_VARSIZE(data, VARHDRSZ + n);
			memcpy(VARDATA(data), p, n);
			p += n;
			generic_state(agg, states)->base = generic_deserialize(agg, data);
		}
	}
	return p == end;
}
