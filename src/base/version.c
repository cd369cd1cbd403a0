/*-------------------------------------------------------------------------
 *
 * version.c
 *	  The version of weir installed in the current database
 *	  (pg_extension.extversion), and the library's own (version.h).
 *
 * The launcher says in the server log when the two differ (a package
 * upgrade and a restart happened, ALTER EXTENSION weir UPDATE not yet).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/version.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "base/version.h"

/*
 * The extversion of weir in the current database, palloc'd in the current
 * memory context; NULL if weir is not installed there.  Needs a
 * transaction.
 */
char *
weir_installed_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("weir"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * Versions are "major.minor": compare them as numbers, so that 0.10 comes
 * after 0.9.
 */
static int
version_cmp(const char *a, const char *b)
{
	int			amaj = 0,
				amin = 0,
				bmaj = 0,
				bmin = 0;

	(void) sscanf(a, "%d.%d", &amaj, &amin);
	(void) sscanf(b, "%d.%d", &bmaj, &bmin);
	if (amaj != bmaj)
		return amaj < bmaj ? -1 : 1;
	return amin < bmin ? -1 : (amin > bmin ? 1 : 0);
}

/*
 * Called by the launcher every round, in a transaction: say once in the
 * server log, each time it changes, that the database's weir differs from
 * the library's.  Older objects are expected between a package upgrade and
 * ALTER EXTENSION weir UPDATE (everything keeps working: each library
 * reads the catalogs of every older version); newer objects than the
 * library mean the library was downgraded, which the newer catalogs may
 * not survive.
 */
void
weir_version_note_installed(const char *dbname)
{
	static char last[NAMEDATALEN] = "";
	char	   *installed = weir_installed_version();

	if (installed == NULL || strcmp(installed, last) == 0)
		return;
	strlcpy(last, installed, sizeof(last));
	if (version_cmp(installed, WEIR_LIBRARY_VERSION) < 0)
		ereport(LOG,
				(errmsg("database \"%s\" has weir %s installed, the library is weir %s",
						dbname, installed, WEIR_LIBRARY_VERSION),
				 errdetail("Pipelines keep running; the SQL objects of weir %s come with the update.",
						   WEIR_LIBRARY_VERSION),
				 errhint("Run ALTER EXTENSION weir UPDATE in database \"%s\".", dbname)));
	else if (version_cmp(installed, WEIR_LIBRARY_VERSION) > 0)
		ereport(WARNING,
				(errmsg("database \"%s\" has weir %s installed, newer than the library, weir %s",
						dbname, installed, WEIR_LIBRARY_VERSION),
				 errdetail("An older library does not know the catalogs of a newer version of weir."),
				 errhint("Install the weir %s library (and restart the server).", installed)));
}

/*
 * weir.library_version() RETURNS text: the version of the library this
 * server runs, to compare with pg_extension.extversion (the version of the
 * SQL objects of a database).
 */
PG_FUNCTION_INFO_V1(weir_library_version);
Datum
weir_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(WEIR_LIBRARY_VERSION));
}
