-- weir's logical decoding output plugin (issue 18, first step): the changes
-- of the captured tables as binary messages, read back into the tables'
-- columns by weir._capture_change.  Decoded here through the SQL peek
-- function, as a test oracle; captures will decode in their own worker.
SET timezone = 'UTC';
CREATE TABLE cap_items (id int PRIMARY KEY, name text, price numeric, tags text[],
                        big text, at timestamptz, flag boolean, small smallint, code char(3));
-- stored out of line and uncompressed: an update that leaves it alone does
-- not carry it
ALTER TABLE cap_items ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE cap_full (id int, note text);
ALTER TABLE cap_full REPLICA IDENTITY FULL;
CREATE TABLE cap_other (id int PRIMARY KEY);
-- servers that list the libraries allowed as output plugins (a setting of
-- recent PostgreSQL 15 releases, default 'pgoutput, test_decoding') must
-- list weir for REPLICATION users to name it; a superuser may set it
DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_settings WHERE name = 'output_plugin_libraries') THEN
		PERFORM set_config('output_plugin_libraries',
						   current_setting('output_plugin_libraries') || ', weir', false);
	END IF;
END $$;
SELECT 'created' FROM pg_create_logical_replication_slot('cap_test', 'weir');

INSERT INTO cap_items VALUES (1, 'one', 1.50, '{a,b}', repeat('x', 10000), '2026-01-01', true, 7, 'abc'),
                             (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE cap_items SET name = 'uno' WHERE id = 1;
UPDATE cap_items SET id = 3 WHERE id = 2;
DELETE FROM cap_items WHERE id = 3;
BEGIN;
INSERT INTO cap_full VALUES (1, 'a');
UPDATE cap_full SET note = 'b';
DELETE FROM cap_full;
COMMIT;
INSERT INTO cap_other VALUES (1);
TRUNCATE cap_items, cap_other;
ALTER TABLE cap_items ADD COLUMN added int;
INSERT INTO cap_items (id, name, added) VALUES (4, 'four', 44);

CREATE TEMP TABLE cap_messages AS
SELECT row_number() OVER () AS n, c.*
  FROM pg_logical_slot_peek_binary_changes('cap_test', NULL, NULL, 'tables',
         format('%s,%s', 'cap_items'::regclass::oid, 'cap_full'::regclass::oid)) p,
       weir._capture_change(p.data) c;
-- the changes of the captured tables, in commit order; cap_other's are not
-- there (its transaction shows as an empty begin and commit)
SELECT n, kind, relid, relids,
       replace(new_row, repeat('x', 10000), 'x*10000') AS new_row, old_row, unchanged
  FROM cap_messages WHERE kind NOT IN ('B', 'C') ORDER BY n;
-- each transaction: a begin and a commit naming the same commit record, the
-- end after it, a commit time and (begin) a transaction id
SELECT count(*) FILTER (WHERE kind = 'B') AS begins, count(*) FILTER (WHERE kind = 'C') AS commits,
       bool_and(lsn < end_lsn AND commit_ts IS NOT NULL) AS positions_ok,
       bool_and(xid IS NOT NULL) FILTER (WHERE kind = 'B') AS xids
  FROM cap_messages WHERE kind IN ('B', 'C');
SELECT bool_and(b.lsn = c.lsn AND b.end_lsn = c.end_lsn AND b.commit_ts = c.commit_ts) AS begin_matches_commit
  FROM cap_messages b
  JOIN LATERAL (SELECT * FROM cap_messages c WHERE c.kind = 'C' AND c.n > b.n ORDER BY c.n LIMIT 1) c ON true
 WHERE b.kind = 'B';

-- errors: decoding must name the tables; an unknown option; a message cut
-- short, of an unknown kind, or naming another type for a column
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('cap_test', NULL, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('cap_test', NULL, NULL, 'tables', '1', 'colour', 'red');
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM weir._capture_change('\x42');
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM weir._capture_change('\x58');
\echo :LAST_ERROR_SQLSTATE
-- the first insert with its first column's type turned into text's (25)
SELECT kind FROM weir._capture_change(
  (SELECT overlay(p.data PLACING '\x00000019'::bytea FROM 9 FOR 4)
     FROM pg_logical_slot_peek_binary_changes('cap_test', NULL, NULL, 'tables',
            'cap_items'::regclass::oid::text) p
    WHERE get_byte(p.data, 0) = ascii('I') LIMIT 1));
\echo :LAST_ERROR_SQLSTATE
-- ... and with its first value 5 bytes long (an int4 takes 4)
SELECT kind FROM weir._capture_change(
  (SELECT overlay(p.data PLACING '\x0000000500'::bytea FROM 14 FOR 4)
     FROM pg_logical_slot_peek_binary_changes('cap_test', NULL, NULL, 'tables',
            'cap_items'::regclass::oid::text) p
    WHERE get_byte(p.data, 0) = ascii('I') LIMIT 1));
\echo :LAST_ERROR_SQLSTATE
-- for superusers only
CREATE ROLE cap_nobody;
SET ROLE cap_nobody;
SELECT kind FROM weir._capture_change('\x58');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE cap_nobody;

SELECT pg_drop_replication_slot('cap_test');
DROP TABLE cap_items, cap_full, cap_other;
