-- Poison records (issue 15): a record that cannot be processed or written
-- becomes a dead letter with its error, in the checkpoint's transaction, and
-- the pipeline carries on; everything else equals the plain-SQL answer.
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE FUNCTION dead_letters_of(pipeline text)
RETURNS TABLE (source regclass, part integer, pos bigint, error text) LANGUAGE sql AS $$
	SELECT d.source, d.partition, d.position, d.error FROM weir.dead_letters d
	  JOIN weir.pipeline p ON p.id = d.pipeline_id
	 WHERE p.name = pipeline ORDER BY d.position NULLS LAST, d.error $$;

------------------------------------------------------------------------------
-- A key too large for the sink's unique index: 10 MB of text, poorly
-- compressible, into a tumbling window and a last value
------------------------------------------------------------------------------
SELECT weir.create_topic('big', 'k text, t timestamptz, v int');
SELECT weir.create_pipeline('big_tum', 'big', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS total',
                            checkpoint_interval => '1 hour') > 0 AS created;
SELECT weir.create_last_value('big_last', 'big', key => 'k', event_time => 't',
                              checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO big (k, t, v)
SELECT 'k' || (g % 3), '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 s', g FROM generate_series(1, 90) g;
INSERT INTO big (k, t, v)
SELECT string_agg(md5(i::text), ''), '2024-01-01 00:05:30+00', 1 FROM generate_series(1, 327680) i;
INSERT INTO big (k, t, v) VALUES ('k0', '2024-01-01 00:10:00+00', 0);
SELECT weir.checkpoint('big_tum') > 0 AS checkpointed, weir.checkpoint('big_last') > 0 AS checkpointed;
SELECT name, status, records_dead FROM weir.pipelines WHERE name LIKE 'big%' ORDER BY 1;
SELECT source, part, pos, error FROM dead_letters_of('big_tum');
SELECT source, part, pos, error FROM dead_letters_of('big_last');
SELECT length(d.record::text) > 10000000 AS whole_key_kept FROM weir.dead_letters d
  JOIN weir.pipeline p ON p.id = d.pipeline_id WHERE p.name = 'big_last';
-- the other windows and keys are all there, as GROUP BY has them
SELECT (SELECT count(*) FROM (SELECT k, window_start, n, total FROM big_tum
                              EXCEPT SELECT k, date_trunc('minute', t), count(*), sum(v) FROM big
                                      WHERE length(k) < 100 AND t < '2024-01-01 00:10:00+00' GROUP BY 1, 2) d) AS only_in_sink,
       (SELECT count(*) FROM (SELECT k, date_trunc('minute', t), count(*), sum(v) FROM big
                               WHERE length(k) < 100 AND t < '2024-01-01 00:10:00+00' GROUP BY 1, 2
                              EXCEPT SELECT k, window_start, n, total FROM big_tum) d) AS only_in_oracle;
SELECT k, v FROM big_last ORDER BY k;
-- another record of the big key: its new row is a dead letter too; the pipeline runs on
INSERT INTO big (k, t, v) SELECT k, '2024-01-01 00:10:01+00', 7 FROM big WHERE length(k) > 100;
INSERT INTO big (k, t, v) VALUES ('k1', '2024-01-01 00:10:02+00', 8);
SELECT weir.checkpoint('big_last') > 0 AS checkpointed;
SELECT status, records_dead FROM weir.pipelines WHERE name = 'big_last';
SELECT k, v FROM big_last ORDER BY k;
SELECT weir.drop_pipeline('big_tum');
SELECT weir.drop_pipeline('big_last');

------------------------------------------------------------------------------
-- Overflows: GROUP BY raises "value out of range: overflow" for a
-- sum(float8) or avg(float8) of finite values past the type's range; such a
-- window is a dead letter, every other window is written
------------------------------------------------------------------------------
SELECT weir.create_topic('ovf', 'k int, t timestamptz, i int, f float8');
SELECT weir.create_pipeline('ovf_tum', 'ovf', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'sum(i) AS si, sum(f) AS sf, avg(f) AS af, count(*) AS n',
                            checkpoint_interval => '1 hour') > 0 AS created;
-- key 2: a float sum that overflows (its finite inputs add up past float8); key 3: fine
INSERT INTO ovf (k, t, i, f) VALUES (2, '2024-01-01 00:00:20+00', 1, 1.5e308), (2, '2024-01-01 00:00:21+00', 1, 1.5e308),
                                    (3, '2024-01-01 00:00:30+00', 5, 2.5), (3, '2024-01-01 00:00:31+00', 7, 0.5);
SELECT k, sum(f) FROM ovf WHERE k = 2 GROUP BY k;
-- key 4: a finite sum, but avg's sum of squared deviations overflows
-- (PostgreSQL's float8_accum raises there too)
INSERT INTO ovf (k, t, i, f) VALUES (4, '2024-01-01 00:00:40+00', 1, 1e200), (4, '2024-01-01 00:00:41+00', 1, -1e200);
SELECT k, sum(f) FROM ovf WHERE k = 4 GROUP BY k;
SELECT k, avg(f) FROM ovf WHERE k = 4 GROUP BY k;
INSERT INTO ovf (k, t, i, f) VALUES (3, '2024-01-01 00:05:00+00', 0, 0);
SELECT weir.checkpoint('ovf_tum') > 0 AS checkpointed;
SELECT status, records_dead FROM weir.pipelines WHERE name = 'ovf_tum';
SELECT source, part, pos, error FROM dead_letters_of('ovf_tum');
SELECT k, window_start, si, sf, af, n FROM ovf_tum ORDER BY k, window_start;
SELECT weir.drop_pipeline('ovf_tum');

------------------------------------------------------------------------------
-- Event times at the ends of timestamptz: no window bound may leave the
-- type's range; such records are dead letters with their positions
------------------------------------------------------------------------------
SELECT weir.create_topic('edge', 'k int, t timestamptz');
SELECT weir.create_pipeline('edge_hop', 'edge', key => 'k', event_time => 't',
                            windowing => weir.hopping('1 hour', '30 minutes'), aggregates => 'count(*) AS n',
                            out_of_orderness => '1 minute', checkpoint_interval => '1 hour') > 0 AS created;
INSERT INTO edge (k, t) VALUES (1, '4714-11-24 00:00:00+00 BC'), (1, '294276-12-31 23:59:59+00'),
                               (1, '2024-01-01 00:10:00+00'), (1, '2024-01-01 05:00:00+00');
SELECT weir.checkpoint('edge_hop') > 0 AS checkpointed;
SELECT status, records_dead FROM weir.pipelines WHERE name = 'edge_hop';
SELECT source, part, pos, error FROM dead_letters_of('edge_hop');
SELECT k, window_start, window_end, n FROM edge_hop ORDER BY window_start;
SELECT weir.drop_pipeline('edge_hop');

------------------------------------------------------------------------------
-- A record on which a generic aggregate's transition function raises: it
-- was being applied to state, so the worker restores its last checkpoint
-- and moves past it, a dead letter with the function's error; the
-- pipeline runs on
------------------------------------------------------------------------------
CREATE FUNCTION picky_add(s bigint, v int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	IF v = 13 THEN
		RAISE EXCEPTION 'unlucky %', v;
	END IF;
	RETURN coalesce(s, 0) + v;
END $$;
CREATE AGGREGATE picky_sum(int) (sfunc = picky_add, stype = bigint, combinefunc = int8pl);
SELECT weir.create_topic('picky', 'k int, t timestamptz, v int');
SELECT weir.create_pipeline('picky_tum', 'picky', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'picky_sum(v) AS s, count(*) AS n',
                            checkpoint_interval => '1 hour', start => false) > 0 AS created;
INSERT INTO picky (k, t, v) SELECT g % 2, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 s', g
  FROM generate_series(1, 20) g;
INSERT INTO picky (k, t, v) VALUES (0, '2024-01-01 00:10:00+00', 0), (1, '2024-01-01 00:10:00+00', 0);

-- weir.skip(): the owner moves a pipeline past a record (here a good one,
-- v = 7), also a dead letter; only the owner, only a source, only a
-- position not yet passed
CREATE ROLE poison_other;
SET ROLE poison_other;
SELECT weir.skip('picky_tum', 'picky', 0, 7);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE poison_other;
SELECT weir.skip('picky_tum', 'big', 0, 7);
SELECT weir.skip('picky_tum', 'picky', 5, 7);
SELECT weir.skip('picky_tum', 'picky', 0, 0);
SELECT weir.skip('picky_tum', 'picky', 0, (SELECT pos FROM picky WHERE v = 7));
SELECT source, partition, position, requested_by, error FROM weir.pipeline_skip;

SELECT weir.start('picky_tum');
SELECT wait_for_status('picky_tum', 'running') AS status;
SELECT weir.checkpoint('picky_tum') > 0 AS checkpointed;
SELECT status, last_error FROM weir.pipelines WHERE name = 'picky_tum';
SELECT source, part, pos, error FROM dead_letters_of('picky_tum');
SELECT source, partition, position, requested_by, error FROM weir.pipeline_skip ORDER BY position;
SELECT count(*) AS restores FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'picky_tum';
SELECT k, window_start, s, n FROM picky_tum ORDER BY k, window_start;
SELECT k, date_trunc('minute', t) AS window_start, sum(v) AS s, count(*) AS n FROM picky
 WHERE v NOT IN (7, 13) AND t < '2024-01-01 00:10:00+00' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT weir.drop_pipeline('picky_tum');

------------------------------------------------------------------------------
-- A generic aggregate whose final function raises for one window: that
-- window is a dead letter of the sink (no record to blame), the others are
-- written, the pipeline runs on
------------------------------------------------------------------------------
CREATE FUNCTION picky_final(s bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	IF s = 13 THEN
		RAISE EXCEPTION 'unlucky total %', s;
	END IF;
	RETURN s;
END $$;
CREATE FUNCTION plain_add(s bigint, v int) RETURNS bigint LANGUAGE sql AS 'SELECT coalesce(s, 0) + v';
CREATE AGGREGATE picky_total(int) (sfunc = plain_add, stype = bigint, finalfunc = picky_final,
                                   combinefunc = int8pl);
SELECT weir.create_topic('totals', 'k int, t timestamptz, v int');
SELECT weir.create_pipeline('totals_tum', 'totals', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'picky_total(v) AS s, count(*) AS n',
                            checkpoint_interval => '1 hour') > 0 AS created;
-- key 1's window sums to 13, key 2's to 20
INSERT INTO totals (k, t, v) VALUES (1, '2024-01-01 00:00:01+00', 6), (1, '2024-01-01 00:00:02+00', 7),
                                    (2, '2024-01-01 00:00:03+00', 9), (2, '2024-01-01 00:00:04+00', 11),
                                    (3, '2024-01-01 00:10:00+00', 0);
SELECT weir.checkpoint('totals_tum') > 0 AS checkpointed;
SELECT status, last_error, records_dead FROM weir.pipelines WHERE name = 'totals_tum';
SELECT source, part, pos, error FROM dead_letters_of('totals_tum');
SELECT record FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 'totals_tum';
SELECT k, window_start, s, n FROM totals_tum ORDER BY k, window_start;
SELECT weir.drop_pipeline('totals_tum');
