/* weir--0.1--0.2.sql: from weir 0.1 to 0.2 (ALTER EXTENSION weir UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION weir UPDATE TO '0.2'" to load this file. \quit

-- weir 0.1 (weir--0.1.sql, as released) is never edited again: every change
-- to weir's SQL objects or catalog tables from 0.1 on is made here, and a
-- fresh CREATE EXTENSION runs weir--0.1.sql then this script, so a new and
-- an updated database have the same objects (test/t/027 compares them).
-- The library of 0.2 still exports every C symbol weir--0.1.sql names, so
-- the 0.1 script loads with it.

-- standby (part 3) ----------------------------------------------------------
-- weir.captures measured lag_bytes and wal_retained_bytes from
-- pg_current_wal_lsn(), which raises "recovery is in progress" on a hot
-- standby: the whole view failed there.  During recovery both are measured
-- from the last replayed WAL instead (pg_last_wal_replay_lsn()).  The columns
-- are unchanged; only these two expressions differ from weir--0.1.sql.
CREATE OR REPLACE VIEW weir.captures AS
	SELECT c.name, c.owner::regrole AS owner,
		   CASE WHEN c.publication IS NULL THEN 'local' ELSE 'remote' END AS kind,
		   -- a worker sets 'running' once it holds its slot; without one
		   -- (between restarts) an enabled capture is starting
		   CASE WHEN s.worker_pid IS NULL AND c.enabled AND c.status = 'running'
				THEN 'starting' ELSE c.status END AS status,
		   s.worker_pid,
		   (SELECT array_agg(coalesce(t.relid::regclass::text, t.remote_table) ORDER BY t.topic)
			  FROM weir.capture_table t WHERE t.capture_id = c.id) AS tables,
		   (SELECT array_agg(t.topic::regclass ORDER BY t.topic)
			  FROM weir.capture_table t WHERE t.capture_id = c.id) AS topics,
		   c.slot_name,
		   c.publication,
		   c.position,
		   c.position_time,
		   s.received_lsn,
		   -- local: behind the WAL written here; remote: behind what the
		   -- remote server has sent
		   CASE WHEN c.publication IS NULL
				THEN pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
										  ELSE pg_current_wal_lsn() END,
									 greatest(c.position, r.confirmed_flush_lsn,
											  CASE WHEN s.caught_up THEN s.received_lsn END))
				ELSE pg_wal_lsn_diff(s.received_lsn, c.position) END::bigint AS lag_bytes,
		   CASE WHEN s.caught_up THEN 0::float8
				WHEN c.position_time IS NULL THEN NULL
				ELSE extract(epoch FROM now() - c.position_time)::float8 END AS lag_seconds,
		   pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
								ELSE pg_current_wal_lsn() END, r.restart_lsn)::bigint AS wal_retained_bytes,
		   r.wal_status,
		   s.changes, s.transactions,
		   s.connects,
		   s.next_connect_at,
		   nullif(concat_ws('; ',
				(SELECT 'captured table ' || coalesce(t.relid::text, t.remote_table) ||
						' was dropped at ' || t.dropped_at
				   FROM weir.capture_table t
				  WHERE t.capture_id = c.id AND t.dropped_at IS NOT NULL
				  ORDER BY t.dropped_at LIMIT 1)), '') AS warning,
		   c.last_error,
		   c.created_at
	  FROM weir.capture c
	  LEFT JOIN weir._capture_state() s ON s.capture_id = c.id
	  LEFT JOIN pg_catalog.pg_replication_slots r
			 ON r.slot_name = c.slot_name AND c.publication IS NULL;

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
