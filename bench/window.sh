#!/usr/bin/env bash
# bench/window.sh — how fast does a weir pipeline aggregate a backlog into
# windows, compared with the best plain-SQL alternative and with the limit of
# reading the same rows?
#
#   N=2000000 bench/window.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N events
# (default 2,000,000) over 10,000 keys into a 4-partition topic ev(k, v, ts),
# ts rising evenly over one hour (~3.5 events per (key, minute)), and
# measures in one run, each rate the best of RUNS runs:
#   (a) weir: a pipeline with count(*) AS n, sum(v) AS total per key
#       consuming the whole backlog, from weir.start() until
#       weir.checkpoint() returns (every row processed, its results in the
#       sink and checkpointed): tumbling 1 minute, hopping 5 minutes every
#       minute, session with a 30 s gap.  One pipeline at a time;
#   (b) plain SQL: micro-batches of 100,000 positions per partition, each
#       one INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE into a
#       sink table with PRIMARY KEY (k, window_start), all batches in one
#       PL/pgSQL call; for tumbling and hopping (5 windows per event);
#   (c) the read limit: weir._scan_count() over ranges of 100,000 positions
#       per partition: the PK index through the low-level scan API, as the
#       pipeline worker reads, with nothing done per row but counting.
# It also reports, per weir pipeline kind: bytes of state per open
# (key, window), the checkpoints taken while consuming (duration = sync_ms +
# async_ms, max and p50; the largest gap between consecutive commits,
# counting from the worker's start; the largest start delay), and the
# restore of the final state (stop, start, weir.checkpoint(); the newest
# weir.restores row).
#
# Correctness: after every weir run the sink must hold exactly the closed
# windows, compared as (rows, sum(n), sum(total)) with an oracle: the plain
# SQL sinks of (b) restricted to window_end <= watermark for tumbling and
# hopping, a window-function query for sessions; and the watermark must be
# the smallest of the partitions' largest ts.  A failed check prints the
# figure as `invalid`, and the script exits 1 after printing everything.
#
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after the measured statements; psql start-up and connecting are
# left out.  The weir figure includes starting the worker (launcher wake-up,
# fork, restore of an empty state); <kind>.worker_start_ms says how much of
# it that was.
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value` (targets in the comment line above each).
# Progress goes to stderr.
#
# Knobs: N (events, default 2000000), RUNS (default 3), KEYS (default
# 10000), WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default 600).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
KEYS="${KEYS:-10000}"
TIMEOUT="${TIMEOUT:-600}"
BATCH=100000		# positions per partition per statement in (b) and (c)
KINDS=(tumbling hopping session)

# Build, install, and a throwaway cluster (DIR, PORT, progress()).
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" window

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
expect_equal() {
	if [ "$2" != "$3" ]; then
		echo "bench: $1: got '$2', expected '$3'" >&2
		exit 1
	fi
}

# --- data -----------------------------------------------------------------
progress "loading $N events over $KEYS keys into topic ev (4 partitions)"
ORIGIN="timestamptz '1970-01-01 00:00:00+00'"
weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k bigint, v bigint, ts timestamptz', partitions => 4, key => 'k');
-- random keys, ts rising evenly over one hour: each partition (a hash of k)
-- is in event-time order, so nothing is late and the watermark is exact
SELECT setseed(0.42);
INSERT INTO ev (k, v, ts)
	SELECT floor(random() * $KEYS)::bigint, floor(random() * 1000)::bigint,
		   timestamptz '2026-01-01 00:00:00+00' + i * (3600.0 / $N) * interval '1 second'
	  FROM generate_series(0, $N - 1) i;
VACUUM ANALYZE ev;
CHECKPOINT;

-- (c) the read limit: every position, $BATCH per partition per call,
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

-- (b) plain SQL micro-batches into sinks shaped like weir's
CREATE TABLE sql_tumbling (k bigint NOT NULL, window_start timestamptz NOT NULL,
	window_end timestamptz NOT NULL, n bigint, total numeric, PRIMARY KEY (k, window_start));
CREATE TABLE sql_hopping (LIKE sql_tumbling INCLUDING ALL);

CREATE FUNCTION bench_sql_tumbling() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			INSERT INTO sql_tumbling AS s (k, window_start, window_end, n, total)
			SELECT k, date_bin('1 minute', ts, $ORIGIN),
				   date_bin('1 minute', ts, $ORIGIN) + interval '1 minute',
				   count(*), sum(v)
			  FROM ev
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			 GROUP BY 1, 2
			ON CONFLICT (k, window_start) DO UPDATE
				SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;
		END LOOP;
		a := a + $BATCH;
	END LOOP;
END \$\$;

CREATE FUNCTION bench_sql_hopping() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint;
BEGIN
	SELECT max(pos) INTO hi FROM ev;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
			INSERT INTO sql_hopping AS s (k, window_start, window_end, n, total)
			SELECT k, w.start, w.start + interval '5 minutes', count(*), sum(v)
			  FROM ev
			 CROSS JOIN LATERAL (
				SELECT date_bin('1 minute', ts, $ORIGIN) - g * interval '1 minute' AS start
				  FROM generate_series(0, 4) g) w
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			 GROUP BY 1, 2
			ON CONFLICT (k, window_start) DO UPDATE
				SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;
		END LOOP;
		a := a + $BATCH;
	END LOOP;
END \$\$;

-- create a pipeline; 'ok', or why not when the window kind is not supported
CREATE FUNCTION bench_create(name text, windowing weir.windowing) RETURNS text
LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM weir.create_pipeline(name, 'ev', key => 'k', event_time => 'ts',
		windowing => windowing, aggregates => 'count(*) AS n, sum(v) AS total',
		start => false);
	RETURN 'ok';
EXCEPTION WHEN feature_not_supported THEN
	RETURN 'not available: ' || SQLERRM;
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

-- wait until the pipeline's worker publishes this many open windows
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

-- checkpoints and restores of every weir run, kept after dropping pipelines
CREATE TABLE bench_ckpt (kind text, run int, id bigint, worker_start timestamptz,
	committed_at timestamptz, start_delay_ms float8, sync_ms float8, async_ms float8,
	bytes bigint, sink_rows bigint, state_rows bigint, state_deletes bigint, records_in bigint);
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint);
EOF
expect_equal "events loaded" "$(q 'SELECT count(*) FROM ev')" "$N"
progress "partitions: $(q "SELECT string_agg(part || ':' || c, ' ' ORDER BY part) FROM (SELECT part, count(*) c FROM ev GROUP BY part) s")"
# The watermark once everything is read: the smallest partition maximum.
WATERMARK=$(q "SELECT min(m) FROM (SELECT max(ts) m FROM ev GROUP BY part) s")
progress "expected final watermark: $WATERMARK"

# --- (c) the read limit ---------------------------------------------------
progress "warm-up read"
expect_equal "warm-up read" "$(q 'SELECT bench_read_limit()')" "$N"
for ((run = 1; run <= RUNS; run++)); do
	progress "read limit, run $run of $RUNS"
	sql_timed 'SELECT bench_read_limit()'
	expect_equal "read limit" "$OUT" "$N"
	record read_limit "$T"
done

# --- (b) plain SQL ----------------------------------------------------------
for ((run = 1; run <= RUNS; run++)); do
	for kind in tumbling hopping; do
		progress "sql_$kind, run $run of $RUNS"
		q "TRUNCATE sql_$kind" >/dev/null
		q "CHECKPOINT" >/dev/null
		sql_timed "SELECT bench_sql_$kind()"
		record "sql_$kind" "$T"
		expect_equal "sum(n) of sql_$kind" "$(q "SELECT sum(n) FROM sql_$kind")" \
			"$([ $kind = tumbling ] && echo "$N" || echo $((5 * N)))"
	done
done
q "VACUUM ANALYZE sql_tumbling" >/dev/null
q "VACUUM ANALYZE sql_hopping" >/dev/null

# --- (a) weir pipelines -----------------------------------------------------
windowing() {
	case "$1" in
	tumbling) echo "weir.tumbling('1 minute')" ;;
	hopping) echo "weir.hopping('5 minutes', '1 minute')" ;;
	session) echo "weir.session('30 seconds')" ;;
	esac
}

# The closed windows an exact engine must have written: rows, sum(n),
# sum(total) with window_end <= the final watermark.
declare -A ORACLE=()
oracle() {
	if [ -n "${ORACLE[$1]:-}" ]; then
		echo "${ORACLE[$1]}"
		return
	fi
	case "$1" in
	tumbling | hopping)
		ORACLE[$1]=$(q "SELECT count(*) || ' ' || sum(n) || ' ' || sum(total) FROM sql_$1
						 WHERE window_end <= '$WATERMARK'")
		;;
	session)
		# a record at t covers [t, t + gap); touching sessions merge, so a
		# new session starts where the gap to the key's previous record is
		# at least the gap, and ends at its last record + gap
		ORACLE[$1]=$(q "
			WITH marked AS (
				SELECT k, ts, v,
					   CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) < interval '30 seconds'
							THEN 0 ELSE 1 END AS first
				  FROM ev),
			numbered AS (
				SELECT k, ts, v,
					   sum(first) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS session
				  FROM marked),
			sessions AS (
				SELECT k, max(ts) + interval '30 seconds' AS window_end, count(*) AS n, sum(v) AS total
				  FROM numbered GROUP BY k, session)
			SELECT count(*) || ' ' || sum(n) || ' ' || sum(total) FROM sessions
			 WHERE window_end <= '$WATERMARK'")
		;;
	esac
	echo "${ORACLE[$1]}"
}

declare -A AVAILABLE=()
declare -A RESTORE=()
declare -A RESTORED_STATE=()
# stop_pipeline NAME: weir.stop() and wait for its worker to exit (the wait
# in a transaction of its own, after the stop has woken the launcher).
stop_pipeline() {
	if [ "$(weir_psql -At -c "SELECT weir.stop('$1')" \
		-c "SELECT bench_wait_worker('$1', false, '60 s')" | tail -n 1)" != t ]; then
		problem "$1: the worker did not exit within 60 s of weir.stop()"
		return 1
	fi
}
# weir_run KIND RUN [restore]: one pipeline over the whole backlog.
weir_run() {
	local kind=$1 run=$2 name="w_$1_$2" created res errf="$DIR/psql.err"
	local secs worker_ms records lag windows bytes wm pid id got want

	q "VACUUM weir.pipeline_state" >/dev/null
	q "CHECKPOINT" >/dev/null
	created=$(q "SELECT bench_create('$name', $(windowing "$kind"))")
	if [ "$created" != ok ]; then
		AVAILABLE[$kind]="$created"
		problem "$kind: $created"
		return 0
	fi
	AVAILABLE[$kind]=ok
	id=$(q "SELECT id FROM weir.pipeline WHERE name = '$name'")

	progress "$kind, run $run of $RUNS"
	if ! res=$(weir_psql -At -F ' ' 2>"$errf" <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
SELECT weir.start('$name');
SELECT weir.checkpoint('$name', '$TIMEOUT s');
SELECT clock_timestamp() AS bench_t1 \gset
SELECT bench_wait_published('$name', $N, '30 s');
SELECT extract(epoch FROM :'bench_t1'::timestamptz - :'bench_t0'::timestamptz),
	   round(extract(epoch FROM a.backend_start - :'bench_t0'::timestamptz) * 1000, 1),
	   p.records_in, p.lag_rows, p.windows, p.state_bytes, p.watermark = '$WATERMARK', p.worker_pid
  FROM weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
 WHERE p.name = '$name';
INSERT INTO bench_ckpt
	SELECT '$kind', $run, c.id, a.backend_start, c.committed_at, c.start_delay_ms,
		   c.sync_ms, c.async_ms, c.bytes, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
	  FROM weir.checkpoints c, weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
	 WHERE c.pipeline_id = $id AND p.name = '$name' AND c.committed_at <= :'bench_t1';
EOF
	); then
		INVALID[$kind]="run $run failed: $(tr '\n' ' ' <"$errf")"
		problem "$kind run $run: $(cat "$errf") (weir.pipelines: $(q "SELECT status || ' ' || coalesce(last_error, '') FROM weir.pipelines WHERE name = '$name'"))"
		stop_pipeline "$name" || true
		q "SELECT weir.drop_pipeline('$name')" >/dev/null || true
		q "DROP TABLE IF EXISTS $name" >/dev/null || true
		return 0
	fi
	# lines: start (empty), checkpoint id, wait result, figures
	read -r secs worker_ms records lag windows bytes wm pid <<<"$(tail -n 1 <<<"$res")"
	got=$(sed -n '2p;3p' <<<"$res" | tr '\n' ' ')
	progress "  checkpoint $(cut -d' ' -f1 <<<"$got") done; worker started after $worker_ms ms; $records records in, lag $lag; $windows windows, $bytes bytes"

	# correctness: everything read, the right watermark, the closed windows
	# in the sink
	local bad=""
	[ "$(cut -d' ' -f2 <<<"$got")" = t ] || bad+="records_in/lag_rows not $N/0 in weir.pipelines after the checkpoint ($records/$lag); "
	[ "$wm" = t ] || bad+="watermark $(q "SELECT watermark FROM weir.pipelines WHERE name = '$name'") instead of $WATERMARK; "
	want=$(oracle "$kind")
	got=$(q "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $name")
	[ "$got" = "$want" ] || bad+="sink has (rows, sum(n), sum(total)) = ($got), the closed windows are ($want); "
	if [ -n "$bad" ]; then
		INVALID[$kind]="run $run: $bad"
		problem "$kind run $run: $bad"
	else
		progress "  sink checked: ($got) = closed windows"
	fi
	record "$kind" "$secs"
	q "INSERT INTO bench_state VALUES ('$kind', $run, $secs, $windows, $bytes)" >/dev/null
	progress "  its checkpoints (id start_delay_ms sync_ms async_ms sink_rows state_rows state_deletes records_in):"
	q "SELECT 'bench:     ' || id || ' ' || round(start_delay_ms::numeric, 1) || ' ' || round(sync_ms::numeric, 1) || ' ' ||
			  round(async_ms::numeric, 1) || ' ' || sink_rows || ' ' || state_rows || ' ' || state_deletes || ' ' || records_in
		 FROM bench_ckpt WHERE kind = '$kind' AND run = $run ORDER BY id" >&2
	if [ -n "$worker_ms" ]; then
		WORKER_MS[$kind]="${WORKER_MS[$kind]:+${WORKER_MS[$kind]} }$worker_ms"
	fi

	if [ "${3:-}" = restore ]; then
		# restore the final state: stop, start, and a checkpoint once running
		progress "  restoring $kind's final state ($windows windows)"
		if ! stop_pipeline "$name"; then
			:
		elif ! weir_psql -At -c "SELECT weir.start('$name')" -c "SELECT weir.checkpoint('$name', '$TIMEOUT s')" >/dev/null 2>"$errf"; then
			problem "$kind restore: $(cat "$errf")"
		else
			RESTORE[$kind]=$(q "SELECT round(duration_ms::numeric, 1) || ' ' || bytes || ' ' || windows
								  FROM weir.restores WHERE pipeline_id = $id
								 ORDER BY restored_at DESC LIMIT 1")
			if [ "$(cut -d' ' -f3 <<<"${RESTORE[$kind]}")" != "$windows" ]; then
				problem "$kind restore: restored $(cut -d' ' -f3 <<<"${RESTORE[$kind]}") windows, $windows were open"
			fi
			got=$(q "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $name")
			[ "$got" = "$want" ] || problem "$kind restore: the sink changed to ($got), expected ($want)"
			# the restored state's size, once the worker has published it
			if [ "$(q "SELECT bench_wait_windows('$name', $windows, '10 s')")" = t ]; then
				RESTORED_STATE[$kind]=$(q "SELECT windows || ' ' || state_bytes FROM weir.pipelines WHERE name = '$name'")
			else
				problem "$kind restore: weir.pipelines did not show $windows windows within 10 s (it shows $(q "SELECT windows FROM weir.pipelines WHERE name = '$name'"))"
			fi
		fi
	fi
	stop_pipeline "$name" || true
	q "SELECT weir.drop_pipeline('$name')" >/dev/null
	q "DROP TABLE IF EXISTS $name" >/dev/null
}

declare -A WORKER_MS=()
for ((run = 1; run <= RUNS; run++)); do
	for kind in "${KINDS[@]}"; do
		[ "${AVAILABLE[$kind]:-ok}" = ok ] || continue
		weir_run "$kind" "$run" "$([ "$run" = "$RUNS" ] && echo restore)"
	done
done

# --- figures --------------------------------------------------------------
rate() { awk -v r="$N" -v t="$1" 'BEGIN { printf "%.0f", r / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; }	# of times: rate a / rate b
weir_rate() {
	if [ "${AVAILABLE[$1]:-}" != ok ]; then
		echo "$1: ${AVAILABLE[$1]:-not run}"
	elif [ -n "${INVALID[$1]:-}" ]; then
		echo "$1: invalid (${INVALID[$1]})"
	else
		echo "$1: $(rate "${BEST[$1]}") events/s"
	fi
}
valid() { [ "${AVAILABLE[$1]:-}" = ok ] && [ -z "${INVALID[$1]:-}" ] && [ -n "${BEST[$1]:-}" ]; }

echo "# weir bench/window: $N events, $KEYS keys, 4 partitions, ts over one hour; count(*) + sum(int8)"
echo "# rates: events/s, each the best of $RUNS runs; weir: from weir.start() until weir.checkpoint()"
echo "#  returns with every event processed and checkpointed; sql: $BATCH-position micro-batches"
echo "#  per partition, INSERT ... GROUP BY ... ON CONFLICT DO UPDATE; read_limit: weir._scan_count()"
echo "events: $N events"
echo "runs: $RUNS runs"
for kind in "${KINDS[@]}"; do
	weir_rate "$kind"
done
echo "sql_tumbling: $(rate "${BEST[sql_tumbling]}") events/s"
echo "sql_hopping: $(rate "${BEST[sql_hopping]}") events/s"
echo "read_limit: $(rate "${BEST[read_limit]}") events/s"
for kind in "${KINDS[@]}"; do
	if [ -n "${WORKER_MS[$kind]:-}" ]; then
		echo "$kind.worker_start_ms: $(tr ' ' '\n' <<<"${WORKER_MS[$kind]}" | sort -n | head -n 1) ms"
	fi
done
echo "# targets: tumbling >= 10x sql, >= 0.4x read limit; hopping >= 4x sql"
if valid tumbling; then
	echo "ratio.tumbling_vs_sql: $(ratio "${BEST[tumbling]}" "${BEST[sql_tumbling]}")"
	echo "ratio.tumbling_vs_read_limit: $(ratio "${BEST[tumbling]}" "${BEST[read_limit]}")"
fi
if valid hopping; then
	echo "ratio.hopping_vs_sql_hopping: $(ratio "${BEST[hopping]}" "${BEST[sql_hopping]}")"
fi
echo "# shared-memory bytes per open (key, window), target <= 64 for count + sum over int8:"
echo "#  weir.pipelines state_bytes / windows, state_bytes being weir's accounting of the pipeline's"
echo "#  DSA area (requested sizes of the windows and their index table; no DSA size-class rounding"
echo "#  or segment slack); at the end of a run (the index sized for the run's peak), and after"
echo "#  restoring that state (the index sized for it)"
q "SELECT kind || ' ' || max(windows) || ' ' || round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1)
	 FROM bench_state GROUP BY kind ORDER BY array_position(ARRAY['tumbling', 'hopping', 'session'], kind)" |
	while read -r kind windows per; do
		echo "open_windows.$kind: $windows windows"
		echo "bytes_per_window.$kind: ${per:-n/a} bytes"
		if [ -n "${RESTORED_STATE[$kind]:-}" ]; then
			echo "bytes_per_window.$kind.restored: $(awk -v w="${RESTORED_STATE[$kind]% *}" -v b="${RESTORED_STATE[$kind]#* }" \
				'BEGIN { if (w > 0) printf "%.1f", b / w; else printf "n/a" }') bytes"
		fi
	done
echo "# checkpoints while consuming, all runs (interval 1 s): duration = sync_ms + async_ms;"
echo "#  gap = time between consecutive commits, the first counted from the worker's start;"
echo "#  time_share = checkpoint durations / the measured run times (the rest is reading and aggregating)"
q "SELECT kind, count(*), round(max(sync_ms + async_ms)::numeric, 1),
		  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY sync_ms + async_ms)::numeric, 1),
		  round(max(gap_ms)::numeric, 1), round(max(start_delay_ms)::numeric, 1),
		  max(state_rows), max(bytes),
		  round((sum(sync_ms + async_ms) / (SELECT sum(secs) * 1000 FROM bench_state s WHERE s.kind = c.kind))::numeric, 3)
	 FROM (SELECT *, extract(epoch FROM committed_at - lag(committed_at, 1, worker_start)
			 OVER (PARTITION BY kind, run ORDER BY id)) * 1000 AS gap_ms FROM bench_ckpt) c
	GROUP BY kind ORDER BY array_position(ARRAY['tumbling', 'hopping', 'session'], kind)" | tr '|' ' ' |
	while read -r kind count max p50 gap delay rows bytes share; do
		echo "checkpoint.$kind.count: $count checkpoints"
		echo "checkpoint.$kind.max_ms: $max ms"
		echo "checkpoint.$kind.p50_ms: $p50 ms"
		echo "checkpoint.$kind.max_gap_ms: $gap ms"
		echo "checkpoint.$kind.max_start_delay_ms: $delay ms"
		echo "checkpoint.$kind.max_state_rows: $rows rows"
		echo "checkpoint.$kind.max_bytes: $bytes bytes"
		echo "checkpoint.$kind.time_share: $share"
	done
echo "# restore of the final state after the last run (weir.restores)"
for kind in "${KINDS[@]}"; do
	if [ -n "${RESTORE[$kind]:-}" ]; then
		read -r ms bytes windows <<<"${RESTORE[$kind]}"
		echo "restore.$kind.ms: $ms ms"
		echo "restore.$kind.bytes: $bytes bytes"
		echo "restore.$kind.windows: $windows windows"
	fi
done
if [ "${#PROBLEMS[@]}" -gt 0 ]; then
	echo "# problems:"
	for p in "${PROBLEMS[@]}"; do
		echo "#  $p"
	done
fi
[ "${#INVALID[@]}" -eq 0 ]
