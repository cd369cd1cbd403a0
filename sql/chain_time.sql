-- Watermarks travel with the data (issue 17).  A join writes pairs into a
-- topic; a window reads that topic.  Its watermark is the join's, published
-- with the join's checkpoints, not one guessed from the pair times it sees:
-- one partition of the join's inputs running ahead does not make the
-- window's correct rows late.
SET timezone = 'UTC';
SELECT weir.create_topic('ct_bids', 'k int, ts timestamptz', partitions => 2);
SELECT weir.create_topic('ct_asks', 'k int, ts timestamptz', partitions => 2);
SELECT weir.create_topic('ct_pairs', 'k int, ts timestamptz', partitions => 1);
SELECT weir.create_join('ct_j', 'ct_bids', 'ct_asks', left_key => 'k', right_key => 'k',
                        left_event_time => 'ts', right_event_time => 'ts',
                        columns => 'l.k, l.ts', sink => 'ct_pairs') > 0 AS created;
SELECT weir.create_pipeline('ct_w', 'ct_pairs', key => 'k', event_time => 'ts',
                            windowing => weir.tumbling('10 seconds'),
                            aggregates => 'count(*) AS n',
                            out_of_orderness => '60 seconds',
                            sink => 'ct_counts', late_records => 'ct_late') > 0 AS created;

-- pairs at 1 s and 200 s into partition 0 of the join's inputs
INSERT INTO ct_bids (part, k, ts) VALUES (0, 1, '2026-01-01 00:00:01'), (0, 2, '2026-01-01 00:03:20');
INSERT INTO ct_asks (part, k, ts) VALUES (0, 1, '2026-01-01 00:00:01'), (0, 2, '2026-01-01 00:03:20');
SELECT weir.checkpoint('ct_j') > 0 AS checkpointed;
SELECT weir.checkpoint('ct_w') > 0 AS checkpointed;
-- the join has no watermark yet (partition 1 has seen nothing): the window waits
SELECT count(*) AS pairs FROM ct_pairs;
SELECT count(*) AS published FROM weir.topic_watermark;
SELECT watermark FROM weir.pipelines WHERE name = 'ct_w';
-- then a pair at 3 s into partition 1: not late anywhere
INSERT INTO ct_bids (part, k, ts) VALUES (1, 1, '2026-01-01 00:00:03');
INSERT INTO ct_asks (part, k, ts) VALUES (1, 1, '2026-01-01 00:00:03');
SELECT weir.checkpoint('ct_j') > 0 AS checkpointed;
SELECT weir.checkpoint('ct_w') > 0 AS checkpointed;
SELECT watermark AS join_watermark FROM weir.pipelines WHERE name = 'ct_j';
-- the join published its watermark for the pairs' topic
SELECT part, watermark FROM weir.topic_watermark w
  JOIN weir.topic t ON t.id = w.topic_id WHERE t.relid = 'ct_pairs'::regclass
 ORDER BY pos DESC LIMIT 1;
SELECT watermark AS window_watermark FROM weir.pipelines WHERE name = 'ct_w';
-- pairs at 300 s in both partitions move everything on
INSERT INTO ct_bids (part, k, ts) VALUES (0, 3, '2026-01-01 00:05:00'), (1, 4, '2026-01-01 00:05:00');
INSERT INTO ct_asks (part, k, ts) VALUES (0, 3, '2026-01-01 00:05:00'), (1, 4, '2026-01-01 00:05:00');
SELECT weir.checkpoint('ct_j') > 0 AS checkpointed;
SELECT weir.checkpoint('ct_w') > 0 AS checkpointed;
SELECT watermark AS window_watermark FROM weir.pipelines WHERE name = 'ct_w';
-- window [0 s, 10 s) counts both pairs; nothing was late
SELECT k, window_start, n FROM ct_counts ORDER BY window_start, k;
SELECT count(*) AS late FROM ct_late;
SELECT records_late FROM weir.pipelines WHERE name = 'ct_w';
-- the sink equals the oracle over the join's topic (closed windows)
SELECT count(*) AS missing_or_different FROM (
  (SELECT k, date_bin('10 seconds', ts, '1970-01-01') AS window_start, count(*) AS n
     FROM ct_pairs GROUP BY 1, 2
   HAVING date_bin('10 seconds', ts, '1970-01-01') + interval '10 seconds'
          <= (SELECT watermark FROM weir.pipelines WHERE name = 'ct_w')
   EXCEPT SELECT k, window_start, n FROM ct_counts)
  UNION ALL
  (SELECT k, window_start, n FROM ct_counts
   EXCEPT SELECT k, date_bin('10 seconds', ts, '1970-01-01'), count(*) FROM ct_pairs GROUP BY 1, 2)) x;

