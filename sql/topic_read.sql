-- weir.read: rows of one partition after a position, below its stable position
SELECT weir.create_topic('r', 'v int', partitions => 2);
INSERT INTO r (part, v) SELECT g % 2, g FROM generate_series(1, 10) g;
SELECT * FROM weir.read(NULL::r, 0);
SELECT * FROM weir.read(NULL::r, 1, after_position => 2, max_rows => 2);
SELECT * FROM weir.read(NULL::r, 1, 5, 100);
SELECT count(*) FROM weir.read(NULL::r, 0, 0, 0);

-- this session's own open transaction holds its partition back
BEGIN;
INSERT INTO r (part, v) VALUES (0, 100);
INSERT INTO r (part, v) VALUES (1, 101);
SELECT pos, v FROM weir.read(NULL::r, 0, 4, 100);
SELECT partition, head_position, stable_position, open_producers,
       oldest_producer_pid = pg_backend_pid() AS held_by_me, oldest_producer_position
  FROM weir.topic_partitions WHERE topic = 'r'::regclass ORDER BY partition;
SELECT weir.stable_position('r', 0), weir.stable_position('r', 1);
COMMIT;
SELECT weir.stable_position('r', 0), weir.stable_position('r', 1);
SELECT pos, v FROM weir.read(NULL::r, 0, 4, 100);
SELECT partition, head_position, stable_position, open_producers
  FROM weir.topic_partitions WHERE topic = 'r'::regclass ORDER BY partition;

-- an aborted transaction leaves a gap, never a row
BEGIN;
INSERT INTO r (part, v) VALUES (0, 200);
ROLLBACK;
INSERT INTO r (part, v) VALUES (0, 201);
SELECT pos, v FROM weir.read(NULL::r, 0, 5, 100);

-- reading by position ranges returns every row exactly once
SELECT (SELECT array_agg(v ORDER BY part, pos) FROM r) =
       (SELECT array_agg(v ORDER BY part, pos) FROM
          (SELECT * FROM weir.read(NULL::r, 0, 0, 3)
           UNION ALL SELECT * FROM weir.read(NULL::r, 0, 3, 1000)
           UNION ALL SELECT * FROM weir.read(NULL::r, 1, 0, 1)
           UNION ALL SELECT * FROM weir.read(NULL::r, 1, 1, 1000)) x) AS ranges_match_table;

-- plain SQL reads below the stable position, taken in an earlier statement
SELECT weir.stable_position('r', 0) AS stable \gset
SELECT pos, v FROM r WHERE part = 0 AND pos > 4 AND pos <= :stable ORDER BY pos;

-- errors
SELECT weir.stable_position('r', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.stable_position('not_a_topic_yet', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::r, 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::r, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::r, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::r, 0, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::r, 0, 0, -5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.read(NULL::int, 0);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE not_a_topic (part int, pos bigint, PRIMARY KEY (part, pos));
SELECT * FROM weir.read(NULL::not_a_topic, 0);
\echo :LAST_ERROR_SQLSTATE

-- readers need SELECT on the topic; row-level security is refused
CREATE ROLE weir_reader;
GRANT USAGE ON SCHEMA public TO weir_reader;
SET ROLE weir_reader;
SELECT * FROM weir.read(NULL::r, 0);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT SELECT ON r TO weir_reader;
SET ROLE weir_reader;
SELECT count(*) FROM weir.read(NULL::r, 0);
RESET ROLE;
ALTER TABLE r ENABLE ROW LEVEL SECURITY;
SET ROLE weir_reader;
SELECT count(*) FROM weir.read(NULL::r, 0);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE r DISABLE ROW LEVEL SECURITY;

SELECT weir.drop_topic('r');
DROP TABLE not_a_topic;
REVOKE USAGE ON SCHEMA public FROM weir_reader;
DROP ROLE weir_reader;
