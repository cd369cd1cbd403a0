-- running pipelines: small deterministic runs, each checked against plain SQL
--
-- The worker commits a checkpoint only when asked by weir.checkpoint() (the
-- pipelines here have a checkpoint_interval of an hour), and weir.checkpoint()
-- returns once every row committed before it has been processed.  The
-- watermark advances after each batch the worker reads, so rows inserted by
-- one statement are all processed before it moves; a checkpoint between two
-- inserts makes the second one arrive after the watermark has moved.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

------------------------------------------------------------------------------
-- Tumbling windows, records out of order within out_of_orderness
------------------------------------------------------------------------------
SELECT weir.create_topic('tum_src', 'k text, t timestamptz, v int, f float8');
SELECT weir.create_pipeline('tum', 'tum_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, count(v) AS n_v, sum(v) AS total, min(v) AS lo, '
                                          'max(v) AS hi, avg(v) AS mean, sum(f) AS f_total, avg(f) AS f_mean, '
                                          'max(t) AS last_t',
                            out_of_orderness => '30 seconds', checkpoint_interval => '1 hour') > 0 AS created;
CREATE VIEW tum_oracle AS
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, count(v) AS n_v, sum(v) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean,
	       sum(f) AS f_total, avg(f) AS f_mean, max(t) AS last_t
	  FROM tum_src GROUP BY 1, 2, 3;

-- max event time 00:01:20, watermark 00:00:50: nothing closed yet
INSERT INTO tum_src (k, t, v, f) VALUES
	('a', '2024-01-01 00:00:05+00', 1, 0.5),
	('b', '2024-01-01 00:00:10+00', 10, 1.5),
	('a', '2024-01-01 00:00:40+00', 2, NULL),
	('a', '2024-01-01 00:01:20+00', 3, 0.25);
SELECT weir.checkpoint('tum') > 0 AS checkpointed;
SELECT checkpoint_watermark('tum') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'tum';
SELECT * FROM tum ORDER BY k, window_start;
-- 00:00:55 is 25 seconds behind the newest record: within out_of_orderness, so
-- it still counts in [00:00, 00:01); 00:01:50 moves the watermark to 00:01:20,
-- which closes that window
INSERT INTO tum_src (k, t, v, f) VALUES
	('a', '2024-01-01 00:00:55+00', 4, 2.0),
	('b', '2024-01-01 00:01:50+00', NULL, 4.0);
SELECT weir.checkpoint('tum') > 0 AS checkpointed;
SELECT checkpoint_watermark('tum') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'tum';
SELECT * FROM tum ORDER BY k, window_start;
-- 00:03:00 closes [00:01, 00:02); 00:01:35 is in time for it
INSERT INTO tum_src (k, t, v, f) VALUES
	('b', '2024-01-01 00:01:35+00', 20, 0.5),
	('a', '2024-01-01 00:03:00+00', 5, 1.0);
SELECT weir.checkpoint('tum') > 0 AS checkpointed;
SELECT checkpoint_watermark('tum') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'tum';
SELECT * FROM tum ORDER BY k, window_start;
SELECT * FROM oracle_diff('tum', $$
	SELECT * FROM tum_oracle
	 WHERE window_end <= checkpoint_watermark('tum') $$);
-- the open window is in the checkpointed state, not in the sink
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('tum') ORDER BY key, window_start;
-- and in the worker's memory, which weir.live_state() reads
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.live_state('tum') ORDER BY key, window_start;
SELECT c.id, c.watermark, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'tum' ORDER BY c.id;
SELECT positions, records_in, records_out, records_late, records_dead, last_checkpoint
  FROM weir.pipelines WHERE name = 'tum';

------------------------------------------------------------------------------
-- Hopping windows: size 3 minutes every 2 minutes, so a record falls in one
-- or two windows
------------------------------------------------------------------------------
SELECT weir.create_topic('hop_src', 'k int, t timestamptz, v bigint');
SELECT weir.create_pipeline('hop', 'hop_src', key => 'k', event_time => 't',
                            windowing => weir.hopping('3 minutes', '2 minutes'),
                            aggregates => 'count(*) AS n, sum(v) AS total, min(t) AS first_t',
                            checkpoint_interval => '1 hour') > 0 AS created;
