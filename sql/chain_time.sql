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
                        left_time => 'ts', right_time => 'ts',
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
