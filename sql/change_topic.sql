-- Change topics: topics whose rows are a table's changes, each with its
-- operation in change_op "char" (I insert, U update, B an update's before
-- image, D delete, T truncate).  Plain tables t and s are the oracle: a
-- trigger on each appends the change rows a capture would write (t as
-- under the default replica identity: removals carry the key only, an
-- update leaves a large value it did not change out and names it in
-- unchanged_columns; s as under REPLICA IDENTITY FULL), and the sinks must
-- equal SELECT over t and GROUP BY over s exactly.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';

------------------------------------------------------------------------------
-- Last value mirrors a table
------------------------------------------------------------------------------
SELECT weir.create_topic('ct_t',
  'change_op "char", commit_lsn pg_lsn, commit_time timestamptz, unchanged_columns name[], '
  'id int, v int, body text', partitions => 4);
CREATE TABLE t (id int PRIMARY KEY, v int, body text);
-- what a capture writes for t, partitioned by the key (each image by its own)
CREATE FUNCTION t_capture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		INSERT INTO ct_t (part, change_op, commit_time)
		SELECT p, 'T', clock_timestamp() FROM generate_series(0, 3) p;
	ELSIF TG_OP = 'INSERT' THEN
		INSERT INTO ct_t (part, change_op, commit_time, id, v, body)
		VALUES ((hashint4(NEW.id) & 2147483647) % 4, 'I', clock_timestamp(), NEW.id, NEW.v, NEW.body);
	ELSIF TG_OP = 'UPDATE' THEN
		-- the default replica identity logs the old row only when the key changes, as the key
		IF NEW.id <> OLD.id THEN
			INSERT INTO ct_t (part, change_op, commit_time, id)
			VALUES ((hashint4(OLD.id) & 2147483647) % 4, 'B', clock_timestamp(), OLD.id);
		END IF;
		-- a TOASTed value the update did not change is not in the change
		IF NEW.body IS NOT DISTINCT FROM OLD.body AND length(OLD.body) > 3000 THEN
			INSERT INTO ct_t (part, change_op, commit_time, id, v, unchanged_columns)
			VALUES ((hashint4(NEW.id) & 2147483647) % 4, 'U', clock_timestamp(), NEW.id, NEW.v,
					'{body}');
		ELSE
			INSERT INTO ct_t (part, change_op, commit_time, id, v, body, unchanged_columns)
			VALUES ((hashint4(NEW.id) & 2147483647) % 4, 'U', clock_timestamp(), NEW.id, NEW.v,
					NEW.body, '{}');
		END IF;
	ELSE
		INSERT INTO ct_t (part, change_op, commit_time, id)
		VALUES ((hashint4(OLD.id) & 2147483647) % 4, 'D', clock_timestamp(), OLD.id);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER t_capture AFTER INSERT OR UPDATE OR DELETE ON t
	FOR EACH ROW EXECUTE FUNCTION t_capture();
CREATE TRIGGER t_capture_truncate AFTER TRUNCATE ON t
	FOR EACH STATEMENT EXECUTE FUNCTION t_capture();

-- the default columns leave change_op and unchanged_columns out
SELECT weir.create_last_value('t_mirror', 'ct_t', key => 'id', event_time => 'commit_time',
                              out_of_orderness => '1 hour') > 0 AS created;
\d t_mirror
SELECT retention FROM weir.pipelines WHERE name = 't_mirror';
-- a view of the definition: the change columns are bound into it
SELECT pg_get_viewdef('weir_pipelines.t_mirror'::regclass) ~ 'change_op' AS binds_change_op,
       pg_get_viewdef('weir_pipelines.t_mirror'::regclass) ~ 'unchanged_columns' AS binds_unchanged;
ALTER TABLE ct_t DROP COLUMN change_op;
\echo :LAST_ERROR_SQLSTATE

INSERT INTO t SELECT i, i * 10, 'body ' || i FROM generate_series(1, 40) i;
-- large values a later update leaves alone
UPDATE t SET body = repeat('x' || id, 2000) WHERE id % 5 = 0;
SELECT weir.checkpoint('t_mirror') > 0 AS checkpointed;
SELECT * FROM oracle_diff('(SELECT id, v, body FROM t_mirror) s', 'SELECT id, v, body FROM t');

