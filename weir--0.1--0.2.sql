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

------------------------------------------------------------------------------
-- Issue 21, part 1: pg_dump and pg_restore.
--
-- A dump must bring back everything weir knows, and a restore must bind it
-- to the restored objects, whose OIDs are new.  So:
--	- every column that names a relation or a role is regclass or regrole
--	  (binary compatible with oid: the C code reads them as before), which
--	  pg_dump writes as a name and a restore reads back as the new OID;
--	- every catalog table that holds user data is marked for pg_dump with
--	  pg_extension_config_dump, and so is the sequence of each identity
--	  column, so that ids go on after the restored ones;
--	- a pipeline records the user-defined types whose OIDs its state images
--	  may hold (state_types, names in a dump) and those OIDs
--	  (state_type_image, numbers in a dump): after a restore the names
--	  resolve to new OIDs, the numbers stay, and a pipeline whose state
--	  would be misread refuses to read it (catalog_chunk.c).
-- pg_dump writes the data of these tables after every table and view it
-- dumps (weir_pipelines' definitions, topics, sinks), so the names resolve.
------------------------------------------------------------------------------

-- The views over these tables depend on the columns that change type:
-- kept (definition, comment, grants), dropped, and made again as they
-- were, in the order they were made.
CREATE TEMPORARY TABLE weir_saved_views ON COMMIT DROP AS
	SELECT c.oid::integer AS made, c.relname::text AS name,
		   pg_catalog.pg_get_viewdef(c.oid) AS definition,
		   pg_catalog.obj_description(c.oid, 'pg_class') AS comment,
		   ARRAY(SELECT pg_catalog.format('GRANT %s ON weir.%I TO %s', a.privilege_type, c.relname,
										  CASE WHEN a.grantee = 0 THEN 'PUBLIC'
											   ELSE pg_catalog.quote_ident(a.grantee::regrole::text) END)
				   FROM pg_catalog.aclexplode(c.relacl) a
				  WHERE a.grantee <> c.relowner) AS grants
	  FROM pg_catalog.pg_class c
	 WHERE c.relnamespace = 'weir'::regnamespace AND c.relkind = 'v';

DO $$
DECLARE
	v record;
BEGIN
	EXECUTE (SELECT 'DROP VIEW ' || string_agg(pg_catalog.format('weir.%I', name), ', ')
			   FROM weir_saved_views);
END
$$;
DROP POLICY owner_reads ON weir.pipeline_chunk;
DROP POLICY owner_reads ON weir.dead_letters;

ALTER TABLE weir.topic ALTER COLUMN relid TYPE regclass USING relid::regclass;
ALTER TABLE weir.pipeline
	ALTER COLUMN definition TYPE regclass USING definition::regclass,
	ALTER COLUMN source TYPE regclass USING source::regclass,
	ALTER COLUMN right_source TYPE regclass USING right_source::regclass,
	ALTER COLUMN sink TYPE regclass USING sink::regclass,
	ALTER COLUMN late_records TYPE regclass USING late_records::regclass;
ALTER TABLE weir.pipeline_remote_sink ALTER COLUMN owner TYPE regrole USING owner::regrole;
ALTER TABLE weir.remote_sink_to_resolve ALTER COLUMN owner TYPE regrole USING owner::regrole;
ALTER TABLE weir.capture ALTER COLUMN owner TYPE regrole USING owner::regrole;
-- a dropped captured table's row keeps its old number (shown as such)
ALTER TABLE weir.capture_table
	ALTER COLUMN relid TYPE regclass USING relid::regclass,
	ALTER COLUMN topic TYPE regclass USING topic::regclass;

CREATE POLICY owner_reads ON weir.pipeline_chunk FOR SELECT
	USING (pg_has_role((SELECT d.relowner FROM weir.pipeline p
						  JOIN pg_catalog.pg_class d ON d.oid = p.definition
						 WHERE p.id = pipeline_id), 'USAGE'));
CREATE POLICY owner_reads ON weir.dead_letters FOR SELECT
	USING (pg_has_role((SELECT d.relowner FROM weir.pipeline p
						  JOIN pg_catalog.pg_class d ON d.oid = p.definition
						 WHERE p.id = pipeline_id), 'USAGE'));

DO $$
DECLARE
	v record;
	g text;
BEGIN
	FOR v IN SELECT * FROM weir_saved_views ORDER BY made LOOP
		EXECUTE pg_catalog.format('CREATE VIEW weir.%I AS %s', v.name, v.definition);
		IF v.comment IS NOT NULL THEN
			EXECUTE pg_catalog.format('COMMENT ON VIEW weir.%I IS %L', v.name, v.comment);
		END IF;
		FOREACH g IN ARRAY v.grants LOOP
			EXECUTE g;
		END LOOP;
	END LOOP;
END
$$;
DROP TABLE weir_saved_views;

-- The user-defined types whose OIDs a pipeline's state images may hold:
-- those of the columns of its sources and its definition, and what they
-- are made of (a domain's base type, an array's element type, a composite
-- type's columns, a range's subtype), kept when their values carry their
-- own type's OID (composite, enum, range, multirange) or are an array's
-- elements (an array carries its element type's OID).  Built-in types
-- keep their OIDs in every cluster.
CREATE FUNCTION weir._state_types(relations regclass[]) RETURNS regtype[]
	LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	WITH RECURSIVE t(typ, element) AS (
		SELECT a.atttypid, false
		  FROM pg_attribute a
		 WHERE a.attrelid = ANY (relations) AND a.attnum > 0 AND NOT a.attisdropped
		UNION
		SELECT n.typ, n.element
		  FROM t JOIN pg_type ty ON ty.oid = t.typ
		 CROSS JOIN LATERAL (
			SELECT ty.typbasetype, false WHERE ty.typtype = 'd'
			UNION ALL
			SELECT ty.typelem, true
			 WHERE ty.typlen = -1 AND ty.typsubscript = 'array_subscript_handler'::regproc
			UNION ALL
			SELECT a.atttypid, false FROM pg_attribute a
			 WHERE ty.typtype = 'c' AND a.attrelid = ty.typrelid AND a.attnum > 0
			   AND NOT a.attisdropped
			UNION ALL
			SELECT r.rngsubtype, false FROM pg_range r
			 WHERE ty.typtype = 'r' AND r.rngtypid = ty.oid
			UNION ALL
			SELECT r.rngtypid, true FROM pg_range r
			 WHERE ty.typtype = 'm' AND r.rngmultitypid = ty.oid) n(typ, element)
	)
	SELECT coalesce(array_agg(DISTINCT t.typ::regtype ORDER BY t.typ::regtype), '{}')
	  FROM t JOIN pg_type ty ON ty.oid = t.typ
	 WHERE t.typ >= 16384 AND (t.element OR ty.typtype IN ('c', 'e', 'r', 'm'))
$$;
REVOKE ALL ON FUNCTION weir._state_types(regclass[]) FROM PUBLIC;

-- What a pipeline's state images rely on: each type of state_types by its
-- position and OID ('1=16390'), and each label of an enum among them with
-- its OID ('1.sad=16392'), sorted.  Recorded when a pipeline is created,
-- computed again before its state is read (catalog_chunk.c): the recorded
-- image must be contained in the current one.  A value added to an enum
-- since adds to the current image; a restore, which makes every type and
-- label again with new OIDs, takes entries away.
CREATE FUNCTION weir._state_type_image(types regtype[]) RETURNS text[]
	LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT coalesce(array_agg(x ORDER BY x), '{}')
	  FROM (SELECT format('%s=%s', u.i, u.t::oid)
			  FROM unnest(types) WITH ORDINALITY u(t, i)
			UNION ALL
			SELECT format('%s.%s=%s', u.i, e.enumlabel, e.oid)
			  FROM unnest(types) WITH ORDINALITY u(t, i)
			  JOIN pg_enum e ON e.enumtypid = u.t) s(x)
$$;
REVOKE ALL ON FUNCTION weir._state_type_image(regtype[]) FROM PUBLIC;

ALTER TABLE weir.pipeline
	ADD COLUMN state_types regtype[],
	ADD COLUMN state_type_image text[];
COMMENT ON COLUMN weir.pipeline.state_types IS
	'the user-defined types whose OIDs its state images may hold (weir._state_types), by name in a dump';
COMMENT ON COLUMN weir.pipeline.state_type_image IS
	'those types'' and their enum labels'' OIDs as the pipeline was created (weir._state_type_image): after a restore they are not the current ones';

-- Filled as a pipeline is created, from its sources and definition; a
-- restored row keeps the values it was dumped with.
CREATE FUNCTION weir._pipeline_state_types() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NEW.state_types IS NULL THEN
		NEW.state_types := weir._state_types(ARRAY[NEW.source, NEW.right_source, NEW.definition]::regclass[]);
		NEW.state_type_image := weir._state_type_image(NEW.state_types);
	END IF;
	RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION weir._pipeline_state_types() FROM PUBLIC;
CREATE TRIGGER pipeline_state_types BEFORE INSERT ON weir.pipeline
	FOR EACH ROW EXECUTE FUNCTION weir._pipeline_state_types();
UPDATE weir.pipeline
   SET state_types = weir._state_types(ARRAY[source, right_source, definition]::regclass[]);
UPDATE weir.pipeline SET state_type_image = weir._state_type_image(state_types);

-- A topic row a restore inserts frees the partition slots a dropped topic
-- of the same id left in this database (src/topic/topic.c).
CREATE FUNCTION weir._topic_row_added() RETURNS trigger
	LANGUAGE C AS 'MODULE_PATHNAME', 'weir_topic_row_added';
REVOKE ALL ON FUNCTION weir._topic_row_added() FROM PUBLIC;
CREATE TRIGGER topic_row_added AFTER INSERT ON weir.topic
	FOR EACH ROW EXECUTE FUNCTION weir._topic_row_added();

-- Every table whose rows are the user's (all of weir's), for pg_dump, and
-- the sequences of their identity columns: pg_dump leaves out the sequence
-- of an extension member's identity column unless it is marked itself,
-- and a restored sequence that started again at 1 would hand out ids the
-- restored rows hold.
SELECT pg_catalog.pg_extension_config_dump('weir.topic', '');
SELECT pg_catalog.pg_extension_config_dump('weir.consumer_position', '');
SELECT pg_catalog.pg_extension_config_dump('weir.topic_time_index', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline_position', '');
SELECT pg_catalog.pg_extension_config_dump('weir.topic_watermark', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline_chunk', '');
SELECT pg_catalog.pg_extension_config_dump('weir.checkpoints', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline_counters', '');
SELECT pg_catalog.pg_extension_config_dump('weir.restores', '');
SELECT pg_catalog.pg_extension_config_dump('weir.dead_letters', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline_skip', '');
SELECT pg_catalog.pg_extension_config_dump('weir.sink_deletes', '');
SELECT pg_catalog.pg_extension_config_dump('weir.sink_deletes_trimmed', '');
SELECT pg_catalog.pg_extension_config_dump('weir.pipeline_remote_sink', '');
SELECT pg_catalog.pg_extension_config_dump('weir.remote_sink_to_resolve', '');
SELECT pg_catalog.pg_extension_config_dump('weir.capture', '');
SELECT pg_catalog.pg_extension_config_dump('weir.capture_connection', '');
SELECT pg_catalog.pg_extension_config_dump('weir.capture_table', '');
SELECT pg_catalog.pg_extension_config_dump('weir.capture_remote_slot_to_drop', '');
-- (one call a statement: each updates weir's pg_extension row)
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('weir.topic', 'id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('weir.pipeline', 'id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('weir.restores', 'id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('weir.capture', 'id'), '');
