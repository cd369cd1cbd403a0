#!/usr/bin/env bash
# bench/dedup.sh — how fast does a weir deduplication consume a backlog,
# compared with the plain-SQL alternative and with the limit of reading the
# same rows?  How many bytes does it keep per id?
#
#   N=2000000 bench/dedup.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N records
# (default 2,000,000) into a 4-partition topic ev(id bigint, ts timestamptz,
# amount int) keyed by id.  Event time rises steadily, RATE records per
# second of it (default 1000: a 1-minute horizon spans 60,000 records); DUPS
# percent of the records (default 25) repeat the id of a record up to 30 s
# of event time earlier, so every repeat falls within the horizon; the
# others bring a new id (scrambled bigints, ids in no particular order).
# Each partition is in event-time order, so nothing is late.  It measures
# in one run, each rate the best of RUNS runs:
#   (a) weir: weir.create_dedup(id => 'id', event_time => 'ts',
#       horizon => '1 minute') over the whole backlog, from the statement
#       that creates (and starts) it until weir.checkpoint() returns with
#       every record processed, the kept ones in the sink and checkpointed;
#   (b) plain SQL, the alternative the issue names: micro-batches of 100,000
#       positions per partition, each one INSERT INTO a table with
#       PRIMARY KEY (id) SELECT ... ON CONFLICT (id) DO NOTHING, all batches
#       in one PL/pgSQL call.  The table is both the state and the output,
#       and it keeps every id forever (its index grows with all ids ever
#       seen; weir keeps the horizon's);
#   (c) the same SQL with expiry: after each round of the 4 partitions, a
#       DELETE of the rows whose ts is at or before the watermark (the
#       smallest partition maximum of ts read so far) minus the horizon, so
#       the table holds about the live ids.  The deleted rows are output
#       lost: this is what bounded state costs SQL, not a full alternative;
#   (d) SQL producing what weir produces, with bounded state: the same
#       micro-batches, INSERT ... ON CONFLICT (id) DO NOTHING RETURNING into
#       a keyed state table (id, ts) feeding an INSERT into an insert-only
#       sink (id, ts, amount) without index, as weir's, and the DELETE of
#       (c) on the state table;
#   (e) the read limit: weir._scan_count() over ranges of 100,000 positions
#       per partition: the PK index through the low-level scan API, as the
#       pipeline worker reads, with nothing done per row but counting.
# (c) and (d) track the first sighting of an id, not the last as weir does;
# with this data (no id comes back after its horizon) all four give the
# same records, which the script checks.
# It also reports, for weir: ids in memory and state bytes at the end and at
# their peak while consuming (weir.pipelines sampled every 10 ms by a second
# session), bytes per id; the checkpoints taken while consuming (count,
# duration = sync_ms + async_ms, max and p50, their share of the run time
# and the async share of that); the chunk bytes per id written; and the
# restore of the final state after the last run (stop, start,
# weir.checkpoint(); the newest weir.restores row).
#
# Correctness: the expected output comes from the definition, in SQL: a
# record is kept when no earlier record of its partition with the same id
# has an event time later than its own minus the horizon (the largest
# earlier ts per (part, id), a window function).  After every run the weir
# sink and the SQL outputs must hold exactly those records, compared as
# (rows, sum(id), sum(amount), sum(epoch of ts)); weir.pipelines must show
# records_in = N, lag_rows = 0, records_out = the kept records,
# records_dropped = the rest, no late or dead records.  The restored state
# must hold exactly the ids whose last sighting + horizon is after the
# final watermark.  A failed check prints the figure as `invalid`, and the
# script exits 1 after printing everything.
#
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after the measured statements; psql start-up and connecting are
# left out.  The weir figure includes creating the pipeline and its sink and
# starting the worker (launcher wake-up, fork, an empty restore);
# dedup.worker_start_ms says how much of it the start was.
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value` (targets in the comment line above each).
# Progress goes to stderr.
#
# Knobs: N (records, default 2000000), RUNS (default 3), RATE (records per
# second of event time, default 1000), DUPS (percent repeats, default 25),
# WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default 600).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
RATE="${RATE:-1000}"
DUPS="${DUPS:-25}"
TIMEOUT="${TIMEOUT:-600}"
BATCH=100000		# positions per partition per statement in (b) to (e)
HORIZON="1 minute"
BACK=$((RATE * 30))	# a repeat copies an id from up to this many records back (30 s)

# Build, install, and a throwaway cluster (DIR, PORT, progress()).
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" dedup

q() { weir_psql -At -c "$1"; }

# sql_timed SQL: run statements, set OUT to the output of the last one and T
# to the wall-clock seconds they took, read in the same session.
sql_timed() {
	local res
	res=$(weir_psql -At <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
$1;
SELECT extract(epoch FROM clock_timestamp() - :'bench_t0'::timestamptz);
EOF
	)
	T=$(tail -n 1 <<<"$res")
	OUT=$(sed '$d' <<<"$res")
}

declare -A BEST=()
# record NAME SECONDS: keep the fastest run.
record() {
	if [ -z "${BEST[$1]:-}" ] || awk -v a="$2" -v b="${BEST[$1]}" 'BEGIN { exit !(a < b) }'; then
		BEST[$1]=$2
	fi
	progress "  $1 run: $(awk -v r="$N" -v t="$2" 'BEGIN { printf "%.0f events/s (%.3f s)", r / t, t }')"
}

declare -A INVALID=()
declare -a PROBLEMS=()
problem() {
	progress "PROBLEM: $*"
	PROBLEMS+=("$*")
}
# invalid NAME WHY: the figure NAME is not to be trusted.
invalid() {
	INVALID[$1]="${INVALID[$1]:+${INVALID[$1]}; }$2"
	problem "$1: $2"
}
expect_equal() {
	if [ "$2" != "$3" ]; then
		echo "bench: $1: got '$2', expected '$3'" >&2
		exit 1
	fi
}

# What a set of records looks like, to compare outputs: rows, sum(id),
# sum(amount), sum(epoch of ts).
SUMMARY="count(*) || ' ' || coalesce(sum(id), 0) || ' ' || coalesce(sum(amount), 0) || ' ' ||
		 coalesce(sum(extract(epoch FROM ts)), 0)"

# --- data -----------------------------------------------------------------
progress "loading $N records into topic ev (4 partitions): $RATE per second of event time, $DUPS% repeats"
weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'id bigint, ts timestamptz, amount int', partitions => 4, key => 'id');
-- record i: at i / RATE seconds of event time; a repeat (DUPS %) takes the
-- id of the newest first sighting at or before a record 1 to BACK records
-- back, else a new id: i scrambled by an odd multiplier modulo 2^40 (a
-- bijection, so new ids never collide).  Inserted in order of i: each
-- partition (a hash of id) is in event-time order.
SELECT setseed(0.42);
INSERT INTO ev (id, ts, amount)
	SELECT CASE WHEN dup THEN lag(last_new, back) OVER (ORDER BY i) ELSE i END
			   * 2654435761 % 1099511627776,
		   timestamptz '2026-01-01 00:00:00+00' + i * (1.0 / $RATE) * interval '1 second',
		   amount
	  FROM (SELECT i, dup, back, amount,
				   max(CASE WHEN NOT dup THEN i END) OVER (ORDER BY i) AS last_new
			  FROM (SELECT i, i > 0 AND random() < $DUPS / 100.0 AS dup,
						   1 + floor(random() * least(i, $BACK))::int AS back,
						   floor(random() * 1000)::int AS amount
					  FROM generate_series(0, $N - 1) i) g) s
	 ORDER BY i;
VACUUM ANALYZE ev;

-- the expected output, from the definition: kept when no earlier record of
-- the partition with the same id has a later ts than its own minus the
-- horizon
CREATE TABLE bench_expected AS
	SELECT id, ts, amount
	  FROM (SELECT id, ts, amount,
				   max(ts) OVER (PARTITION BY part, id ORDER BY pos
								 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
			  FROM ev) s
	 WHERE before IS NULL OR before <= ts - interval '$HORIZON';
CHECKPOINT;

-- (e) the read limit: every position, $BATCH per partition per call,
-- partitions interleaved as the worker reads them
CREATE FUNCTION bench_read_limit() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint; total bigint := 0;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			total := total + weir._scan_count('ev', p, a, a + $BATCH);
		END LOOP;
		a := a + $BATCH;
	END LOOP;
	RETURN total;
END \$\$;

-- (b) the alternative the issue names: a keyed table, ON CONFLICT DO
-- NOTHING.  It keeps every id forever: nothing ever leaves the table.
CREATE TABLE dedup_sql (id bigint PRIMARY KEY, ts timestamptz, amount int);
CREATE FUNCTION bench_sql() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint; n bigint; kept bigint := 0;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			INSERT INTO dedup_sql (id, ts, amount)
			SELECT id, ts, amount FROM ev
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			ON CONFLICT (id) DO NOTHING;
			GET DIAGNOSTICS n = ROW_COUNT;
			kept := kept + n;
		END LOOP;
		a := a + $BATCH;
	END LOOP;
	RETURN kept;
END \$\$;

-- the watermark after reading up to position upto of every partition: the
-- smallest partition maximum of ts (each partition is in ts order, so its
-- maximum is the ts at its last position read; one index probe)
CREATE FUNCTION bench_watermark(upto bigint) RETURNS timestamptz LANGUAGE sql STABLE AS \$\$
	SELECT min((SELECT e.ts FROM ev e WHERE e.part = p AND e.pos <= upto
				 ORDER BY e.pos DESC LIMIT 1))
	  FROM generate_series(0, 3) p
\$\$;

-- (c) the same with expiry: after each round of the partitions, the ids
-- whose (first) sighting is at least the horizon behind the watermark go.
-- Returns the records kept (inserted), deleted ones included.
CREATE TABLE dedup_sql_expiry (LIKE dedup_sql INCLUDING ALL);
CREATE FUNCTION bench_sql_expiry() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint; n bigint; kept bigint := 0;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			INSERT INTO dedup_sql_expiry (id, ts, amount)
			SELECT id, ts, amount FROM ev
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			ON CONFLICT (id) DO NOTHING;
			GET DIAGNOSTICS n = ROW_COUNT;
			kept := kept + n;
		END LOOP;
		a := a + $BATCH;
		DELETE FROM dedup_sql_expiry
		 WHERE ts <= bench_watermark(a) - interval '$HORIZON';
	END LOOP;
	RETURN kept;
END \$\$;

-- (d) weir's output with bounded state: a keyed state table with expiry,
-- and the kept records into an insert-only sink without index
CREATE TABLE dedup_state (id bigint PRIMARY KEY, ts timestamptz);
CREATE TABLE dedup_sink (id bigint, ts timestamptz, amount int);
CREATE FUNCTION bench_sql_sink() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			-- each record has its own ts, so (id, ts) finds a kept one's amount
			WITH batch AS (
				SELECT id, ts, amount FROM ev
				 WHERE part = p AND pos > a AND pos <= a + $BATCH),
			kept AS (
				INSERT INTO dedup_state AS s (id, ts)
				SELECT id, ts FROM batch
				ON CONFLICT (id) DO NOTHING
				RETURNING s.id, s.ts)
			INSERT INTO dedup_sink (id, ts, amount)
			SELECT k.id, k.ts, b.amount FROM kept k JOIN batch b USING (id, ts);
		END LOOP;
		a := a + $BATCH;
		DELETE FROM dedup_state
		 WHERE ts <= bench_watermark(a) - interval '$HORIZON';
	END LOOP;
END \$\$;

-- wait until the pipeline has (want_worker) or has not a worker
CREATE FUNCTION bench_wait_worker(name text, want_worker boolean, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT (p.worker_pid IS NOT NULL) = want_worker FROM weir.pipelines p
			 WHERE p.name = bench_wait_worker.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END \$\$;

-- wait until the figures the worker publishes after a round say it is done
-- (weir.checkpoint() may return just before that round's figures appear)
CREATE FUNCTION bench_wait_published(name text, want bigint, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT p.lag_rows = 0 AND p.records_in = want FROM weir.pipelines p
			 WHERE p.name = bench_wait_published.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END \$\$;

-- wait until the pipeline's worker publishes this many ids in memory
CREATE FUNCTION bench_wait_windows(name text, want bigint, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT p.windows = want FROM weir.pipelines p
			 WHERE p.name = bench_wait_windows.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END \$\$;

-- the peak of ids in memory and state bytes the worker publishes, sampled
-- every 10 ms from before the pipeline exists until it has read want
-- records: 'windows state_bytes samples'
CREATE FUNCTION bench_sample_peak(name text, want bigint, timeout interval)
RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
	w bigint; b bigint; n bigint; lag bigint;
	max_w bigint := 0; max_b bigint := 0; samples int := 0;
BEGIN
	LOOP
		SELECT p.windows, p.state_bytes, p.records_in, p.lag_rows INTO w, b, n, lag
		  FROM weir.pipelines p WHERE p.name = bench_sample_peak.name;
		IF w IS NOT NULL THEN
			samples := samples + 1;
			max_w := greatest(max_w, w);
			max_b := greatest(max_b, b);
		END IF;
		EXIT WHEN (n = want AND lag = 0) OR clock_timestamp() > deadline;
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN max_w || ' ' || max_b || ' ' || samples;
END \$\$;

-- checkpoints and figures of every weir run, kept after dropping pipelines
CREATE TABLE bench_ckpt (run int, id bigint, worker_start timestamptz,
	committed_at timestamptz, start_delay_ms float8, sync_ms float8, async_ms float8,
	bytes bigint, sink_rows bigint, state_rows bigint, state_deletes bigint, records_in bigint);
CREATE TABLE bench_state (run int, secs float8, windows bigint, state_bytes bigint,
	peak_windows bigint, peak_bytes bigint, chunks bigint, chunk_bytes bigint);
EOF
expect_equal "records loaded" "$(q 'SELECT count(*) FROM ev')" "$N"
progress "partitions: $(q "SELECT string_agg(part || ':' || c, ' ' ORDER BY part) FROM (SELECT part, count(*) c FROM ev GROUP BY part) s")"
EXPECTED=$(q "SELECT $SUMMARY FROM bench_expected")
KEPT=${EXPECTED%% *}
DROPPED=$((N - KEPT))
# The watermark once everything is read, and the ids whose last sighting is
# within the horizon of it: what a restored state must hold.
WATERMARK=$(q "SELECT min(m) FROM (SELECT max(ts) m FROM ev GROUP BY part) s")
LIVE=$(q "SELECT count(*) FROM (SELECT id FROM ev GROUP BY id
								  HAVING max(ts) + interval '$HORIZON' > '$WATERMARK') s")
progress "expected: $KEPT kept, $DROPPED dropped (rows, sum(id), sum(amount), sum(epoch): $EXPECTED);"
progress "  final watermark $WATERMARK, $LIVE ids within the horizon of it"

# --- (e) the read limit -----------------------------------------------------
progress "warm-up read"
expect_equal "warm-up read" "$(q 'SELECT bench_read_limit()')" "$N"
for ((run = 1; run <= RUNS; run++)); do
	progress "read limit, run $run of $RUNS"
	sql_timed 'SELECT bench_read_limit()'
	expect_equal "read limit" "$OUT" "$N"
	record read_limit "$T"
done

# --- (b), (c), (d) plain SQL -------------------------------------------------
for ((run = 1; run <= RUNS; run++)); do
	for kind in sql sql_expiry sql_sink; do
		progress "$kind, run $run of $RUNS"
		q "TRUNCATE dedup_sql, dedup_sql_expiry, dedup_state, dedup_sink" >/dev/null
		q "CHECKPOINT" >/dev/null
		sql_timed "SELECT bench_$kind()"
		record "$kind" "$T"
		case $kind in
		sql) got=$(q "SELECT $SUMMARY FROM dedup_sql") ;;
		sql_expiry) got="$OUT kept, $(q "SELECT count(*) FROM dedup_sql_expiry") left" ;;
		sql_sink) got=$(q "SELECT $SUMMARY FROM dedup_sink") ;;
		esac
		case $kind in
		sql_expiry)
			# everything kept went through the table; what is left is
			# within the horizon of the last watermark
			[ "${got%% *}" = "$KEPT" ] ||
				invalid "$kind" "run $run kept ${got%% *} records, expected $KEPT"
			progress "  $got"
			;;
		*)
			[ "$got" = "$EXPECTED" ] ||
				invalid "$kind" "run $run: output ($got), expected ($EXPECTED)"
			;;
		esac
	done
done
SQL_LEFT=$(q "SELECT count(*) FROM dedup_sql")
SQL_EXPIRY_LEFT=$(q "SELECT count(*) FROM dedup_sql_expiry")
SQL_SINK_STATE_LEFT=$(q "SELECT count(*) FROM dedup_state")
SQL_BYTES=$(q "SELECT pg_total_relation_size('dedup_sql')")
SQL_INDEX_BYTES=$(q "SELECT pg_relation_size('dedup_sql_pkey')")

# --- (a) weir ---------------------------------------------------------------
declare -A RUN_FIGURES=()
WORKER_MS=""
RESTORE=""
RESTORED_STATE=""
# stop_pipeline NAME: weir.stop() and wait for its worker to exit (the wait
# in a transaction of its own, after the stop has woken the launcher).
stop_pipeline() {
	if [ "$(weir_psql -At -c "SELECT weir.stop('$1')" \
		-c "SELECT bench_wait_worker('$1', false, '60 s')" | tail -n 1)" != t ]; then
		problem "$1: the worker did not exit within 60 s of weir.stop()"
		return 1
	fi
}
# weir_run RUN [restore]: one deduplication over the whole backlog.
weir_run() {
	local run=$1 name="dedup_$1" res errf="$DIR/psql.err" samplef="$DIR/sample.out"
	local secs worker_ms records lag out dropped late dead windows bytes wm id got
	local sampler peak_windows peak_bytes samples chunks chunk_bytes

	q "VACUUM weir.pipeline_chunk" >/dev/null
	q "CHECKPOINT" >/dev/null
	progress "dedup, run $run of $RUNS"
	# the peak of the state, from a second session while the worker runs
	weir_psql -At -c "SELECT bench_sample_peak('$name', $N, '$TIMEOUT s')" >"$samplef" 2>&1 &
	sampler=$!
	if ! res=$(weir_psql -At -F ' ' 2>"$errf" <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
SELECT weir.create_dedup('$name', 'ev', id => 'id', event_time => 'ts',
						 horizon => '$HORIZON', start => true) > 0;
SELECT weir.checkpoint('$name', '$TIMEOUT s');
SELECT clock_timestamp() AS bench_t1 \gset
SELECT bench_wait_published('$name', $N, '30 s');
SELECT extract(epoch FROM :'bench_t1'::timestamptz - :'bench_t0'::timestamptz),
	   round(extract(epoch FROM a.backend_start - :'bench_t0'::timestamptz) * 1000, 1),
	   p.records_in, p.lag_rows, p.records_out, p.records_dropped, p.records_late, p.records_dead,
	   p.windows, p.state_bytes, p.watermark = '$WATERMARK'
  FROM weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
 WHERE p.name = '$name';
INSERT INTO bench_ckpt
	SELECT $run, c.id, a.backend_start, c.committed_at, c.start_delay_ms,
		   c.sync_ms, c.async_ms, c.bytes, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
	  FROM weir.checkpoints c JOIN weir.pipeline pl ON pl.id = c.pipeline_id,
		   weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
	 WHERE pl.name = '$name' AND p.name = '$name' AND c.committed_at <= :'bench_t1';
EOF
	); then
		invalid dedup "run $run failed: $(tr '\n' ' ' <"$errf") (weir.pipelines: $(q "SELECT status || ' ' || coalesce(last_error, '') FROM weir.pipelines WHERE name = '$name'"))"
		kill "$sampler" 2>/dev/null || true
		wait "$sampler" || true
		stop_pipeline "$name" || true
		q "SELECT weir.drop_pipeline('$name')" >/dev/null || true
		q "DROP TABLE IF EXISTS $name" >/dev/null || true
		return 0
	fi
	wait "$sampler" || true
	read -r peak_windows peak_bytes samples <<<"$(tail -n 1 "$samplef")"
	id=$(q "SELECT id FROM weir.pipeline WHERE name = '$name'")
	# lines: created, checkpoint id, wait result, figures
	read -r secs worker_ms records lag out dropped late dead windows bytes wm <<<"$(tail -n 1 <<<"$res")"
	got=$(sed -n '2p;3p' <<<"$res" | tr '\n' ' ')
	progress "  checkpoint $(cut -d' ' -f1 <<<"$got") done; worker started after $worker_ms ms; $records in, lag $lag;"
	progress "  $out out, $dropped dropped, $late late, $dead dead; $windows ids, $bytes bytes (peak $peak_windows ids, $peak_bytes bytes; $samples samples)"

	# correctness: everything read, the right watermark and counts, the
	# expected records in the sink
	local bad=""
	[ "$(cut -d' ' -f2 <<<"$got")" = t ] || bad+="records_in/lag_rows not $N/0 in weir.pipelines after the checkpoint ($records/$lag); "
	[ "$wm" = t ] || bad+="watermark $(q "SELECT watermark FROM weir.pipelines WHERE name = '$name'") instead of $WATERMARK; "
	[ "$out $dropped $late $dead" = "$KEPT $DROPPED 0 0" ] ||
		bad+="records out/dropped/late/dead $out/$dropped/$late/$dead, expected $KEPT/$DROPPED/0/0; "
	got=$(q "SELECT $SUMMARY FROM $name")
	[ "$got" = "$EXPECTED" ] || bad+="sink has ($got), expected ($EXPECTED); "
	if [ -n "$bad" ]; then
		invalid dedup "run $run: $bad"
	else
		progress "  sink checked: ($got) = expected"
	fi
	record dedup "$secs"
	read -r chunks chunk_bytes <<<"$(q "SELECT count(*) || ' ' || coalesce(sum(length(data)), 0)
										  FROM weir.pipeline_chunk WHERE pipeline_id = $id")"
	q "INSERT INTO bench_state VALUES ($run, $secs, $windows, $bytes, ${peak_windows:-NULL},
									   ${peak_bytes:-NULL}, $chunks, $chunk_bytes)" >/dev/null
	RUN_FIGURES[$run]="$(awk -v r="$N" -v t="$secs" 'BEGIN { printf "%.0f", r / t }') $windows $bytes $peak_windows $peak_bytes"
	progress "  its checkpoints (id start_delay_ms sync_ms async_ms bytes sink_rows state_rows state_deletes records_in):"
	q "SELECT 'bench:     ' || id || ' ' || round(start_delay_ms::numeric, 1) || ' ' || round(sync_ms::numeric, 1) || ' ' ||
			  round(async_ms::numeric, 1) || ' ' || bytes || ' ' || sink_rows || ' ' || state_rows || ' ' ||
			  state_deletes || ' ' || records_in
		 FROM bench_ckpt WHERE run = $run ORDER BY id" >&2
	progress "  chunks left: $chunks, $chunk_bytes bytes"
	if [ -n "$worker_ms" ]; then
		WORKER_MS="${WORKER_MS:+$WORKER_MS }$worker_ms"
	fi

	if [ "${2:-}" = restore ]; then
		# restore the final state: stop, start, and a checkpoint once running
		progress "  restoring the final state ($windows ids in memory, $LIVE within the horizon)"
		if ! stop_pipeline "$name"; then
			:
		elif ! weir_psql -At -c "SELECT weir.start('$name')" -c "SELECT weir.checkpoint('$name', '$TIMEOUT s')" >/dev/null 2>"$errf"; then
			problem "restore: $(cat "$errf")"
		else
			RESTORE=$(q "SELECT round(duration_ms::numeric, 1) || ' ' || bytes || ' ' || windows
						   FROM weir.restores WHERE pipeline_id = $id
						  ORDER BY restored_at DESC LIMIT 1")
			if [ "$(cut -d' ' -f3 <<<"$RESTORE")" != "$LIVE" ]; then
				problem "restore: restored $(cut -d' ' -f3 <<<"$RESTORE") ids, $LIVE are within the horizon of the watermark"
				INVALID[restore]=1
			fi
			got=$(q "SELECT $SUMMARY FROM $name")
			[ "$got" = "$EXPECTED" ] || problem "restore: the sink changed to ($got), expected ($EXPECTED)"
			# the restored state's size, once the worker has published it
			if [ "$(q "SELECT bench_wait_windows('$name', $LIVE, '10 s')")" = t ]; then
				RESTORED_STATE=$(q "SELECT windows || ' ' || state_bytes FROM weir.pipelines WHERE name = '$name'")
			else
				problem "restore: weir.pipelines did not show $LIVE ids within 10 s (it shows $(q "SELECT windows FROM weir.pipelines WHERE name = '$name'"))"
			fi
		fi
	fi
	stop_pipeline "$name" || true
	q "SELECT weir.drop_pipeline('$name')" >/dev/null
	q "DROP TABLE IF EXISTS $name" >/dev/null
}

for ((run = 1; run <= RUNS; run++)); do
	weir_run "$run" "$([ "$run" = "$RUNS" ] && echo restore)"
done

# --- figures --------------------------------------------------------------
rate() { awk -v r="$N" -v t="$1" 'BEGIN { printf "%.0f", r / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; }	# of times: rate a / rate b
valid() { [ -z "${INVALID[$1]:-}" ] && [ -n "${BEST[$1]:-}" ]; }
figure() {	# figure NAME: its rate, or why there is none
	if [ -n "${INVALID[$1]:-}" ]; then
		echo "$1: invalid (${INVALID[$1]})"
	elif [ -z "${BEST[$1]:-}" ]; then
		echo "$1: not run"
	else
		echo "$1: $(rate "${BEST[$1]}") events/s"
	fi
}

echo "# weir bench/dedup: $N records, 4 partitions, $RATE records per second of event time,"
echo "#  $DUPS% repeats of an id seen up to 30 s before; horizon $HORIZON"
echo "# rates: events/s, each the best of $RUNS runs; dedup: from weir.create_dedup() until"
echo "#  weir.checkpoint() returns with every record processed and checkpointed; sql: $BATCH-position"
echo "#  micro-batches per partition, INSERT ... ON CONFLICT (id) DO NOTHING into a keyed table that keeps"
echo "#  every id; sql_expiry: the same with a DELETE of expired ids after each round (their output lost);"
echo "#  sql_sink: keyed state table with that expiry + insert-only sink (weir's output, bounded state);"
echo "#  read_limit: weir._scan_count()"
echo "events: $N events"
echo "runs: $RUNS runs"
echo "records_kept: $KEPT records"
echo "records_duplicate: $DROPPED records"
figure dedup
figure sql
figure sql_expiry
figure sql_sink
figure read_limit
if [ -n "$WORKER_MS" ]; then
	echo "dedup.worker_start_ms: $(tr ' ' '\n' <<<"$WORKER_MS" | sort -n | head -n 1) ms"
fi
for ((run = 1; run <= RUNS; run++)); do
	if [ -n "${RUN_FIGURES[$run]:-}" ]; then
		echo "dedup.run$run: $(cut -d' ' -f1 <<<"${RUN_FIGURES[$run]}") events/s"
	fi
done
echo "# target: dedup >= 3x sql"
if valid dedup; then
	for kind in sql sql_expiry sql_sink; do
		if valid "$kind"; then
			echo "ratio.dedup_vs_$kind: $(ratio "${BEST[dedup]}" "${BEST[$kind]}")"
		fi
	done
	echo "ratio.dedup_vs_read_limit: $(ratio "${BEST[dedup]}" "${BEST[read_limit]}")"
fi
echo "# weir.pipelines after the last checkpoint (every run the same, checked):"
echo "dedup.records_out: $KEPT records"
echo "dedup.records_dropped: $DROPPED records"
echo "# state: ids in memory (weir.pipelines windows) and state_bytes, weir's accounting of the"
echo "#  pipeline's DSA area (entries and their index table; no DSA size-class rounding or segment"
echo "#  slack); at the end (the index sized for the run's peak), at the peak sampled while consuming,"
echo "#  and after restoring the final state; $LIVE ids are within the horizon of the final watermark"
q "SELECT max(windows), max(state_bytes), round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1),
		  max(peak_windows), max(peak_bytes),
		  round(sum(peak_bytes)::numeric / nullif(sum(peak_windows), 0), 1),
		  max(chunks), max(chunk_bytes)
	 FROM bench_state" | tr '|' ' ' |
	while read -r windows bytes per peak_w peak_b peak_per chunks chunk_bytes; do
		echo "dedup.ids_in_memory: $windows ids"
		echo "dedup.state_bytes: $bytes bytes"
		echo "dedup.bytes_per_id: ${per:-n/a} bytes"
		echo "dedup.peak_ids_in_memory: ${peak_w:-n/a} ids"
		echo "dedup.peak_state_bytes: ${peak_b:-n/a} bytes"
		echo "dedup.peak_bytes_per_id: ${peak_per:-n/a} bytes"
		echo "dedup.chunks_at_end: $chunks chunks"
		echo "dedup.chunk_bytes_at_end: $chunk_bytes bytes"
	done
if [ -n "$RESTORED_STATE" ]; then
	echo "dedup.restored_ids: ${RESTORED_STATE% *} ids"
	echo "dedup.restored_state_bytes: ${RESTORED_STATE#* } bytes"
	echo "dedup.bytes_per_id.restored: $(awk -v w="${RESTORED_STATE% *}" -v b="${RESTORED_STATE#* }" \
		'BEGIN { if (w > 0) printf "%.1f", b / w; else printf "n/a" }') bytes"
fi
echo "# SQL's keyed table after the last run of sql (every id ever seen), and the live rows of the"
echo "#  tables with expiry"
echo "sql.rows_at_end: $SQL_LEFT rows"
echo "sql.table_bytes: $SQL_BYTES bytes"
echo "sql.index_bytes: $SQL_INDEX_BYTES bytes"
echo "sql_expiry.rows_at_end: $SQL_EXPIRY_LEFT rows"
echo "sql_sink.state_rows_at_end: $SQL_SINK_STATE_LEFT rows"
echo "# checkpoints while consuming, all runs (interval 1 s): duration = sync_ms + async_ms;"
echo "#  time_share = checkpoint durations / the measured run times (the rest is reading and judging);"
echo "#  async_share = async_ms / duration; chunk bytes per id = bytes / state_rows written"
q "SELECT count(*), round(count(*)::numeric / count(DISTINCT run), 1),
		  round(max(sync_ms + async_ms)::numeric, 1),
		  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY sync_ms + async_ms)::numeric, 1),
		  round(max(start_delay_ms)::numeric, 1), max(state_rows), max(bytes), sum(sink_rows) / count(DISTINCT run),
		  round(sum(bytes)::numeric / nullif(sum(state_rows), 0), 1),
		  round((sum(sync_ms + async_ms) / (SELECT sum(secs) * 1000 FROM bench_state))::numeric, 3),
		  round((sum(async_ms) / nullif(sum(sync_ms + async_ms), 0))::numeric, 3)
	 FROM bench_ckpt" | tr '|' ' ' |
	while read -r count per_run max p50 delay rows bytes sink per_id share async; do
		echo "checkpoint.count: $count checkpoints"
		echo "checkpoint.per_run: $per_run checkpoints"
		echo "checkpoint.max_ms: $max ms"
		echo "checkpoint.p50_ms: $p50 ms"
		echo "checkpoint.max_start_delay_ms: $delay ms"
		echo "checkpoint.max_state_rows: $rows ids"
		echo "checkpoint.max_bytes: $bytes bytes"
		echo "checkpoint.sink_rows_per_run: $sink rows"
		echo "checkpoint.chunk_bytes_per_id: ${per_id:-n/a} bytes"
		echo "checkpoint.time_share: $share"
		echo "checkpoint.async_share: ${async:-n/a}"
	done
if [ -n "$RESTORE" ]; then
	read -r ms bytes ids <<<"$RESTORE"
	echo "# restore of the final state after the last run (weir.restores)"
	echo "restore.ms: $ms ms"
	echo "restore.bytes: $bytes bytes"
	echo "restore.ids: $ids ids"
fi
if [ "${#PROBLEMS[@]}" -gt 0 ]; then
	echo "# problems:"
	for p in "${PROBLEMS[@]}"; do
		echo "#  $p"
	done
fi
[ "${#INVALID[@]}" -eq 0 ]
