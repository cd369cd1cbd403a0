-- weir.live_state and weir.committed_state (issue 19): the state of every
-- operator in one shape, of a running pipeline and of a stopped one,
-- compared with the same state computed in SQL over the topics; and who
-- may read it.
SET timezone = 'UTC';
CREATE ROLE sv_owner;
CREATE ROLE sv_reader;
CREATE ROLE sv_nobody;
CREATE SCHEMA sv AUTHORIZATION sv_owner;
GRANT USAGE ON SCHEMA sv TO sv_reader, sv_nobody;
SELECT weir.create_topic('sv_events', 'k int, t timestamptz, v int, batch int',
                         partitions => 2, key => 'k');
SELECT weir.create_topic('sv_labels', 'k int, t timestamptz, label text, batch int');
GRANT SELECT ON sv_events, sv_labels TO sv_owner;

-- The pipelines are an ordinary role's, with a generic aggregate of its
-- own whose final function raises for a total of 13, and says whose rights
-- it runs with for 42.
SET ROLE sv_owner;
CREATE FUNCTION sv.picky_final(s bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	IF s = 13 THEN
		RAISE EXCEPTION 'unlucky total %', s;
	ELSIF s = 42 THEN
		RAISE EXCEPTION 'final function run by %', current_user;
	END IF;
	RETURN s;
END $$;
CREATE FUNCTION sv.plain_add(s bigint, v int) RETURNS bigint LANGUAGE sql AS 'SELECT coalesce(s, 0) + v';
CREATE AGGREGATE sv.picky_total(int) (sfunc = sv.plain_add, stype = bigint,
                                      finalfunc = sv.picky_final, combinefunc = int8pl);
-- a window with built-in aggregates (count, sum: flat states; avg over
-- numeric: a generic one) and the owner's
SELECT weir.create_pipeline('sv_win', 'sv_events', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total, avg(v::numeric) AS mean, '
                                          'sv.picky_total(v) AS picky',
                            sink => 'sv.sv_win', out_of_orderness => '1 hour',
                            checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_dedup('sv_dd', 'sv_events', key => 'k', event_time => 't',
                         horizon => '10 minutes', sink => 'sv.sv_dd', out_of_orderness => '1 hour',
                         checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_last_value('sv_lv', 'sv_events', key => 'k', event_time => 't',
                              sink => 'sv.sv_lv', out_of_orderness => '1 hour',
                              checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_join('sv_jn', 'sv_events', 'sv_labels', left_key => 'k', right_key => 'k',
                        left_event_time => 't', right_event_time => 't',
                        right_before => '0', right_after => '5 minutes',
                        sink => 'sv.sv_jn',
                        out_of_orderness => '1 hour', checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_projection('sv_pj', 'sv_events', sink => 'sv.sv_pj',
                              checkpoint_interval => '1 hour') > 0 AS created;
RESET ROLE;

-- Each operator's state as SQL computes it from the records of batches up
-- to `upto`: nothing fires or expires (out_of_orderness 1 hour).
CREATE FUNCTION sv_win_oracle(upto int)
RETURNS TABLE (key text, window_start timestamptz, window_end timestamptz, fired boolean,
               expires_at timestamptz, n text, total text, mean text, picky jsonb)
LANGUAGE sql AS $$
	SELECT k::text, date_bin('1 minute', t, '1970-01-01'),
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute', false,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute',
	       count(*)::text, sum(v)::text, avg(v::numeric)::text,
	       CASE sum(v) WHEN 13 THEN '{"error": "unlucky total 13"}'
	                   WHEN 42 THEN '{"error": "final function run by sv_owner"}'
	                   ELSE to_jsonb(sum(v)::text) END
	  FROM sv_events WHERE batch <= upto GROUP BY 1, 2 $$;
-- dedup: per id its last sighting, kept for the horizon after it
CREATE FUNCTION sv_dd_oracle(upto int) RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz)
LANGUAGE sql AS $$
	SELECT k::text, max(t), max(t) + interval '10 minutes'
	  FROM sv_events WHERE batch <= upto GROUP BY 1 $$;
-- last value: per key where its newest row is (no ttl: kept forever)
CREATE FUNCTION sv_lv_oracle(upto int) RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz, value jsonb)
LANGUAGE sql AS $$
	SELECT DISTINCT ON (k) k::text, t, 'infinity'::timestamptz,
	       jsonb_build_object('partition', part, 'position', pos, 'deleted', false)
	  FROM sv_events WHERE batch <= upto ORDER BY k, t DESC, part DESC, pos DESC $$;
-- join: every row of both sides, whether it has a partner (r.t BETWEEN l.t
-- AND l.t + 5 minutes), leaving when the watermark passes t + its bound
CREATE FUNCTION sv_jn_oracle(upto int)
RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz, side text, matched boolean, row_image jsonb)
LANGUAGE sql AS $$
	SELECT l.k::text, l.t, l.t + interval '5 minutes 0.000001 s', 'left',
	       EXISTS (SELECT FROM sv_labels r WHERE r.batch <= upto AND r.k = l.k
	                  AND r.t BETWEEN l.t AND l.t + interval '5 minutes'),
	       jsonb_build_object('k', l.k::text, 't', l.t::text, 'v', l.v::text, 'batch', l.batch::text)
	  FROM sv_events l WHERE l.batch <= upto
	UNION ALL
	SELECT r.k::text, r.t, r.t + interval '0.000001 s', 'right',
	       EXISTS (SELECT FROM sv_events l WHERE l.batch <= upto AND r.k = l.k
	                  AND r.t BETWEEN l.t AND l.t + interval '5 minutes'),
	       jsonb_build_object('right_k', r.k::text, 'right_t', r.t::text, 'label', r.label,
	                          'right_batch', r.batch::text)
	  FROM sv_labels r WHERE r.batch <= upto $$;

-- A state function's rows, as the oracles show them; `fn` is
-- weir.live_state or weir.committed_state.
CREATE FUNCTION sv_win_state(fn text)
RETURNS TABLE (key text, window_start timestamptz, window_end timestamptz, fired boolean,
               expires_at timestamptz, n text, total text, mean text, picky jsonb)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT key, window_start, window_end, fired, expires_at, value->>''n'', value->>''total'', '
		'       value->>''mean'', value->''picky'' FROM %s(''sv_win'') '
		' WHERE operator = ''window'' AND event_time IS NULL', fn);
END $$;
CREATE FUNCTION sv_dd_state(fn text) RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT key, event_time, expires_at FROM %s(''sv_dd'') '
		' WHERE operator = ''dedup'' AND window_start IS NULL AND value IS NULL', fn);
