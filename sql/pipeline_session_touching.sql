-- Session windows whose intervals touch: weir.session(gap, merge_touching).
--
-- A record at t covers [t, t + gap).  By default sessions of a key merge when
-- they overlap, so a record exactly one gap after a session's last event
-- starts a new session; with merge_touching => true sessions that touch
-- merge too, so it joins that session.  In gaps-and-islands SQL a record
-- starts a new session when t - (the key's previous t) >= gap (default) or
-- > gap (merge_touching).  Two pipelines over one topic, one of each, are
-- compared with those two queries exactly; a session of a merge_touching
-- pipeline fires and closes only once the watermark is past its end (a
-- record at exactly its end still joins it), which the boundary cases here
-- show, through a restart of the worker (a restore from the chunks).
--
-- The worker commits a checkpoint only when asked by weir.checkpoint() (the
-- pipelines here have a checkpoint_interval of an hour), and the watermark
-- advances after each batch the worker reads, so the rows of one INSERT
-- are judged against the watermark of the ones before it.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- the constructor: merge_touching defaults to false (null: the default)
SELECT weir.session('1 minute');
SELECT weir.session('1 minute', merge_touching => true);
SELECT weir.session('1 minute', NULL);
SELECT weir.session(NULL, true);
\echo :LAST_ERROR_SQLSTATE

SELECT weir.create_topic('touch_src', 'k text, t timestamptz, v int');
-- a hand-made windowing: merge_touching only for sessions, null for false
SELECT w, sqlstate_of(format($$SELECT weir.create_pipeline('bad', 'touch_src', key => 'k',
                                   event_time => 't', windowing => %L, aggregates => 'count(*)',
                                   start => false)$$, w)) AS sqlstate
  FROM (VALUES ('(tumbling,00:01:00,00:01:00,,t)'), ('(hopping,00:01:00,00:00:30,,t)'),
               ('(tumbling,00:01:00,00:01:00,,f)'), ('(session,,,00:01:00,)'),
               ('(session,,,00:01:00,t)')) AS v(w)
 ORDER BY 1;
SELECT weir.create_pipeline('bad', 'touch_src', key => 'k', event_time => 't',
                            windowing => '(hopping,00:01:00,00:00:30,,t)', aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('touch', 'touch_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 minute', merge_touching => true),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            allowed_lateness => '5 minutes', late_records => 'touch_late',
                            checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_pipeline('apart', 'touch_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            allowed_lateness => '5 minutes', late_records => 'apart_late',
                            checkpoint_interval => '1 hour') > 0 AS created;
-- the option is kept in the catalog with the windowing
SELECT name, windowing, (windowing).merge_touching FROM weir.pipeline
 WHERE name IN ('touch', 'apart') ORDER BY name;
\d touch
SELECT count(*) AS bad_pipelines FROM weir.pipeline WHERE name = 'bad';

-- the oracles: gaps and islands over the records that were not late, a new
-- session where the gap to the key's previous record is > 1 minute
-- (merge_touching) or >= 1 minute (default)
CREATE VIEW touch_oracle AS
	WITH marked AS (
		SELECT k, t, v,
		       CASE WHEN t - lag(t) OVER w <= interval '1 minute' THEN 0 ELSE 1 END AS starts_session
		  FROM touch_src
		 WHERE (part, pos) NOT IN (SELECT part, pos FROM touch_late)
		WINDOW w AS (PARTITION BY k ORDER BY t)),
	numbered AS (
		SELECT k, t, v, sum(starts_session) OVER (PARTITION BY k ORDER BY t) AS session
		  FROM marked)
	SELECT k, min(t) AS window_start, max(t) + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total
	  FROM numbered GROUP BY k, session;
CREATE VIEW apart_oracle AS
	WITH marked AS (
		SELECT k, t, v,
		       CASE WHEN t - lag(t) OVER w < interval '1 minute' THEN 0 ELSE 1 END AS starts_session
		  FROM touch_src
		 WHERE (part, pos) NOT IN (SELECT part, pos FROM apart_late)
		WINDOW w AS (PARTITION BY k ORDER BY t)),
	numbered AS (
		SELECT k, t, v, sum(starts_session) OVER (PARTITION BY k ORDER BY t) AS session
		  FROM marked)
	SELECT k, min(t) AS window_start, max(t) + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total
	  FROM numbered GROUP BY k, session;

-- a: 00:00, 00:01, 00:02 exactly a gap apart, then 1:30 more and 30 s less;
-- b: 30 s, exactly 60 s, 61 s, exactly 60 s apart; d: 1 us less than a gap,
-- then 1 us more; e: two minutes apart (two sessions either way); w moves
-- the watermark to 00:05:00.  Sessions that end at or before it fire,
-- except (merge_touching) one that ends exactly there: a's [00:03:30, 00:05)
INSERT INTO touch_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:00+00', 1),
	('a', '2024-01-01 00:01:00+00', 2),
	('a', '2024-01-01 00:02:00+00', 3),
	('a', '2024-01-01 00:03:30+00', 4),
	('a', '2024-01-01 00:04:00+00', 5),
	('b', '2024-01-01 00:00:10+00', 10),
	('b', '2024-01-01 00:00:40+00', 20),
	('b', '2024-01-01 00:01:40+00', 30),
	('b', '2024-01-01 00:02:41+00', 40),
	('b', '2024-01-01 00:03:41+00', 50),
	('d', '2024-01-01 00:00:00+00', 100),
	('d', '2024-01-01 00:00:59.999999+00', 200),
	('d', '2024-01-01 00:02:00+00', 300),
	('e', '2024-01-01 00:00:00+00', 1000),
	('e', '2024-01-01 00:02:00+00', 2000),
	('w', '2024-01-01 00:05:00+00', 0);
SELECT weir.checkpoint('touch') > 0 AS checkpointed, weir.checkpoint('apart') > 0 AS checkpointed;
SELECT name, checkpoint_watermark(name) AS watermark, records_in, records_late
  FROM weir.pipelines WHERE name IN ('touch', 'apart') ORDER BY name;
SELECT * FROM touch ORDER BY k, window_start;
SELECT * FROM apart ORDER BY k, window_start;
SELECT * FROM oracle_diff('touch', $$
	SELECT * FROM touch_oracle WHERE window_end < checkpoint_watermark('touch') $$);
SELECT * FROM oracle_diff('apart', $$
	SELECT * FROM apart_oracle WHERE window_end <= checkpoint_watermark('apart') $$);
SELECT key, window_start, window_end, fired FROM weir.live_state('touch')
 WHERE key IN ('a', 'w') ORDER BY key, window_start;

-- a restart: the worker reads merge_touching back from the catalog and
-- restores the open sessions from the chunks
SELECT weir.stop('touch');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'touch' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('touch');
SELECT weir.checkpoint('touch') > 0 AS checkpointed;
SELECT windows FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'touch' ORDER BY restored_at DESC LIMIT 1;

-- late records within allowed_lateness (watermark 00:05:00):
-- e 00:01:00 touches both of e's sessions, [00:00, 00:01) and [00:02, 00:03),
--   and (merge_touching) merges the three into one: the row of [00:02,
--   00:03), which had fired, goes; by default it is a session of its own;
-- a 00:05:00 (merge_touching) extends a's session that ends there, which
--   has not fired; by default it starts a new one;
-- h 2023-12-31 23:59:00 ends at 00:00:00, allowed lateness after that is
--   exactly the watermark: late by default, on time (merge_touching) since
--   a record at 00:00:00 could still join it.
INSERT INTO touch_src (k, t, v) VALUES
	('e', '2024-01-01 00:01:00+00', 3000),
	('a', '2024-01-01 00:05:00+00', 6),
	('h', '2023-12-31 23:59:00+00', 7);
SELECT weir.checkpoint('touch') > 0 AS checkpointed, weir.checkpoint('apart') > 0 AS checkpointed;
SELECT name, checkpoint_watermark(name) AS watermark, records_in, records_late
  FROM weir.pipelines WHERE name IN ('touch', 'apart') ORDER BY name;
SELECT * FROM touch ORDER BY k, window_start;
SELECT * FROM apart ORDER BY k, window_start;
SELECT k, t FROM touch_late ORDER BY k, t;
SELECT k, t FROM apart_late ORDER BY k, t;
SELECT * FROM oracle_diff('touch', $$
	SELECT * FROM touch_oracle WHERE window_end < checkpoint_watermark('touch') $$);
SELECT * FROM oracle_diff('apart', $$
	SELECT * FROM apart_oracle WHERE window_end <= checkpoint_watermark('apart') $$);

-- h's session (merge_touching) closes only when the watermark is past
-- 00:05:00: a restart at 00:05:00 restores it, and h 00:00:00, at its end,
-- joins it; by default that record starts a session of its own
SELECT weir.stop('touch');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'touch' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('touch');
SELECT weir.checkpoint('touch') > 0 AS checkpointed;
SELECT key, window_start, window_end, fired FROM weir.committed_state('touch')
 WHERE key = 'h' ORDER BY window_start;
INSERT INTO touch_src (k, t, v) VALUES ('h', '2024-01-01 00:00:00+00', 8);
SELECT weir.checkpoint('touch') > 0 AS checkpointed, weir.checkpoint('apart') > 0 AS checkpointed;
SELECT * FROM touch WHERE k = 'h' ORDER BY window_start;
SELECT * FROM apart WHERE k = 'h' ORDER BY window_start;

-- z moves the watermark to 01:00:00, past every other session and its
-- allowed lateness; then a record at a's last session's end is too late in
-- both (that session has left memory)
INSERT INTO touch_src (k, t, v) VALUES ('z', '2024-01-01 01:00:00+00', 0);
SELECT weir.checkpoint('touch') > 0 AS checkpointed, weir.checkpoint('apart') > 0 AS checkpointed;
INSERT INTO touch_src (k, t, v) VALUES ('a', '2024-01-01 00:06:00+00', 9);
SELECT weir.checkpoint('touch') > 0 AS checkpointed, weir.checkpoint('apart') > 0 AS checkpointed;
SELECT name, checkpoint_watermark(name) AS watermark, records_in, records_late
  FROM weir.pipelines WHERE name IN ('touch', 'apart') ORDER BY name;
SELECT * FROM touch ORDER BY k, window_start;
SELECT * FROM apart ORDER BY k, window_start;
SELECT k, t FROM touch_late ORDER BY k, t;
SELECT k, t FROM apart_late ORDER BY k, t;
SELECT * FROM oracle_diff('touch', $$
	SELECT * FROM touch_oracle WHERE window_end < checkpoint_watermark('touch') $$);
SELECT * FROM oracle_diff('apart', $$
	SELECT * FROM apart_oracle WHERE window_end <= checkpoint_watermark('apart') $$);
-- only z's session is left in either
SELECT key, window_start, window_end FROM weir.committed_state('touch') ORDER BY key, window_start;
SELECT key, window_start, window_end FROM weir.committed_state('apart') ORDER BY key, window_start;

SELECT weir.drop_pipeline('touch');
SELECT weir.drop_pipeline('apart');
DROP VIEW touch_oracle, apart_oracle;
DROP TABLE touch, apart, touch_late, apart_late;
SELECT weir.drop_topic('touch_src');
