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
# measures in one run, each rate the best of RUNS runs (in rounds: a run
# of each figure per round, so that all come from the same stretch of time):
#   (a) weir: a pipeline with count(*) AS n, sum(v) AS total per key
#       consuming the whole backlog, from weir.start() until
#       weir.checkpoint() returns (every row processed, its results in the
#       sink and checkpointed): tumbling 1 minute, hopping 5 minutes every
#       minute, session with a 30 s gap.  One pipeline at a time.  And
#       tumbling_inline: the tumbling pipeline with weir.checkpoint_writer
#       off, its worker writing its checkpoints itself (what the checkpoint
#       writer, a second process, gains);
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
#   (d) the checkpoint interval sustained while consuming: a tumbling
#       pipeline that has read the backlog keeps running while one producer
#       session inserts new events as fast as it can for SUSTAIN_SECS
#       seconds (batches of 10,000 rows, a transaction each, event time going
#       on at the backlog's pace, so windows keep closing); then
#       weir.checkpoint() waits until it has caught up.  Figures: the
#       producer's rate, the pipeline's lag when the producer stopped, and
#       the checkpoints committed meanwhile: count, gaps between consecutive
#       commits (p50, max: the 1 s interval held if these stay near 1 s),
#       durations.  The sink is checked against a GROUP BY over the topic.
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
# 10000), WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default 600),
# SUSTAIN_SECS (default 20; 0 leaves (d) out), WEIR_BENCH_INSTALLED
# (bench/common.sh), BASELINE=<git rev> (the (a) figures of that build too,
# run in the same rounds: baseline.tumbling, ratio.tumbling_vs_baseline, ...;
# not (d); bench/README.md).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
KEYS="${KEYS:-10000}"
TIMEOUT="${TIMEOUT:-600}"
SUSTAIN_SECS="${SUSTAIN_SECS:-20}"
BATCH=100000		# positions per partition per statement in (b) and (c)
KINDS=(tumbling hopping session tumbling_inline)
TOPICS=(ev)

# Build, install, a throwaway cluster (DIR, PORT, progress()), bench/lib.sh;
# with BASELINE=<rev>, that build and its cluster too.
BENCH_WITH_BASELINE=1
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" window

# --- data -----------------------------------------------------------------
progress "loading $N events over $KEYS keys into topic ev (4 partitions)"
ORIGIN="timestamptz '1970-01-01 00:00:00+00'"
# into both clusters with BASELINE (lib.sh, bench_builds), the current one last
for build in $(bench_builds); do
	bench_use "$build"
	[ -z "$BASELINE" ] || progress "  into the $build build's cluster"
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

-- (b) plain SQL micro-batches into sinks shaped like weir's
CREATE TABLE sql_tumbling (k bigint NOT NULL, window_start timestamptz NOT NULL,
	window_end timestamptz NOT NULL, n bigint, total numeric, PRIMARY KEY (k, window_start));
CREATE TABLE sql_hopping (LIKE sql_tumbling INCLUDING ALL);

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

-- figures of every weir run, kept after dropping pipelines
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint);
EOF
	# (c) the read limit, and what the weir runs need
	create_bench_helpers

	batch_function bench_sql_tumbling <<EOF
			INSERT INTO sql_tumbling AS s (k, window_start, window_end, n, total)
			SELECT k, date_bin('1 minute', ts, $ORIGIN),
				   date_bin('1 minute', ts, $ORIGIN) + interval '1 minute',
				   count(*), sum(v)
			  FROM ev
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			 GROUP BY 1, 2
			ON CONFLICT (k, window_start) DO UPDATE
				SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;
EOF

	batch_function bench_sql_hopping <<EOF
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
EOF
done
baseline_check_data
expect_equal "events loaded" "$(q 'SELECT count(*) FROM ev')" "$N"
progress "partitions: $(partition_counts ev)"
# The watermark once everything is read: the smallest partition maximum.
WATERMARK=$(q "SELECT min(m) FROM (SELECT max(ts) m FROM ev GROUP BY part) s")
progress "expected final watermark: $WATERMARK"

# --- (c) the read limit ---------------------------------------------------
read_limit_warm_up

# --- (b) plain SQL ----------------------------------------------------------
# sql_round RUN: one run of each SQL figure (the rounds: see the end)
sql_round() {
	local kind
	for kind in tumbling hopping; do
		sql_run "sql_$kind" "$1" "sql_$kind"
		expect_equal "sum(n) of sql_$kind" "$(q "SELECT sum(n) FROM sql_$kind")" \
			"$([ $kind = tumbling ] && echo "$N" || echo $((5 * N)))"
		q "VACUUM ANALYZE sql_$kind" >/dev/null	# for the oracle's queries
	done
}