END $$;
CREATE FUNCTION sv_lv_state(fn text) RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz, value jsonb)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT key, event_time, expires_at, value FROM %s(''sv_lv'') '
		' WHERE operator = ''last_value'' AND window_start IS NULL', fn);
END $$;
CREATE FUNCTION sv_jn_state(fn text)
RETURNS TABLE (key text, event_time timestamptz, expires_at timestamptz, side text, matched boolean, row_image jsonb)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT key, event_time, expires_at, value->>''side'', (value->''matched'')::boolean, value->''row'' '
		'  FROM %s(''sv_jn'') WHERE operator = ''join'' AND window_start IS NULL', fn);
END $$;
-- Rows only in the state or only in the oracle, per operator: none expected
CREATE FUNCTION sv_diff(fn text, upto int) RETURNS TABLE (operator text, side text, row_image text)
LANGUAGE sql AS $$
	SELECT 'window', * FROM oracle_diff(format('sv_win_state(%L) s', fn), format('SELECT * FROM sv_win_oracle(%s)', upto))
	UNION ALL
	SELECT 'dedup', * FROM oracle_diff(format('sv_dd_state(%L) s', fn), format('SELECT * FROM sv_dd_oracle(%s)', upto))
	UNION ALL
	SELECT 'last_value', * FROM oracle_diff(format('sv_lv_state(%L) s', fn), format('SELECT * FROM sv_lv_oracle(%s)', upto))
	UNION ALL
	SELECT 'join', * FROM oracle_diff(format('sv_jn_state(%L) s', fn), format('SELECT * FROM sv_jn_oracle(%s)', upto))
	ORDER BY 1, 2, 3 $$;
