-- Last value per key: the newest row of each key (greatest event time; ties
-- by partition, then position), upserted into the sink at each checkpoint.
-- Checked against DISTINCT ON over the topic, which is exactly that order.
SET timezone = 'UTC';
SELECT weir.create_topic('lv_readings', 'device int, temp int, note text, ts timestamptz',
                         partitions => 3);

-- definitions and their errors
SELECT weir.create_last_value('bad', 'lv_readings', key => 'devic', event_time => 'ts');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value('bad', 'lv_readings', key => 'device', event_time => 'ts',
                              ttl => '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value('bad', 'lv_readings', key => 'device', event_time => 'note');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value('bad', 'lv_readings', key => 'device', event_time => 'ts',
                              columns => 'device, temp');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('lv_out', 'device int, temp int, note text, ts timestamptz');
SELECT weir.create_last_value('bad', 'lv_readings', key => 'device', event_time => 'ts',
                              sink => 'lv_out');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_topic('lv_out');
CREATE TABLE lv_nokey (device int, temp int, note text, ts timestamptz);
SELECT weir.create_last_value('bad', 'lv_readings', key => 'device', event_time => 'ts',
                              sink => 'lv_nokey');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE lv_nokey;

-- the sink weir creates: the key, then the source's other columns
SELECT weir.create_last_value('latest', 'lv_readings', key => 'device', event_time => 'ts',
                              out_of_orderness => '1 hour') > 0 AS created;
\d latest
SELECT weir.create_last_value('latest_hot', 'lv_readings', key => 'device % 5 AS bucket',
                              event_time => 'ts', columns => 'temp, ts',
                              filter => 'temp >= 20', ttl => '10 minutes',
                              out_of_orderness => '1 hour', late_records => 'lv_late') > 0 AS created;
\d latest_hot

-- 50 devices, 8 readings each spread over every partition, out of order;
-- devices 1-5 have two readings at the same time in different partitions
INSERT INTO lv_readings (part, device, temp, note, ts)
SELECT (d + r) % 3, d, (d * 7 + r * 13) % 40, 'r' || r,
       '2026-01-01 00:00:00+00'::timestamptz + d * interval '1 second'
       + (ARRAY[5, 1, 7, 3, 8, 2, 6, 4])[r] * interval '1 minute'
  FROM generate_series(1, 50) d, generate_series(1, 8) r
 ORDER BY r, d;
INSERT INTO lv_readings (part, device, temp, note, ts)
SELECT p, d, 99, 'tie' || p, '2026-01-01 00:08:00+00'::timestamptz + d * interval '1 second'
  FROM generate_series(1, 5) d, generate_series(0, 2) p;
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
SELECT weir.checkpoint('latest_hot') > 0 AS checkpointed;

CREATE VIEW latest_oracle AS
SELECT DISTINCT ON (device) device, temp, note, ts FROM lv_readings
 ORDER BY device, ts DESC, part DESC, pos DESC;
SELECT (SELECT count(*) FROM latest) AS sink_rows,
       (SELECT count(*) FROM (SELECT * FROM latest_oracle EXCEPT ALL SELECT * FROM latest) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM latest EXCEPT ALL SELECT * FROM latest_oracle) x) AS extra;
-- the ties: the highest partition wins
SELECT device, temp, note FROM latest WHERE device <= 5 ORDER BY device;
-- (how many rows lost to a newer one depends on when each was read)
SELECT records_in, records_dropped > 0 AS some_superseded, records_late, windows AS keys,
       retention, state_warning
  FROM weir.pipelines WHERE name = 'latest';
SELECT (SELECT count(*) FROM (
          (SELECT DISTINCT ON (device % 5) device % 5, temp, ts FROM lv_readings WHERE temp >= 20
            ORDER BY device % 5, ts DESC, part DESC, pos DESC)
          EXCEPT ALL SELECT * FROM latest_hot) x) AS hot_missing,
       (SELECT count(*) FROM latest_hot) AS hot_rows;