-- updates (some leaving the large value alone), key changes, deletes
UPDATE t SET v = v + 1 WHERE id % 2 = 0;
-- (a key change that leaves a large value alone is in doc: not mirrored)
UPDATE t SET id = id + 100 WHERE id % 7 = 3 AND id % 5 <> 0;
DELETE FROM t WHERE id % 9 = 1;
UPDATE t SET v = -v WHERE id % 5 = 0;
SELECT weir.checkpoint('t_mirror') > 0 AS checkpointed;
SELECT * FROM oracle_diff('(SELECT id, v, body FROM t_mirror) s', 'SELECT id, v, body FROM t');
-- the columns an update left alone kept the sink's value
SELECT count(*) AS kept_large FROM t_mirror WHERE length(body) > 3000;

-- a key deleted and inserted again, in one transaction and in two
BEGIN;
DELETE FROM t WHERE id = 2;
INSERT INTO t VALUES (2, 222, 'again');
COMMIT;
DELETE FROM t WHERE id = 4;
INSERT INTO t VALUES (4, 444, 'again');
-- an update and its key's deletion before the next checkpoint
UPDATE t SET v = 0 WHERE id = 6;
DELETE FROM t WHERE id = 6;
-- a key change and the old key inserted again
UPDATE t SET id = 1000 WHERE id = 8;
INSERT INTO t VALUES (8, 888, 'new eight');
SELECT weir.checkpoint('t_mirror') > 0 AS checkpointed;
SELECT * FROM oracle_diff('(SELECT id, v, body FROM t_mirror) s', 'SELECT id, v, body FROM t');

-- a restart restores the keys and the deleted ones (tombstones)
SELECT weir.stop('t_mirror');
SELECT wait_for_pipeline('t_mirror', 'worker_pid IS NULL');
SELECT weir.start('t_mirror');
UPDATE t SET v = v * 2 WHERE id % 3 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT weir.checkpoint('t_mirror') > 0 AS checkpointed;
SELECT * FROM oracle_diff('(SELECT id, v, body FROM t_mirror) s', 'SELECT id, v, body FROM t');

-- a truncate empties every partition, then rows come back
TRUNCATE t;
INSERT INTO t SELECT i, i, 'after ' || i FROM generate_series(5, 12) i;
SELECT weir.checkpoint('t_mirror') > 0 AS checkpointed;
SELECT * FROM oracle_diff('(SELECT id, v, body FROM t_mirror) s', 'SELECT id, v, body FROM t');
SELECT count(*) AS dead_letters FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 't_mirror';
SELECT weir.drop_pipeline('t_mirror');

-- a filter: the sink holds the rows of t that pass it; a row that stops
-- passing it (an update) leaves, a removal needs no columns to pass
SELECT weir.create_last_value('t_big', 'ct_t', key => 'id', event_time => 'commit_time',
                              columns => 'v', filter => 'v >= 10',
                              out_of_orderness => '1 hour') > 0 AS created;
UPDATE t SET v = v + 3;
UPDATE t SET v = 1 WHERE id = 9;
DELETE FROM t WHERE id = 10;
SELECT weir.checkpoint('t_big') > 0 AS checkpointed;
SELECT * FROM oracle_diff('t_big', 'SELECT id, v FROM t WHERE v >= 10');
SELECT weir.drop_pipeline('t_big');

------------------------------------------------------------------------------
-- Last value, change rows by hand: order, ties, tombstones, unchanged
-- columns, bad operations
------------------------------------------------------------------------------
SELECT weir.create_topic('ct_h',
  'change_op "char", commit_time timestamptz, unchanged_columns name[], id int, v int, body text',
  partitions => 2);
-- a sink with a row already there, loaded from a snapshot of the table
CREATE TABLE h_mirror (id int PRIMARY KEY, v int, body text);
INSERT INTO h_mirror VALUES (50, 5, 'seeded'), (51, 5, 'seeded');
SELECT weir.create_last_value('h_mirror', 'ct_h', key => 'id', event_time => 'commit_time',
                              columns => 'v, body', sink => 'h_mirror',
                              out_of_orderness => '10 minutes', late_records => 'h_late') > 0 AS created;
