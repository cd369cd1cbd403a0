-- Interval join of two topics: rows with equal keys and
-- r.t BETWEEN l.t - right_before AND l.t + right_after, inner and left outer, checked
-- against the same join written in SQL.
SET timezone = 'UTC';
SELECT weir.create_topic('jn_orders', 'order_id bigint, amount int, ts timestamptz',
                         partitions => 2, key => 'order_id');
SELECT weir.create_topic('jn_shipments', 'order_id bigint, carrier text, ts timestamptz',
                         partitions => 3, key => 'order_id');

-- errors
SELECT weir.create_join('bad', 'jn_orders', 'jn_orders', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'carrier', left_event_time => 'ts', right_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'order_id, carrier', left_event_time => 'ts', right_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        columns => 'l.order_id, r.ts - l.ts AS delay');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        kind => 'full');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_after => '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'jn_orders', 'jn_shipments', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        columns => 'l.order_id, x.carrier');
\echo :LAST_ERROR_SQLSTATE

-- shipments in the hour after their order: r.t BETWEEN l.t AND l.t + 1 hour
SELECT weir.create_join('shipped', 'jn_orders', 'jn_shipments',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '0', right_after => '1 hour',
                        columns => 'l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at',
                        out_of_orderness => '2 hours') > 0 AS created;
\d shipped
SELECT weir.create_join('all_orders', 'jn_orders', 'jn_shipments',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '0', right_after => '1 hour', kind => 'left',
                        out_of_orderness => '2 hours') > 0 AS created;
\d all_orders

-- 40 orders, a minute apart; shipments: none, one, two, too late, too early
INSERT INTO jn_orders (order_id, amount, ts)
SELECT i, i * 10, '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 40) i;
INSERT INTO jn_shipments (order_id, carrier, ts)
SELECT i, CASE i % 5 WHEN 1 THEN 'dhl' WHEN 2 THEN 'ups' WHEN 3 THEN 'late' ELSE 'early' END,
       '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
       + CASE i % 5 WHEN 1 THEN interval '10 minutes' WHEN 2 THEN interval '59 minutes'
                    WHEN 3 THEN interval '61 minutes' ELSE interval '-1 minute' END
  FROM generate_series(1, 40) i WHERE i % 5 <> 0;
SELECT weir.checkpoint('shipped') > 0 AS checkpointed;
-- a restart in the middle: the buffered rows come back from the chunks
SELECT weir.stop('shipped');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'shipped' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('shipped');
-- a second shipment for the orders with 'dhl', at the edge of the hour
INSERT INTO jn_shipments (order_id, carrier, ts)
SELECT i, 'second', '2026-01-01 01:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 40) i WHERE i % 5 = 1;
-- far ahead on every partition of both topics: every buffered row leaves
INSERT INTO jn_orders (part, order_id, amount, ts)
SELECT p, 1000 + p, 0, '2026-01-02 00:00:00+00' FROM generate_series(0, 1) p;
INSERT INTO jn_shipments (part, order_id, carrier, ts)
SELECT p, 2000 + p, 'x', '2026-01-02 00:00:00+00' FROM generate_series(0, 2) p;
SELECT weir.checkpoint('shipped') > 0 AS checkpointed;
SELECT weir.checkpoint('all_orders') > 0 AS checkpointed;

CREATE VIEW shipped_oracle AS
SELECT l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at
  FROM jn_orders l JOIN jn_shipments r
    ON l.order_id = r.order_id AND r.ts BETWEEN l.ts AND l.ts + interval '1 hour'
 WHERE l.order_id < 1000;
SELECT (SELECT count(*) FROM shipped) AS sink_rows,
       (SELECT count(*) FROM (SELECT * FROM shipped_oracle EXCEPT ALL SELECT * FROM shipped) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM shipped EXCEPT ALL SELECT * FROM shipped_oracle) x) AS extra;
SELECT carrier, count(*) FROM shipped GROUP BY carrier ORDER BY carrier;

-- left outer: every order, with its shipments or once with nulls
SELECT (SELECT count(*) FROM all_orders WHERE order_id < 1000) AS sink_rows,
       (SELECT count(*) FROM (
          SELECT l.order_id, l.amount, l.ts, r.order_id, r.carrier, r.ts
            FROM jn_orders l LEFT JOIN jn_shipments r
              ON l.order_id = r.order_id AND r.ts BETWEEN l.ts AND l.ts + interval '1 hour'
           WHERE l.order_id < 1000
          EXCEPT ALL SELECT order_id, amount, ts, right_order_id, carrier, right_ts
                       FROM all_orders WHERE order_id < 1000) x) AS missing,
       (SELECT count(*) FROM (
          SELECT order_id, amount, ts, right_order_id, carrier, right_ts FROM all_orders
           WHERE order_id < 1000
          EXCEPT ALL
          SELECT l.order_id, l.amount, l.ts, r.order_id, r.carrier, r.ts
            FROM jn_orders l LEFT JOIN jn_shipments r
              ON l.order_id = r.order_id AND r.ts BETWEEN l.ts AND l.ts + interval '1 hour'
           WHERE l.order_id < 1000) x) AS extra,
       (SELECT count(*) FROM all_orders WHERE carrier IS NULL AND order_id < 1000) AS unmatched;

SELECT name, operator, records_in, records_late, retention
  FROM weir.pipelines WHERE name IN ('shipped', 'all_orders') ORDER BY name;
SELECT count(*) AS positions FROM weir.pipeline_position pp JOIN weir.pipeline p ON p.id = pp.pipeline_id
 WHERE p.name = 'shipped';