-- a stopped upstream holds the window, and weir.pipelines says so once
-- records keep arriving (the view's clock moved a minute on, as if the stall
-- had lasted that long)
SELECT weir.stop('ct_j');
SELECT wait_for_pipeline('ct_j', 'worker_pid IS NULL') AS stopped;
INSERT INTO ct_pairs (k, ts) VALUES (9, '2026-01-01 00:30:00');
SELECT weir.checkpoint('ct_w') > 0 AS checkpointed;
SET weir.clock_offset = 60;
SELECT regexp_replace(state_warning, 'since \S+ \S+ while', 'since <time> while') AS state_warning
  FROM weir.pipelines WHERE name = 'ct_w';
RESET weir.clock_offset;

-- weir.checkpoint() over a chain: one call waits until everything committed
-- before it has gone through every stage, upstream first
SELECT weir.create_topic('ct_src', 'k int, v int, ts timestamptz', partitions => 2, key => 'k');
SELECT weir.create_topic('ct_min', 'k int, window_start timestamptz, window_end timestamptz, n bigint, total bigint',
                         partitions => 2, key => 'k');
SELECT weir.create_topic('ct_5min', 'k int, window_start timestamptz, window_end timestamptz, n numeric, total numeric',
                         partitions => 1);
SELECT weir.create_pipeline('ct_s1', 'ct_src', key => 'k', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total', sink => 'ct_min') > 0 AS created;
SELECT weir.create_pipeline('ct_s2', 'ct_min', key => 'k', event_time => 'window_start',
                            windowing => weir.tumbling('5 minutes'),
                            aggregates => 'sum(n) AS n, sum(total) AS total', sink => 'ct_5min') > 0 AS created;
SELECT weir.create_projection('ct_s3', 'ct_5min', sink => 'ct_final') > 0 AS created;
INSERT INTO ct_src (k, v, ts)
SELECT g % 5, g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 3000) g;
-- far ahead in both partitions: every window of both windowed stages closes
INSERT INTO ct_src (part, k, v, ts) VALUES (0, 100, 0, '2026-01-02'), (1, 101, 0, '2026-01-02');
-- the named pipeline and the chain that feeds it, upstream first
SELECT pipeline, checkpoint_id > 0 AS checkpointed FROM weir.checkpoint(ARRAY['ct_s3']);
SELECT (SELECT count(*) FROM ct_final WHERE k < 100) AS final_rows,
       (SELECT count(*) FROM (
          (SELECT k, date_bin('5 minutes', ts, '1970-01-01') AS window_start, count(*)::numeric AS n, sum(v)::numeric AS total
             FROM ct_src WHERE k < 100 GROUP BY 1, 2
           EXCEPT SELECT k, window_start, n, total FROM ct_final)
          UNION ALL
          (SELECT k, window_start, n, total FROM ct_final
           EXCEPT SELECT k, date_bin('5 minutes', ts, '1970-01-01'), count(*), sum(v) FROM ct_src GROUP BY 1, 2)) x)
       AS missing_or_different;
