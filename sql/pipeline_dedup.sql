-- Deduplication: a record whose id was seen within the horizon (of event
-- time) is dropped and counted; the others go to the sink.  Checked
-- against the definition written in SQL: a record is kept when no earlier
-- record of its partition has the same id and an event time later than its
-- own minus the horizon.
SET timezone = 'UTC';

SELECT weir.create_topic('dd_orders', 'order_id bigint, shop text, amount int, ts timestamptz',
                         partitions => 2, key => 'order_id');

-- definitions and their errors
SELECT weir.create_dedup('bad', 'dd_orders', key => NULL, event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_idd', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'amount::numeric', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         horizon => '0 s');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         horizon => '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => 'order_id, random() AS r');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => 'count(*)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => '');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => 'order_id, amount AS order_id');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => '1 FROM pg_authid --');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         sink => 'dd_orders');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wrong_sink (order_id bigint, shop int);
SELECT weir.create_dedup('bad', 'dd_orders', key => 'order_id', event_time => 'ts',
                         columns => 'order_id, shop', sink => 'wrong_sink');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE wrong_sink;
-- a rolled back definition leaves nothing behind
BEGIN;
SELECT weir.create_dedup('gone', 'dd_orders', key => 'order_id', event_time => 'ts') > 0 AS created;
ROLLBACK;
SELECT count(*) AS pipelines, to_regclass('gone') AS sink FROM weir.pipeline WHERE name = 'gone';

-- the sink weir creates: the source's columns but partition and position
SELECT weir.create_dedup('uniq', 'dd_orders', key => 'order_id', event_time => 'ts',
                         horizon => '1 minute', out_of_orderness => '10 minutes',
                         late_records => 'dd_orders_late') > 0 AS created;
\d uniq
-- and with columns given: any expressions over the source; the id is an
-- expression too (null for order 13: those records become dead letters)
SELECT weir.create_dedup('uniq_cols', 'dd_orders', key => 'nullif(order_id, 13)', event_time => 'ts',
                         columns => 'order_id, upper(shop) AS shop, amount * 2 AS doubled',
                         filter => 'amount > 0', horizon => '1 minute',
                         out_of_orderness => '10 minutes') > 0 AS created;
\d uniq_cols

-- 20 ids; copies at 0-90 s after the first, out of order within a partition
INSERT INTO dd_orders (order_id, shop, amount, ts)
SELECT id, 'shop' || (id % 3), copy, '2026-01-01 00:00:00+00'::timestamptz
       + (id * interval '7 second') + (ARRAY[0, 30, 90, 20, 150, 40])[copy] * interval '1 second'
  FROM generate_series(1, 20) id, generate_series(1, 6) copy
 ORDER BY copy, id;
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
SELECT weir.checkpoint('uniq_cols') > 0 AS checkpointed;

-- the oracle: kept iff no earlier record (by position, same partition) has
-- the same id and an event time after its own minus the horizon
CREATE VIEW uniq_oracle AS
SELECT r.order_id, r.shop, r.amount, r.ts FROM dd_orders r
 WHERE r.order_id IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM dd_orders s
        WHERE s.part = r.part AND s.pos < r.pos AND s.order_id = r.order_id
          AND s.ts > r.ts - interval '1 minute');
SELECT (SELECT count(*) FROM uniq) AS sink_rows,
       (SELECT count(*) FROM uniq_oracle) AS oracle_rows,
       (SELECT count(*) FROM (SELECT * FROM uniq_oracle EXCEPT ALL SELECT * FROM uniq) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM uniq EXCEPT ALL SELECT * FROM uniq_oracle) x) AS extra;
-- copies 1, 3 (90 s) and 5 (150 s) of each id are kept
SELECT amount AS copy, count(*) FROM uniq GROUP BY amount ORDER BY amount;
SELECT records_in, records_out, records_dropped, records_dead, records_late, retention, state_warning
  FROM weir.pipelines WHERE name = 'uniq';
-- the projection: the same records, their columns computed
SELECT (SELECT count(*) FROM uniq_cols) AS rows,
       (SELECT count(*) FROM (SELECT order_id, upper(shop), amount * 2 FROM uniq WHERE order_id <> 13
                              EXCEPT ALL SELECT * FROM uniq_cols) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM uniq_cols EXCEPT ALL
                              SELECT order_id, upper(shop), amount * 2 FROM uniq WHERE order_id <> 13) x) AS extra;
