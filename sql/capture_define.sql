-- Captures (issue 18): a table's changes, decoded by a capture's own worker
-- through its replication slot, appended to one topic per table exactly
-- once.  Definition errors first, then a capture at work: its topic holds
-- what replaying the table's changes needs, and the table itself is the
-- oracle.
SET timezone = 'UTC';
-- waits until the capture has read the WAL up to `lsn` (and written what
-- it found there); reads no topic, so it holds no lock a capture needs
CREATE FUNCTION public.wait_for_capture_lsn(capture text, lsn pg_lsn) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 600 LOOP
		IF EXISTS (SELECT FROM weir.captures WHERE name = capture AND received_lsn >= lsn) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN false;
END $$;
CREATE FUNCTION public.wait_for_capture(capture text, want text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	got text;
BEGIN
	FOR i IN 1 .. 600 LOOP
		SELECT status INTO got FROM weir.captures WHERE name = capture;
		EXIT WHEN got IS NOT DISTINCT FROM want;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN got;
END $$;

CREATE TABLE cd_no_key (id int, v text);
CREATE UNLOGGED TABLE cd_unlogged (id int PRIMARY KEY);
CREATE TABLE cd_clash (id int PRIMARY KEY, change_op text);
CREATE TABLE cd_orders (id int PRIMARY KEY, customer text NOT NULL, amount numeric,
                        note text, placed date DEFAULT '2026-01-01');
CREATE TABLE cd_full (id int, note text);
ALTER TABLE cd_full REPLICA IDENTITY FULL;
SELECT weir.create_topic('cd_topic', 'v int');

-- no replica identity: its updates and deletes would not say which row
SELECT weir.create_capture('bad', tables => ARRAY['cd_no_key'::regclass]);
SELECT sqlstate_of($$SELECT weir.create_capture('bad', tables => ARRAY['cd_no_key'::regclass])$$);
SELECT weir.create_capture('bad', tables => ARRAY['cd_unlogged'::regclass]);
SELECT weir.create_capture('bad', tables => ARRAY['cd_topic'::regclass]);
SELECT weir.create_capture('bad', tables => ARRAY['weir.pipeline'::regclass]);
SELECT weir.create_capture('bad', tables => ARRAY['cd_clash'::regclass]);
SELECT weir.create_capture('bad', tables => ARRAY['no_such_table'::regclass]);
SELECT weir.create_capture('bad', publication => 'no_such_publication');
SELECT sqlstate_of($$SELECT weir.create_capture('bad', publication => 'no_such_publication')$$);
SELECT weir.create_capture('bad');
SELECT weir.create_capture('bad', tables => ARRAY['cd_orders'::regclass, 'cd_orders'::regclass]);
SELECT weir.create_capture('bad', tables => ARRAY['cd_orders'::regclass], remote_tables => '{x}');
SELECT weir.create_capture('bad', conninfo => 'dbname=x');
-- capturing takes a slot (WAL for the whole server) and reads below grants
CREATE ROLE cd_plain LOGIN;
GRANT SELECT ON cd_orders TO cd_plain;
SET ROLE cd_plain;
SELECT weir.create_capture('bad', tables => ARRAY['cd_orders'::regclass]);
RESET ROLE;
SELECT count(*) AS captures FROM weir.capture;

-- a capture of two tables: one topic each, named after capture and table
SELECT weir.create_capture('cd', tables => ARRAY['cd_orders'::regclass, 'cd_full'::regclass],
                           partitions => 3) > 0 AS created;
SELECT weir.create_capture('cd', tables => ARRAY['cd_orders'::regclass]);
SELECT wait_for_capture('cd', 'running');
SELECT name, owner = current_user::regrole AS by_me, kind, status, tables, topics, publication,
       slot_name ~ '^weir_capture_[0-9]+_[0-9]+$' AS slot_named, last_error, warning
  FROM weir.captures;
SELECT slot_type, plugin, database = current_database() AS here
  FROM pg_replication_slots WHERE slot_name = (SELECT slot_name FROM weir.capture WHERE name = 'cd');
\d cd_cd_orders

-- inserts, updates (of the key too), deletes, a truncate
INSERT INTO cd_orders (id, customer, amount, note)
	SELECT g, 'c' || (g % 3), g * 1.5, repeat('n', g) FROM generate_series(1, 20) g;
UPDATE cd_orders SET amount = amount + 1 WHERE id <= 5;
UPDATE cd_orders SET id = id + 100 WHERE id IN (6, 7);
DELETE FROM cd_orders WHERE id BETWEEN 8 AND 10;
BEGIN;
INSERT INTO cd_orders (id, customer) VALUES (50, 'late');
UPDATE cd_orders SET note = 'again' WHERE id = 50;
COMMIT;
INSERT INTO cd_full VALUES (1, 'a'), (2, 'b');
UPDATE cd_full SET note = 'z' WHERE id = 1;
DELETE FROM cd_full WHERE id = 2;
SELECT wait_for_capture_lsn('cd', pg_current_wal_lsn());
-- 20 inserts, 5 updates, 2 key updates (before and after rows), 3 deletes, 2
SELECT count(*) FROM cd_cd_orders;
SELECT count(*) FROM cd_cd_full;

-- what each change became, in commit order
SELECT change_op, id, customer, amount, note, unchanged_columns
  FROM cd_cd_orders WHERE id IN (1, 6, 106, 8, 50) ORDER BY commit_lsn, part, pos;
SELECT change_op, id, note FROM cd_cd_full ORDER BY commit_lsn, part, pos;
SELECT change_op, count(*) FROM cd_cd_orders GROUP BY 1 ORDER BY 1;
-- all changes of one row are in one partition
SELECT count(*) AS keys_in_two_partitions
  FROM (SELECT id FROM cd_cd_orders GROUP BY id HAVING count(DISTINCT part) > 1) k;
-- one commit time and LSN per transaction, in commit order
SELECT count(DISTINCT commit_lsn) AS transactions FROM cd_cd_orders;
-- the oracle: replaying the changes per key (the newest after image, or a
-- delete or a key update's before image) gives the table
WITH newest AS (
	SELECT DISTINCT ON (id) id, change_op, customer, amount, note, placed
	  FROM cd_cd_orders ORDER BY id, commit_lsn DESC, pos DESC)
SELECT count(*) AS differences FROM (
	(SELECT id, customer, amount, note, placed FROM newest WHERE change_op IN ('I', 'U')
	 EXCEPT ALL SELECT * FROM cd_orders)
	UNION ALL
	(SELECT * FROM cd_orders EXCEPT ALL
	 SELECT id, customer, amount, note, placed FROM newest WHERE change_op IN ('I', 'U'))) d;

-- the capture's position is the end of the last transaction it wrote
SELECT position >= (SELECT max(commit_lsn) FROM cd_cd_orders) AS position_covers,
       changes >= 0 AS counted, lag_seconds IS NOT NULL AS lag_known
  FROM weir.captures WHERE name = 'cd';

-- a truncate is a row in every partition, in order with the others
TRUNCATE cd_orders;
SELECT wait_for_capture_lsn('cd', pg_current_wal_lsn());
SELECT part, change_op FROM cd_cd_orders WHERE change_op = 'T' ORDER BY part;

-- a column added to the table appears in the topic with the first change
-- that has it
ALTER TABLE cd_orders ADD COLUMN priority int;
INSERT INTO cd_orders (id, customer, priority) VALUES (60, 'p', 9);
SELECT wait_for_capture_lsn('cd', pg_current_wal_lsn());
SELECT change_op, id, customer, priority FROM cd_cd_orders WHERE id = 60;
SELECT columns, attnums FROM weir.capture_table WHERE topic = 'cd_cd_orders'::regclass;

-- a capture's topic goes after the capture; only its owner drops it
SELECT weir.drop_topic('cd_cd_orders');
DROP TABLE cd_cd_full;
SET ROLE cd_plain;
SELECT weir.drop_capture('cd');
SELECT weir.stop_capture('cd');
RESET ROLE;

-- a captured table that is dropped: the capture goes on with the others
DROP TABLE cd_full;
SELECT status, warning ~ '^captured table [0-9]+ was dropped at ' AS warned
  FROM weir.captures WHERE name = 'cd';
INSERT INTO cd_orders (id, customer) VALUES (61, 'after drop');
SELECT wait_for_capture_lsn('cd', pg_current_wal_lsn());

-- stopped: no worker, the slot stays and keeps the position
SELECT weir.stop_capture('cd');
SELECT wait_for_capture('cd', 'stopped');
-- the launcher stops the worker once the stop has committed
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN (SELECT worker_pid IS NULL FROM weir.captures WHERE name = 'cd');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT worker_pid IS NULL AS no_worker FROM weir.captures WHERE name = 'cd';
INSERT INTO cd_orders (id, customer) VALUES (62, 'while stopped');
SELECT weir.start_capture('cd');
SELECT wait_for_capture('cd', 'running');
SELECT wait_for_capture_lsn('cd', pg_current_wal_lsn());
SELECT change_op, id, customer FROM cd_cd_orders WHERE id IN (61, 62) ORDER BY commit_lsn, part, pos;

-- dropped: the launcher stops its worker and drops its slot; the topics stay
SELECT slot_name AS cd_slot FROM weir.capture WHERE name = 'cd' \gset
SELECT weir.drop_capture('cd');
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name LIKE 'weir_capture_%');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT count(*) AS slots_left FROM pg_replication_slots WHERE slot_name = :'cd_slot';
SELECT count(*) AS captures FROM weir.captures;
SELECT weir.drop_topic('cd_cd_orders');
DROP TABLE cd_no_key, cd_unlogged, cd_clash, cd_orders, cd_topic;
DROP ROLE cd_plain;
