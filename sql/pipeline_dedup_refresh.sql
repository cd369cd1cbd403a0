-- Deduplication with refresh_horizon => false: only kept records count as
-- sightings of their id.  By default (true) a dropped copy refreshes its
-- id's last sighting, so a stream of copies closer together than the
-- horizon keeps only its first; with false the first copy is kept, later
-- copies within the horizon of it are dropped without extending it, and
-- the first copy at or past it + horizon is kept again (and is the id's new
-- first sighting).  Two pipelines over one topic, one of each, each
-- compared with its rule written in SQL:
--   refresh (default): kept iff no earlier record (lower position, same
--     partition) has the id and an event time > its own - horizon;
--   no refresh: kept iff the id's last kept record before it has an event
--     time <= its own - horizon (or there is none): a plpgsql walk over
--     the records in position order.
-- The records are in one partition, in order of event time but for three
-- copies of id 9 within one INSERT, with no out-of-orderness: the rows of
-- one INSERT are read in one batch, judged against the watermark of the
-- batches before it, so none is late.  The id is given by position (the
-- argument's name is not needed).
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';

SELECT weir.create_topic('rf_src', 'id int, ts timestamptz, note text');

-- refresh_horizon => false needs a horizon; null is the default
SELECT weir.create_dedup('bad', 'rf_src', 'id', 'ts', refresh_horizon => false);
\echo :LAST_ERROR_SQLSTATE
SELECT sqlstate_of($$SELECT weir.create_dedup('bad', 'rf_src', 'id', 'ts',
                                              horizon => '1 minute', refresh_horizon => NULL)$$);

SELECT weir.create_dedup('rf_refresh', 'rf_src', 'id', 'ts', horizon => '1 minute',
                         late_records => 'rf_refresh_late',
                         checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_dedup('rf_first', 'rf_src', 'id', 'ts', horizon => '1 minute',
                         refresh_horizon => false, late_records => 'rf_first_late',
                         checkpoint_interval => '1 hour') > 0 AS created;
SELECT name, operator, horizon, refresh_horizon FROM weir.pipeline
 WHERE name IN ('rf_refresh', 'rf_first') ORDER BY name;
SELECT name, retention, state_warning FROM weir.pipelines
 WHERE name IN ('rf_refresh', 'rf_first') ORDER BY name;

-- the oracles
CREATE VIEW rf_refresh_oracle AS
SELECT r.id, r.ts, r.note FROM rf_src r
 WHERE NOT EXISTS (SELECT 1 FROM rf_src s
                    WHERE s.part = r.part AND s.pos < r.pos AND s.id = r.id
                      AND s.ts > r.ts - interval '1 minute');
CREATE FUNCTION rf_first_kept(horizon interval) RETURNS SETOF rf_src
LANGUAGE plpgsql AS $$
DECLARE
	r rf_src;
	cur_part int;
	cur_id int;
	last_kept timestamptz;
BEGIN
	FOR r IN SELECT * FROM rf_src ORDER BY part, id, pos LOOP
		IF r.part IS DISTINCT FROM cur_part OR r.id IS DISTINCT FROM cur_id THEN
			cur_part := r.part;
			cur_id := r.id;
			last_kept := NULL;
		END IF;
		IF last_kept IS NULL OR NOT (last_kept > r.ts - horizon) THEN
			last_kept := r.ts;
			RETURN NEXT r;
		END IF;
	END LOOP;
END $$;
CREATE VIEW rf_first_oracle AS
SELECT id, ts, note FROM rf_first_kept(interval '1 minute');

-- copies of each id (seconds after 00:00), and what each rule keeps:
--   id  copies                              refresh      no refresh
--   1   0 40 80 120 125 200                 0 200        0 80 200
--   2   0 60 119.999999 120                 0 60         0 60 120
--   3   30                                  30           30
--   4   every 30 s from 0 to 300            0            0 60 120 180 240 300
--   5   10 50 | restart | 70 130            10 130       10 70 130
--   6   61 121                              61 121       61 121
--   7   0 250                               0 250        0 250
--   8   100 100 (a retry: same time)        100          100
--   9   260 230 195 (read in that order) 320  260 320     260 320
-- 5's 70 is kept only if the restart restored its first sighting, 10 (not
-- its last, 50); 9's copies read after it with earlier event times are
-- dropped either way.  Batch 1, then a restart of both:
INSERT INTO rf_src (id, ts, note) VALUES
	(1, '2026-01-01 00:00:00', '1@0'), (2, '2026-01-01 00:00:00', '2@0'),
	(4, '2026-01-01 00:00:00', '4@0'), (7, '2026-01-01 00:00:00', '7@0'),
	(5, '2026-01-01 00:00:10', '5@10'), (3, '2026-01-01 00:00:30', '3@30'),
	(4, '2026-01-01 00:00:30', '4@30'), (1, '2026-01-01 00:00:40', '1@40'),
	(5, '2026-01-01 00:00:50', '5@50');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;
-- live state: per id, event_time is its last sighting (refresh) or its
-- first (no refresh), expires_at when it expires
SELECT 'rf_refresh' AS pipeline, key, event_time, expires_at FROM weir.live_state('rf_refresh')
UNION ALL
SELECT 'rf_first', key, event_time, expires_at FROM weir.live_state('rf_first')
 ORDER BY 1, 2;
SELECT weir.stop('rf_refresh'), weir.stop('rf_first');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM weir.pipelines
							   WHERE name IN ('rf_refresh', 'rf_first') AND worker_pid IS NOT NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('rf_refresh'), weir.start('rf_first');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;
SELECT p.name, r.windows AS ids FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name IN ('rf_refresh', 'rf_first') AND r.checkpoint_id > 0 ORDER BY p.name;
SELECT 'rf_refresh' AS pipeline, key, event_time, expires_at FROM weir.live_state('rf_refresh')
UNION ALL
SELECT 'rf_first', key, event_time, expires_at FROM weir.live_state('rf_first')
 ORDER BY 1, 2;

-- batches 2 to 5, each read after the one before moved the watermark
INSERT INTO rf_src (id, ts, note) VALUES
	(2, '2026-01-01 00:01:00', '2@60'), (4, '2026-01-01 00:01:00', '4@60'),
	(6, '2026-01-01 00:01:01', '6@61'), (5, '2026-01-01 00:01:10', '5@70'),
	(1, '2026-01-01 00:01:20', '1@80'), (4, '2026-01-01 00:01:30', '4@90'),
	(8, '2026-01-01 00:01:40', '8@100'), (8, '2026-01-01 00:01:40', '8@100 again'),
	(2, '2026-01-01 00:01:59.999999', '2@119.999999');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;
INSERT INTO rf_src (id, ts, note) VALUES
	(1, '2026-01-01 00:02:00', '1@120'), (2, '2026-01-01 00:02:00', '2@120'),
	(4, '2026-01-01 00:02:00', '4@120'), (6, '2026-01-01 00:02:01', '6@121'),
	(1, '2026-01-01 00:02:05', '1@125'), (5, '2026-01-01 00:02:10', '5@130'),
	(4, '2026-01-01 00:02:30', '4@150'), (4, '2026-01-01 00:03:00', '4@180');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;
INSERT INTO rf_src (id, ts, note) VALUES
	(1, '2026-01-01 00:03:20', '1@200'), (4, '2026-01-01 00:03:30', '4@210'),
	(4, '2026-01-01 00:04:00', '4@240'), (7, '2026-01-01 00:04:10', '7@250'),
	(9, '2026-01-01 00:04:20', '9@260'), (9, '2026-01-01 00:03:50', '9@230'),
	(9, '2026-01-01 00:03:15', '9@195'), (4, '2026-01-01 00:04:30', '4@270'),
	(4, '2026-01-01 00:05:00', '4@300');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;
INSERT INTO rf_src (id, ts, note) VALUES (9, '2026-01-01 00:05:20', '9@320');
SELECT weir.checkpoint('rf_refresh') > 0 AS checkpointed, weir.checkpoint('rf_first') > 0 AS checkpointed;

-- each sink equals its oracle, row for row
SELECT * FROM rf_refresh ORDER BY id, ts, note;
SELECT * FROM rf_first ORDER BY id, ts, note;
SELECT 'rf_refresh' AS pipeline,
       (SELECT count(*) FROM (SELECT * FROM rf_refresh_oracle EXCEPT ALL SELECT * FROM rf_refresh) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM rf_refresh EXCEPT ALL SELECT * FROM rf_refresh_oracle) x) AS extra
