/*-------------------------------------------------------------------------
 *
 * key_image.c
 *	  A key image back to values (key_image.h has the layout, and the
 *	  encoder, inline).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/definition/key_image.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "definition/key_image.h"

/*
 * An image back to one Datum per key column, in the current memory
 * context (by-reference values are copies; a varlena comes back as a
 * bytea-shaped varlena of its own type's bytes).
 */
void
weir_key_image_decode(WeirPlan *plan, const char *image, Datum *values)
{
	const char *p = image;

	for (int i = 0; i < plan->nkeys; i++)
	{
		WeirKeySpec *k = &plan->keys[i];

		if (k->typbyval)
		{
			memcpy(&values[i], p, sizeof(Datum));
			p += sizeof(Datum);
		}
		else if (k->typlen > 0)
		{
			char	   *copy = palloc(k->typlen);

			memcpy(copy, p, k->typlen);
			values[i] = PointerGetDatum(copy);
			p += k->typlen;
		}
		else
		{
			uint32		len;

			memcpy(&len, p, sizeof(uint32));
			p += sizeof(uint32);
			values[i] = PointerGetDatum(weir_make_bytea(p, len));	/* any varlena */
			p += len;
		}
	}
}
