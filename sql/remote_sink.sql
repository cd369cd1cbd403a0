-- Remote sinks (issue 19): sink => weir.remote_table(conninfo, 'schema.table',
-- commit).  The "remote" here is this same server reached over libpq (its
-- tables in schema far), which is all the definition checks and the
-- commit protocol need; test/t/019_remote_sink.pl uses a second cluster,
-- with crashes.
SET timezone = 'UTC';
-- a connection string to this server, as a remote would be reached
CREATE FUNCTION public.here() RETURNS text LANGUAGE sql AS $$
	SELECT format('host=%s port=%s dbname=%s',
				  split_part(current_setting('unix_socket_directories'), ',', 1),
				  current_setting('port'), current_database()) $$;
CREATE FUNCTION public.wait_for_fire(pipeline text, want bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		IF (SELECT records_in FROM weir.pipelines WHERE name = pipeline) >= want THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN false;
END $$;

SELECT weir.create_topic('rs_events', 'k text, v int, t timestamptz', partitions => 2);
CREATE SCHEMA far;
CREATE TABLE far.totals (k text, window_start timestamptz, window_end timestamptz,
						 n bigint, s bigint, PRIMARY KEY (window_start, k));
CREATE TABLE far.no_key (k text, window_start timestamptz, window_end timestamptz, n bigint, s bigint);
CREATE TABLE far.bad_type (k text, window_start timestamptz, window_end timestamptz,
						   n int, s bigint, PRIMARY KEY (window_start, k));
CREATE TABLE far.missing (k text, window_start timestamptz, window_end timestamptz,
						  n bigint, PRIMARY KEY (window_start, k));
CREATE TABLE far.extra (k text, window_start timestamptz, window_end timestamptz,
						n bigint, s bigint, note text NOT NULL, PRIMARY KEY (window_start, k));
CREATE TABLE far.copies (k text, v int, t timestamptz);
CREATE TABLE far.latest (k text PRIMARY KEY, v int, t timestamptz);

-- weir.remote_table only wraps its arguments for the sink argument
SELECT weir.remote_table('host=nowhere', 'public.t') LIKE 'weir.remote_table:%' AS wrapped;

-- definition errors, each with its SQLSTATE and hint; none shows the
-- connection string
\set VERBOSITY default
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'totals'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.nosuch'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.totals', 'three_phase'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.bad_type'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.missing'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.no_key'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.extra'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table('nonsense=1', 'far.totals'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table('host=/nonexistent port=1 password=secret', 'far.totals'));
-- idempotent only where rows written again come out the same
SELECT weir.create_dedup('rs_bad', 'rs_events', key => 'k', event_time => 't',
						 sink => weir.remote_table(here(), 'far.copies', 'idempotent'));
SELECT weir.create_pipeline('rs_bad', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.session('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.totals', 'idempotent'));
SELECT weir.create_projection('rs_bad', 'rs_events', columns => 'k, v, t',
							  sink => weir.remote_table(here(), 'far.copies', 'idempotent'));
-- a role that is not a superuser must give a password, and the remote must use it
CREATE ROLE rs_user;
GRANT CREATE, USAGE ON SCHEMA public TO rs_user;
GRANT SELECT ON rs_events TO rs_user;
SELECT here() AS here \gset
SET ROLE rs_user;
SELECT weir.create_projection('rs_bad', 'rs_events', columns => 'k, v, t',
							  sink => weir.remote_table(:'here', 'far.copies'));
SELECT weir.create_projection('rs_bad', 'rs_events', columns => 'k, v, t',
							  sink => weir.remote_table(:'here' || ' password=unused', 'far.copies'));
-- the connection strings are weir's alone
SELECT sqlstate_of($$SELECT * FROM weir.pipeline_remote_sink$$);
RESET ROLE;
\set VERBOSITY terse

-- a two-phase window pipeline: the remote table equals the SQL answer
SELECT weir.create_pipeline('rs_w', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.totals')) > 0 AS created;
SELECT name, status IN ('starting', 'running') AS started, sink, remote_sink FROM weir.pipelines WHERE name = 'rs_w';
SELECT pipeline, remote_table, commit_mode, key_columns, transaction_prefix LIKE 'weir\_%' AS prefixed,
	   abandoned, pending_checkpoint, error
  FROM weir.remote_sinks;
INSERT INTO rs_events (part, k, v, t)
SELECT i % 2, 'k' || (i % 7), i, '2026-01-01'::timestamptz + i * interval '1 second'
  FROM generate_series(1, 3000) i;
SELECT wait_for_fire('rs_w', 3000);
SELECT weir.checkpoint('rs_w') > 0 AS checkpointed;
SELECT count(*) > 0 AS fired FROM far.totals;
SELECT * FROM oracle_diff('far.totals',
	$$SELECT k, date_bin('1 minute', t, 'epoch') AS window_start,
			 date_bin('1 minute', t, 'epoch') + interval '1 minute' AS window_end,
			 count(*) AS n, sum(v) AS s
		FROM rs_events GROUP BY 1, 2
	   HAVING date_bin('1 minute', t, 'epoch') + interval '1 minute' <= checkpoint_watermark('rs_w')$$);
-- nothing left prepared there
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid LIKE 'weir\_%';

-- an idempotent last value: upserts, and the fence row with its last checkpoint
SELECT weir.create_last_value('rs_lv', 'rs_events', key => 'k', event_time => 't', columns => 'v, t',
							  sink => weir.remote_table(here(), 'far.latest', 'idempotent')) > 0 AS created;
SELECT wait_for_fire('rs_lv', 3000);
SELECT weir.checkpoint('rs_lv') > 0 AS checkpointed;
SELECT * FROM oracle_diff('far.latest',
	$$SELECT DISTINCT ON (k) k, v, t FROM rs_events ORDER BY k, t DESC, part DESC, pos DESC$$);
SELECT f.checkpoint_id = (SELECT last_checkpoint FROM weir.pipelines WHERE name = 'rs_lv') AS fence_current
  FROM far.weir_sink_fence f JOIN weir.remote_sinks r ON r.transaction_prefix = f.sink
 WHERE r.pipeline = 'rs_lv';
-- more records: both sinks follow
INSERT INTO rs_events (part, k, v, t)
SELECT i % 2, 'k' || (i % 9), i, '2026-01-01'::timestamptz + i * interval '1 second'
  FROM generate_series(3001, 4000) i;
SELECT wait_for_fire('rs_w', 4000) AND wait_for_fire('rs_lv', 4000) AS read;
SELECT weir.checkpoint('rs_w') > 0 AND weir.checkpoint('rs_lv') > 0 AS checkpointed;
SELECT * FROM oracle_diff('far.totals',
	$$SELECT k, date_bin('1 minute', t, 'epoch') AS window_start,
			 date_bin('1 minute', t, 'epoch') + interval '1 minute' AS window_end,
			 count(*) AS n, sum(v) AS s
		FROM rs_events GROUP BY 1, 2
	   HAVING date_bin('1 minute', t, 'epoch') + interval '1 minute' <= checkpoint_watermark('rs_w')$$);
SELECT * FROM oracle_diff('far.latest',
	$$SELECT DISTINCT ON (k) k, v, t FROM rs_events ORDER BY k, t DESC, part DESC, pos DESC$$);

-- a COMMIT PREPARED that fails (fault point remote_commit_fails) is retried
-- with back-off, shown in weir.remote_sinks and weir.pipelines, and goes
-- through once the remote accepts it again; no weir.checkpoint() here: it
-- waits for the commit there
ALTER SYSTEM SET weir.fault_point = 'remote_commit_fails';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
INSERT INTO rs_events (part, k, v, t)
SELECT i % 2, 'k' || (i % 9), i, '2026-01-01'::timestamptz + i * interval '1 second'
  FROM generate_series(4001, 4300) i;
SELECT wait_for_pipeline('rs_w', $$(SELECT pending_checkpoint IS NOT NULL AND attempts >= 2
								  FROM weir.remote_sinks WHERE pipeline = 'rs_w')$$) AS retrying;
SELECT pending_checkpoint = last_checkpoint AS pending_is_last, retry_at > now() - interval '1 minute' AS retry_at_set,
	   error LIKE '%remote_commit_fails%' AS error_shown
  FROM weir.remote_sinks WHERE pipeline = 'rs_w';
SELECT remote_sink ~ '^two_phase to far\.totals: COMMIT PREPARED of checkpoint [0-9]+ failed [0-9]+ times, next attempt at .*remote_commit_fails' AS status_shown
  FROM weir.pipelines WHERE name = 'rs_w';
SELECT count(*) AS prepared_meanwhile FROM pg_prepared_xacts WHERE gid LIKE 'weir\_%';
ALTER SYSTEM RESET weir.fault_point;
SELECT pg_reload_conf();
SELECT wait_for_pipeline('rs_w', $$(SELECT pending_checkpoint IS NULL AND error IS NULL
								  FROM weir.remote_sinks WHERE pipeline = 'rs_w')$$) AS committed_there;
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid LIKE 'weir\_%';
SELECT remote_sink AS status FROM weir.pipelines WHERE name = 'rs_w';
SELECT weir.checkpoint('rs_w') > 0 AS checkpointed;
SELECT * FROM oracle_diff('far.totals',
	$$SELECT k, date_bin('1 minute', t, 'epoch') AS window_start,
			 date_bin('1 minute', t, 'epoch') + interval '1 minute' AS window_end,
			 count(*) AS n, sum(v) AS s
		FROM rs_events GROUP BY 1, 2
	   HAVING date_bin('1 minute', t, 'epoch') + interval '1 minute' <= checkpoint_watermark('rs_w')$$);

-- dropping a two-phase pipeline resolves its transactions there, so its
-- worker must be gone first
\set VERBOSITY default
SELECT weir.drop_pipeline('rs_w');
\set VERBOSITY terse
SELECT weir.stop('rs_w');
SELECT wait_for_status('rs_w', 'stopped');
SELECT wait_for_pipeline('rs_w', 'worker_pid IS NULL AND writer_pid IS NULL');
SELECT weir.drop_pipeline('rs_w');
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid LIKE 'weir\_%';

-- a remote gone for good: abandon it, then drop
SELECT weir.create_pipeline('rs_gone', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.totals'), start => false) > 0 AS created;
SELECT regexp_replace(weir.abandon_remote_sink('rs_gone'), 'weir_[0-9_]+', 'PREFIX') AS what_to_do;
SELECT abandoned FROM weir.remote_sinks WHERE pipeline = 'rs_gone';
SELECT weir.drop_pipeline('rs_gone');
SELECT sqlstate_of($$SELECT weir.abandon_remote_sink('rs_lv')$$) AS running;
SELECT sqlstate_of($$SELECT weir.abandon_remote_sink(NULL)$$) AS null_name;
SELECT weir.drop_pipeline('rs_lv');

-- a pipeline that goes with its definition (DROP ... CASCADE, DROP OWNED)
-- while a transaction of it is prepared there: the launcher resolves it
CREATE TABLE far.totals2 (LIKE far.totals INCLUDING ALL);
SELECT weir.create_pipeline('rs_orphan', 'rs_events', key => 'k', event_time => 't',
							windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS s',
							sink => weir.remote_table(here(), 'far.totals2')) > 0 AS created;
SELECT wait_for_fire('rs_orphan', 4300);
SELECT weir.checkpoint('rs_orphan') > 0 AS checkpointed;
SELECT count(*) AS rows_before FROM far.totals2 \gset
ALTER SYSTEM SET weir.fault_point = 'remote_after_prepare';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
INSERT INTO rs_events (part, k, v, t)
SELECT i % 2, 'k' || (i % 9), i, '2026-01-01'::timestamptz + i * interval '1 second'
  FROM generate_series(4301, 4900) i;
CREATE FUNCTION public.wait_for_prepared(want boolean) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		IF EXISTS (SELECT FROM pg_prepared_xacts WHERE gid LIKE 'weir\_%') = want THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN false;
END $$;
SELECT wait_for_prepared(true) AS prepared_and_exited;
ALTER SYSTEM RESET weir.fault_point;
SELECT pg_reload_conf();
SELECT weir.stop('rs_orphan');
DROP VIEW weir_pipelines.rs_orphan;
SELECT count(*) AS pipelines_left FROM weir.pipeline WHERE name = 'rs_orphan';
SELECT wait_for_prepared(false) AS resolved;
SELECT count(*) = :rows_before AS rolled_back FROM far.totals2;
SELECT count(*) AS left_to_resolve FROM weir.remote_sink_to_resolve;
SELECT count(*) AS remote_sinks_left FROM weir.remote_sinks;
REVOKE CREATE, USAGE ON SCHEMA public FROM rs_user;
REVOKE SELECT ON rs_events FROM rs_user;
DROP ROLE rs_user;