-- How many rows each pipeline's state has
CREATE FUNCTION sv_counts(fn text) RETURNS TABLE (pipeline text, state_rows bigint)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT p, (SELECT count(*) FROM %s(p)) FROM unnest(ARRAY[''sv_win'', ''sv_dd'', ''sv_lv'', ''sv_jn'', ''sv_pj'']) p '
		' ORDER BY 1', fn);
END $$;
-- Wait until a running pipeline's worker has applied every record of the
-- topics (its live state then has them): its records_in reaches `n`.
CREATE FUNCTION sv_wait_read(pipeline text, n bigint) RETURNS boolean LANGUAGE sql AS $$
	SELECT wait_for_pipeline(pipeline, format('records_in >= %s', n)) $$;

-- Batch 1: 30 events of keys 0-4, ten seconds apart; a window of key 7
-- totalling 13 and one of key 8 totalling 42; labels for keys 1 (matching
-- two events), 2 (too late for any) and 9 (no event).
INSERT INTO sv_events (k, t, v, batch)
SELECT g % 5, '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 s', g, 1
  FROM generate_series(1, 30) g;
INSERT INTO sv_events (k, t, v, batch) VALUES
	(7, '2024-01-01 00:05:00+00', 6, 1), (7, '2024-01-01 00:05:01+00', 7, 1),
	(8, '2024-01-01 00:05:00+00', 42, 1);
INSERT INTO sv_labels (k, t, label, batch) VALUES
	(1, '2024-01-01 00:02:00+00', 'one', 1), (2, '2024-01-01 00:20:00+00', 'two', 1),
	(9, '2024-01-01 00:01:00+00', 'nine', 1);
SELECT weir.checkpoint(p) > 0 AS checkpointed
  FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;

------------------------------------------------------------------------------
-- Running, checkpointed: the live state is the committed one, and both are
-- the oracles'; a projection keeps none.
------------------------------------------------------------------------------
SELECT * FROM sv_counts('weir.live_state');
SELECT * FROM sv_diff('weir.live_state', 1);
SELECT * FROM sv_diff('weir.committed_state', 1);
-- one of each, as it shows
SELECT * FROM weir.live_state('sv_win') WHERE key IN ('1', '7', '8') ORDER BY key, window_start LIMIT 4;
SELECT * FROM weir.committed_state('sv_dd') WHERE key = '1';
SELECT * FROM weir.live_state('sv_lv') WHERE key = '1';
SELECT * FROM weir.committed_state('sv_jn') WHERE key IN ('1', '9') ORDER BY event_time, value->>'side' LIMIT 3;

------------------------------------------------------------------------------
-- Running, ahead of its checkpoint: batch 2 read but not checkpointed
-- (the interval is an hour).  The live state has it, the committed state
-- is still batch 1's.
------------------------------------------------------------------------------
INSERT INTO sv_events (k, t, v, batch)
SELECT g % 5, '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 s', g, 2
  FROM generate_series(31, 40) g;
INSERT INTO sv_labels (k, t, label, batch) VALUES (3, '2024-01-01 00:06:00+00', 'three', 2);
SELECT sv_wait_read(p, (SELECT count(*) FROM sv_events) + CASE p WHEN 'sv_jn' THEN (SELECT count(*) FROM sv_labels) ELSE 0 END) AS read
  FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn']) p;
SELECT * FROM sv_diff('weir.live_state', 2);
SELECT * FROM sv_diff('weir.committed_state', 1);

------------------------------------------------------------------------------
-- Stopped: no live state; the committed state is the last checkpoint's
-- (batch 1), which a start restores.  After a checkpoint, batch 2 is in it.
------------------------------------------------------------------------------
SELECT weir.stop(p) FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;
SELECT wait_for_pipeline(p, 'worker_pid IS NULL') AS stopped
  FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;
