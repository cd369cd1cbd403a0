-- Chaining: a pipeline's sink can be a topic, which another pipeline reads.
-- The first pipeline's rows enter the topic in its checkpoint transaction,
-- through the topic's producer trigger, so the chain stays exactly-once.
SET timezone = 'UTC';
SELECT weir.create_topic('clicks_raw', 'site int, ms bigint, ts timestamptz', partitions => 2, key => 'site');
-- stage 1 writes per-minute counts into a topic with the sink's columns
SELECT weir.create_topic('clicks_1m', 'site int, window_start timestamptz, window_end timestamptz, n bigint, total numeric',
                         partitions => 2, key => 'site');
SELECT weir.create_pipeline('stage1', 'clicks_raw', key => 'site', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(ms) AS total',
                            sink => 'clicks_1m') > 0 AS created;
-- stage 2 rolls the minutes up into 5-minute windows in a table
SELECT weir.create_pipeline('stage2', 'clicks_1m', key => 'site', event_time => 'window_start',
                            windowing => weir.tumbling('5 minutes'),
                            aggregates => 'sum(n) AS n, sum(total) AS total',
                            sink => 'clicks_5m') > 0 AS created;

INSERT INTO clicks_raw (site, ms, ts)
SELECT g % 3, g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 1800) g;
-- one event per partition, far ahead, closes every window of both stages
INSERT INTO clicks_raw (part, site, ms, ts) VALUES (0, 100, 0, '2026-01-01 02:00:00+00'), (1, 101, 0, '2026-01-01 02:00:00+00');
SELECT weir.checkpoint('stage1') > 0 AS checkpointed;
SELECT count(*) AS minutes_in_topic, min(pos) AS first_pos FROM clicks_1m WHERE site < 100;
-- the sentinels' minutes must reach stage 2's partitions too
INSERT INTO clicks_raw (part, site, ms, ts) VALUES (0, 100, 0, '2026-01-01 04:00:00+00'), (1, 101, 0, '2026-01-01 04:00:00+00');
SELECT weir.checkpoint('stage1') > 0 AS checkpointed;
SELECT weir.checkpoint('stage2') > 0 AS checkpointed;

-- the end of the chain equals the same aggregation over the first topic
SELECT (SELECT count(*) FROM clicks_5m WHERE site < 100) AS sink_rows,
       (SELECT count(*) FROM (
          SELECT site, date_bin('5 minutes', ts, '1970-01-01') AS window_start, count(*)::numeric AS n, sum(ms) AS total
            FROM clicks_raw WHERE site < 100 GROUP BY 1, 2
          EXCEPT SELECT site, window_start, n, total FROM clicks_5m) x) AS missing_or_different;
SELECT site, window_start, n, total FROM clicks_5m WHERE site = 1 ORDER BY window_start LIMIT 2;

-- a topic sink takes exactly one row per window
SELECT weir.create_pipeline('bad', 'clicks_raw', key => 'site', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(ms) AS total',
                            sink => 'clicks_1m', emit => 'updates');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks_raw', key => 'site', event_time => 'ts',
                            windowing => weir.session('1 minute'),
                            aggregates => 'count(*) AS n, sum(ms) AS total',
                            sink => 'clicks_1m');
\echo :LAST_ERROR_SQLSTATE
-- and a pipeline cannot write to its own source
SELECT weir.create_pipeline('bad', 'clicks_1m', key => 'site', event_time => 'window_start',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n', sink => 'clicks_1m');
\echo :LAST_ERROR_SQLSTATE
-- the topic in the middle cannot be dropped while either stage exists
SELECT weir.drop_topic('clicks_1m');
\echo :LAST_ERROR_SQLSTATE

SELECT weir.drop_pipeline('stage2');
SELECT weir.drop_pipeline('stage1');
DROP TABLE clicks_5m;
SELECT weir.drop_topic('clicks_1m');
SELECT weir.drop_topic('clicks_raw');
