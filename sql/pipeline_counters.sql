-- Counters that survive (issue 20): each checkpoint commits the pipeline's
-- counters in weir.pipeline_counters; weir.pipelines shows them live while
-- a worker runs, as committed when none does, and a worker that starts
-- again goes on from them.  The crashes are test/t/021_counters_survive.pl.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';
SELECT weir.create_topic('pc_src', 'k int, v int, d int, t timestamptz', partitions => 2, key => 'k');
SELECT weir.create_pipeline('pc_win', 'pc_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v / d) AS q',
                            late_records => 'pc_late', checkpoint_interval => '1 hour') > 0 AS created;
SELECT wait_for_status('pc_win', 'running');
-- no checkpoint yet: no row; weir.pipelines counts from 0
SELECT count(*) AS counter_rows FROM weir.pipeline_counters c
  JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'pc_win';

-- what weir.pipelines counts, what the row holds, and what SQL says of the
-- tables: the topic's rows, the sink's, the late records', the dead letters'
CREATE FUNCTION pc_counters(OUT source text, OUT records_in bigint, OUT records_out bigint,
                            OUT records_late bigint, OUT records_dead bigint,
                            OUT records_dropped bigint)
RETURNS SETOF record LANGUAGE sql AS $$
	SELECT 'weir.pipelines', records_in, records_out, records_late, records_dead, records_dropped
	  FROM weir.pipelines WHERE name = 'pc_win'
	UNION ALL
	SELECT 'weir.pipeline_counters', c.records_in, c.records_out, c.records_late, c.records_dead,
	       c.records_dropped
	  FROM weir.pipeline_counters c JOIN weir.pipeline p ON p.id = c.pipeline_id
	 WHERE p.name = 'pc_win'
	UNION ALL
	SELECT 'SQL', (SELECT count(*) FROM pc_src), (SELECT count(*) FROM pc_win),
	       (SELECT count(*) FROM pc_late),
	       (SELECT count(*) FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
	         WHERE p.name = 'pc_win'), 0
	 ORDER BY 1 $$;

-- 12 records in two minutes, two of them with d = 0 (dead letters), then
-- one at 00:05 in each partition, which closes every window
INSERT INTO pc_src (k, v, d, t)
SELECT g % 3, g, CASE WHEN g IN (4, 9) THEN 0 ELSE 1 END,
       '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 seconds'
  FROM generate_series(0, 11) g;
INSERT INTO pc_src (part, k, v, d, t) VALUES (0, 7, 1, 1, '2024-01-01 00:05:00+00'),
                                             (1, 8, 1, 1, '2024-01-01 00:05:00+00');
SELECT weir.checkpoint('pc_win') > 0 AS checkpointed;
-- two records for windows that fired: late
INSERT INTO pc_src (k, v, d, t) VALUES (1, 5, 1, '2024-01-01 00:00:30+00'), (2, 6, 1, '2024-01-01 00:01:30+00');
SELECT weir.checkpoint('pc_win') > 0 AS checkpointed;
SELECT * FROM pc_counters();
SELECT c.checkpoint_id = (SELECT max(id) FROM weir.checkpoints x WHERE x.pipeline_id = p.id) AS of_the_last_checkpoint,
       c.dead_at_write
  FROM weir.pipeline_counters c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'pc_win';

-- stopped: weir.pipelines shows the committed counters
SELECT weir.stop('pc_win');
SELECT wait_for_pipeline('pc_win', 'worker_pid IS NULL') AS stopped;
SELECT * FROM pc_counters();
-- started again: the worker restores them and counts on from there
SELECT weir.start('pc_win');
SELECT wait_for_pipeline('pc_win', 'worker_pid IS NOT NULL') AS started;
SELECT * FROM pc_counters();
-- one more of each kind: a dead letter, a late record, one that a window
-- closed by the last two counts
INSERT INTO pc_src (k, v, d, t) VALUES (1, 1, 0, '2024-01-01 00:05:10+00'), (2, 2, 1, '2024-01-01 00:01:20+00'),
                                       (1, 3, 1, '2024-01-01 00:06:10+00');
INSERT INTO pc_src (part, k, v, d, t) VALUES (0, 7, 1, 1, '2024-01-01 00:10:00+00'),
                                             (1, 8, 1, 1, '2024-01-01 00:10:00+00');
SELECT weir.checkpoint('pc_win') > 0 AS checkpointed;
SELECT * FROM pc_counters();

-- anyone may read the counters, no one but weir writes them
CREATE ROLE regress_pc_reader;
SET ROLE regress_pc_reader;
SELECT count(*) AS rows_seen FROM weir.pipeline_counters;
SELECT sqlstate_of($$UPDATE weir.pipeline_counters SET records_in = 0$$) AS update_by_others;
RESET ROLE;
DROP ROLE regress_pc_reader;

-- dropped with its pipeline
CREATE TEMP TABLE pc_id AS SELECT id FROM weir.pipeline WHERE name = 'pc_win';
SELECT weir.drop_pipeline('pc_win');
SELECT count(*) AS counter_rows_left FROM weir.pipeline_counters WHERE pipeline_id = (SELECT id FROM pc_id);
DROP FUNCTION pc_counters();
SELECT weir.drop_topic('pc_src');
DROP TABLE pc_win, pc_late;