SELECT * FROM sv_counts('weir.live_state');
SELECT * FROM sv_counts('weir.committed_state');
SELECT * FROM sv_diff('weir.committed_state', 1);
SELECT weir.start(p) FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;
SELECT weir.checkpoint(p) > 0 AS checkpointed
  FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;
SELECT * FROM sv_diff('weir.live_state', 2);
SELECT * FROM sv_diff('weir.committed_state', 2);

------------------------------------------------------------------------------
-- Who may read: members of the owner, and those who may read every row of
-- the sink.  The owner's final function runs as the owner whoever reads.
------------------------------------------------------------------------------
GRANT SELECT ON sv.sv_win TO sv_reader;
SET ROLE sv_reader;
SELECT key, value->'picky' AS picky FROM weir.committed_state('sv_win') WHERE key IN ('7', '8') ORDER BY key;
SELECT count(*) AS live_windows FROM weir.live_state('sv_win');
-- not the dedup's: its sink is not granted
SELECT count(*) FROM weir.committed_state('sv_dd');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE sv_nobody;
SELECT count(*) FROM weir.live_state('sv_win');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- row level security on the sink: its reader may not see every row
ALTER TABLE sv.sv_win ENABLE ROW LEVEL SECURITY;
SET ROLE sv_reader;
SELECT count(*) FROM weir.committed_state('sv_win');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE sv.sv_win DISABLE ROW LEVEL SECURITY;
-- a join's state holds rows its sink never shows: its sink's reader must
-- also read both topics
GRANT SELECT ON sv.sv_jn TO sv_reader;
SET ROLE sv_reader;
SELECT count(*) FROM weir.committed_state('sv_jn');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT SELECT ON sv_events TO sv_reader;
SET ROLE sv_reader;
SELECT count(*) FROM weir.committed_state('sv_jn');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT SELECT ON sv_labels TO sv_reader;
SET ROLE sv_reader;
SELECT count(*) = (SELECT count(*) FROM sv_jn_oracle(2)) AS join_state_read_in_full
  FROM weir.committed_state('sv_jn');
RESET ROLE;
REVOKE SELECT ON sv_events, sv_labels FROM sv_reader;
-- a member of the owner reads them all
GRANT sv_owner TO sv_nobody;
SET ROLE sv_nobody;
SELECT * FROM sv_counts('weir.committed_state');
RESET ROLE;
REVOKE sv_owner FROM sv_nobody;
SELECT sqlstate_of($$SELECT * FROM weir.live_state('sv_none')$$) AS no_such_pipeline;
-- a remote sink has no table here that could be granted: owner members only
CREATE TABLE sv_far (k int, window_start timestamptz, window_end timestamptz, n bigint,
                     PRIMARY KEY (window_start, k));
GRANT SELECT ON sv_far TO sv_reader;
SELECT weir.create_pipeline('sv_remote', 'sv_events', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => weir.remote_table(
                                format('host=%s port=%s dbname=%s',
                                       split_part(current_setting('unix_socket_directories'), ',', 1),
                                       current_setting('port'), current_database()),
                                'public.sv_far'),
                            start => false) > 0 AS created;
SET ROLE sv_reader;
SELECT count(*) FROM weir.committed_state('sv_remote');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT count(*) AS owner_reads_nothing_yet FROM weir.committed_state('sv_remote');
SELECT weir.drop_pipeline('sv_remote');
DROP TABLE sv_far;

SELECT weir.drop_pipeline(p) FROM unnest(ARRAY['sv_win', 'sv_dd', 'sv_lv', 'sv_jn', 'sv_pj']) p;
SELECT weir.drop_topic('sv_events');
SELECT weir.drop_topic('sv_labels');
DROP FUNCTION sv_win_oracle(int), sv_dd_oracle(int), sv_lv_oracle(int), sv_jn_oracle(int),
	sv_win_state(text), sv_dd_state(text), sv_lv_state(text), sv_jn_state(text),
	sv_diff(text, int), sv_counts(text), sv_wait_read(text, bigint);
DROP SCHEMA sv CASCADE;
DROP ROLE sv_owner;
DROP ROLE sv_reader;
DROP ROLE sv_nobody;
