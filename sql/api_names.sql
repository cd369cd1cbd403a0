-- One vocabulary for every operator (issue 17): an argument name means the
-- same in every weir.create_* function; an argument that was renamed fails
-- naming the new one; and a window aggregate may have no key (one group per
-- window), checked against plain SQL.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';

SELECT weir.create_topic('an_orders', 'order_id bigint, amount int, ts timestamptz',
                         partitions => 1, key => 'order_id');
SELECT weir.create_topic('an_ships', 'order_id bigint, carrier text, ts timestamptz',
                         partitions => 2, key => 'order_id');

------------------------------------------------------------------------------
-- Renamed arguments: each fails with 42P02, naming the new one, with the
-- new call in its hint
------------------------------------------------------------------------------
SELECT weir.create_dedup('bad', 'an_orders', id => 'order_id', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_time => 'ts', right_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        lower => '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        upper => '0');
\echo :LAST_ERROR_SQLSTATE
-- also beside the new name
SELECT weir.create_dedup('bad', 'an_orders', key => 'order_id', event_time => 'ts', id => 'order_id');
\echo :LAST_ERROR_SQLSTATE

------------------------------------------------------------------------------
-- Required arguments (DEFAULT NULL in the signatures, so that the renamed
-- ones above reach weir) are refused when missing, each naming itself
------------------------------------------------------------------------------
SELECT weir.create_dedup('bad', 'an_orders', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value('bad', 'an_orders', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'an_orders', windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'an_orders', event_time => 'ts', aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
-- a dedup's, last value's or join's key holds at least one expression
SELECT weir.create_dedup('bad', 'an_orders', key => ' ', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value('bad', 'an_orders', key => '', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => '', right_key => '',
                        left_event_time => 'ts', right_event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
-- a window aggregate's key may be omitted, NULL or empty: no key
SELECT weir.create_pipeline('an_empty', 'an_orders', key => '', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            start => false) > 0 AS created;
SELECT name, key, nkeys FROM weir.pipeline WHERE name = 'an_empty';
SELECT weir.drop_pipeline('an_empty');
DROP TABLE an_empty;
-- the join's bounds are durations of at least zero
SELECT weir.create_join('bad', 'an_orders', 'an_ships', left_key => 'order_id',
                        right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS pipelines FROM weir.pipeline;

------------------------------------------------------------------------------
-- The new names: a dedup by key
------------------------------------------------------------------------------
SELECT weir.create_dedup('an_dedup', 'an_orders', key => 'order_id', event_time => 'ts',
                         checkpoint_interval => '1 hour') > 0 AS created;
-- 30 orders with ids 1 .. 20: ids 1 .. 10 come twice
INSERT INTO an_orders (order_id, amount, ts)
SELECT (i - 1) % 20 + 1, i, '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 30) i;
SELECT weir.checkpoint('an_dedup') > 0 AS checkpointed;
SELECT records_in, records_out, records_dropped, retention FROM weir.pipelines WHERE name = 'an_dedup';
SELECT * FROM oracle_diff('an_dedup', $$
	SELECT DISTINCT ON (order_id) order_id, amount, ts FROM an_orders ORDER BY order_id, pos $$);

------------------------------------------------------------------------------
-- The new names: a join whose bounds are not symmetric, so that swapping
-- right_before and right_after would give other pairs.  A right row r
-- matches a left row l when r.t BETWEEN l.t - right_before AND
-- l.t + right_after: here from 2 minutes before to 10 minutes after.
------------------------------------------------------------------------------
SELECT weir.create_join('an_join', 'an_orders', 'an_ships',
                        left_key => 'order_id', right_key => 'order_id',
                        left_event_time => 'ts', right_event_time => 'ts',
                        right_before => '2 minutes', right_after => '10 minutes',
                        columns => 'l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at',
                        out_of_orderness => '1 hour', checkpoint_interval => '1 hour') > 0 AS created;
-- per order, shipments 5 and 1 minutes before it, and 3, 9 and 12 minutes after
INSERT INTO an_ships (order_id, carrier, ts)
SELECT o.order_id, 'at ' || d || ' min', o.ts + d * interval '1 minute'
  FROM an_orders o, unnest(ARRAY[-5, -1, 3, 9, 12]) d;
SELECT weir.checkpoint('an_join') > 0 AS checkpointed;
SELECT records_in, records_late, retention FROM weir.pipelines WHERE name = 'an_join';
CREATE VIEW an_join_oracle AS
	SELECT l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at
	  FROM an_orders l JOIN an_ships r
	    ON l.order_id = r.order_id
	   AND r.ts BETWEEN l.ts - interval '2 minutes' AND l.ts + interval '10 minutes';
SELECT * FROM oracle_diff('an_join', 'SELECT * FROM an_join_oracle');
-- which shipments matched; with the bounds swapped, -5 and -1 would have
SELECT carrier, count(*) AS pairs FROM an_join GROUP BY carrier ORDER BY carrier;
SELECT (SELECT count(*) FROM an_join) AS pairs,
       (SELECT count(*) FROM an_orders l JOIN an_ships r
          ON l.order_id = r.order_id
         AND r.ts BETWEEN l.ts - interval '10 minutes' AND l.ts + interval '2 minutes') AS pairs_if_swapped;

------------------------------------------------------------------------------
-- Window aggregates without key: one group per window, of every record
------------------------------------------------------------------------------
SELECT weir.create_topic('an_events', 'v int, label text, t timestamptz', partitions => 2);
-- tumbling, fast-path aggregates
SELECT weir.create_pipeline('an_total', 'an_events', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, count(v) AS n_v, sum(v) AS total, avg(v) AS mean, min(t) AS first_t',
                            out_of_orderness => '10 minutes', checkpoint_interval => '1 hour') > 0 AS created;
-- the sink has no key column, and is keyed by the window alone
\d an_total
-- generic-path aggregates (no fast path: numeric, text, bit and bool states)
SELECT weir.create_pipeline('an_generic', 'an_events', key => NULL, event_time => 't',
                            windowing => weir.tumbling('5 minutes'),
                            aggregates => 'sum(v::numeric) AS total, avg(v::numeric) AS mean, max(label) AS top_label, '
                                          'bit_or(v) AS bits, bool_and(v > 0) AS all_positive',
                            out_of_orderness => '10 minutes', checkpoint_interval => '1 hour') > 0 AS created;
-- hopping, rewritten at each checkpoint while open (an upsert by window)
SELECT weir.create_pipeline('an_hop', 'an_events', event_time => 't',
                            windowing => weir.hopping('3 minutes', '1 minute'),
                            aggregates => 'count(*) AS n, sum(v) AS total',
                            emit => 'updates',
                            out_of_orderness => '10 minutes', checkpoint_interval => '1 hour') > 0 AS created;
-- sessions: one series of sessions over every record
SELECT weir.create_pipeline('an_session', 'an_events', event_time => 't',
                            windowing => weir.session('90 seconds'),
                            aggregates => 'count(*) AS n, max(v) AS top',
                            out_of_orderness => '10 minutes', checkpoint_interval => '1 hour') > 0 AS created;
SELECT name, key IS NULL AS no_key, nkeys, names FROM weir.pipeline
 WHERE name LIKE 'an\_%' AND operator = 'window' ORDER BY name;

CREATE VIEW an_total_oracle AS
	SELECT date_bin('1 minute', t, '1970-01-01') AS window_start,
	       date_bin('1 minute', t, '1970-01-01') + interval '1 minute' AS window_end,
	       count(*) AS n, count(v) AS n_v, sum(v) AS total, avg(v) AS mean, min(t) AS first_t
	  FROM an_events GROUP BY 1, 2;
CREATE VIEW an_generic_oracle AS
	SELECT date_bin('5 minutes', t, '1970-01-01') AS window_start,
	       date_bin('5 minutes', t, '1970-01-01') + interval '5 minutes' AS window_end,
	       sum(v::numeric) AS total, avg(v::numeric) AS mean, max(label) AS top_label,
	       bit_or(v) AS bits, bool_and(v > 0) AS all_positive
	  FROM an_events GROUP BY 1, 2;
CREATE VIEW an_hop_oracle AS
	SELECT s AS window_start, s + interval '3 minutes' AS window_end, count(*) AS n, sum(v) AS total
	  FROM an_events,
	       generate_series(date_bin('1 minute', t - interval '3 minutes', '1970-01-01'),
	                       date_bin('1 minute', t, '1970-01-01'), interval '1 minute') AS s
	 WHERE s <= t AND t < s + interval '3 minutes'
	 GROUP BY 1, 2;
-- a session goes on while the next record comes less than the gap after
-- the last one
CREATE VIEW an_session_oracle AS
	WITH marked AS (
		SELECT t, v, CASE WHEN t - lag(t) OVER (ORDER BY t) < interval '90 seconds'
		                  THEN 0 ELSE 1 END AS starts
		  FROM an_events),
	     numbered AS (SELECT t, v, sum(starts) OVER (ORDER BY t) AS session FROM marked)
	SELECT min(t) AS window_start, max(t) + interval '90 seconds' AS window_end,
	       count(*) AS n, max(v) AS top
	  FROM numbered GROUP BY session;

-- 240 records, 7 seconds apart, over both partitions, in four stretches
-- separated by 3 minutes of silence; some values null or negative
CREATE TABLE an_data AS
SELECT i, i % 2 AS part, CASE WHEN i % 23 = 0 THEN NULL ELSE (i * 37) % 101 - 20 END AS v,
       'l' || (i * 13) % 17 AS label,
       '2026-01-01 00:00:00+00'::timestamptz + i * interval '7 seconds'
           + ((i - 1) / 60) * interval '3 minutes' AS t
  FROM generate_series(1, 240) i;

-- the first half; then the pipelines restart and restore their open windows
INSERT INTO an_events (part, v, label, t) SELECT part, v, label, t FROM an_data WHERE i <= 120 ORDER BY i;
SELECT weir.checkpoint('an_total') > 0 AS total, weir.checkpoint('an_generic') > 0 AS generic,
       weir.checkpoint('an_hop') > 0 AS hop, weir.checkpoint('an_session') > 0 AS session;
-- open windows, in the worker's memory and in the last checkpoint: no key
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.live_state('an_total')
 ORDER BY window_start DESC LIMIT 2;
SELECT key, window_start, window_end, fired, value AS aggregates FROM weir.committed_state('an_total')
 ORDER BY window_start DESC LIMIT 2;
SELECT (SELECT count(*) FROM weir.committed_state('an_generic')) AS generic_open,
       (SELECT count(*) FROM weir.committed_state('an_session')) AS sessions_open,
       (SELECT bool_and(key IS NULL) FROM weir.committed_state('an_hop')) AS hop_no_key;
SELECT weir.stop(p) FROM unnest(ARRAY['an_total', 'an_generic', 'an_hop', 'an_session']) p;
SELECT wait_for_pipeline(p, 'worker_pid IS NULL') AS stopped FROM unnest(ARRAY['an_total', 'an_generic', 'an_hop', 'an_session']) p;
SELECT weir.start(p) FROM unnest(ARRAY['an_total', 'an_generic', 'an_hop', 'an_session']) p;

-- the second half, then one record per partition a day later: every
-- window of the data fires
INSERT INTO an_events (part, v, label, t) SELECT part, v, label, t FROM an_data WHERE i > 120 ORDER BY i;
INSERT INTO an_events (part, v, label, t) VALUES
	(0, 1, 'end', '2026-01-02 00:00:00+00'), (1, 2, 'end', '2026-01-02 00:00:00+00');
SELECT weir.checkpoint('an_total') > 0 AS total, weir.checkpoint('an_generic') > 0 AS generic,
       weir.checkpoint('an_hop') > 0 AS hop, weir.checkpoint('an_session') > 0 AS session;
SELECT name, status, records_in, records_late, records_dead FROM weir.pipelines
 WHERE name IN ('an_total', 'an_generic', 'an_hop', 'an_session') ORDER BY name;
SELECT p.name, count(*) AS restores FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name IN ('an_total', 'an_generic', 'an_hop', 'an_session') GROUP BY p.name ORDER BY p.name;
SELECT checkpoint_watermark('an_total') AS watermark;

-- each sink is its GROUP BY, exactly: the windows that fired (with emit
-- 'updates', also the open ones, as of the checkpoint)
SELECT (SELECT count(*) FROM an_total) AS total_windows,
       (SELECT count(*) FROM an_generic) AS generic_windows,
       (SELECT count(*) FROM an_hop) AS hop_windows,
       (SELECT count(*) FROM an_session) AS sessions;
SELECT * FROM oracle_diff('an_total', $$
	SELECT * FROM an_total_oracle WHERE window_end <= checkpoint_watermark('an_total') $$);
SELECT * FROM oracle_diff('an_generic', $$
	SELECT * FROM an_generic_oracle WHERE window_end <= checkpoint_watermark('an_generic') $$);
SELECT * FROM oracle_diff('an_hop', 'SELECT * FROM an_hop_oracle');
SELECT * FROM oracle_diff('an_session', $$
	SELECT * FROM an_session_oracle WHERE window_end <= checkpoint_watermark('an_session') $$);
SELECT * FROM an_total ORDER BY window_start LIMIT 3;
SELECT * FROM an_generic ORDER BY window_start LIMIT 3;
SELECT * FROM an_session ORDER BY window_start;

SELECT weir.drop_pipeline(p)
  FROM unnest(ARRAY['an_dedup', 'an_join', 'an_total', 'an_generic', 'an_hop', 'an_session']) p;
DROP VIEW an_join_oracle, an_total_oracle, an_generic_oracle, an_hop_oracle, an_session_oracle;
DROP TABLE an_dedup, an_join, an_total, an_generic, an_hop, an_session, an_data;
SELECT weir.drop_topic(t) FROM unnest(ARRAY['an_orders', 'an_ships', 'an_events']::regclass[]) t;