# --- (a) weir pipelines -----------------------------------------------------
windowing() {
	case "${1%_inline}" in
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
	*_inline)
		ORACLE[$1]=$(oracle "${1%_inline}")
		;;
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
declare -A RESTORES=()
declare -A RESTORED_STATES=()
# weir_run KIND RUN [restore]: one pipeline over the whole backlog.
weir_run() {
	local kind=$1 run=$2 name="w_$1_$2" created got want

	q "VACUUM weir.pipeline_chunk" >/dev/null
	q "CHECKPOINT" >/dev/null
	# the worker reads the setting when it starts
	case "$kind" in
	*_inline) q "ALTER SYSTEM SET weir.checkpoint_writer = off" >/dev/null ;;
	*) q "ALTER SYSTEM RESET weir.checkpoint_writer" >/dev/null ;;
	esac
	q "SELECT pg_reload_conf()" >/dev/null
	created=$(q "SELECT bench_create('$name', $(windowing "$kind"))")
	if [ "$created" != ok ]; then
		AVAILABLE[$kind]="$created"
		problem "$kind: $created"
		return 0
	fi
	AVAILABLE[$kind]=ok

	run_pipeline "$kind" "$run" "$name" "SELECT weir.start('$name')" "" || return 0
	progress "  $WINDOWS windows, $BYTES bytes"

	# correctness: everything read, the right watermark, the closed windows
	# in the sink
	want=$(oracle "$kind")
	got=$(q "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $name")
	[ "$got" = "$want" ] || BAD+="sink has (rows, sum(n), sum(total)) = ($got), the closed windows are ($want); "
	if [ -n "$BAD" ]; then
		invalid "$kind" "run $run: $BAD"
	else
		progress "  sink checked: ($got) = closed windows"
	fi
	record "$kind" "$SECS"
	q "INSERT INTO bench_state VALUES ('$kind', $run, $SECS, $WINDOWS, $BYTES)" >/dev/null

	if [ "${3:-}" = restore ]; then
		progress "  restoring $kind's final state ($WINDOWS windows)"
		if restore_pipeline "$name" "$ID" "$kind "; then
			RESTORES[$kind]=$RESTORE
			RESTORED_STATES[$kind]=$RESTORED_STATE
			if [ "${RESTORE##* }" != "$WINDOWS" ]; then
				problem "$kind restore: restored ${RESTORE##* } windows, $WINDOWS were open"
			fi
			got=$(q "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $name")
			[ "$got" = "$want" ] || problem "$kind restore: the sink changed to ($got), expected ($want)"
		fi
	fi
	drop_pipeline "$name"
}

# Round after round, a run of each figure: the read limit, the SQL, weir
# (lib.sh, read_limit_run); the oracle comes from the first round's SQL.
# With BASELINE, each weir run on the baseline too, just before or after
# (lib.sh, baseline_before), checked against the oracle of the current
# cluster, where the SQL ran (the same topic on both: baseline_check_data).
for ((run = 1; run <= RUNS; run++)); do
	ROUND=$run
	read_limit_run "$run"
	sql_round "$run"
	if [ -n "$BASELINE" ] && [ "$run" = 1 ]; then
		for kind in "${KINDS[@]}"; do
			ORACLE[$kind]=$(oracle "$kind")
		done
	fi
	for kind in "${KINDS[@]}"; do
		[ "${AVAILABLE[$kind]:-ok}" = ok ] || continue
		baseline_before weir_run "$kind" "$run"
		weir_run "$kind" "$run" "$([ "$run" = "$RUNS" ] && echo restore)"
		baseline_after weir_run "$kind" "$run"
	done
done

