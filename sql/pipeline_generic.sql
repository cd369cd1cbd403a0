-- The generic aggregate path: aggregates weir has never heard of, from the
-- hll and tdigest extensions (Debian postgresql-15-hll, postgresql-15-tdigest),
-- kept in windows unmodified.
SET timezone = 'UTC';
CREATE EXTENSION hll;
CREATE EXTENSION tdigest;
SELECT weir.create_topic('visits', 'site int, visitor bigint, ms float8, ts timestamptz',
                         partitions => 2, key => 'site');
SELECT weir.create_pipeline('visits_5m', 'visits', key => 'site', event_time => 'ts',
       windowing => weir.tumbling('5 minutes'),
       aggregates => 'count(*) AS n, hll_add_agg(hll_hash_bigint(visitor)) AS visitors, tdigest(ms, 100) AS latency',
       out_of_orderness => '1 minute', allowed_lateness => '10 minutes') > 0 AS created;
\d visits_5m
INSERT INTO visits (site, visitor, ms, ts)
SELECT g % 4, (g * 7919) % 1500, (g % 997) * 1.5, '2026-01-01 00:00:00+00'::timestamptz + g * interval '150 ms'
  FROM generate_series(1, 20000) g;
-- one event per partition far ahead closes every window
INSERT INTO visits (part, site, visitor, ms, ts) VALUES (0, 100, 0, 0, '2026-01-01 06:00:00+00'), (1, 101, 0, 0, '2026-01-01 06:00:00+00');
SELECT weir.checkpoint('visits_5m') > 0 AS checkpointed;
SELECT status, records_in, records_late, records_dead FROM weir.pipelines WHERE name = 'visits_5m';

-- the oracle: the same aggregates as a GROUP BY; hll sketches are equal
-- exactly (union is order-independent), t-digest results are estimates
-- that depend on insertion order, so its median is compared with the exact
-- median within 1%
CREATE TABLE oracle AS
SELECT site, date_bin('5 minutes', ts, '1970-01-01') AS window_start, count(*) AS n,
       hll_add_agg(hll_hash_bigint(visitor)) AS visitors,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median
  FROM visits WHERE site < 100 GROUP BY 1, 2;
SELECT (SELECT count(*) FROM oracle) AS oracle_windows,
       (SELECT count(*) FROM visits_5m WHERE site < 100) AS sink_windows,
       (SELECT count(*) FROM oracle o JOIN visits_5m s USING (site, window_start)
         WHERE s.n = o.n AND s.visitors = o.visitors) AS identical_count_and_hll,
       (SELECT count(*) FROM oracle o JOIN visits_5m s USING (site, window_start)
         WHERE abs((SELECT tdigest_percentile(d, 0.5) FROM (SELECT s.latency AS d) x) - o.median)
               <= 0.01 * o.median) AS tdigest_median_within_1pct;
SELECT site, window_start, n, hll_cardinality(visitors)::int AS distinct_visitors
  FROM visits_5m WHERE site = 1 ORDER BY window_start LIMIT 3;

-- generic state survives a restart of the pipeline (restore from checkpoint):
-- one window gets a record, the pipeline restarts, then another record
INSERT INTO visits (site, visitor, ms, ts) VALUES (1, 999999, 1, '2026-01-01 07:00:00+00');
SELECT weir.checkpoint('visits_5m') > 0 AS checkpointed;
SELECT weir.stop('visits_5m');
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN (SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'visits_5m');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT status, worker_pid IS NULL AS stopped FROM weir.pipelines WHERE name = 'visits_5m';
SELECT weir.start('visits_5m');
INSERT INTO visits (site, visitor, ms, ts) VALUES (1, 1000000, 3, '2026-01-01 07:01:00+00');
INSERT INTO visits (part, site, visitor, ms, ts) VALUES (0, 100, 0, 0, '2026-01-01 08:00:00+00'), (1, 101, 0, 0, '2026-01-01 08:00:00+00');
SELECT weir.checkpoint('visits_5m') > 0 AS checkpointed;
SELECT n, hll_cardinality(visitors)::int AS distinct_visitors,
       (SELECT tdigest_percentile(d, 0.5) FROM (SELECT latency AS d) x) AS median_ms
  FROM visits_5m WHERE site = 1 AND window_start = '2026-01-01 07:00:00+00';
SELECT count(*) >= 2 AS restored FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'visits_5m';

-- a by-reference state replaced at every record (an array grown by
-- array_append) keeps only its current value: 20,000 records into one
-- window stay far below max_state_memory (every former array left behind
-- would take about 800 MB), and the window equals SQL's answer
CREATE AGGREGATE int_collect(int) (sfunc = array_append, stype = int[],
                                   combinefunc = array_cat, initcond = '{}');
SELECT weir.create_topic('collect', 'k int, v int, ts timestamptz');
SELECT weir.create_pipeline('collect_1h', 'collect', key => 'k', event_time => 'ts',
       windowing => weir.tumbling('1 hour'), aggregates => 'int_collect(v) AS vs',
       max_state_memory => 64 * 1024 * 1024) > 0 AS created;
INSERT INTO collect (k, v, ts)
SELECT 1, g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '10 ms' FROM generate_series(1, 20000) g;
INSERT INTO collect (k, v, ts) VALUES (2, 0, '2026-01-01 03:00:00+00');
SELECT weir.checkpoint('collect_1h') > 0 AS checkpointed;
SELECT status, state_bytes < 16 * 1024 * 1024 AS small FROM weir.pipelines WHERE name = 'collect_1h';
SELECT cardinality(vs) AS n,
       (SELECT array_agg(x ORDER BY x) FROM unnest(vs) x) =
       (SELECT array_agg(v ORDER BY v) FROM collect WHERE k = 1) AS equal_to_array_agg
  FROM collect_1h WHERE k = 1;
SELECT weir.drop_pipeline('collect_1h');
DROP TABLE collect_1h;
SELECT weir.drop_topic('collect');
DROP AGGREGATE int_collect(int);

-- aggregates whose state cannot be kept are refused
SELECT weir.create_pipeline('bad', 'visits', key => 'site', event_time => 'ts',
       windowing => weir.tumbling('1 minute'), aggregates => 'string_agg(visitor::text, '','')');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_pipeline('bad', 'visits', key => 'site', event_time => 'ts',
       windowing => weir.tumbling('1 minute'), aggregates => 'array_agg(visitor)');
\echo :LAST_ERROR_SQLSTATE

-- a sink cannot be dropped while its pipeline exists (the worker would fail)
DROP TABLE visits_5m;
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_pipeline('visits_5m');
DROP TABLE visits_5m, oracle;
SELECT weir.drop_topic('visits');
DROP EXTENSION tdigest;
DROP EXTENSION hll;