INSERT INTO ct_h (part, change_op, commit_time, id, v, body, unchanged_columns) VALUES
  -- a delete then an insert at the same time: the later position wins
  (0, 'I', '2026-01-01 00:00', 1, 1, 'one', NULL),
  (0, 'D', '2026-01-01 00:01', 1, NULL, NULL, NULL),
  (0, 'I', '2026-01-01 00:01', 1, 11, 'one again', NULL),
  -- an insert then a delete at the same time: deleted
  (0, 'I', '2026-01-01 00:02', 2, 2, 'two', NULL),
  (0, 'D', '2026-01-01 00:02', 2, NULL, NULL, NULL),
  -- a before image and its update of the same key: the key stays
  (1, 'I', '2026-01-01 00:00', 3, 3, 'three', NULL),
  (1, 'B', '2026-01-01 00:03', 3, 3, 'three', NULL),
  (1, 'U', '2026-01-01 00:03', 3, 33, 'three', NULL),
  -- an update that left body alone: the sink's value stays (a seeded
  -- row), or NULL where the sink has no row
  (1, 'U', '2026-01-01 00:04', 50, 55, NULL, '{body}'),
  (1, 'U', '2026-01-01 00:04', 52, 55, NULL, '{body}'),
  -- a delete of a key never seen deletes the seeded row
  (0, 'D', '2026-01-01 00:04', 51, NULL, NULL, NULL),
  -- a delete in partition 1 newer than an insert partition 0 has
  (1, 'D', '2026-01-01 00:06', 4, NULL, NULL, NULL),
  (0, 'I', '2026-01-01 00:05', 4, 4, 'four, older than its delete', NULL),
  -- bad operations: dead letters
  (0, NULL, '2026-01-01 00:06', 5, 5, 'no op', NULL),
  (0, 'X', '2026-01-01 00:06', 5, 5, 'unknown op', NULL);
SELECT weir.checkpoint('h_mirror') > 0 AS checkpointed;
SELECT * FROM h_mirror ORDER BY id;
SELECT d.partition, d.position, d.error, d.record->>'body' AS body
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 'h_mirror' ORDER BY 1, 2;
-- updates that left body alone, after the key's row changed in this
-- checkpoint (the pending row's body) and after one (the sink's)
INSERT INTO ct_h (part, change_op, commit_time, id, v, body, unchanged_columns) VALUES
  (0, 'I', '2026-01-01 00:07', 6, 6, 'six', NULL),
  (0, 'U', '2026-01-01 00:08', 6, 66, NULL, '{body}'),
  (0, 'U', '2026-01-01 00:08', 1, 111, NULL, '{body}');
SELECT weir.checkpoint('h_mirror') > 0 AS checkpointed;
SELECT * FROM h_mirror WHERE id IN (1, 6) ORDER BY id;
-- a truncate in partition 0 only: the keys whose newest row came from it
INSERT INTO ct_h (part, change_op, commit_time) VALUES (0, 'T', '2026-01-01 00:09');
SELECT weir.checkpoint('h_mirror') > 0 AS checkpointed;
SELECT * FROM h_mirror ORDER BY id;
-- the watermark (10 minutes behind the newest time of both partitions)
-- passes the deletes: the tombstones leave memory; a row of such a key
-- older than the watermark is late, a newer one comes back
INSERT INTO ct_h (part, change_op, commit_time, id, v, body) VALUES
  (0, 'I', '2026-01-01 01:00', 7, 7, 'seven'),
  (1, 'I', '2026-01-01 01:00', 8, 8, 'eight');
SELECT weir.checkpoint('h_mirror') > 0 AS checkpointed;
SELECT windows AS keys FROM weir.pipelines WHERE name = 'h_mirror';
INSERT INTO ct_h (part, change_op, commit_time, id, v, body) VALUES
  (0, 'I', '2026-01-01 00:30', 2, 2, 'two, late'),
  (1, 'I', '2026-01-01 00:55', 4, 44, 'four, in time');
SELECT weir.checkpoint('h_mirror') > 0 AS checkpointed;
SELECT * FROM h_mirror ORDER BY id;
SELECT part, id, body FROM h_late ORDER BY pos;
SELECT records_late FROM weir.pipelines WHERE name = 'h_mirror';
SELECT weir.drop_pipeline('h_mirror');