UNION ALL
SELECT 'rf_first',
       (SELECT count(*) FROM (SELECT * FROM rf_first_oracle EXCEPT ALL SELECT * FROM rf_first) x),
       (SELECT count(*) FROM (SELECT * FROM rf_first EXCEPT ALL SELECT * FROM rf_first_oracle) x);
-- the two rules differ on these data (else the test would prove little)
SELECT (SELECT count(*) FROM (SELECT * FROM rf_first_oracle EXCEPT ALL SELECT * FROM rf_refresh_oracle) x)
       AS kept_only_without_refresh,
       (SELECT count(*) FROM (SELECT * FROM rf_refresh_oracle EXCEPT ALL SELECT * FROM rf_first_oracle) x)
       AS kept_only_with_refresh;
SELECT name, records_out, records_dropped, records_late FROM weir.pipelines
 WHERE name IN ('rf_refresh', 'rf_first') ORDER BY name;

SELECT weir.drop_pipeline('rf_refresh');
SELECT weir.drop_pipeline('rf_first');
DROP VIEW rf_refresh_oracle, rf_first_oracle;
DROP FUNCTION rf_first_kept(interval);
DROP TABLE rf_refresh, rf_first, rf_refresh_late, rf_first_late;
SELECT weir.drop_topic('rf_src');
