-- A join's filters and late-records table (issue 17): left_filter and
-- right_filter each skip their side's records before they are buffered,
-- so the sink is the join of the filtered topics in SQL (inner and left
-- outer, compared with EXCEPT ALL both ways); rows that arrive behind the
-- watermark go to one late-records table for both topics, (source, part,
-- pos, record jsonb, watermark, received_at), which must hold exactly them.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';

SELECT weir.create_topic('jf_orders', 'order_id bigint, amount int, ts timestamptz',
                         partitions => 2, key => 'order_id');
SELECT weir.create_topic('jf_ships', 'order_id bigint, carrier text, ts timestamptz',
                         partitions => 3, key => 'order_id');

------------------------------------------------------------------------------
-- Errors
------------------------------------------------------------------------------
-- volatile filters: a replay would not skip the same records
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        left_filter => 'random() < 0.5');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_filter => 'ts < clock_timestamp()');
\echo :LAST_ERROR_SQLSTATE
-- an aggregate: the parser's own error, as for the filter of the other kinds
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_filter => 'count(*) > 1');
\echo :LAST_ERROR_SQLSTATE
-- each filter is over its own topic's columns: the other side's are unknown
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        left_filter => 'carrier <> ''lost''');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_filter => 'amount > 0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_filter => 'l.amount > 0');
\echo :LAST_ERROR_SQLSTATE
-- not a boolean; not an expression
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_filter => 'carrier');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        left_filter => 'amount > 0 FROM pg_authid --');
\echo :LAST_ERROR_SQLSTATE
-- late-records tables of the wrong shape: a topic's shape (what the other
-- kinds take), a column missing, of another type, a NOT NULL column weir
-- does not write, not a table
CREATE TABLE jf_like_topic (LIKE jf_orders, watermark timestamptz, received_at timestamptz);
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_like_topic');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE jf_no_record (source regclass, part int, pos bigint, watermark timestamptz,
                           received_at timestamptz);
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_no_record');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE jf_text_record (source regclass, part int, pos bigint, record text,
                             watermark timestamptz, received_at timestamptz);
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_text_record');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE jf_extra_not_null (source regclass, part int, pos bigint, record jsonb,
                                watermark timestamptz, received_at timestamptz, note text NOT NULL);
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_extra_not_null');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW jf_late_view AS SELECT * FROM jf_text_record;
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_late_view');
\echo :LAST_ERROR_SQLSTATE
-- late records into the sink, or into a source
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        sink => 'jf_bad_sink', late_records => 'jf_bad_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_ships');
\echo :LAST_ERROR_SQLSTATE
-- the owner needs INSERT on the late-records table (and may read the topics)
CREATE ROLE jf_bob;
GRANT SELECT ON jf_orders, jf_ships TO jf_bob;
GRANT CREATE ON SCHEMA public TO jf_bob;
CREATE TABLE jf_not_bobs (source regclass, part int, pos bigint, record jsonb,
                          watermark timestamptz, received_at timestamptz);
