-- weir.state_stats and weir.explain_state (issue 20): each verdict made to
-- happen, and the figures checked against plain SQL over the topics
SET TimeZone = 'UTC';
-- samples every 100 ms, so that rates show within the test
ALTER SYSTEM SET weir.state_stats_interval = '100ms';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);

------------------------------------------------------------------------------
-- bounded: tumbling windows keep keys x open windows
------------------------------------------------------------------------------
SELECT weir.create_topic('es_win_src', 'k int, t timestamptz');
SELECT weir.create_pipeline('es_win', 'es_win_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            allowed_lateness => '1 minute', checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO es_win_src (k, t)
	SELECT g % 10, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
	  FROM generate_series(1, 300) g;
SELECT weir.checkpoint('es_win') > 0 AS checkpointed;
-- keys and entries as PostgreSQL counts them: the (key, window) groups whose
-- end + lateness the watermark has not passed; the watermark is the newest
-- event time (no out_of_orderness)
SELECT s.watermark = (SELECT max(t) FROM es_win_src) AS watermark_is_newest,
       s.newest_event_time = s.watermark AS newest_read,
       s.watermark_behind_events,
       s.keys = (SELECT count(DISTINCT k) FROM es_win_src) AS keys_match,
       s.entries = (SELECT count(*) FROM (SELECT DISTINCT k, date_bin('1 minute', t, '1970-01-01') AS ws
                                           FROM es_win_src) g
                     WHERE g.ws + interval '2 minutes' > s.watermark) AS entries_match,
       s.entries_per_key_max = (SELECT max(n) FROM (SELECT k, count(*) AS n
                                   FROM (SELECT DISTINCT k, date_bin('1 minute', t, '1970-01-01') AS ws
                                           FROM es_win_src) g
                                  WHERE g.ws + interval '2 minutes' > s.watermark GROUP BY k) x)
           AS per_key_match,
       s.entries_per_key_mean = s.entries::float8 / s.keys AS mean_match,
       s.oldest_event_time = (SELECT min(date_bin('1 minute', t, '1970-01-01')) FROM es_win_src
                               WHERE date_bin('1 minute', t, '1970-01-01') + interval '2 minutes' > s.watermark)
           AS oldest_match,
       s.oldest_entry_age = s.watermark - s.oldest_event_time AS age_match,
       s.value_bytes_max > 0 AND s.value_bytes_mean = s.value_bytes_max AS fixed_values,
       s.bytes >= s.entry_bytes AND s.entry_bytes > 0 AS bytes_cover_entries,
       s.in_worker_bytes AS in_worker_bytes,
       s.retention_rule, s.retention,
       s.arrival_rate IS NOT NULL AND s.rates_over > '0' AS rates_measured
  FROM weir.state_stats s WHERE s.pipeline = 'es_win';
-- the same keys and entries as the live state shows
SELECT s.keys = (SELECT count(DISTINCT key) FROM weir.live_state('es_win')) AS live_keys,
       s.entries = (SELECT count(*) FROM weir.live_state('es_win')) AS live_entries
  FROM weir.state_stats s WHERE s.pipeline = 'es_win';
SELECT line, operator, question, verdict, expected_entries,
       expected_bytes = expected_entries * (SELECT ceil(bytes::float8 / entries) FROM weir.state_stats
                                             WHERE pipeline = 'es_win')
           OR expected_bytes = ceil(expected_entries * (SELECT bytes::float8 / entries FROM weir.state_stats
                                                          WHERE pipeline = 'es_win')) AS bytes_from_entries
  FROM weir.explain_state('es_win') ORDER BY line;
-- the bound covers what is there: 10 keys x (1 + 0 + 1) minutes / 1 minute
SELECT e.expected_entries >= s.entries AS within_bound,
       e.answer
  FROM weir.explain_state('es_win') e, weir.state_stats s
 WHERE s.pipeline = 'es_win' AND e.question = 'verdict';

------------------------------------------------------------------------------
-- bounded: a dedup keeps the ids of its horizon, about records per second of
-- event time x horizon
------------------------------------------------------------------------------
SELECT weir.create_topic('es_dd_src', 'id int, t timestamptz');
SELECT weir.create_dedup('es_dd', 'es_dd_src', key => 'id', event_time => 't',
                         horizon => '1 minute') > 0 AS created;
INSERT INTO es_dd_src (id, t)
	SELECT g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
	  FROM generate_series(1, 200) g;
SELECT weir.checkpoint('es_dd') > 0 AS checkpointed;
SELECT pg_sleep(0.2);
SELECT weir.checkpoint('es_dd') > 0 AS checkpointed;
INSERT INTO es_dd_src (id, t)
	SELECT g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
	  FROM generate_series(201, 400) g;
SELECT weir.checkpoint('es_dd') > 0 AS checkpointed;
-- ids that expired since the last checkpoint leave after the next one
SELECT weir.checkpoint('es_dd') > 0 AS checkpointed;
-- one record per second of event time; the ids the horizon keeps, as
-- PostgreSQL counts them, and the few that expired since the last round's
-- expiry still in memory (weir.live_state does not show them)
SELECT s.event_time_rate, s.retention_rule, s.keys = s.entries AS one_entry_per_id,
       (SELECT count(*) FROM weir.live_state('es_dd')) =
           (SELECT count(*) FROM es_dd_src WHERE t + interval '1 minute' > s.watermark) AS live_match,
       s.entries - (SELECT count(*) FROM es_dd_src WHERE t + interval '1 minute' > s.watermark)
           BETWEEN 0 AND 5 AS few_expired_held
  FROM weir.state_stats s WHERE s.pipeline = 'es_dd';
SELECT verdict, expected_entries,
       expected_entries = (SELECT count(*) FROM es_dd_src s, weir.state_stats x
                            WHERE x.pipeline = 'es_dd' AND s.t + interval '1 minute' > x.watermark)
           AS bound_is_what_the_horizon_keeps,
       expected_bytes > 0 AS has_bytes,
       regexp_replace(answer, '[0-9]+ bytes$', '<n> bytes') AS answer
  FROM weir.explain_state('es_dd') WHERE question = 'verdict';

------------------------------------------------------------------------------
-- growing with new keys that never expire: a last value without a ttl
------------------------------------------------------------------------------
SELECT weir.create_topic('es_lv_src', 'k int, t timestamptz, v int');
SELECT weir.create_last_value('es_lv', 'es_lv_src', key => 'k', event_time => 't') > 0 AS created;
INSERT INTO es_lv_src (k, t, v)
	SELECT g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second', g
	  FROM generate_series(1, 200) g;
SELECT weir.checkpoint('es_lv') > 0 AS checkpointed;
SELECT pg_sleep(0.2);
-- 100 more keys, none seen before
INSERT INTO es_lv_src (k, t, v)
	SELECT g, '2024-01-01 01:00:00+00'::timestamptz + g * interval '1 second', g
	  FROM generate_series(201, 300) g;
SELECT weir.checkpoint('es_lv') > 0 AS checkpointed;
SELECT s.keys = (SELECT count(DISTINCT k) FROM es_lv_src) AS keys_match,
       s.entries = s.keys AS one_entry_per_key, s.entries_per_key_max,
       s.oldest_event_time = (SELECT min(t) FROM es_lv_src) AS oldest_match,
       s.retention_rule,
       s.entry_growth_rate > 0 AS entries_grow,
       s.arrival_rate > 0 AS records_arrive
  FROM weir.state_stats s WHERE s.pipeline = 'es_lv';
SELECT question, verdict, expected_entries, answer
  FROM weir.explain_state('es_lv') WHERE question IN ('lifetime', 'verdict') ORDER BY line;

------------------------------------------------------------------------------
-- growing because values accumulate: an array_agg in a session whose gap
-- never closes (its state is in the worker: in_worker_bytes).  PostgreSQL
-- 15's array_agg has no combine function: this one has.
------------------------------------------------------------------------------
CREATE AGGREGATE es_collect(text) (sfunc = array_append, stype = text[], combinefunc = array_cat,
                                  initcond = '{}');
SELECT weir.create_topic('es_ses_src', 'k int, t timestamptz, v text');
SELECT weir.create_pipeline('es_ses', 'es_ses_src', key => 'k', event_time => 't',
                            windowing => weir.session('1 day'), aggregates => 'es_collect(v) AS vs',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO es_ses_src (k, t, v) VALUES (1, '2024-01-01 00:00:00+00', 'first');
SELECT weir.checkpoint('es_ses') > 0 AS checkpointed;
SELECT pg_sleep(0.3);
SELECT weir.checkpoint('es_ses') > 0 AS checkpointed;
-- one session, one key: many more values, each within the gap of the last
INSERT INTO es_ses_src (k, t, v)
	SELECT 1, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second', repeat('x', 40) || g
	  FROM generate_series(1, 300) g;
SELECT weir.checkpoint('es_ses') > 0 AS checkpointed;
SELECT s.keys, s.entries, s.entries_per_key_max,
       s.in_worker_bytes > 300 * 40 AS values_in_worker,
       s.value_bytes_mean > s.value_bytes_max AS mean_counts_worker_states,
       s.value_growth_rate > 0 AS values_grow,
       s.oldest_event_time = (SELECT min(t) FROM es_ses_src) AS oldest_is_session_start
  FROM weir.state_stats s WHERE s.pipeline = 'es_ses';
SELECT question, verdict, expected_entries, answer ~ '^growing_values: values accumulate' AS says_why
  FROM weir.explain_state('es_ses') WHERE question = 'verdict';

------------------------------------------------------------------------------
-- growing because the watermark is stalled: partition 1 holds it and has
-- been silent while partition 0 had data
------------------------------------------------------------------------------
SELECT weir.create_topic('es_two_src', 'k int, t timestamptz', partitions => 2);
SELECT weir.create_pipeline('es_two', 'es_two_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO es_two_src (part, k, t) VALUES (1, 1, '2024-01-01 00:00:30+00');
SELECT weir.checkpoint('es_two') > 0 AS checkpointed;
SELECT pg_sleep(0.1);
INSERT INTO es_two_src (part, k, t)
	SELECT 0, g % 5, '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 seconds'
	  FROM generate_series(1, 100) g;
SELECT weir.checkpoint('es_two') > 0 AS checkpointed;
-- now: the silence is too short to be called a stall
SELECT verdict FROM weir.explain_state('es_two') WHERE question = 'verdict';
-- a minute later (weir's clock): partition 1 is named
SET weir.clock_offset = '1min';
SELECT s.watermark = '2024-01-01 00:00:30+00' AS held_at_partition_1,
       s.watermark_behind_events = (SELECT max(t) FROM es_two_src) - '2024-01-01 00:00:30+00'
           AS trails_newest,
       s.entries = (SELECT count(*) FROM (SELECT DISTINCT k, date_bin('1 minute', t, '1970-01-01') AS ws
                                           FROM es_two_src) g
                     WHERE g.ws + interval '1 minute' > s.watermark) AS entries_match
  FROM weir.state_stats s WHERE s.pipeline = 'es_two';
SELECT question, verdict, expected_entries,
       regexp_replace(regexp_replace(answer, 'since [^;]+ while', 'since <time> while'),
                      'and [^;]+ behind the clock', 'and <interval> behind the clock') AS answer
  FROM weir.explain_state('es_two') WHERE question IN ('watermark', 'verdict') ORDER BY line;
RESET weir.clock_offset;

------------------------------------------------------------------------------
-- figures for all, as weir.pipelines: a role with no rights on any of these
------------------------------------------------------------------------------
CREATE ROLE es_nobody;
SET ROLE es_nobody;
SELECT pipeline, operator, keys > 0 AS has_keys FROM weir.state_stats
 WHERE pipeline LIKE 'es\_%' ORDER BY pipeline;
SELECT verdict FROM weir.explain_state('es_lv') WHERE question = 'verdict';
RESET ROLE;
DROP ROLE es_nobody;

------------------------------------------------------------------------------
-- errors, and collection off
------------------------------------------------------------------------------
SELECT sqlstate_of($$SELECT * FROM weir.explain_state('es_nope')$$) AS no_such_pipeline;
SELECT sqlstate_of($$SELECT * FROM weir.explain_state(NULL)$$) AS null_pipeline;
SELECT weir.stop('es_win');
SELECT wait_for_status('es_win', 'stopped');
SELECT sqlstate_of($$SELECT * FROM weir.explain_state('es_win')$$) AS not_running;
SELECT count(*) AS stopped_rows FROM weir.state_stats WHERE pipeline = 'es_win';
\set VERBOSITY terse
SELECT * FROM weir.explain_state('es_win');
\set VERBOSITY default
-- weir.track_state_stats off: figures of the store, no rates
ALTER SYSTEM SET weir.track_state_stats = off;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT weir.start('es_win');
SELECT wait_for_status('es_win', 'running');
SELECT weir.checkpoint('es_win') > 0 AS checkpointed;
SELECT keys, rates_over IS NULL AS no_rates, arrival_rate IS NULL AS no_arrival_rate
  FROM weir.state_stats WHERE pipeline = 'es_win';
SELECT answer FROM weir.explain_state('es_win') WHERE question = 'growth';
ALTER SYSTEM RESET weir.track_state_stats;
ALTER SYSTEM RESET weir.state_stats_interval;
SELECT pg_reload_conf();

SELECT weir.drop_pipeline(name) FROM weir.pipeline WHERE name LIKE 'es\_%' ORDER BY name;
DROP TABLE es_win, es_dd, es_lv, es_ses, es_two;
DROP AGGREGATE es_collect(text);
SELECT weir.drop_topic(t) FROM unnest(ARRAY['es_win_src', 'es_dd_src', 'es_lv_src', 'es_ses_src', 'es_two_src']) t;