-- a row behind the watermark is late
INSERT INTO jn_shipments (order_id, carrier, ts) VALUES (7, 'late', '2026-01-01 00:30:00+00');
SELECT weir.checkpoint('shipped') > 0 AS checkpointed;
SELECT records_late FROM weir.pipelines WHERE name = 'shipped';

-- a topic in a join cannot be dropped
SELECT weir.drop_topic('jn_shipments');
\echo :LAST_ERROR_SQLSTATE

-- retention treats a join as a consumer of both its topics, at the positions
-- of its last checkpoint (0 before the first): the right topic's partitions
-- come after the left's in weir.pipeline_position
SELECT weir.create_topic('rt_left', 'id bigint, ts timestamptz', partitions => 2, key => 'id',
                         retention => '1 hour');
SELECT weir.create_topic('rt_right', 'id bigint, ts timestamptz', partitions => 2, key => 'id',
                         retention => '1 hour');
INSERT INTO rt_left (id, ts) SELECT i, '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 s'
  FROM generate_series(1, 20) i;
INSERT INTO rt_right (id, ts) SELECT i, '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 s'
  FROM generate_series(1, 20) i;
SELECT weir.create_join('rt_join', 'rt_left', 'rt_right', left_key => 'id', right_key => 'id',
                        left_event_time => 'ts', right_event_time => 'ts', start => false) > 0 AS created;
-- time samples of both topics now; two hours later (weir's clock) the rows are old
SELECT weir.run_retention('rt_left') AS left_deleted, weir.run_retention('rt_right') AS right_deleted;
SET weir.clock_offset = '2h';
-- the join has not read them: nothing goes from either topic
SELECT weir.run_retention('rt_left') AS left_deleted, weir.run_retention('rt_right') AS right_deleted;
RESET weir.clock_offset;
SELECT weir.start('rt_join');
SELECT weir.checkpoint('rt_join') > 0 AS checkpointed;
SELECT positions FROM weir.pipelines WHERE name = 'rt_join';
SET weir.clock_offset = '2h';
-- read and checkpointed: all but the newest row of each partition go from both
SELECT weir.run_retention('rt_left') AS left_deleted, weir.run_retention('rt_right') AS right_deleted;
RESET weir.clock_offset;
SELECT (SELECT count(*) FROM rt_left) AS left_rows, (SELECT count(*) FROM rt_right) AS right_rows;
SELECT weir.drop_pipeline('rt_join');
DROP TABLE rt_join;
SELECT weir.drop_topic('rt_left');
SELECT weir.drop_topic('rt_right');

-- a buffered row keeps its values, not references to them: a value stored
-- out of line (TOAST) still joins after retention deleted (and VACUUM
-- removed) its source row, before and after a restore from the checkpoint
SELECT weir.create_topic('tl_docs', 'id bigint, ts timestamptz, body text', partitions => 1,
                         retention => '1 hour');
SELECT weir.create_topic('tl_reads', 'id bigint, ts timestamptz', partitions => 1);
-- 96,000 hex digits, too random to compress: stored out of line
INSERT INTO tl_docs (id, ts, body)
  SELECT d, '2026-01-01 00:00:00+00', string_agg(md5(d || ':' || i), '' ORDER BY i)
    FROM generate_series(1, 2) d, generate_series(1, 3000) i GROUP BY d;
INSERT INTO tl_docs (id, ts, body) VALUES (3, '2026-01-01 00:00:10+00', 'short');
CREATE TABLE tl_expected AS SELECT id, length(body) AS len, md5(body) AS digest FROM tl_docs;
-- stored bigger than a page: out of line
SELECT id, pg_column_size(body) > 8160 AS stored_out_of_line FROM tl_docs ORDER BY id;
SELECT weir.create_join('tl_join', 'tl_docs', 'tl_reads', left_key => 'id', right_key => 'id',
                        left_event_time => 'ts', right_event_time => 'ts', right_before => '1 day', right_after => '1 day',
                        columns => 'l.id, l.body, r.ts AS read_at') > 0 AS created;
SELECT weir.checkpoint('tl_join') > 0 AS checkpointed;
SELECT weir.run_retention('tl_docs') AS samples_taken;
SET weir.clock_offset = '2h';
SELECT weir.run_retention('tl_docs') AS deleted;
RESET weir.clock_offset;
VACUUM tl_docs;
SELECT id FROM tl_docs ORDER BY id;
-- document 1's partner arrives in the running worker, document 2's after a restore
INSERT INTO tl_reads (id, ts) VALUES (1, '2026-01-01 01:00:00+00');
SELECT weir.checkpoint('tl_join') > 0 AS checkpointed;
SELECT weir.stop('tl_join');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'tl_join' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('tl_join');
INSERT INTO tl_reads (id, ts) VALUES (2, '2026-01-01 01:00:00+00');
SELECT weir.checkpoint('tl_join') > 0 AS checkpointed;
SELECT j.id, length(j.body) = e.len AS same_length, md5(j.body) = e.digest AS same_body
  FROM tl_join j JOIN tl_expected e USING (id) ORDER BY j.id;
SELECT count(*) AS restores FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'tl_join';
SELECT status, last_error FROM weir.pipelines WHERE name = 'tl_join';
SELECT weir.drop_pipeline('tl_join');
DROP TABLE tl_join, tl_expected;
SELECT weir.drop_topic('tl_docs');
SELECT weir.drop_topic('tl_reads');

SELECT weir.drop_pipeline('shipped');
SELECT weir.drop_pipeline('all_orders');
DROP VIEW shipped_oracle;
DROP TABLE shipped, all_orders;
SELECT weir.drop_topic('jn_shipments');
SELECT weir.drop_topic('jn_orders');
