-- defining pipelines: what create_pipeline builds, and every definition error

-- sqlstate_of (setup.sql): for errors whose text comes from statements weir
-- builds internally.
SELECT weir.create_topic('clicks', 'user_id int, page text, amount int, big bigint, price float8, '
                         'cost numeric, at timestamptz, at_local timestamp, epoch bigint',
                         partitions => 2, key => 'user_id');

-- the window constructors
SELECT weir.tumbling('1 minute');
SELECT weir.hopping('10 minutes', '5 minutes');
SELECT weir.session('30 seconds');

-- a pipeline, not started: its sink and its catalog row
SELECT weir.create_pipeline('per_user', 'clicks', key => 'user_id, page', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, count(amount) AS n_amount, sum(amount) AS total, '
                                          'sum(big) AS big_total, avg(amount) AS mean, sum(price) AS revenue, '
                                          'avg(price) AS mean_price, min(price) AS cheapest, max(at) AS last_at',
                            start => false) > 0 AS created;
\d per_user
SELECT name, source, sink, status, worker_pid, positions, watermark, last_checkpoint, last_error
  FROM weir.pipelines ORDER BY name;
SELECT name, key, event_time, windowing, aggregates, filter, out_of_orderness, allowed_lateness,
       idle_timeout, emit, sink::regclass, late_records, checkpoint_interval, max_state_memory, enabled
  FROM weir.pipeline ORDER BY name;

