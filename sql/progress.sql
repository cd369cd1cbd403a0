-- weir.progress (issue 20): a long restore reports its phase and the bytes
-- and entries it has read of its checkpoint's chunks, chunk by chunk, in
-- the style of pg_stat_progress_*; done, it leaves the view.  The totals
-- and what weir.restores records are checked against the chunks in
-- weir.pipeline_chunk.  weir.fault_point = 'restore_chunk_slow' makes the
-- restore wait a second after each chunk, so that it can be seen.
SET timezone = 'UTC';
SELECT weir.create_topic('pg_src', 'device int, temp int, ts timestamptz', partitions => 2);
SELECT weir.create_last_value('pg_last', 'pg_src', key => 'device', event_time => 'ts',
                              checkpoint_interval => '1 hour') > 0 AS created;
SELECT wait_for_status('pg_last', 'running');
-- nothing long in progress once its (empty) restore is done: the row of
-- the restore may outlive the status' change to running by a moment
SELECT wait_for_pipeline('pg_last', $$NOT EXISTS (SELECT FROM weir.progress WHERE pipeline = 'pg_last')$$)
       AS nothing_in_progress;
-- four checkpoints of new keys: four chunks, none compacted (each batch
-- committed before the checkpoint that must take it)
DO $$
BEGIN
	FOR b IN 0 .. 3 LOOP
		INSERT INTO pg_src (device, temp, ts)
		SELECT b * 1000 + g, g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
		  FROM generate_series(1, 500) g;
		COMMIT;
		IF weir.checkpoint('pg_last') <= 0 THEN
			RAISE EXCEPTION 'no checkpoint after batch %', b;
		END IF;
	END LOOP;
END $$;
CREATE TEMP TABLE pg_chunks AS
SELECT count(*) AS chunks, sum(octet_length(c.data))::bigint AS bytes, sum(c.entries)::bigint AS entries
  FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'pg_last';
SELECT chunks, entries FROM pg_chunks;

-- restarted with a slow restore
ALTER SYSTEM SET weir.fault_point = 'restore_chunk_slow';
SELECT pg_reload_conf();
SELECT weir.stop('pg_last');
SELECT wait_for_pipeline('pg_last', 'worker_pid IS NULL') AS stopped;
SELECT weir.start('pg_last');
-- waits until weir.progress shows the pipeline in `condition` (on its
-- columns), and keeps the row it saw then in pg_seen
CREATE TEMP TABLE pg_seen AS SELECT * FROM weir.progress WHERE false;
CREATE FUNCTION pg_wait_for_progress(condition text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	FOR i IN 1..300 LOOP
		EXECUTE format('INSERT INTO pg_seen SELECT * FROM weir.progress WHERE pipeline = %L AND (%s)',
					   'pg_last', condition);
		GET DIAGNOSTICS n = ROW_COUNT;
		IF n > 0 THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
-- seen in the middle: at least one chunk read, not all
SELECT pg_wait_for_progress('bytes_done > 0 AND bytes_done < bytes_total') AS seen_in_progress;
SELECT pr.command, pr.phase,
       pr.pid = (SELECT worker_pid FROM weir.pipelines WHERE name = 'pg_last') AS by_the_worker,
       pr.bytes_total = c.bytes AS bytes_total_is_the_chunks,
       pr.rows_total = c.entries AS rows_total_is_the_chunks,
       pr.rows_done > 0 AND pr.rows_done < pr.rows_total AS rows_part_done,
       pr.started_at <= now() AS started
  FROM pg_seen pr, pg_chunks c;
ALTER SYSTEM RESET weir.fault_point;
SELECT pg_reload_conf();
-- done: no row, and weir.restores has what it read
SELECT wait_for_pipeline('pg_last', 'NOT EXISTS (SELECT FROM weir.progress WHERE pipeline = ''pg_last'')') AS done;
SELECT wait_for_status('pg_last', 'running');
SELECT r.bytes = c.bytes AS restore_read_every_byte, r.windows = c.entries AS restore_read_every_entry
  FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id, pg_chunks c
 WHERE p.name = 'pg_last' ORDER BY r.restored_at DESC LIMIT 1;
-- the sink: the newest of every device
SELECT count(*) AS devices FROM pg_last;

-- a catch-up: 300,000 records at once put the worker 100,000 or more behind;
-- while it reads them it shows how many it has read out of them all
TRUNCATE pg_seen;
INSERT INTO pg_src (device, temp, ts)
SELECT g % 5000, g, '2024-01-01 01:00:00+00'::timestamptz + g * interval '1 ms'
  FROM generate_series(1, 300000) g;
SELECT pg_wait_for_progress('command = ''catch-up''') AS seen_catching_up;
SELECT command, phase, bytes_total IS NULL AS no_bytes,
       rows_total >= 100000 AND rows_total <= 300000 AS rows_total_is_the_backlog,
       rows_done < rows_total AS part_done
  FROM pg_seen;
SELECT weir.checkpoint('pg_last') > 0 AS checkpointed;
SELECT wait_for_pipeline('pg_last', 'NOT EXISTS (SELECT FROM weir.progress WHERE pipeline = ''pg_last'')') AS caught_up;

-- anyone may look
CREATE ROLE regress_pg_reader;
SET ROLE regress_pg_reader;
SELECT count(*) AS rows_seen FROM weir.progress;
RESET ROLE;
DROP ROLE regress_pg_reader;

SELECT weir.drop_pipeline('pg_last');
SELECT weir.drop_topic('pg_src');
DROP FUNCTION pg_wait_for_progress(text);