CREATE VIEW hop_oracle AS
	SELECT k, s AS window_start, s + interval '3 minutes' AS window_end,
	       count(*) AS n, sum(v) AS total, min(t) AS first_t
	  FROM hop_src,
	       generate_series(date_bin('2 minutes', t - interval '3 minutes', '1970-01-01'),
	                       date_bin('2 minutes', t, '1970-01-01'), interval '2 minutes') AS s
	 WHERE s <= t AND t < s + interval '3 minutes'
	 GROUP BY 1, 2, 3;
INSERT INTO hop_src (k, t, v) VALUES
	(1, '2024-01-01 00:00:30+00', 1),
	(1, '2024-01-01 00:02:30+00', 2),
	(2, '2024-01-01 00:02:59+00', 3),
	(1, '2024-01-01 00:03:00+00', 4),
	(1, '2024-01-01 00:04:00+00', 9223372036854775807),
	(1, '2024-01-01 00:05:30+00', 1),
	(2, '2024-01-01 00:09:10+00', 5);
SELECT weir.checkpoint('hop') > 0 AS checkpointed;
SELECT checkpoint_watermark('hop') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'hop';
SELECT * FROM hop ORDER BY k, window_start;
SELECT * FROM oracle_diff('hop', $$
	SELECT * FROM hop_oracle
	 WHERE window_end <= checkpoint_watermark('hop') $$);
-- the windows still open
SELECT * FROM hop_oracle
 WHERE window_end > checkpoint_watermark('hop')
 ORDER BY k, window_start;
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('hop') ORDER BY key, window_start;