-- every option; expressions for keys get generated names; a schema-qualified sink
CREATE SCHEMA out;
SELECT weir.create_pipeline('hop', 'clicks', key => 'lower(page), user_id % 10', event_time => 'at_local',
                            windowing => weir.hopping('10 minutes', '5 minutes'),
                            aggregates => 'max(amount) AS top, min(epoch) AS first_epoch',
                            filter => 'amount > 0 AND page <> ''''',
                            out_of_orderness => '5 seconds', allowed_lateness => '1 minute',
                            idle_timeout => '10 seconds', emit => 'updates', sink => 'out.hop_sink',
                            checkpoint_interval => '200 ms', max_state_memory => 4 * 1024 * 1024,
                            late_records => 'out.hop_late', start => false) > 0 AS created;
\d out.hop_sink
\d out.hop_late
SELECT name, key, event_time, windowing, aggregates, filter, out_of_orderness, allowed_lateness,
       idle_timeout, emit, sink::regclass, late_records::regclass, checkpoint_interval,
       max_state_memory, enabled
  FROM weir.pipeline WHERE name = 'hop';
-- event time from an epoch; NULL lateness options mean none; no key at all
-- (key omitted; an empty key is the same: sql/api_names.sql)
SELECT weir.create_pipeline('global', 'clicks', event_time => 'to_timestamp(epoch)',
                            windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n',
                            out_of_orderness => NULL, allowed_lateness => NULL, emit => NULL,
                            start => false) > 0 AS created;
\d global
SELECT name, out_of_orderness, allowed_lateness, emit FROM weir.pipeline WHERE name = 'global';

-- an existing sink with the right columns and key is used as it is
CREATE TABLE my_sink (user_id int, window_start timestamptz, window_end timestamptz,
                      n bigint, extra text DEFAULT 'kept', PRIMARY KEY (window_start, user_id));
SELECT weir.create_pipeline('into_mine', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'my_sink', start => false) > 0 AS created;
\d my_sink
-- a unique index (not a primary key) does as well
CREATE TABLE my_sink2 (user_id int, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNIQUE INDEX ON my_sink2 (user_id, window_start);
SELECT weir.create_pipeline('into_mine2', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'my_sink2', start => false) > 0 AS created;

-- errors in expressions: unknown columns, syntax, with their SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'no_such', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'no_such',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'sum(no_such)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'no_such > 0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id,', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'amount >');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'amount');
\echo :LAST_ERROR_SQLSTATE
-- text that tries to reach other relations or run other statements
SELECT weir.create_pipeline('bad', 'clicks', key => '1 FROM pg_authid --', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'rolname FROM pg_authid, clicks --', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => '(SELECT rolname FROM pg_authid LIMIT 1)', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'pg_authid.rolname', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'true UNION SELECT 1 FROM pg_authid');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'true; DROP TABLE clicks');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'EXISTS (SELECT FROM pg_authid)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) ORDER BY 1');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'generate_series(1, user_id)', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM clicks;

-- aggregates weir cannot keep, and things that are not aggregates
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'string_agg(page, '','')');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'array_agg(amount)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(DISTINCT page) AS pages');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'max(amount ORDER BY at)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'percentile_cont(0.5) WITHIN GROUP (ORDER BY price) AS median');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) FILTER (WHERE amount > 0) AS positive');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'json_agg(page)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'mode() WITHIN GROUP (ORDER BY page) AS top_page');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, amount');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'amount + 1 AS next');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'sum(amount) / count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) OVER ()');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'sum(count(*))');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'sum(price * random())');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'count(*)', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'count(*) > 1');
\echo :LAST_ERROR_SQLSTATE

-- volatile functions: a replay would not compute the same result
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id + (random() * 10)::int', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            filter => 'random() < 0.5');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'clock_timestamp()',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- the event time must be a timestamp, one expression
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'epoch',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'page',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at, at_local',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- keys are compared by their binary value: types where that is not equality are refused
SELECT weir.create_pipeline('bad', 'clicks', key => 'cost', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id, price', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'cost::text AS cost_text', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            start => false) > 0 AS created;
SELECT weir.drop_pipeline('bad');
DROP TABLE bad;

-- sink column names must differ
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(amount) AS n');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*), count(amount)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS user_id');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'max(at) AS window_end');
\echo :LAST_ERROR_SQLSTATE
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id, user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)')$$);
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id AS window_start', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)')$$);

-- the source must be a topic
CREATE TABLE plain (user_id int, at timestamptz);
SELECT weir.create_pipeline('bad', 'plain', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'no_such_topic', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- required arguments
SELECT weir.create_pipeline(NULL, 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', NULL, key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => NULL,
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => NULL, aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            checkpoint_interval => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline(repeat('p', 64), 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- windowing
SELECT weir.tumbling('0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.tumbling('-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.tumbling('1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.tumbling('1 year');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.hopping('10 minutes', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.hopping('0', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.hopping('5 minutes', '10 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.hopping('1 hour', '1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT (weir.hopping('64 seconds', '1 second')).kind AS at_the_limit;
SELECT weir.hopping('1 month', '1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.session('0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.session('-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.session('1 mon');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.tumbling(NULL);
\echo :LAST_ERROR_SQLSTATE
-- a hand-made windowing value is checked as the constructors check theirs
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => ROW('tumbling', '1 month', '1 month', NULL, NULL)::weir.windowing,
                            aggregates => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT w, sqlstate_of(format($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id',
                                   event_time => 'at', windowing => %L, aggregates => 'count(*)',
                                   start => false)$$, w)) AS sqlstate
  FROM (VALUES ('(tumbling,00:00:00,00:00:00,,)'), ('(tumbling,-00:01:00,-00:01:00,,)'),
               ('(hopping,00:01:00,00:02:00,,)'), ('(hopping,01:00:00,00:00:01,,)'),
               ('(hopping,00:01:00,00:00:00,,)'), ('(session,,,00:00:00,)'),
               ('(sliding,00:01:00,,,)')) AS v(w)
 ORDER BY 1;

-- other options
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            emit => 'always');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            out_of_orderness => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            allowed_lateness => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            allowed_lateness => '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            idle_timeout => '0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            checkpoint_interval => '5 ms');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            checkpoint_interval => '61 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            checkpoint_interval => '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            max_state_memory => 1048575);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            max_state_memory => -1);
\echo :LAST_ERROR_SQLSTATE

-- names: a pipeline name is unique
SELECT weir.create_pipeline('per_user', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*)',
                            sink => 'other_sink');
\echo :LAST_ERROR_SQLSTATE

-- an existing sink must fit: columns, types, a unique key on keys and window_start
CREATE TABLE sink_missing (user_id int, window_start timestamptz, window_end timestamptz,
                           PRIMARY KEY (user_id, window_start));
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_missing');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE sink_types (user_id int, window_start timestamptz, window_end timestamptz, n int,
                         PRIMARY KEY (user_id, window_start));
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_types');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE sink_key_type (user_id bigint, window_start timestamptz, window_end timestamptz, n bigint,
                            PRIMARY KEY (user_id, window_start));
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_key_type');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE sink_nokey (user_id int, window_start timestamptz, window_end timestamptz, n bigint);
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_nokey');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE sink_wrongkey (user_id int, window_start timestamptz, window_end timestamptz, n bigint,
                            PRIMARY KEY (window_start));
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_wrongkey');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE sink_widekey (user_id int, window_start timestamptz, window_end timestamptz, n bigint,
                           PRIMARY KEY (user_id, window_start, window_end));
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_widekey');
\echo :LAST_ERROR_SQLSTATE
-- a partial unique index cannot be the conflict target of the sink's upsert
CREATE TABLE sink_partial (user_id int, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNIQUE INDEX ON sink_partial (user_id, window_start) WHERE n > 0;
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_partial', start => false)$$);
-- nor can a unique index on expressions
CREATE TABLE sink_expr (user_id int, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNIQUE INDEX ON sink_expr ((user_id + 0), window_start);
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_expr');
\echo :LAST_ERROR_SQLSTATE
-- nor a deferrable one (ON CONFLICT does not take deferrable constraints)
CREATE TABLE sink_deferrable (user_id int, window_start timestamptz, window_end timestamptz, n bigint,
                              PRIMARY KEY (user_id, window_start) DEFERRABLE);
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_deferrable', start => false)$$);
-- a sink is a table
CREATE VIEW sink_view AS SELECT * FROM my_sink2;
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'sink_view', start => false)$$);
SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'clicks');
\echo :LAST_ERROR_SQLSTATE
SELECT sqlstate_of($$SELECT weir.create_pipeline('bad', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'no_such_schema.s')$$);
SELECT count(*) AS failed_attempts_left_nothing FROM weir.pipeline WHERE name = 'bad';
SELECT count(*) FROM pg_class WHERE relname = 'bad';

-- session windows: the sink has the same shape
SELECT weir.create_pipeline('visits', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.session('30 minutes'),
                            aggregates => 'count(*) AS clicks, max(at) AS last_click',
                            start => false) > 0 AS created;
\d visits
SELECT name, windowing FROM weir.pipeline WHERE name = 'visits';

-- a rolled back create_pipeline leaves nothing: no catalog row, no sink
BEGIN;
SELECT weir.create_pipeline('undone', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            late_records => 'undone_late') > 0 AS created;
SELECT name, status FROM weir.pipelines WHERE name = 'undone';
SELECT relnamespace::regnamespace AS schema, relname FROM pg_class WHERE relname IN ('undone', 'undone_late') ORDER BY 1, 2;
ROLLBACK;
SELECT count(*) FROM weir.pipeline WHERE name = 'undone';
SELECT count(*) FROM pg_class WHERE relname IN ('undone', 'undone_late');
-- and so does one that fails after creating its sink (late_records cannot be created)
SELECT sqlstate_of($$SELECT weir.create_pipeline('undone', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            late_records => 'no_such_schema.late')$$);
SELECT count(*) FROM pg_class WHERE relname = 'undone';

-- start, stop, drop
SELECT weir.start('per_user');
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'per_user' AND status = 'running');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT name, status, worker_pid IS NOT NULL AS has_worker, last_error FROM weir.pipelines
 WHERE name = 'per_user';
SELECT enabled FROM weir.pipeline WHERE name = 'per_user';
SELECT weir.checkpoint('per_user') > 0 AS checkpointed;
SELECT weir.stop('per_user');
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'per_user' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT name, status, worker_pid, last_error FROM weir.pipelines WHERE name = 'per_user';
SELECT weir.checkpoint('per_user');
\echo :LAST_ERROR_SQLSTATE
-- stopping twice is harmless
SELECT weir.stop('per_user');
SELECT weir.start('no_such');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.stop('no_such');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_pipeline('no_such');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.checkpoint('no_such');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.start(NULL);
\echo :LAST_ERROR_SQLSTATE
-- a stopped pipeline has no live state; its checkpoint's is committed_state
SELECT * FROM weir.live_state('per_user');
SELECT * FROM weir.committed_state('per_user');
SELECT weir.live_state('no_such');
\echo :LAST_ERROR_SQLSTATE

-- alter_pipeline
SELECT weir.alter_pipeline('hop', max_state_memory => 8 * 1024 * 1024);
SELECT weir.alter_pipeline('hop', checkpoint_interval => '2 seconds');
SELECT weir.alter_pipeline('hop');
SELECT max_state_memory, checkpoint_interval FROM weir.pipeline WHERE name = 'hop';
SELECT weir.alter_pipeline('hop', max_state_memory => 1000);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('hop', checkpoint_interval => '1 ms');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('hop', checkpoint_interval => '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('hop', checkpoint_interval => '1 mon');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline(NULL, max_state_memory => 8 * 1024 * 1024);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('no_such', max_state_memory => 8 * 1024 * 1024);
\echo :LAST_ERROR_SQLSTATE
SELECT max_state_memory, checkpoint_interval FROM weir.pipeline WHERE name = 'hop';

-- only the owner (or a superuser) controls a pipeline
CREATE ROLE weir_stranger;
SET ROLE weir_stranger;
SELECT weir.start('per_user');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.stop('per_user');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_pipeline('per_user');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.checkpoint('per_user');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_pipeline('per_user', max_state_memory => 8 * 1024 * 1024);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.live_state('per_user');
\echo :LAST_ERROR_SQLSTATE
-- everyone may look
SELECT name, owner, status FROM weir.pipelines ORDER BY name;
-- a pipeline reads its topic with its owner's rights
SELECT weir.create_pipeline('theirs', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            start => false);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- a non-superuser owner: another non-superuser cannot touch it, a superuser can
CREATE SCHEMA theirs AUTHORIZATION weir_stranger;
GRANT SELECT ON clicks TO weir_stranger;
CREATE ROLE weir_other;
SET ROLE weir_stranger;
SELECT weir.create_pipeline('theirs', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'theirs.counts', start => false) > 0 AS created;
SELECT name, owner, sink, status FROM weir.pipelines WHERE name = 'theirs';
SET ROLE weir_other;
SELECT weir.drop_pipeline('theirs');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- an existing sink the owner may not write is refused
CREATE TABLE guarded (user_id int, window_start timestamptz, window_end timestamptz, n bigint,
                      PRIMARY KEY (user_id, window_start));
SET ROLE weir_stranger;
SELECT weir.create_pipeline('theirs2', 'clicks', key => 'user_id', event_time => 'at',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            sink => 'guarded', start => false);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT weir.drop_pipeline('theirs');
SELECT count(*) FROM weir.pipeline WHERE name = 'theirs';

-- dropping a pipeline keeps its sink (it holds the results)
SELECT weir.drop_pipeline('per_user');
SELECT count(*) FROM weir.pipeline WHERE name = 'per_user';
SELECT to_regclass('per_user') IS NOT NULL AS sink_kept;
SELECT weir.drop_pipeline('per_user');
\echo :LAST_ERROR_SQLSTATE
-- the name is free again, and the sink is taken as it is
SELECT weir.create_pipeline('per_user', 'clicks', key => 'user_id, page', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, count(amount) AS n_amount, sum(amount) AS total, '
                                          'sum(big) AS big_total, avg(amount) AS mean, sum(price) AS revenue, '
                                          'avg(price) AS mean_price, min(price) AS cheapest, max(at) AS last_at',
                            start => false) > 0 AS created;

-- clean up
SELECT weir.drop_pipeline(name) FROM weir.pipeline ORDER BY name;
SELECT count(*) FROM weir.pipeline;
DROP VIEW sink_view;
DROP TABLE per_user, global, visits, my_sink, my_sink2, sink_deferrable, plain, sink_missing, sink_types, sink_key_type,
           sink_nokey, sink_wrongkey, sink_widekey, sink_partial, sink_expr, guarded;
DROP SCHEMA out CASCADE;
DROP SCHEMA theirs CASCADE;
REVOKE SELECT ON clicks FROM weir_stranger;
DROP ROLE weir_stranger;
DROP ROLE weir_other;
SELECT weir.drop_topic('clicks');