-- columns over an update's unchanged column: one computed from it alone
-- keeps its value (from the pending row, or the sink's), one computed from
-- it and a changed column cannot be computed, nor a key over it: dead letters
SELECT weir.create_topic('ct_k',
  'change_op "char", commit_time timestamptz, unchanged_columns name[], id int, v int, body text');
SELECT weir.create_last_value('k_len', 'ct_k', key => 'id', event_time => 'commit_time',
                              columns => 'v, length(body) AS len',
                              out_of_orderness => '1 hour') > 0 AS created;
SELECT weir.create_last_value('k_mixed', 'ct_k', key => 'id', event_time => 'commit_time',
                              columns => 'v, v::text || body AS vb',
                              out_of_orderness => '1 hour') > 0 AS created;
SELECT weir.create_last_value('k_bodykey', 'ct_k', key => 'body', event_time => 'commit_time',
                              columns => 'v', out_of_orderness => '1 hour') > 0 AS created;
INSERT INTO ct_k (change_op, commit_time, id, v, body, unchanged_columns) VALUES
  ('I', '2026-01-01 00:00', 1, 1, 'abc', NULL),
  ('I', '2026-01-01 00:00', 2, 2, 'abcd', NULL),
  ('U', '2026-01-01 00:01', 1, 10, NULL, '{body}');
SELECT weir.checkpoint('k_len') > 0 AS checkpointed;
INSERT INTO ct_k (change_op, commit_time, id, v, body, unchanged_columns) VALUES
  ('U', '2026-01-01 00:02', 2, 20, NULL, '{body}');
SELECT weir.checkpoint(ARRAY['k_len', 'k_mixed', 'k_bodykey']) IS NOT NULL AS checkpointed;
SELECT * FROM k_len ORDER BY id;
SELECT * FROM k_mixed ORDER BY id;
SELECT * FROM k_bodykey ORDER BY body;
SELECT p.name, d.position, d.error FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name LIKE 'k\_%' ORDER BY 1, 2;
SELECT weir.drop_pipeline('k_len');
SELECT weir.drop_pipeline('k_mixed');
SELECT weir.drop_pipeline('k_bodykey');

------------------------------------------------------------------------------
-- Window aggregates take rows back
------------------------------------------------------------------------------
SELECT weir.create_topic('ct_s',
  'change_op "char", commit_lsn pg_lsn, commit_time timestamptz, unchanged_columns name[], '
  'id int, grp int, amount int, ts timestamptz', partitions => 3);
CREATE TABLE s (id int PRIMARY KEY, grp int, amount int, ts timestamptz);
-- what a capture writes for s under REPLICA IDENTITY FULL: whole old rows
CREATE FUNCTION s_capture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO ct_s (part, change_op, commit_time, id, grp, amount, ts)
		VALUES ((hashint4(OLD.id) & 2147483647) % 3, CASE TG_OP WHEN 'UPDATE' THEN 'B' ELSE 'D' END,
				clock_timestamp(), OLD.id, OLD.grp, OLD.amount, OLD.ts);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO ct_s (part, change_op, commit_time, id, grp, amount, ts)
		VALUES ((hashint4(NEW.id) & 2147483647) % 3, CASE TG_OP WHEN 'UPDATE' THEN 'U' ELSE 'I' END,
				clock_timestamp(), NEW.id, NEW.grp, NEW.amount, NEW.ts);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER s_capture AFTER INSERT OR UPDATE OR DELETE ON s
	FOR EACH ROW EXECUTE FUNCTION s_capture();

-- what cannot take a row back is refused, unless the topic has inserts only
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'),
                            aggregates => 'count(*) AS n, max(amount) AS top');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'),
                            aggregates => 'sum(amount::float8) AS total');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'),
                            aggregates => 'sum(amount::numeric) AS total');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.session('1 hour'), aggregates => 'count(*) AS n');
\echo :LAST_ERROR_SQLSTATE
-- the commit time is the change's: a delete's is not its insert's
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'commit_time',
                            windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n',
                            filter => 'change_op = ''I''');
\echo :LAST_ERROR_SQLSTATE
-- insert_only on a topic without change_op
SELECT weir.create_topic('ct_plain', 'grp int, amount int, ts timestamptz');
SELECT weir.create_pipeline('bad', 'ct_plain', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n',
                            insert_only => true);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_topic('ct_plain');

-- count, count(x), sum and avg over integers, updated as rows come and go
SELECT weir.create_pipeline('s_hourly', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'),
                            aggregates => 'count(*) AS n, count(amount) AS n_amount, '
                                          'sum(amount) AS total, avg(amount) AS mean',
                            emit => 'updates', out_of_orderness => '1 hour',
                            allowed_lateness => '1 day') > 0 AS created;
-- final rows only, a window written when it closes and rewritten by
-- changes within the allowed lateness
SELECT weir.create_pipeline('s_final', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.hopping('1 hour', '30 minutes'),
                            aggregates => 'count(*) AS n, sum(amount) AS total',
                            allowed_lateness => '1 day') > 0 AS created;