SELECT order_id, shop, doubled FROM uniq_cols ORDER BY order_id, doubled LIMIT 3;
-- a record whose id is null is a dead letter, with its position and why
SELECT count(*) AS dead_letters, min(error) AS error, bool_and(record->>'order_id' = '13') AS all_order_13
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name = 'uniq_cols';

-- live state: one entry per id, with its last sighting and expiry
SELECT count(*) AS ids, min(expires_at - event_time) AS horizon FROM weir.live_state('uniq');

-- records hours ahead in both partitions move the watermark past every
-- id: they expire, and an old copy arriving now is late
INSERT INTO dd_orders (part, order_id, shop, amount, ts)
VALUES (0, 1000, 'z', 1, '2026-01-01 03:00:00+00'), (1, 1001, 'z', 1, '2026-01-01 03:00:00+00');
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
INSERT INTO dd_orders (order_id, shop, amount, ts) VALUES (2, 'late', 7, '2026-01-01 00:00:30+00');
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
SELECT count(*) AS ids_left FROM weir.live_state('uniq');
-- the last checkpoint's state: none left either
SELECT count(*) AS ids_committed FROM weir.committed_state('uniq');
-- the expired chunks went, and their entries count as state_deletes: what
-- the checkpoints wrote is what the chunks hold plus what they deleted
SELECT deleted > 0 AS some_deleted, deleted = written - kept AS deletes_add_up
  FROM (SELECT (SELECT sum(state_deletes) FROM weir.checkpoints c WHERE c.pipeline_id = p.id) AS deleted,
               (SELECT sum(state_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id) AS written,
               (SELECT coalesce(sum(entries), 0) FROM weir.pipeline_chunk k WHERE k.pipeline_id = p.id) AS kept
          FROM weir.pipeline p WHERE p.name = 'uniq') s;
SELECT order_id, shop, amount FROM dd_orders_late;
SELECT records_late FROM weir.pipelines WHERE name = 'uniq';

-- a restart restores the ids from the chunks: copies within the horizon
-- of ids seen before it are still dropped
INSERT INTO dd_orders (order_id, shop, amount, ts)
VALUES (2000, 'r', 1, '2026-01-01 03:01:00+00'), (2001, 'r', 1, '2026-01-01 03:01:00+00');
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
SELECT weir.stop('uniq');
SELECT wait_for_pipeline('uniq', 'worker_pid IS NULL') AS stopped;
SELECT weir.start('uniq');
INSERT INTO dd_orders (order_id, shop, amount, ts)
VALUES (2000, 'r', 2, '2026-01-01 03:01:30+00'), (2001, 'r', 2, '2026-01-01 03:02:30+00');
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
SELECT order_id, amount FROM uniq WHERE order_id >= 2000 ORDER BY 1, 2;
SELECT entries, expires_at FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'uniq' ORDER BY chunk;
SELECT windows AS ids FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'uniq' ORDER BY restored_at DESC LIMIT 1;

-- a checkpoint in another state format (written by another build of weir)
-- is refused at restore: the pipeline fails, says why and is disabled (no
-- restart loop); nothing is read or lost, and with the chunks back in
-- this build's format it resumes
SELECT weir.stop('uniq');
SELECT wait_for_pipeline('uniq', 'worker_pid IS NULL') AS stopped;
SELECT count(DISTINCT format) AS formats FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'uniq';
CREATE TEMP TABLE uniq_positions AS
SELECT pp.* FROM weir.pipeline_position pp JOIN weir.pipeline p ON p.id = pp.pipeline_id
 WHERE p.name = 'uniq';
UPDATE weir.pipeline_chunk SET format = format + 1
 WHERE pipeline_id = (SELECT id FROM weir.pipeline WHERE name = 'uniq');
SELECT weir.start('uniq');
SELECT wait_for_pipeline('uniq', $$status = 'failed' AND worker_pid IS NULL$$) AS failed;
SELECT status, regexp_replace(last_error, 'format [0-9]+', 'format N', 'g') AS last_error
  FROM weir.pipelines WHERE name = 'uniq';
SELECT enabled FROM weir.pipeline WHERE name = 'uniq';
-- its positions did not move
SELECT count(*) AS moved FROM (
	SELECT pp.* FROM weir.pipeline_position pp JOIN weir.pipeline p ON p.id = pp.pipeline_id
	 WHERE p.name = 'uniq'
	EXCEPT SELECT * FROM uniq_positions) m;
-- the same refusal reaches a reader of the committed state
SELECT count(*) FROM weir.committed_state('uniq');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.stop('uniq');
SELECT wait_for_pipeline('uniq', 'worker_pid IS NULL') AS stopped;
UPDATE weir.pipeline_chunk SET format = format - 1
 WHERE pipeline_id = (SELECT id FROM weir.pipeline WHERE name = 'uniq');
-- a chunk in this build's format whose bytes do not decode: XX001, failed
-- and disabled as well (a restart would read the same bytes again)
CREATE TEMP TABLE uniq_chunks AS
SELECT c.* FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'uniq';
UPDATE weir.pipeline_chunk SET data = '\xffffffff01020304'
 WHERE pipeline_id = (SELECT id FROM weir.pipeline WHERE name = 'uniq');
SELECT weir.start('uniq');
SELECT wait_for_pipeline('uniq', $$status = 'failed' AND worker_pid IS NULL$$) AS failed;
SELECT s.status, p.enabled, s.last_error
  FROM weir.pipelines s JOIN weir.pipeline p ON p.name = s.name WHERE s.name = 'uniq';
UPDATE weir.pipeline_chunk c SET data = k.data FROM uniq_chunks k
 WHERE c.pipeline_id = k.pipeline_id AND c.space = k.space AND c.chunk = k.chunk;
SELECT weir.start('uniq');
INSERT INTO dd_orders (order_id, shop, amount, ts) VALUES (2000, 'r', 3, '2026-01-01 03:02:00+00');
SELECT weir.checkpoint('uniq') > 0 AS checkpointed;
SELECT status, last_error FROM weir.pipelines WHERE name = 'uniq';
SELECT order_id, amount FROM uniq WHERE order_id >= 2000 ORDER BY 1, 2;

-- without a horizon every id is kept forever: allowed, and flagged
SELECT weir.create_dedup('forever', 'dd_orders', key => 'order_id', event_time => 'ts') > 0 AS created;
SELECT weir.checkpoint('forever') > 0 AS checkpointed;
SELECT count(*) AS rows, count(DISTINCT order_id) AS ids FROM forever;
SELECT retention, state_warning FROM weir.pipelines WHERE name = 'forever';

-- chaining: dedup into a topic, then a window aggregate over it
SELECT weir.create_topic('dd_orders_unique', 'order_id bigint, shop text, amount int, ts timestamptz',
                         partitions => 2, key => 'order_id');
SELECT weir.create_dedup('to_topic', 'dd_orders', key => 'order_id', event_time => 'ts',
                         horizon => '1 minute', out_of_orderness => '10 minutes',
                         sink => 'dd_orders_unique') > 0 AS created;
SELECT weir.create_pipeline('per_shop', 'dd_orders_unique', key => 'shop', event_time => 'ts',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS n, sum(amount) AS total',
                            out_of_orderness => '10 minutes') > 0 AS created;
SELECT weir.checkpoint('to_topic') > 0 AS checkpointed;
INSERT INTO dd_orders (part, order_id, shop, amount, ts)
VALUES (0, 3000, 'end', 1, '2026-01-01 06:00:00+00'), (1, 3001, 'end', 1, '2026-01-01 06:00:00+00');
SELECT weir.checkpoint('to_topic') > 0 AS checkpointed;
SELECT weir.checkpoint('per_shop') > 0 AS checkpointed;
SELECT (SELECT count(*) FROM dd_orders_unique) AS topic_rows,
       (SELECT count(*) FROM (SELECT order_id, shop, amount, ts FROM dd_orders_unique
                              EXCEPT ALL SELECT * FROM uniq_oracle) x) AS not_in_oracle,
       (SELECT count(*) FROM (
          SELECT shop, date_bin('1 minute', ts, '1970-01-01') AS window_start, count(*) AS n, sum(amount) AS total
            FROM uniq_oracle WHERE ts < '2026-01-01 02:00:00+00' GROUP BY 1, 2
          EXCEPT SELECT shop, window_start, n, total FROM per_shop) x) AS windows_missing_or_different;

SELECT weir.drop_pipeline('per_shop');
SELECT weir.drop_pipeline('to_topic');
SELECT weir.drop_pipeline('forever');
SELECT weir.drop_pipeline('uniq_cols');
SELECT weir.drop_pipeline('uniq');
DROP VIEW uniq_oracle;
DROP TABLE uniq, uniq_cols, forever, per_shop, dd_orders_late;
SELECT weir.drop_topic('dd_orders_unique');
SELECT weir.drop_topic('dd_orders');
