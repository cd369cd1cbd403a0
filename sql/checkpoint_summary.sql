-- weir.checkpoint_summary (issue 20, first step): the last hour of each
-- pipeline's checkpoints, phase by phase, computed from weir.checkpoints
SET TimeZone = 'UTC';
SELECT weir.create_topic('cs_src', 'k int, t timestamptz, v int');
SELECT weir.create_pipeline('cs', 'cs_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO cs_src (k, t, v)
	SELECT g % 10, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second', g
	  FROM generate_series(1, 1000) g;
SELECT weir.checkpoint('cs') > 0 AS checkpointed;
INSERT INTO cs_src (k, t, v)
	SELECT g % 10, '2024-01-01 00:20:00+00'::timestamptz + g * interval '1 second', g
	  FROM generate_series(1, 500) g;
SELECT weir.checkpoint('cs') > 0 AS checkpointed;
SELECT weir.checkpoint('cs') > 0 AS checkpointed;

-- the summary agrees with the checkpoints it summarises
SELECT s.checkpoints = (SELECT count(*) FROM weir.checkpoints c JOIN weir.pipeline p
                         ON p.id = c.pipeline_id WHERE p.name = 'cs') AS all_counted,
       s.checkpoints >= 3 AS three_or_more,
       s.records_in AS records_in,
       s.sink_rows = (SELECT count(*) FROM cs) AS sink_rows_match,
       s.start_delay_p50_ms <= s.start_delay_p95_ms AND s.start_delay_p95_ms <= s.start_delay_max_ms
           AS start_delay_ordered,
       s.sync_p50_ms <= s.sync_p95_ms AND s.sync_p95_ms <= s.sync_max_ms AS sync_ordered,
       s.async_p50_ms <= s.async_p95_ms AND s.async_p95_ms <= s.async_max_ms AS async_ordered,
       s.total_p50_ms <= s.total_p95_ms AND s.total_p95_ms <= s.total_max_ms AS total_ordered,
       s.total_max_ms >= s.sync_max_ms AS total_covers_sync,
       s.alignment_max_ms = 0 AS no_alignment_with_one_input,
       s.bytes_max > 0 AS state_written
  FROM weir.checkpoint_summary s WHERE s.pipeline = 'cs';
-- checkpoints older than an hour leave the summary
UPDATE weir.checkpoints SET committed_at = committed_at - interval '2 hours', started_at = started_at - interval '2 hours'
 WHERE pipeline_id = (SELECT id FROM weir.pipeline WHERE name = 'cs')
   AND id = (SELECT min(c.id) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'cs');
SELECT checkpoints >= 2 AND checkpoints = (SELECT count(*) - 1 FROM weir.checkpoints c JOIN weir.pipeline p
                         ON p.id = c.pipeline_id WHERE p.name = 'cs') AS older_ones_left
  FROM weir.checkpoint_summary WHERE pipeline = 'cs';
SELECT weir.drop_pipeline('cs');
SELECT count(*) AS gone FROM weir.checkpoint_summary WHERE pipeline = 'cs';
SELECT weir.drop_topic('cs_src');
DROP TABLE cs;