# --- (d) checkpoints while a producer keeps the pipeline busy --------------
SUSTAINED=""
sustained_run() {
	local name=w_sustained res got want
	local -a f

	progress "sustained: a tumbling pipeline reads the backlog, then a producer runs for $SUSTAIN_SECS s"
	q "ALTER SYSTEM RESET weir.checkpoint_writer" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
	weir_psql -q >/dev/null <<EOF
-- new events as fast as one session can insert them, for secs seconds, in
-- transactions of batch rows; event time goes on after the backlog's at its
-- pace.  Returns how many it inserted.
CREATE PROCEDURE bench_produce(secs float8, batch int, INOUT produced bigint)
LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
	produced := 0;
	WHILE clock_timestamp() < deadline LOOP
		INSERT INTO ev (k, v, ts)
			SELECT floor(random() * $KEYS)::bigint, floor(random() * 1000)::bigint,
				   timestamptz '2026-01-01 00:00:00+00' + ($N + produced + g) * (3600.0 / $N) * interval '1 second'
			  FROM generate_series(0, batch - 1) g;
		produced := produced + batch;
		COMMIT;
	END LOOP;
END \$\$;
EOF
	if [ "$(q "SELECT bench_create('$name', weir.tumbling('1 minute'))")" != ok ]; then
		problem "sustained: the pipeline could not be created"
		return 0
	fi
	q "SELECT weir.start('$name')" >/dev/null
	q "SELECT weir.checkpoint('$name', '$TIMEOUT s')" >/dev/null
	if ! res=$(weir_psql -At -F ' ' <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
CALL bench_produce($SUSTAIN_SECS, 10000, NULL);
SELECT clock_timestamp() AS bench_t1 \gset
SELECT p.lag_rows FROM weir.pipelines p WHERE p.name = '$name';
SELECT weir.checkpoint('$name', '$TIMEOUT s') > 0;
SELECT extract(epoch FROM clock_timestamp() - :'bench_t1'::timestamptz);
-- the checkpoints committed while the producer ran: gaps between
-- consecutive ones, and their durations
WITH c AS (
	SELECT c.committed_at, c.sync_ms + c.async_ms AS ms, c.sync_ms,
		   extract(epoch FROM c.committed_at - lag(c.committed_at) OVER (ORDER BY c.id)) * 1000 AS gap_ms
	  FROM weir.checkpoints c JOIN weir.pipeline pl ON pl.id = c.pipeline_id
	 WHERE pl.name = '$name' AND c.committed_at BETWEEN :'bench_t0' AND :'bench_t1')
SELECT count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY gap_ms)::numeric, 1),
	   round(max(gap_ms)::numeric, 1), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
	   round(max(ms)::numeric, 1), round(max(sync_ms)::numeric, 1),
	   extract(epoch FROM :'bench_t1'::timestamptz - :'bench_t0'::timestamptz)
  FROM c;
EOF
	); then
		problem "sustained: the run failed"
		drop_pipeline "$name"
		return 0
	fi
	# lines: CALL's result (produced), lag, checkpoint, catch-up secs, figures
	mapfile -t f <<<"$res"
	SUSTAINED="${f[0]} ${f[1]} ${f[3]} ${f[4]}"
	want=$(q "SELECT count(*) || ' ' || sum(n) || ' ' || sum(total) FROM (
				SELECT k, date_bin('1 minute', ts, $ORIGIN) AS window_start, count(*) AS n, sum(v) AS total
				  FROM ev GROUP BY 1, 2) o
			   WHERE window_start + interval '1 minute' <= (SELECT watermark FROM weir.pipelines WHERE name = '$name')")
	got=$(q "SELECT count(*) || ' ' || coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $name")
	if [ "$got" != "$want" ]; then
		invalid sustained "the sink has (rows, sum(n), sum(total)) = ($got), a GROUP BY over the topic ($want)"
	else
		progress "  sink checked: ($got) = GROUP BY over the topic's closed windows"
	fi
	drop_pipeline "$name"
}
if [ "$SUSTAIN_SECS" != 0 ]; then
	sustained_run
fi

# --- figures --------------------------------------------------------------
# weir_rate KIND: as figure, or why the window kind is not available.
weir_rate() {
	if [ "${AVAILABLE[$1]:-}" != ok ]; then
		echo "$1: ${AVAILABLE[$1]:-not run}"
	else
		figure "$1"
	fi
}
valid_kind() { [ "${AVAILABLE[$1]:-}" = ok ] && valid "$1"; }

echo "# weir bench/window: $N events, $KEYS keys, 4 partitions, ts over one hour; count(*) + sum(int8)"
echo "# rates: events/s, each the best of $RUNS runs; weir: from weir.start() until weir.checkpoint()"
echo "#  returns with every event processed and checkpointed; sql: $BATCH-position micro-batches"
echo "#  per partition, INSERT ... GROUP BY ... ON CONFLICT DO UPDATE; read_limit: weir._scan_count() (row by row), read_limit_heap_order: weir._scan_count_partitions() (every partition's range in one pass, a heap page at a time, as the worker reads)"
echo "events: $N events"
echo "runs: $RUNS runs"
for kind in "${KINDS[@]}"; do
	weir_rate "$kind"