CREATE VIEW s_hourly_oracle AS
SELECT grp, date_bin('1 hour', ts, '1970-01-01') AS window_start,
       date_bin('1 hour', ts, '1970-01-01') + interval '1 hour' AS window_end,
       count(*) AS n, count(amount) AS n_amount, sum(amount) AS total, avg(amount) AS mean
  FROM s GROUP BY 1, 2;
CREATE VIEW s_final_oracle AS
SELECT grp, w.start AS window_start, w.start + interval '1 hour' AS window_end,
       count(*) AS n, sum(amount) AS total
  FROM s, LATERAL (VALUES (date_bin('30 minutes', ts, '1970-01-01')),
                          (date_bin('30 minutes', ts, '1970-01-01') - interval '30 minutes')) w(start)
 GROUP BY 1, 2;

INSERT INTO s SELECT i, i % 4, CASE WHEN i % 10 = 0 THEN NULL ELSE i END,
                     '2026-01-01 00:00+00'::timestamptz + i * interval '2 minutes'
  FROM generate_series(1, 60) i;
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_hourly', 'SELECT * FROM s_hourly_oracle');
-- updates of the amount, of the time (another window), of the group
UPDATE s SET amount = amount * 2 WHERE id % 3 = 0;
UPDATE s SET ts = ts + interval '1 hour' WHERE id % 7 = 0;
UPDATE s SET grp = 9 WHERE id % 11 = 0;
UPDATE s SET amount = NULL WHERE id = 13;
DELETE FROM s WHERE id % 5 = 0;
-- every row of group 1 in the first hour goes: its row goes
DELETE FROM s WHERE grp = 1 AND ts < '2026-01-01 01:00+00';
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_hourly', 'SELECT * FROM s_hourly_oracle');
SELECT count(*) AS group_1_first_hour FROM s_hourly
 WHERE grp = 1 AND window_start = '2026-01-01 00:00+00';

-- s_final: rows of the windows the watermark has closed
SELECT weir.checkpoint('s_final') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_final',
  format('SELECT * FROM s_final_oracle WHERE window_end <= %L', checkpoint_watermark('s_final')));
-- changes to closed windows, within the allowed lateness: their rows are
-- rewritten, and deleted when no row is left
DELETE FROM s WHERE grp = 2 AND ts < '2026-01-01 00:30+00';
UPDATE s SET amount = 1000 WHERE id = 3;
SELECT weir.checkpoint('s_final') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_final',
  format('SELECT * FROM s_final_oracle WHERE window_end <= %L', checkpoint_watermark('s_final')));
SELECT count(*) AS group_2_first_window FROM s_final
 WHERE grp = 2 AND window_start = '2025-12-31 23:30+00';

-- a restart restores the windows with their row counts
SELECT weir.stop('s_hourly');
SELECT wait_for_pipeline('s_hourly', 'worker_pid IS NULL');
SELECT weir.start('s_hourly');
DELETE FROM s WHERE grp = 3;
INSERT INTO s VALUES (500, 3, 7, '2026-01-01 00:10+00');
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_hourly', 'SELECT * FROM s_hourly_oracle');

-- rows by hand: taking back a row its window does not hold, and a
-- truncate, are dead letters (with the record read from the topic)
INSERT INTO ct_s (part, change_op, id, grp, amount, ts) VALUES
  (1, 'D', 998, 42, 5, '2026-01-01 00:20+00'),
  (2, 'T', NULL, NULL, NULL, NULL);
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_hourly', 'SELECT * FROM s_hourly_oracle');
SELECT d.partition, d.error, d.record->>'id' AS id
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 's_hourly' ORDER BY d.partition, d.position;
-- a delete later than the allowed lateness is late: its window is gone
-- (rows two days later in every partition move the watermark)
INSERT INTO s SELECT i, 0, 1, '2026-01-03 00:00+00' FROM generate_series(600, 629) i;
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
DELETE FROM s WHERE id = 4;
SELECT weir.checkpoint('s_hourly') > 0 AS checkpointed;
SELECT records_late FROM weir.pipelines WHERE name = 's_hourly';
-- the sink keeps the row; GROUP BY over s no longer has it
SELECT w.n AS sink_n, w.total AS sink_total, o.n AS table_n, o.total AS table_total
  FROM s_hourly w JOIN s_hourly_oracle o USING (grp, window_start)
 WHERE grp = 0 AND window_start = '2026-01-01 00:00+00';