------------------------------------------------------------------------------
-- A filter: rows it rejects (false or NULL) are read and counted, and their
-- event time moves the watermark, but they are not aggregated
------------------------------------------------------------------------------
SELECT weir.create_topic('filt_src', 'k text, t timestamptz, v int');
SELECT weir.create_pipeline('filt', 'filt_src', key => 'upper(k) AS k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            filter => 'v > 0 AND k <> ''skip''',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO filt_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:01+00', 1),
	('a', '2024-01-01 00:00:02+00', -1),
	('a', '2024-01-01 00:00:03+00', NULL),
	('skip', '2024-01-01 00:00:04+00', 5),
	('b', '2024-01-01 00:00:05+00', 7),
	('a', '2024-01-01 00:00:06+00', 2),
	-- filtered out, but moves the watermark to 00:09:00
	('skip', '2024-01-01 00:09:00+00', 5),
	-- filtered out before its missing event time could make it a dead letter
	('skip', NULL, 1),
	('b', '2024-01-01 00:01:00+00', 8);
SELECT weir.checkpoint('filt') > 0 AS checkpointed;
SELECT checkpoint_watermark('filt') AS watermark, records_in, records_late, records_dead
  FROM weir.pipelines WHERE name = 'filt';
SELECT * FROM filt ORDER BY k, window_start;
SELECT * FROM oracle_diff('filt', $$
	SELECT upper(k) AS k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total
	  FROM filt_src WHERE v > 0 AND k <> 'skip'
	 GROUP BY 1, 2, 3
	HAVING date_bin('1 minute', t, '1970-01-01') + interval '1 minute'
	       <= checkpoint_watermark('filt') $$);

------------------------------------------------------------------------------
-- Late records: within allowed_lateness they update the row already in the
-- sink; beyond it they are dropped, counted, and kept in late_records
------------------------------------------------------------------------------
SELECT weir.create_topic('late_src', 'k text, t timestamptz, v int');
SELECT weir.create_pipeline('late', 'late_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            allowed_lateness => '2 minutes', late_records => 'late_rows',
                            checkpoint_interval => '1 hour') > 0 AS created;
-- watermark 00:01:50: [00:00, 00:01) fires, and stays updatable until 00:03
INSERT INTO late_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:10+00', 1),
	('a', '2024-01-01 00:00:30+00', 2),
	('b', '2024-01-01 00:01:50+00', 3);
SELECT weir.checkpoint('late') > 0 AS checkpointed;
SELECT checkpoint_watermark('late') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'late';
SELECT * FROM late ORDER BY k, window_start;
-- 00:00:40 is late but within allowed_lateness: the fired row is updated
INSERT INTO late_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:40+00', 4),
	('b', '2024-01-01 00:02:30+00', 5);
SELECT weir.checkpoint('late') > 0 AS checkpointed;
SELECT checkpoint_watermark('late') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'late';
SELECT * FROM late ORDER BY k, window_start;
-- watermark 00:05:00: everything up to 00:03 is gone for good
INSERT INTO late_src (k, t, v) VALUES ('b', '2024-01-01 00:05:00+00', 6);
SELECT weir.checkpoint('late') > 0 AS checkpointed;
SELECT checkpoint_watermark('late') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'late';
SELECT * FROM late ORDER BY k, window_start;
-- 00:00:50 and 00:02:59 are too late now; 00:03:10 is late but within
-- allowed_lateness for [00:03, 00:04), a window weir had never seen: it fires
-- at once
INSERT INTO late_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:50+00', 7),
	('b', '2024-01-01 00:02:59+00', 8),
	('a', '2024-01-01 00:03:10+00', 9);
SELECT weir.checkpoint('late') > 0 AS checkpointed;
SELECT checkpoint_watermark('late') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'late';
SELECT * FROM late ORDER BY k, window_start;
SELECT part, pos, k, t, v, watermark FROM late_rows ORDER BY part, pos;
-- the oracle leaves out the records weir dropped as too late
SELECT * FROM oracle_diff('late', $$
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total
	  FROM late_src WHERE (part, pos) NOT IN (SELECT part, pos FROM late_rows)
	 GROUP BY 1, 2, 3
	HAVING date_bin('1 minute', t, '1970-01-01') + interval '1 minute'
	       <= checkpoint_watermark('late') $$);
SELECT c.id, c.watermark, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'late' ORDER BY c.id;
SELECT records_in, records_out, records_late, records_dead FROM weir.pipelines WHERE name = 'late';

------------------------------------------------------------------------------
-- emit => 'updates': open windows are written at every checkpoint
------------------------------------------------------------------------------
SELECT weir.create_topic('upd_src', 'k int, t timestamptz');
SELECT weir.create_pipeline('upd', 'upd_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, max(t) AS last_t', emit => 'updates',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO upd_src (k, t) VALUES (1, '2024-01-01 00:00:10+00'), (1, '2024-01-01 00:00:20+00');
SELECT weir.checkpoint('upd') > 0 AS checkpointed;
SELECT * FROM upd ORDER BY k, window_start;
INSERT INTO upd_src (k, t) VALUES (1, '2024-01-01 00:00:40+00'), (2, '2024-01-01 00:00:50+00');
SELECT weir.checkpoint('upd') > 0 AS checkpointed;
SELECT * FROM upd ORDER BY k, window_start;
-- a checkpoint with nothing new writes nothing
SELECT weir.checkpoint('upd') > 0 AS checkpointed;
INSERT INTO upd_src (k, t) VALUES (1, '2024-01-01 00:01:30+00');
SELECT weir.checkpoint('upd') > 0 AS checkpointed;
SELECT checkpoint_watermark('upd') AS watermark;
SELECT * FROM upd ORDER BY k, window_start;
-- with updates the sink holds every window, open or closed
SELECT * FROM oracle_diff('upd', $$
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, max(t) AS last_t
	  FROM upd_src GROUP BY 1, 2, 3 $$);
SELECT c.id, c.watermark, c.sink_rows, c.records_in
  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'upd' ORDER BY c.id;

------------------------------------------------------------------------------
-- Two partitions: the watermark is the minimum over them, so a partition
-- without data holds it back
------------------------------------------------------------------------------
SELECT weir.create_topic('two_src', 'k int, t timestamptz', partitions => 2);
SELECT weir.create_pipeline('two', 'two_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO two_src (part, k, t) VALUES
	(0, 1, '2024-01-01 00:00:10+00'), (0, 1, '2024-01-01 00:01:10+00'),
	(0, 2, '2024-01-01 00:02:10+00'), (0, 1, '2024-01-01 00:05:00+00');
SELECT weir.checkpoint('two') > 0 AS checkpointed;
-- partition 1 has shown no event time yet: no watermark, nothing fired
SELECT positions, checkpoint_watermark('two') AS watermark, records_in FROM weir.pipelines WHERE name = 'two';
SELECT * FROM two ORDER BY k, window_start;
-- partition 1 at 00:01:30 holds the watermark there
INSERT INTO two_src (part, k, t) VALUES (1, 3, '2024-01-01 00:01:30+00');
SELECT weir.checkpoint('two') > 0 AS checkpointed;
SELECT positions, checkpoint_watermark('two') AS watermark, records_in FROM weir.pipelines WHERE name = 'two';
SELECT * FROM two ORDER BY k, window_start;
-- partition 1 moves ahead: partition 0 (00:05:00) holds it now
INSERT INTO two_src (part, k, t) VALUES (1, 3, '2024-01-01 00:10:00+00');
SELECT weir.checkpoint('two') > 0 AS checkpointed;
SELECT positions, checkpoint_watermark('two') AS watermark, records_in FROM weir.pipelines WHERE name = 'two';
SELECT * FROM two ORDER BY k, window_start;
SELECT * FROM oracle_diff('two', $$
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n
	  FROM two_src GROUP BY 1, 2, 3
	HAVING date_bin('1 minute', t, '1970-01-01') + interval '1 minute'
	       <= checkpoint_watermark('two') $$);
SELECT pp.part, pp.pos, pp.max_event_time
  FROM weir.pipeline_position pp JOIN weir.pipeline p ON p.id = pp.pipeline_id
 WHERE p.name = 'two' ORDER BY pp.part;

------------------------------------------------------------------------------
-- Dead letters: a record without event time, with a null key, or on which an
-- expression fails; the pipeline goes on with the others.  This pipeline
-- belongs to an ordinary role: it reads and writes with that role's rights,
-- and only that role sees its dead letters.
------------------------------------------------------------------------------
SELECT weir.create_topic('dl_src', 'k text, epoch bigint, v int');
CREATE ROLE weir_runner;
CREATE ROLE weir_nobody;
CREATE SCHEMA runner AUTHORIZATION weir_runner;
GRANT SELECT ON dl_src TO weir_runner;
SET ROLE weir_runner;
SELECT weir.create_pipeline('dl', 'dl_src', key => 'k', event_time => 'to_timestamp(epoch)',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(100 / v) AS inv',
                            sink => 'runner.dl', checkpoint_interval => '1 hour') > 0 AS created;
RESET ROLE;
INSERT INTO dl_src (k, epoch, v) VALUES
	('a', 1704067210, 1),
	(NULL, 1704067215, 2),
	('a', NULL, 3),
	(NULL, NULL, 4),
	('a', 1704067220, 0),
	('a', 1704067225, 50),
	('b', 1704067290, 5);
SET ROLE weir_runner;
SELECT weir.checkpoint('dl') > 0 AS checkpointed;
SELECT d.source, d.partition, d.position, d.error, d.record
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 'dl' ORDER BY d.partition, d.position;
SET ROLE weir_nobody;
SELECT count(*) AS dead_letters_seen FROM weir.dead_letters;
-- nor its state, live or committed
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('dl');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE weir_runner;
SELECT key, window_start, window_end, fired FROM weir.committed_state('dl') ORDER BY key, window_start;
RESET ROLE;
SELECT checkpoint_watermark('dl') AS watermark, records_in, records_late, records_dead
  FROM weir.pipelines WHERE name = 'dl';
SELECT * FROM runner.dl ORDER BY k, window_start;

------------------------------------------------------------------------------
-- A sink row the sink refuses (a CHECK constraint here) becomes a dead
-- letter, with the row and the error, in the checkpoint's transaction; the
-- other rows are written and the pipeline runs on
------------------------------------------------------------------------------
SELECT weir.create_topic('fail_src', 'k int, t timestamptz');
SELECT weir.create_pipeline('fail', 'fail_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            checkpoint_interval => '1 hour') > 0 AS created;
ALTER TABLE fail ADD CONSTRAINT at_most_one CHECK (n <= 1);
INSERT INTO fail_src (k, t) VALUES (1, '2024-01-01 00:00:10+00'), (1, '2024-01-01 00:00:20+00'),
                                   (2, '2024-01-01 00:00:30+00'), (1, '2024-01-01 00:05:00+00');
SELECT weir.checkpoint('fail') > 0 AS checkpointed;
SELECT status, last_error, records_dead FROM weir.pipelines WHERE name = 'fail';
SELECT source, partition, position, error, record FROM weir.dead_letters
 WHERE pipeline_id = (SELECT id FROM weir.pipeline WHERE name = 'fail');
SELECT k, window_start, n FROM fail ORDER BY 1, 2;
SELECT weir.stop('fail');

------------------------------------------------------------------------------
-- Row-level security on a sink: policies that apply to the pipeline's owner
-- are enforced (the write goes through the executor), policies that do not
-- (an owner's own table, not forced) are not in the way of the bulk path
------------------------------------------------------------------------------
SELECT weir.create_topic('rls_src', 'k int, t timestamptz');
GRANT SELECT ON rls_src TO weir_runner;
SET ROLE weir_runner;
CREATE TABLE runner.rls_forced (k int NOT NULL, window_start timestamptz NOT NULL,
                                window_end timestamptz NOT NULL, n bigint,
                                PRIMARY KEY (window_start, k));
ALTER TABLE runner.rls_forced ENABLE ROW LEVEL SECURITY;
ALTER TABLE runner.rls_forced FORCE ROW LEVEL SECURITY;
CREATE POLICY readable ON runner.rls_forced FOR SELECT USING (true);
CREATE POLICY small_only ON runner.rls_forced FOR INSERT WITH CHECK (n <= 1);
CREATE TABLE runner.rls_owned (LIKE runner.rls_forced INCLUDING ALL);
ALTER TABLE runner.rls_owned ENABLE ROW LEVEL SECURITY;
CREATE POLICY small_only ON runner.rls_owned FOR INSERT WITH CHECK (n <= 1);
SELECT weir.create_pipeline('rls_forced', 'rls_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'runner.rls_forced', checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_pipeline('rls_owned', 'rls_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'runner.rls_owned', checkpoint_interval => '1 hour') > 0 AS created;
RESET ROLE;
INSERT INTO rls_src (k, t) VALUES (1, '2024-01-01 00:00:10+00'), (1, '2024-01-01 00:00:20+00'),
                                  (2, '2024-01-01 00:00:30+00'), (1, '2024-01-01 00:05:00+00');
SET ROLE weir_runner;
-- the forced policy refuses the row with n = 2: the pipeline fails
SELECT weir.checkpoint('rls_forced');
\echo :LAST_ERROR_SQLSTATE
DO $$
BEGIN
	FOR i IN 1 .. 100 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'rls_forced' AND status = 'failed');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT status, last_error FROM weir.pipelines WHERE name = 'rls_forced';
SELECT count(*) FROM runner.rls_forced;
-- the owner's own table: its policies do not apply to it
SELECT weir.checkpoint('rls_owned') > 0 AS checkpointed;
SELECT * FROM runner.rls_owned ORDER BY window_start, k;
SELECT weir.drop_pipeline('rls_forced');
SELECT weir.drop_pipeline('rls_owned');
DROP TABLE runner.rls_forced, runner.rls_owned;
RESET ROLE;
REVOKE SELECT ON rls_src FROM weir_runner;

------------------------------------------------------------------------------
-- A sink table with a rule: rows go through SQL, so the rule applies to each
-- (the bulk path, which skips the executor, is only for plain tables)
------------------------------------------------------------------------------
SELECT weir.create_topic('rule_src', 'k text, t timestamptz');
CREATE TABLE rule_sink (k text NOT NULL, window_start timestamptz NOT NULL,
                        window_end timestamptz NOT NULL, n bigint, PRIMARY KEY (window_start, k));
CREATE TABLE rule_audit (k text, window_start timestamptz, n bigint);
CREATE RULE audited AS ON INSERT TO rule_sink
	DO ALSO INSERT INTO rule_audit VALUES (NEW.k, NEW.window_start, NEW.n);
SELECT weir.create_pipeline('rule', 'rule_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'rule_sink', checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO rule_src (k, t)
SELECT 'k' || (i % 5), '2024-01-01'::timestamptz + i * interval '7 seconds' FROM generate_series(1, 200) i;
SELECT weir.checkpoint('rule') > 0 AS checkpointed;
SELECT count(*) > 0 AS fired, count(*) = (SELECT count(*) FROM rule_audit) AS audited_each
  FROM rule_sink;
SELECT count(*) AS differ FROM (
	(SELECT k, window_start, n FROM rule_sink EXCEPT SELECT * FROM rule_audit)
	UNION ALL
	(SELECT * FROM rule_audit EXCEPT SELECT k, window_start, n FROM rule_sink)) d;
SELECT weir.drop_pipeline('rule');
DROP TABLE rule_sink, rule_audit;
SELECT weir.drop_topic('rule_src');

------------------------------------------------------------------------------
-- Dropping a pipeline keeps its sink; a pipeline created again over that sink
-- reads the topic from its start and writes the same rows
------------------------------------------------------------------------------
SELECT weir.drop_pipeline('tum');
SELECT weir.create_pipeline('tum', 'tum_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, count(v) AS n_v, sum(v) AS total, min(v) AS lo, '
                                          'max(v) AS hi, avg(v) AS mean, sum(f) AS f_total, avg(f) AS f_mean, '
                                          'max(t) AS last_t',
                            out_of_orderness => '30 seconds', checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.checkpoint('tum') > 0 AS checkpointed;
SELECT status, last_error, records_in, records_late FROM weir.pipelines WHERE name = 'tum';
SELECT * FROM oracle_diff('tum', $$
	SELECT * FROM tum_oracle WHERE window_end <= checkpoint_watermark('tum') $$);

------------------------------------------------------------------------------
-- Session windows (gap 1 minute): a record at t covers [t, t + 1 minute);
-- sessions of a key that overlap merge, so a session is [first event, last
-- event + gap) and a record exactly one gap after the last starts a new one
------------------------------------------------------------------------------
SELECT weir.create_topic('ses_src', 'k text, t timestamptz, v int');
SELECT weir.create_pipeline('ses', 'ses_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total, min(t) AS first_t, max(t) AS last_t',
                            allowed_lateness => '5 minutes', late_records => 'ses_late',
                            checkpoint_interval => '1 hour') > 0 AS created;
\d ses
-- the sessions from plain SQL (gaps and islands), leaving out records
-- dropped as too late
CREATE VIEW ses_oracle AS
	WITH marked AS (
		SELECT k, t, v,
		       CASE WHEN t < lag(t) OVER w + interval '1 minute' THEN 0 ELSE 1 END AS starts_session
		  FROM ses_src
		 WHERE (part, pos) NOT IN (SELECT part, pos FROM ses_late)
		WINDOW w AS (PARTITION BY k ORDER BY t)),
	numbered AS (
		SELECT k, t, v, sum(starts_session) OVER (PARTITION BY k ORDER BY t) AS session
		  FROM marked)
	SELECT k, min(t) AS window_start, max(t) + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total, min(t) AS first_t, max(t) AS last_t
	  FROM numbered GROUP BY k, session;
-- watermark 00:03:30: a's two sessions, b's two sessions (00:01:10 is exactly
-- one gap after 00:00:10) close; c's stays open
INSERT INTO ses_src (k, t, v) VALUES
	('a', '2024-01-01 00:00:00+00', 1),
	('a', '2024-01-01 00:00:30+00', 2),
	('a', '2024-01-01 00:02:00+00', 3),
	('b', '2024-01-01 00:00:10+00', 4),
	('b', '2024-01-01 00:01:10+00', 5),
	('c', '2024-01-01 00:03:30+00', 6);
SELECT weir.checkpoint('ses') > 0 AS checkpointed;
SELECT checkpoint_watermark('ses') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'ses';
SELECT * FROM ses ORDER BY k, window_start;
SELECT * FROM oracle_diff('ses', $$
	SELECT * FROM ses_oracle
	 WHERE window_end <= checkpoint_watermark('ses') $$);
-- late records within allowed_lateness merge sessions: 00:01:15 bridges a's
-- two sessions (the later row goes); 00:00:05 moves b's first session to
-- start earlier (the row at 00:00:10 goes, one at 00:00:05 comes)
INSERT INTO ses_src (k, t, v) VALUES
	('a', '2024-01-01 00:01:15+00', 7),
	('b', '2024-01-01 00:00:05+00', 8),
	('c', '2024-01-01 00:03:50+00', 9);
SELECT weir.checkpoint('ses') > 0 AS checkpointed;
SELECT checkpoint_watermark('ses') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'ses';
SELECT * FROM ses ORDER BY k, window_start;
SELECT * FROM oracle_diff('ses', $$
	SELECT * FROM ses_oracle
	 WHERE window_end <= checkpoint_watermark('ses') $$);
-- watermark 00:10:00: c's session closes, and every session is past its
-- allowed lateness
INSERT INTO ses_src (k, t, v) VALUES ('d', '2024-01-01 00:10:00+00', 10);
SELECT weir.checkpoint('ses') > 0 AS checkpointed;
-- too late now, even though it would touch a's session
INSERT INTO ses_src (k, t, v) VALUES ('a', '2024-01-01 00:02:50+00', 11);
SELECT weir.checkpoint('ses') > 0 AS checkpointed;
SELECT checkpoint_watermark('ses') AS watermark, records_in, records_late FROM weir.pipelines WHERE name = 'ses';
SELECT * FROM ses ORDER BY k, window_start;
SELECT part, pos, k, t, v FROM ses_late ORDER BY part, pos;
SELECT * FROM oracle_diff('ses', $$
	SELECT * FROM ses_oracle
	 WHERE window_end <= checkpoint_watermark('ses') $$);
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('ses') ORDER BY key, window_start;

-- sessions with emit => 'updates': the rows of open sessions are in the sink,
-- and when sessions merge only the merged session's row stays
SELECT weir.create_topic('sesu_src', 'k text, t timestamptz');
SELECT weir.create_pipeline('sesu', 'sesu_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 minute'), aggregates => 'count(*) AS n',
                            out_of_orderness => '10 minutes', emit => 'updates',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO sesu_src (k, t) VALUES ('a', '2024-01-01 00:00:00+00'), ('a', '2024-01-01 00:01:30+00');
SELECT weir.checkpoint('sesu') > 0 AS checkpointed;
SELECT * FROM sesu ORDER BY k, window_start;
-- 00:00:45 bridges the two sessions
INSERT INTO sesu_src (k, t) VALUES ('a', '2024-01-01 00:00:45+00');
SELECT weir.checkpoint('sesu') > 0 AS checkpointed;
SELECT * FROM sesu ORDER BY k, window_start;
-- 23:59:30 the day before moves the session's start
INSERT INTO sesu_src (k, t) VALUES ('a', '2023-12-31 23:59:30+00');
SELECT weir.checkpoint('sesu') > 0 AS checkpointed;
SELECT * FROM sesu ORDER BY k, window_start;
SELECT * FROM oracle_diff('sesu', $$
	WITH marked AS (
		SELECT k, t, CASE WHEN t < lag(t) OVER w + interval '1 minute' THEN 0 ELSE 1 END AS starts_session
		  FROM sesu_src WINDOW w AS (PARTITION BY k ORDER BY t)),
	numbered AS (
		SELECT k, t, sum(starts_session) OVER (PARTITION BY k ORDER BY t) AS session FROM marked)
	SELECT k, min(t) AS window_start, max(t) + interval '1 minute' AS window_end, count(*) AS n
	  FROM numbered GROUP BY k, session $$);
-- the committed state holds only the merged session: the two it absorbed,
-- which earlier checkpoints wrote, are written as gone, and a restart (a
-- restore from the chunks) does not bring them back
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('sesu') ORDER BY key, window_start;
SELECT entries FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'sesu' ORDER BY chunk;
SELECT weir.stop('sesu');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'sesu' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('sesu');
SELECT weir.checkpoint('sesu') > 0 AS checkpointed;
SELECT key, window_start, window_end, value AS aggregates FROM weir.live_state('sesu') ORDER BY key, window_start;
SELECT windows FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'sesu' ORDER BY restored_at DESC LIMIT 1;

------------------------------------------------------------------------------
-- Long keys: a window keeps the length of a key image under 255 bytes in its
-- header and a longer one's before the key (a text key's image is 4 bytes of
-- length and the text, so lengths 250 and 251 fall on either side); and a
-- sum with no non-null input is NULL, as SQL's.  A restart restores them.
------------------------------------------------------------------------------
SELECT weir.create_topic('long_src', 'k text, t timestamptz, v bigint');
SELECT weir.create_pipeline('long_tum', 'long_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total, avg(v) AS mean',
                            checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_pipeline('long_ses', 'long_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            checkpoint_interval => '1 hour') > 0 AS created;
CREATE VIEW long_tum_oracle AS
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total, avg(v) AS mean
	  FROM long_src GROUP BY 1, 2, 3;
-- records 20 seconds apart: one session per key
CREATE VIEW long_ses_oracle AS
	SELECT k, min(t) AS window_start, max(t) + interval '1 minute' AS window_end,
	       count(*) AS n, sum(v) AS total
	  FROM long_src GROUP BY k;
-- watermark 00:01:40: [00:00, 00:01) closes, the sessions stay open
INSERT INTO long_src (k, t, v)
	SELECT repeat(chr(96 + i::int), len), timestamptz '2024-01-01 00:00:00+00' + s * interval '20 seconds',
	       CASE WHEN len = 250 THEN NULL ELSE -len * s END
	  FROM unnest(ARRAY[1, 250, 251, 252, 1000, 5000]) WITH ORDINALITY AS l(len, i),
	       generate_series(0, 5) AS s;
SELECT weir.checkpoint('long_tum') > 0 AS checkpointed, weir.checkpoint('long_ses') > 0 AS checkpointed;
SELECT length(k), window_start, n, total, mean FROM long_tum ORDER BY 1, 2;
SELECT * FROM oracle_diff('long_tum', $$
	SELECT * FROM long_tum_oracle WHERE window_end <= checkpoint_watermark('long_tum') $$);
SELECT length(key), window_start, window_end, value AS aggregates FROM weir.live_state('long_tum') ORDER BY 1, 2;
SELECT length(key), window_start, window_end, value AS aggregates FROM weir.live_state('long_ses') ORDER BY 1, 2;
SELECT weir.stop('long_tum'), weir.stop('long_ses');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM weir.pipelines
							   WHERE name IN ('long_tum', 'long_ses') AND worker_pid IS NOT NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('long_tum'), weir.start('long_ses');
-- after the restore, records of the open windows find them; the watermark
-- then passes every window and session of those keys
INSERT INTO long_src (k, t, v)
	SELECT repeat(chr(96 + i::int), len), timestamptz '2024-01-01 00:01:50+00', len
	  FROM unnest(ARRAY[1, 250, 251, 252, 1000, 5000]) WITH ORDINALITY AS l(len, i);
INSERT INTO long_src (k, t, v) VALUES ('z', '2024-01-01 00:05:00+00', 1);
SELECT weir.checkpoint('long_tum') > 0 AS checkpointed, weir.checkpoint('long_ses') > 0 AS checkpointed;
SELECT DISTINCT ON (p.name) p.name, windows FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name IN ('long_tum', 'long_ses') ORDER BY p.name, restored_at DESC;
SELECT length(k), window_start, n, total, mean FROM long_tum ORDER BY 1, 2;
SELECT length(k), window_start, window_end, n, total FROM long_ses ORDER BY 1, 2;
SELECT * FROM oracle_diff('long_tum', $$
	SELECT * FROM long_tum_oracle WHERE window_end <= checkpoint_watermark('long_tum') $$);
SELECT * FROM oracle_diff('long_ses', $$
	SELECT * FROM long_ses_oracle WHERE window_end <= checkpoint_watermark('long_ses') $$);

------------------------------------------------------------------------------
-- Clean up: dropping a pipeline drops its catalog rows, and its worker exits
------------------------------------------------------------------------------
SELECT weir.drop_pipeline(name) FROM weir.pipeline ORDER BY name;
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'weir worker');
		PERFORM pg_sleep(0.1);
		PERFORM pg_stat_clear_snapshot();
	END LOOP;
END $$;
SELECT count(*) AS workers FROM pg_stat_activity WHERE backend_type = 'weir worker';
SELECT (SELECT count(*) FROM weir.pipeline) AS pipelines,
       (SELECT count(*) FROM weir.pipeline_position) AS positions,
       (SELECT count(*) FROM weir.pipeline_chunk) AS chunks,
       (SELECT count(*) FROM weir.checkpoints) AS checkpoints,
       (SELECT count(*) FROM weir.restores) AS restores,
       (SELECT count(*) FROM weir.dead_letters) AS dead_letters;
DROP VIEW tum_oracle, hop_oracle, ses_oracle, long_tum_oracle, long_ses_oracle;
DROP TABLE tum, hop, filt, late, late_rows, upd, two, fail, ses, ses_late, sesu, long_tum, long_ses;
DROP SCHEMA runner CASCADE;
REVOKE SELECT ON dl_src FROM weir_runner;
DROP ROLE weir_runner;
DROP ROLE weir_nobody;
SELECT weir.drop_topic(t)
  FROM unnest(ARRAY['tum_src', 'hop_src', 'filt_src', 'late_src', 'upd_src', 'two_src', 'dl_src',
                    'fail_src', 'rls_src', 'ses_src', 'sesu_src', 'long_src']::regclass[]) AS t;