-- a window's rows reach a topic in the order the windows closed: by end,
-- within a checkpoint too (3000 records closed 250 windows in one)
SELECT count(*) AS rows_behind_an_earlier_window_end FROM (
  SELECT window_end < max(window_end) OVER (PARTITION BY part ORDER BY pos
                                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS behind
    FROM ct_min) x WHERE behind;
SELECT count(DISTINCT c.id) AS checkpoints_that_wrote_ct_min FROM weir.checkpoints c
  JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'ct_s1' AND c.sink_rows > 0;
-- more rows, and one call without names: every running pipeline
INSERT INTO ct_src (part, k, v, ts) VALUES (0, 7, 1, '2026-01-02 00:00:30'), (0, 100, 0, '2026-01-03'), (1, 101, 0, '2026-01-03');
SELECT count(*) AS chain_checkpointed FROM weir.checkpoint() WHERE pipeline LIKE 'ct\_s_';
SELECT k, window_start, n, total FROM ct_final WHERE k = 7 AND window_start >= '2026-01-02';
-- names must exist; the caller must own them
SELECT * FROM weir.checkpoint(ARRAY['ct_nope']);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.checkpoint(ARRAY[NULL]::text[]);
\echo :LAST_ERROR_SQLSTATE
-- a stopped pipeline named is an error, not a silent wait
SELECT weir.stop('ct_s2');
SELECT wait_for_pipeline('ct_s2', 'worker_pid IS NULL') AS stopped;
SELECT * FROM weir.checkpoint(ARRAY['ct_s2'], timeout => '2 s');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_pipeline(p) FROM unnest(ARRAY['ct_s3', 'ct_s2', 'ct_s1']) p;
DROP TABLE ct_final;
SELECT weir.drop_topic(t) FROM unnest(ARRAY['ct_5min', 'ct_min', 'ct_src']) t;

-- a chain across owners: weir.checkpoint() asks only the caller's own
-- pipelines, and refuses to checkpoint another role's pipeline upstream
CREATE ROLE ct_up;
CREATE ROLE ct_down;
CREATE SCHEMA ct_up AUTHORIZATION ct_up;
CREATE SCHEMA ct_down AUTHORIZATION ct_down;
SET ROLE ct_up;
SELECT weir.create_topic('ct_up.src', 'k int, ts timestamptz', partitions => 1);
SELECT weir.create_topic('ct_up.minutes', 'k int, window_start timestamptz, window_end timestamptz, n bigint',
                         partitions => 1);
GRANT USAGE ON SCHEMA ct_up TO ct_down;
GRANT SELECT ON ct_up.minutes TO ct_down;
SELECT weir.create_pipeline('ct_up_minutes', 'ct_up.src', key => 'k', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'ct_up.minutes') > 0 AS created;
RESET ROLE;
SET ROLE ct_down;
SELECT weir.create_pipeline('ct_down_5m', 'ct_up.minutes', key => 'k', event_time => 'window_end',
                            windowing => weir.tumbling('5 minutes'), aggregates => 'sum(n) AS n',
                            sink => 'ct_down.five') > 0 AS created;
SELECT * FROM weir.checkpoint(ARRAY['ct_down_5m']);
\echo :LAST_ERROR_SQLSTATE
SELECT pipeline FROM weir.checkpoint() ORDER BY 1;
RESET ROLE;
SELECT weir.drop_pipeline('ct_down_5m');
SELECT weir.drop_pipeline('ct_up_minutes');
DROP TABLE ct_down.five;
SELECT weir.drop_topic('ct_up.minutes');
SELECT weir.drop_topic('ct_up.src');
DROP SCHEMA ct_up, ct_down;
DROP ROLE ct_up, ct_down;

-- a projection keeps no event time: it publishes nothing
SELECT weir.create_topic('ct_copy', 'k int, ts timestamptz', partitions => 1);
SELECT weir.create_projection('ct_p', 'ct_pairs', sink => 'ct_copy') > 0 AS created;
SELECT weir.checkpoint('ct_p') > 0 AS checkpointed;
SELECT count(*) AS published_for_copy FROM weir.topic_watermark w
  JOIN weir.topic t ON t.id = w.topic_id WHERE t.relid = 'ct_copy'::regclass;

-- dropping the writer drops what it published
SELECT weir.drop_pipeline('ct_p');
SELECT weir.drop_pipeline('ct_w');
SELECT weir.drop_pipeline('ct_j');
SELECT count(*) AS left_behind FROM weir.topic_watermark;
DROP TABLE ct_counts, ct_late;
SELECT weir.drop_topic(t) FROM unnest(ARRAY['ct_copy', 'ct_pairs', 'ct_bids', 'ct_asks']) t;
