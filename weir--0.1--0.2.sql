/* weir--0.1--0.2.sql: from weir 0.1 to 0.2 (ALTER EXTENSION weir UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION weir UPDATE TO '0.2'" to load this file. \quit

-- weir 0.1 (weir--0.1.sql, as released) is never edited again: every change
-- to weir's SQL objects or catalog tables from 0.1 on is made here, and a
-- fresh CREATE EXTENSION runs weir--0.1.sql then this script, so a new and
-- an updated database have the same objects (test/t/027 compares them).
-- The library of 0.2 still exports every C symbol weir--0.1.sql names, so
-- the 0.1 script loads with it.

-- upgrade (part 2) ---------------------------------------------------------
-- The version of the library the server runs, next to pg_extension's
-- extversion (the version of this database's SQL objects): they differ
-- between a package upgrade and ALTER EXTENSION weir UPDATE.
CREATE FUNCTION weir.library_version()
RETURNS text
	LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'weir_library_version';
COMMENT ON FUNCTION weir.library_version() IS
	'the version of the weir library this server runs (pg_extension.extversion is that of this database''s SQL objects; ALTER EXTENSION weir UPDATE brings them level)';
