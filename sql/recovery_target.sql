-- Recovery target and restore drills (issue 20): weir.alter_pipeline sets a
-- pipeline's recovery_target; weir.restore_drill restores its latest
-- checkpoint in this backend and records it in weir.restores; weir.pipelines
-- flags a restore or drill over the target and projects when the growth of
-- the state will make one miss it.  The 1,000,000-key restore, the worker's
-- side (first record, back to rate, its WARNING) and the drill against the
-- restore are test/t/023_restore_target.pl.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';
SELECT weir.create_topic('rt_src', 'k int, v int, t timestamptz', partitions => 2, key => 'k');
SELECT weir.create_last_value('rt_last', 'rt_src', key => 'k', event_time => 't',
                              checkpoint_interval => '1 hour') > 0 AS created;
SELECT wait_for_status('rt_last', 'running');

-- no target: nothing shown
SELECT recovery_target, recovery_warning, recovery_projection
  FROM weir.pipelines WHERE name = 'rt_last';

-- a drill before any checkpoint: nothing to restore
SELECT weir.restore_drill('rt_last');
\echo :LAST_ERROR_SQLSTATE

-- 1000 keys, checkpointed; the drill restores exactly them
INSERT INTO rt_src (k, v, t) SELECT g, g, '2024-01-01'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 1000) g;
SELECT weir.checkpoint('rt_last') > 0 AS checkpointed;
SELECT d.kind, d.rows, d.windows, d.bytes > 0 AS has_bytes, d.duration_ms > 0 AS timed,
       d.checkpoint_id = (SELECT max(c.id) FROM weir.checkpoints c WHERE c.pipeline_id = d.pipeline_id)
         AS of_last_checkpoint,
       d.rate_before, d.first_record_ms, d.back_to_rate_ms
  FROM weir.restore_drill('rt_last') d;
-- the row returned is the one recorded
SELECT kind, count(*) FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'rt_last' GROUP BY kind ORDER BY kind;
-- the oracle: as many rows as distinct keys in the topic, and as the sink
SELECT (SELECT count(DISTINCT k) FROM rt_src) AS keys, (SELECT count(*) FROM rt_last) AS sink_rows,
       (SELECT rows FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
         WHERE p.name = 'rt_last' AND kind = 'drill') AS drilled_rows;

-- a target far above the drill: no warning, and a projection
SELECT weir.alter_pipeline('rt_last', recovery_target => '1 hour');
-- (the worker's restore at its start found no state: the state grew since)
SELECT recovery_target, recovery_warning,
       regexp_replace(regexp_replace(recovery_projection, '[0-9]+\.[0-9]+', 'N', 'g'),
                      'in about .*', 'in about T') AS projection
  FROM weir.pipelines WHERE name = 'rt_last';
-- a target far below it: flagged; a drill then raises a WARNING
SELECT weir.alter_pipeline('rt_last', recovery_target => '1 microsecond');
SELECT recovery_target,
       regexp_replace(recovery_warning, 'at .* took [0-9.]+ ms', 'at T took N ms') AS warning,
       regexp_replace(recovery_projection, '[0-9]+\.[0-9]+', 'N', 'g') AS projection
  FROM weir.pipelines WHERE name = 'rt_last';
-- (its duration varies: TAP 023 checks the WARNING's text)
SET client_min_messages = error;
SELECT kind FROM weir.restore_drill('rt_last');
RESET client_min_messages;
-- 0 removes the target, NULL leaves it as it is
SELECT weir.alter_pipeline('rt_last', recovery_target => '2 seconds');
SELECT weir.alter_pipeline('rt_last', max_state_memory => 64 * 1024 * 1024);
SELECT recovery_target FROM weir.pipelines WHERE name = 'rt_last';
SELECT weir.alter_pipeline('rt_last', recovery_target => '0');
SELECT recovery_target, recovery_warning, recovery_projection
  FROM weir.pipelines WHERE name = 'rt_last';

-- the projection, on made-up restores: 100 MB restored in 500 ms a day
-- ago, 160 MB in 800 ms now (200 MB/s, +60 MB a day): a 1 s target is met
-- up to 200 MB, 40 MB away, reached in 16 hours
CREATE TEMP TABLE rt_ids AS SELECT id FROM weir.pipeline WHERE name = 'rt_last';
DELETE FROM weir.restores WHERE pipeline_id = (SELECT id FROM rt_ids);
INSERT INTO weir.restores (pipeline_id, checkpoint_id, restored_at, duration_ms, bytes, windows, rows, kind)
SELECT id, 1, '2023-12-31 23:59:59+00'::timestamptz, 500, 100000000, 1, 1, 'restore' FROM rt_ids
UNION ALL
SELECT id, 2, '2024-01-01 23:59:59+00', 800, 160000000, 1, 1, 'drill' FROM rt_ids;
SELECT recovery_warning, recovery_projection
  FROM weir._recovery_status((SELECT id FROM rt_ids), '1 second', '2024-01-01 23:59:59+00');
-- twelve hours later: 30 MB more, 4 hours left
SELECT recovery_projection
  FROM weir._recovery_status((SELECT id FROM rt_ids), '1 second', '2024-01-02 11:59:59+00');
-- a target below the latest: flagged and missed now
SELECT recovery_warning, recovery_projection
  FROM weir._recovery_status((SELECT id FROM rt_ids), '700 milliseconds', '2024-01-01 23:59:59+00');
-- a state that shrank: not growing
UPDATE weir.restores SET bytes = 90000000 WHERE pipeline_id = (SELECT id FROM rt_ids) AND checkpoint_id = 2;
SELECT recovery_projection
  FROM weir._recovery_status((SELECT id FROM rt_ids), '1 second', '2024-01-01 23:59:59+00');
-- no target: no projection
SELECT recovery_warning, recovery_projection
  FROM weir._recovery_status((SELECT id FROM rt_ids), NULL, '2024-01-01 23:59:59+00');

-- errors
SELECT weir.alter_pipeline('rt_last', recovery_target => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.restore_drill('rt_nope');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.restore_drill(NULL) IS NULL AS strict;
-- only members of the owner may drill or set the target
CREATE ROLE rt_other;
SET ROLE rt_other;
SELECT weir.restore_drill('rt_last');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('rt_last', recovery_target => '1 second');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE rt_other;

SELECT weir.drop_pipeline('rt_last');
SELECT weir.drop_topic('rt_src');