SELECT weir.drop_pipeline('s_hourly');
SELECT weir.drop_pipeline('s_final');

-- insert_only: min, max and float sums are fine; every other row is a
-- dead letter
SELECT weir.create_pipeline('s_inserts', 'ct_s', key => 'grp', event_time => 'ts',
                            windowing => weir.tumbling('1 hour'),
                            aggregates => 'count(*) AS n, min(amount) AS low, max(amount) AS high',
                            emit => 'updates', out_of_orderness => '1 hour',
                            allowed_lateness => '10 days', insert_only => true) > 0 AS created;
SELECT insert_only FROM weir.pipeline WHERE name = 's_inserts';
SELECT weir.checkpoint('s_inserts') > 0 AS checkpointed;
SELECT * FROM oracle_diff('s_inserts',
  $$SELECT grp, date_bin('1 hour', ts, '1970-01-01'), date_bin('1 hour', ts, '1970-01-01') + interval '1 hour',
           count(*), min(amount), max(amount)
      FROM ct_s WHERE change_op = 'I' GROUP BY 1, 2$$);
SELECT d.error, count(*) FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 's_inserts' GROUP BY 1 ORDER BY 1;
SELECT (SELECT count(*) FROM ct_s WHERE change_op IS DISTINCT FROM 'I') AS not_inserts;
SELECT weir.drop_pipeline('s_inserts');

------------------------------------------------------------------------------
-- Dedup and join see inserts only
------------------------------------------------------------------------------
SELECT weir.create_topic('ct_orders', 'change_op "char", order_id int, amount int, ts timestamptz',
                         partitions => 2);
SELECT weir.create_topic('ct_ships', 'order_id int, carrier text, ts timestamptz', partitions => 2);
INSERT INTO ct_orders (change_op, order_id, amount, ts) VALUES
  ('I', 1, 10, '2026-01-01 00:00+00'),
  ('U', 1, 11, '2026-01-01 00:01+00'),
  ('I', 2, 20, '2026-01-01 00:02+00'),
  ('D', 2, 20, '2026-01-01 00:03+00'),
  ('I', 2, 21, '2026-01-01 00:04+00'),
  ('B', 3, 30, '2026-01-01 00:05+00'),
  ('U', 3, 31, '2026-01-01 00:05+00'),
  ('T', NULL, NULL, NULL),
  ('I', 4, 40, '2026-01-01 00:06+00');
INSERT INTO ct_ships (order_id, carrier, ts) VALUES
  (1, 'post', '2026-01-01 00:10+00'), (2, 'courier', '2026-01-01 00:10+00'),
  (3, 'post', '2026-01-01 00:10+00'), (4, 'post', '2026-01-01 00:10+00');
-- their default columns leave change_op out
SELECT weir.create_dedup('o_unique', 'ct_orders', key => 'order_id', event_time => 'ts',
                         out_of_orderness => '1 hour') > 0 AS created;
SELECT weir.create_join('o_shipped', 'ct_orders', 'ct_ships',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_after => '1 hour', out_of_orderness => '1 hour') > 0 AS created;
\d o_unique
SELECT weir.checkpoint('o_unique') > 0 AS checkpointed;
SELECT weir.checkpoint('o_shipped') > 0 AS checkpointed;
SELECT * FROM oracle_diff('o_unique',
  $$SELECT DISTINCT ON (order_id) order_id, amount, ts FROM ct_orders WHERE change_op = 'I'
     ORDER BY order_id, ts$$);
SELECT * FROM oracle_diff('o_shipped',
  $$SELECT o.order_id, o.amount, o.ts, s.order_id, s.carrier, s.ts
      FROM ct_orders o JOIN ct_ships s ON s.order_id = o.order_id
       AND s.ts BETWEEN o.ts AND o.ts + interval '1 hour'
     WHERE o.change_op = 'I'$$);
SELECT name, records_in, records_dead FROM weir.pipelines
 WHERE name IN ('o_unique', 'o_shipped') ORDER BY name;
-- a projection passes every row on, changes as they are
SELECT weir.create_projection('o_all', 'ct_orders') > 0 AS created;
SELECT weir.checkpoint('o_all') > 0 AS checkpointed;
SELECT change_op, count(*) FROM o_all GROUP BY 1 ORDER BY 1;
SELECT weir.drop_pipeline('o_unique');
SELECT weir.drop_pipeline('o_shipped');
SELECT weir.drop_pipeline('o_all');
