/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  The fast path for count, sum, min, max and avg: states are a few flat
 *	  bytes per window, no pointers, no palloc per record.
 *
 * Layouts, at WeirAggSpec.offset within a window's state bytes:
 *	count:			int64 n
 *	sum, avg (int):	int64 n, int128 sum (memcpy'd: 8-byte aligned only)
 *	sum, avg (f8):	int64 n, float8 sum
 *	min, max:		int64 n, Datum value (by-value types only)
 * n counts non-null inputs, so an all-null window yields NULL as SQL does.
 * Final values are computed with PostgreSQL's own functions (numeric
 * division for avg over integers), so they match what GROUP BY returns.
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/aggregate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int128.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/numeric.h"

#include "aggregate.h"

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
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT:
			break;
		case WEIR_AGG_SUM_INT:
		case WEIR_AGG_AVG_INT:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				sum += integer_value(agg->argtype, value);
				memcpy(state_value(agg, states), &sum, sizeof(int128));
				break;
			}
		case WEIR_AGG_SUM_FLOAT8:
		case WEIR_AGG_AVG_FLOAT8:
			{
				float8	   *sum = (float8 *) state_value(agg, states);

				*sum += DatumGetFloat8(value);
				break;
			}
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
			break;
	}
	(*n)++;
}

/* Merge the state `from` into `into` (session windows that meet). */
void
weir_agg_combine(WeirAggSpec *agg, char *into, char *from)
{
	int64	   *n_into = state_n(agg, into);
	int64		n_from = *state_n(agg, from);

	if (n_from == 0)
		return;
	switch (agg->kind)
	{
		case WEIR_AGG_COUNT_STAR:
		case WEIR_AGG_COUNT:
			break;
		case WEIR_AGG_SUM_INT:
		case WEIR_AGG_AVG_INT:
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
		case WEIR_AGG_AVG_FLOAT8:
			*(float8 *) state_value(agg, into) += *(float8 *) state_value(agg, from);
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
	int64		n = *state_n(agg, states);

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
		case WEIR_AGG_SUM_INT:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				if (agg->resulttype == INT8OID)
					return Int64GetDatum((int64) sum);
				return int128_numeric(sum);
			}
		case WEIR_AGG_AVG_INT:
			{
				int128		sum;

				memcpy(&sum, state_value(agg, states), sizeof(int128));
				return DirectFunctionCall2(numeric_div, int128_numeric(sum),
										   NumericGetDatum(int64_to_numeric(n)));
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