-- a newer reading replaces a row in place; an older one changes nothing
INSERT INTO lv_readings (device, temp, note, ts) VALUES
  (7, 1, 'newer', '2026-01-01 00:30:00+00'),
  (8, 1, 'older', '2026-01-01 00:00:00+00');
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
SELECT device, temp, note FROM latest WHERE device IN (7, 8) ORDER BY device;

-- rounds of newer readings for every device: rows are updated in place,
-- on pages that fill up (updates that are not HOT need index entries)
INSERT INTO lv_readings (device, temp, note, ts)
SELECT d, 1, 'round 1' || repeat('.', 200),
       '2026-01-01 00:40:00+00'::timestamptz + interval '1 minute' + d * interval '1 ms'
  FROM generate_series(1, 50) d;
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
INSERT INTO lv_readings (device, temp, note, ts)
SELECT d, 2, 'round 2' || repeat('.', 200),
       '2026-01-01 00:40:00+00'::timestamptz + interval '2 minute' + d * interval '1 ms'
  FROM generate_series(1, 50) d;
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
INSERT INTO lv_readings (device, temp, note, ts)
SELECT d, 3, 'round 3' || repeat('.', 200),
       '2026-01-01 00:40:00+00'::timestamptz + interval '3 minute' + d * interval '1 ms'
  FROM generate_series(1, 50) d;
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
SELECT count(*) AS rows, min(temp) AS min_round, max(temp) AS max_round FROM latest WHERE device <> 7;
SELECT (SELECT count(*) FROM (SELECT * FROM latest_oracle EXCEPT ALL SELECT * FROM latest) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM latest EXCEPT ALL SELECT * FROM latest_oracle) x) AS extra;

-- a restart restores the keys: an older reading still loses afterwards
SELECT weir.stop('latest');
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM weir.pipelines WHERE name = 'latest' AND worker_pid IS NULL);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT weir.start('latest');
INSERT INTO lv_readings (device, temp, note, ts) VALUES (7, 2, 'older again', '2026-01-01 00:20:00+00');
INSERT INTO lv_readings (device, temp, note, ts) VALUES (7, 1, 'newer', '2026-01-01 00:50:00+00');
SELECT weir.checkpoint('latest') > 0 AS checkpointed;
SELECT device, temp, note FROM latest WHERE device = 7;
SELECT windows AS keys FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'latest' ORDER BY restored_at DESC LIMIT 1;
SELECT (SELECT count(*) FROM (SELECT * FROM latest_oracle EXCEPT ALL SELECT * FROM latest) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM latest EXCEPT ALL SELECT * FROM latest_oracle) x) AS extra;

-- ttl: readings two hours later in every partition move the watermark (one
-- hour behind) past the old keys: they leave state and their rows go
INSERT INTO lv_readings (part, device, temp, note, ts)
VALUES (0, 1000, 30, 'ahead', '2026-01-01 02:00:00+00'), (1, 1001, 31, 'ahead', '2026-01-01 02:00:00+00'),
       (2, 1002, 32, 'ahead', '2026-01-01 02:00:00+00');
SELECT weir.checkpoint('latest_hot') > 0 AS checkpointed;
-- once the keys have expired, a checkpoint deletes their rows
INSERT INTO lv_readings (part, device, temp, note, ts)
VALUES (0, 1000, 33, 'ahead', '2026-01-01 02:00:01+00');
SELECT weir.checkpoint('latest_hot') > 0 AS checkpointed;
SELECT bucket, temp, ts FROM latest_hot ORDER BY bucket;
SELECT count(*) AS keys FROM weir.live_state('latest_hot');
-- a reading older than the watermark minus the ttl is late
INSERT INTO lv_readings (device, temp, note, ts) VALUES (3, 50, 'late', '2026-01-01 00:40:00+00');
SELECT weir.checkpoint('latest_hot') > 0 AS checkpointed;
SELECT device, temp, note FROM lv_late;
SELECT records_late, retention, state_warning FROM weir.pipelines WHERE name = 'latest_hot';

SELECT weir.drop_pipeline('latest_hot');
SELECT weir.drop_pipeline('latest');
DROP VIEW latest_oracle;
DROP TABLE latest, latest_hot, lv_late;
SELECT weir.drop_topic('lv_readings');