done
figure sql_tumbling
figure sql_hopping
figure read_limit
figure read_limit_heap_order
for kind in "${KINDS[@]}"; do
	worker_start_figure "$kind"
done
echo "# targets: tumbling >= 10x sql, >= 0.4x read limit; hopping >= 4x sql"
if valid_kind tumbling; then
	ratio_lines tumbling sql_tumbling tumbling_vs_sql
	ratio_lines tumbling read_limit
	ratio_lines tumbling read_limit_heap_order
fi
if valid_kind hopping; then
	ratio_lines hopping sql_hopping
fi
echo "# what the checkpoint writer gains: tumbling with it, and with the worker writing its own"
if valid_kind tumbling && valid_kind tumbling_inline; then
	ratio_lines tumbling tumbling_inline
fi
echo "# shared-memory bytes per open (key, window), target <= 64 for count + sum over int8:"
echo "#  weir.pipelines state_bytes / windows, state_bytes being weir's accounting of the pipeline's"
echo "#  DSA area (requested sizes of the windows and their index table; no DSA size-class rounding"
echo "#  or segment slack); at the end of a run (caught up: an index under half full has shrunk"
echo "#  to 5/8), and after restoring that state (the index built for it)"
q "SELECT kind || ' ' || max(windows) || ' ' || round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1)
	 FROM bench_state GROUP BY kind ORDER BY array_position(ARRAY['tumbling', 'hopping', 'session', 'tumbling_inline'], kind)" |
	while read -r kind windows per; do
		echo "open_windows.$kind: $windows windows"
		echo "bytes_per_window.$kind: ${per:-n/a} bytes"
		if [ -n "${RESTORED_STATES[$kind]:-}" ]; then
			echo "bytes_per_window.$kind.restored: $(per "${RESTORED_STATES[$kind]#* }" "${RESTORED_STATES[$kind]% *}") bytes"
		fi
	done
echo "# checkpoints while consuming, all runs (interval 1 s): duration = sync_ms + async_ms"
echo "#  (with a checkpoint writer only sync_ms stops the reading: max_sync_ms);"
echo "#  gap = time between consecutive commits, the first counted from the worker's start;"
echo "#  time_share = checkpoint durations / the measured run times (the rest is reading and aggregating)"
for kind in "${KINDS[@]}"; do
	checkpoint_figures "$kind" "checkpoint.$kind." rows "" \
		count max_ms p50_ms max_sync_ms max_gap_ms max_start_delay_ms max_state_rows max_bytes time_share
done
echo "# restore of the final state after the last run (weir.restores)"
for kind in "${KINDS[@]}"; do
	if [ -n "${RESTORES[$kind]:-}" ]; then
		RESTORE=${RESTORES[$kind]}
		restore_figures "restore.$kind." windows windows
	fi
done
if [ -n "$SUSTAINED" ]; then
	echo "# (d) the 1 s checkpoint interval sustained: a tumbling pipeline while one producer session"
	echo "#  inserts as fast as it can for $SUSTAIN_SECS s; gaps between consecutive commits meanwhile"
	read -r produced lag catchup count p50_gap max_gap p50_ms max_ms max_sync secs <<<"$SUSTAINED"
	if [ -n "${INVALID[sustained]:-}" ]; then
		echo "sustained: invalid"
	else
		echo "sustained.produced: $produced events"
		echo "sustained.produce_rate: $(awk -v n="$produced" -v t="$secs" 'BEGIN { printf "%.0f", n / t }') events/s"
		echo "sustained.lag_at_producer_end: $lag rows"
		echo "sustained.catch_up_after_producer: $(awk -v t="$catchup" 'BEGIN { printf "%.3f", t }') s"
		echo "checkpoint.sustained.count: $count checkpoints"
		echo "checkpoint.sustained.per_s: $(awk -v n="$count" -v t="$secs" 'BEGIN { printf "%.2f", n / t }') checkpoints/s"
		echo "checkpoint.sustained.p50_gap_ms: ${p50_gap:-n/a} ms"
		echo "checkpoint.sustained.max_gap_ms: ${max_gap:-n/a} ms"
		echo "checkpoint.sustained.p50_ms: ${p50_ms:-n/a} ms"
		echo "checkpoint.sustained.max_ms: ${max_ms:-n/a} ms"
		echo "checkpoint.sustained.max_sync_ms: ${max_sync:-n/a} ms"
	fi
fi
finish
