-- What pg_dump keeps of weir (issue 21): a dump of the schema and data must
-- hold every weir catalog table's rows, which pg_dump writes for a table of
-- an extension only when the extension's script marked it with
-- pg_extension_config_dump (test/t/026 dumps and restores for real, and
-- finds each table's COPY in a plain dump).
SET timezone = 'UTC';

-- every catalog table and identity sequence is marked, without a
-- condition: all its rows
SELECT c.relname, c.relkind, x.condition
  FROM pg_extension e,
       unnest(e.extconfig, e.extcondition) AS x(relid, condition)
  JOIN pg_class c ON c.oid = x.relid
 WHERE e.extname = 'weir'
 ORDER BY c.relkind, c.relname;
-- and none is left out
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'weir'::regnamespace AND c.relkind IN ('r', 'S')
   AND c.oid NOT IN (SELECT unnest(extconfig) FROM pg_extension WHERE extname = 'weir')
 ORDER BY 1;

-- the columns that name relations, roles and types do it by name in a dump
-- (regclass, regrole, regtype), and no raw oid column is left
SELECT c.relname, a.attname, a.atttypid::regtype AS type
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'weir'::regnamespace AND c.relkind = 'r'
   AND a.attnum > 0 AND NOT a.attisdropped
   AND a.atttypid IN ('oid'::regtype, 'oid[]'::regtype, 'regclass'::regtype,
					  'regclass[]'::regtype, 'regrole'::regtype, 'regtype'::regtype,
					  'regtype[]'::regtype)
 ORDER BY 1, 2;

-- a restored copy can hold its pipelines back (README, "Backup and restore")
SHOW weir.start_pipelines;

-- The types whose OIDs a pipeline's state may hold: user-defined enums,
-- composites, ranges and array elements, also inside a domain, an array or
-- a composite; not built-in types, and not a domain over a built-in type.
CREATE TYPE dc_mood AS ENUM ('sad', 'calm', 'glad');
CREATE TYPE dc_pair AS (a int, b dc_mood);
CREATE DOMAIN dc_amount AS numeric CHECK (VALUE >= 0);
CREATE DOMAIN dc_moods AS dc_mood[];
SELECT weir.create_topic('dc_plain', 'k int, amount dc_amount, ts timestamptz');
SELECT weir.create_topic('dc_typed', 'k int, m dc_mood, p dc_pair, ms dc_moods, ts timestamptz');
SELECT weir._state_types(ARRAY['dc_plain']::regclass[]) AS plain,
	   weir._state_types(ARRAY['dc_typed']::regclass[]) AS typed;

-- A pipeline whose state holds enum values (keys are of built-in types,
-- but a last value keeps rows) records the types and the OIDs its state is
-- written with; its checkpoint reads back while they are the same.
SELECT weir.create_last_value('dc_lv', 'dc_typed', key => 'k', event_time => 'ts',
							  columns => 'm') > 0 AS created;
SELECT state_types,
	   regexp_replace(array_to_string(state_type_image, ' '), '[0-9]{4,}', 'N', 'g') AS image
  FROM weir.pipeline WHERE name = 'dc_lv';
INSERT INTO dc_typed (k, m, ts)
	SELECT i, m, '2024-01-01'::timestamptz + i * interval '1 s'
	  FROM unnest(enum_range(NULL::dc_mood)) WITH ORDINALITY u(m, i);
SELECT weir.checkpoint('dc_lv') > 0 AS checkpointed;
SELECT key, value FROM weir.committed_state('dc_lv') ORDER BY key;
-- a value added to the enum later changes nothing that was written
ALTER TYPE dc_mood ADD VALUE 'bold';
SELECT key, value FROM weir.committed_state('dc_lv') ORDER BY key;
-- After pg_restore the types are made again with new OIDs while the image
-- keeps the old ones (as if: the image is set to other numbers here): the
-- state is refused, never misread, by weir.committed_state and by the
-- worker, which fails with the error and disables the pipeline (0A000: a
-- restart would not cure it).
SELECT weir.stop('dc_lv');
UPDATE weir.pipeline
   SET state_type_image = ARRAY(SELECT regexp_replace(x, '=([0-9]+)$', '=1\1')
								  FROM unnest(state_type_image) x)
 WHERE name = 'dc_lv';
SELECT key, value FROM weir.committed_state('dc_lv');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.start('dc_lv');
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN (SELECT last_error IS NOT NULL FROM weir.pipelines WHERE name = 'dc_lv');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT status, last_error, (SELECT enabled FROM weir.pipeline WHERE name = 'dc_lv')
  FROM weir.pipelines WHERE name = 'dc_lv';
SELECT weir.stop('dc_lv');

-- A pipeline without state has nothing to misread: it runs.
SELECT weir.create_last_value('dc_last', 'dc_typed', key => 'k', event_time => 'ts', columns => 'm',
							  start => false) > 0 AS created;
UPDATE weir.pipeline SET state_type_image = '{1=1}' WHERE name = 'dc_last';
SELECT count(*) FROM weir.committed_state('dc_last');

SELECT weir.drop_pipeline('dc_lv');
SELECT weir.drop_pipeline('dc_last');
DROP TABLE dc_lv, dc_last;
SELECT weir.drop_topic('dc_plain');
SELECT weir.drop_topic('dc_typed');
DROP DOMAIN dc_moods;
DROP TYPE dc_pair;
DROP DOMAIN dc_amount;
DROP TYPE dc_mood;