SET ROLE jf_bob;
SELECT weir.create_join('bad', 'jf_orders', 'jf_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        late_records => 'jf_not_bobs');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM jf_bob;
REVOKE SELECT ON jf_orders, jf_ships FROM jf_bob;
DROP ROLE jf_bob;
DROP VIEW jf_late_view;
DROP TABLE jf_like_topic, jf_no_record, jf_text_record, jf_extra_not_null, jf_not_bobs;
SELECT count(*) AS pipelines, to_regclass('jf_bad_sink') AS bad_sink FROM weir.pipeline WHERE name = 'bad';

------------------------------------------------------------------------------
-- Filters: the sink is the join of the filtered topics
------------------------------------------------------------------------------
-- big enough orders, not every fourth; shipments not lost.  The inner join
-- lets weir create its late-records table; the left join's exists, with a
-- column of its own and a CHECK that refuses one late row.
SELECT weir.create_join('jf_inner', 'jf_orders', 'jf_ships',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '5 minutes', right_after => '1 hour',
                        columns => 'l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at',
                        left_filter => 'amount >= 100 AND order_id % 4 <> 0',
                        right_filter => 'carrier <> ''lost''',
                        late_records => 'jf_inner_late',
                        out_of_orderness => '2 hours') > 0 AS created;
\d jf_inner_late
CREATE TABLE jf_left_late (source regclass, part int, pos bigint, record jsonb,
                           watermark timestamptz, received_at timestamptz, note text DEFAULT 'late',
                           CHECK (record->>'carrier' IS DISTINCT FROM 'refused'));
SELECT weir.create_join('jf_left', 'jf_orders', 'jf_ships',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '5 minutes', right_after => '1 hour', kind => 'left',
                        columns => 'l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at',
                        left_filter => 'amount >= 100 AND order_id % 4 <> 0',
                        right_filter => 'carrier <> ''lost''',
                        late_records => 'jf_left_late',
                        out_of_orderness => '2 hours') > 0 AS created;
-- the texts as given, for display; the definition holds both, one per side
SELECT name, filter, right_filter, late_records::regclass FROM weir.pipeline
 WHERE name LIKE 'jf_%' ORDER BY name;
SELECT pg_get_viewdef('weir_pipelines.jf_inner'::regclass);
-- the late-records table's columns cannot change under the pipeline
ALTER TABLE jf_inner_late DROP COLUMN record;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE jf_inner_late ALTER COLUMN part TYPE bigint;
\echo :LAST_ERROR_SQLSTATE

-- 60 orders, a minute apart; 1 to 3 shipments each, 5 minutes before
-- (on the bound), 30 minutes after, 61 minutes after (outside); all of
-- every fifth order's shipments are lost
INSERT INTO jf_orders (order_id, amount, ts)
SELECT i, i * 10, '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 60) i;
INSERT INTO jf_ships (order_id, carrier, ts)
SELECT i, CASE WHEN i % 5 = 0 THEN 'lost' WHEN j = 2 THEN 'ups' ELSE 'dhl' END,
       '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
       + (ARRAY[interval '-5 minutes', interval '30 minutes', interval '61 minutes'])[j]
  FROM generate_series(1, 60) i, generate_series(1, 1 + i % 3) j;
SELECT weir.checkpoint('jf_left') > 0 AS checkpointed;
-- a restart in the middle: the start checks the late-records table too
SELECT weir.stop('jf_left');
SELECT wait_for_pipeline('jf_left', 'worker_pid IS NULL') AS stopped;
SELECT weir.start('jf_left');
-- far ahead on every partition of both topics, and filtered out: filtered
-- records move the watermark all the same, so every buffered row leaves
INSERT INTO jf_orders (part, order_id, amount, ts)
SELECT p, 1000 + p, 0, '2026-01-02 00:00:00+00' FROM generate_series(0, 1) p;
INSERT INTO jf_ships (part, order_id, carrier, ts)
SELECT p, 2000 + p, 'lost', '2026-01-02 00:00:00+00' FROM generate_series(0, 2) p;
SELECT weir.checkpoint('jf_inner') > 0 AS checkpointed;
SELECT weir.checkpoint('jf_left') > 0 AS checkpointed;
SELECT name, watermark, records_in, records_late FROM weir.pipelines
 WHERE name LIKE 'jf_%' ORDER BY name;

SELECT * FROM oracle_diff('jf_inner', $$
SELECT l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at
  FROM (SELECT * FROM jf_orders WHERE amount >= 100 AND order_id % 4 <> 0) l
  JOIN (SELECT * FROM jf_ships WHERE carrier <> 'lost') r
    ON l.order_id = r.order_id
   AND r.ts BETWEEN l.ts - interval '5 minutes' AND l.ts + interval '1 hour'$$);
SELECT * FROM oracle_diff('jf_left', $$
SELECT l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at
  FROM (SELECT * FROM jf_orders WHERE amount >= 100 AND order_id % 4 <> 0) l
  LEFT JOIN (SELECT * FROM jf_ships WHERE carrier <> 'lost') r
    ON l.order_id = r.order_id
   AND r.ts BETWEEN l.ts - interval '5 minutes' AND l.ts + interval '1 hour'$$);
-- the data has what the test is about: pairs, pairs on the bound, left
-- rows whose partners the right filter skipped (out unmatched), rows the
-- left filter skipped whose partners pass, nothing of the filtered out
SELECT (SELECT count(*) FROM jf_inner) AS pairs,
       (SELECT count(*) FROM jf_inner WHERE shipped_at = ordered_at - interval '5 minutes') AS on_bound,
       (SELECT count(*) FROM jf_left l WHERE carrier IS NULL
           AND EXISTS (SELECT FROM jf_ships r WHERE r.order_id = l.order_id AND r.carrier = 'lost'
                          AND r.ts BETWEEN l.ordered_at - interval '5 minutes'
                                       AND l.ordered_at + interval '1 hour')) AS partners_filtered,
       (SELECT count(*) FROM jf_orders o WHERE NOT (amount >= 100 AND order_id % 4 <> 0)
           AND o.order_id < 1000
           AND EXISTS (SELECT FROM jf_ships r WHERE r.order_id = o.order_id AND r.carrier <> 'lost'
                          AND r.ts BETWEEN o.ts - interval '5 minutes' AND o.ts + interval '1 hour'))
         AS left_filtered_with_partners,
       (SELECT count(*) FROM jf_left WHERE amount < 100 OR order_id % 4 = 0 OR carrier = 'lost')
         AS filtered_in_sink;

------------------------------------------------------------------------------
-- Late records: rows behind the watermark, of both topics
------------------------------------------------------------------------------
-- orders 501 to 503 and shipments of 501 and 503 are late; order 504 and the
-- lost shipment of 502 are filtered out (never late); the left join's table
-- refuses the 'refused' shipment, which becomes a dead letter of jf_ships
INSERT INTO jf_orders (order_id, amount, ts)
SELECT i, 500, '2026-01-01 00:10:00+00' FROM generate_series(501, 503) i;
INSERT INTO jf_orders (order_id, amount, ts) VALUES (504, 0, '2026-01-01 00:10:00+00');
INSERT INTO jf_ships (order_id, carrier, ts) VALUES
  (501, 'dhl', '2026-01-01 00:20:00+00'),
  (502, 'lost', '2026-01-01 00:20:00+00'),
  (503, 'refused', '2026-01-01 00:20:00+00');
SELECT weir.checkpoint('jf_inner') > 0 AS checkpointed;
SELECT weir.checkpoint('jf_left') > 0 AS checkpointed;
-- exactly those rows, each with its topic, its partition and position in
-- it, and the row as JSON
CREATE VIEW jf_late_expected AS
SELECT 'jf_orders'::regclass AS source, part, pos, to_jsonb(o) AS record
  FROM jf_orders o WHERE order_id BETWEEN 501 AND 503
UNION ALL
SELECT 'jf_ships'::regclass, part, pos, to_jsonb(s)
  FROM jf_ships s WHERE order_id IN (501, 503);
SELECT * FROM oracle_diff('(SELECT source, part, pos, record FROM jf_inner_late) i',
                      'SELECT * FROM jf_late_expected');
SELECT * FROM oracle_diff('(SELECT source, part, pos, record FROM jf_left_late) i',
                      $$SELECT * FROM jf_late_expected WHERE record->>'carrier' IS DISTINCT FROM 'refused'$$);
SELECT source, record->>'order_id' AS order_id, watermark, received_at IS NOT NULL AS received
  FROM jf_inner_late ORDER BY 1, 2;
SELECT source, record->>'order_id' AS order_id, note FROM jf_left_late ORDER BY 1, 2;
-- the refused one: a dead letter of its topic, with its partition and position
SELECT d.source, (d.partition, d.position) = (s.part, s.pos) AS same_row,
       d.error LIKE 'late-records table "jf_left_late": %check constraint%' AS error
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
  JOIN jf_ships s ON s.order_id = 503
 WHERE p.name = 'jf_left';
-- counted as before: late rows, whether kept or refused
SELECT name, records_late, records_dead,
       records_late = (SELECT count(*) FROM jf_late_expected) AS all_late_counted
  FROM weir.pipelines WHERE name LIKE 'jf_%' ORDER BY name;
-- and the sinks did not change
SELECT (SELECT count(*) FROM jf_inner WHERE order_id > 500) AS inner_late_rows,
       (SELECT count(*) FROM jf_left WHERE order_id > 500) AS left_late_rows;

SELECT weir.drop_pipeline('jf_inner');
SELECT weir.drop_pipeline('jf_left');
DROP VIEW jf_late_expected;
DROP TABLE jf_inner, jf_left, jf_inner_late, jf_left_late;
SELECT weir.drop_topic('jf_ships');
SELECT weir.drop_topic('jf_orders');
