/*-------------------------------------------------------------------------
 *
 * version.h
 *	  Which weir this library is, and which weir a database has installed
 *	  (version.c).
 *
 * The library and the SQL objects of a database move separately: after a
 * package upgrade and a restart the new library runs against databases
 * whose objects are still those of the version they were created or last
 * updated at, until ALTER EXTENSION weir UPDATE.  WEIR_LIBRARY_VERSION is
 * the extension version whose SQL objects this library was built with: it
 * equals default_version in weir.control (test/t/027_upgrade.pl checks it).
 *
 * Copyright (c) 2026, weir developers
 *
 * IDENTIFICATION
 *	  src/base/version.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef WEIR_VERSION_H
#define WEIR_VERSION_H

#define WEIR_LIBRARY_VERSION "0.2"

extern char *weir_installed_version(void);
extern void weir_version_note_installed(const char *dbname);

#endif							/* WEIR_VERSION_H */
