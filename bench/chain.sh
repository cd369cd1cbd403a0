#!/usr/bin/env bash
# bench/chain.sh — what does a two-stage chain through a topic cost, against
# its first stage alone and against the same chain in plain SQL?
#
#   N=2000000 bench/chain.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N events
# (default 2,000,000) over 10,000 keys into a 4-partition topic ev(k, v, ts)
# keyed by k, as bench/window.sh does (ts rising evenly over one hour, ~3.5
# events per (key, minute); each partition in event-time order), then 2
# far-future records in each partition (ts F = 2100-01-01 and F + 2 minutes,
# v = 0, one key per partition) so that every window of both stages closes:
# the first stage's watermark becomes F + 2 minutes, its windows [F, F + 1
# minute) close and reach every partition of the intermediate topic (the
# same key hashes to the same partition there), and stage 2's watermark
# passes every window of the real data on either kind of build: taken from
# the watermark stage 1 publishes (this build), or from the event times
# stage 2 reads (a BASELINE from before watermarks travelled).  It measures
# in one run, each rate the best of RUNS runs (in rounds: a run of each
# figure per round, so that all come from the same stretch of time):
#   (a) chain: stage 1, weir.create_pipeline(key => 'k', event_time =>
#       'ts', windowing => weir.tumbling('1 minute'), aggregates =>
#       'count(*) AS n, sum(v) AS total', sink => a topic mid(k,
#       window_start, window_end, n, total) of 4 partitions keyed by k,
#       created empty before each run); stage 2, over mid, key => 'k',
#       event_time => 'window_end' (the README's rule: a window aggregate
#       publishes a watermark that every window ending at or before it has
#       fired, so window_end never falls behind it; window_start would do
#       too here, 5 minutes being a multiple of 1), weir.tumbling('5
#       minutes'), aggregates => 'sum(n) AS n, sum(total) AS total', into a
#       table.  Timed from the statement creating (and starting) stage 1
#       until weir.checkpoint('stage 1') and then weir.checkpoint('stage 2')
#       return: every event through both stages, checkpointed.  Two calls,
#       so that a BASELINE whose weir.checkpoint takes one pipeline runs the
#       very same statements;
#       chain_checkpoint_all: the same, timed until ONE weir.checkpoint()
#       returns (no arguments: every running pipeline, upstream first, each
#       after what the ones upstream committed; this build only);
#   (b) single_stage: stage 1 alone into a table, from creating it until
#       weir.checkpoint() of it returns (ratio.chain_vs_single_stage: what
#       the second stage and the topic between them cost);
#   (c) sql_chain: the chain in plain SQL: micro-batches of 100,000
#       positions per partition (as window.sh's sql_tumbling), each one
#       WITH b AS (SELECT ... GROUP BY k, minute) INSERT ... ON CONFLICT DO
#       UPDATE into per-minute rows (PRIMARY KEY (window_start, k)), the
#       batch's largest ts kept per partition; after each round of the 4
#       partitions, the minute rows that the round closed (window_end past
#       the previous watermark and at or before the new one, the smallest
#       partition maximum of ts read so far) rolled into 5-minute rows keyed
#       by (k, bucket of window_end) with INSERT ... SELECT ... GROUP BY ...
#       ON CONFLICT DO UPDATE; all batches in one PL/pgSQL call.
# Correctness: after every run, the final table of (a) and of (c) (the
# latter's buckets before F) must equal, row for row (EXCEPT ALL both ways),
# a GROUP BY over ev of (k, the 5-minute bucket of the end of the event's
# minute) for ts < F; (b)'s table a GROUP BY of (k, minute) over ev of the
# windows ending at or before F + 2 minutes.  weir.pipelines must show every
# record read by both stages, no late record in either (records_late = 0),
# stage 1's watermark F + 2 minutes.  A failed check prints the figure as
# `invalid`, and the script exits 1 after printing everything.  Except, with
# BASELINE, on a build without weir.topic_watermark (from before watermarks
# travelled): its stage 2 takes its watermark from the event times it reads,
# and a checkpoint's windows reached the topic in no particular order then,
# so its stage 2 may drop records as late and miss rows; that is reported
# under `# problems` (late records, rows that differ), not as invalid.
# It also prints the checkpoints each stage took per run, the least CPU time
# of each stage's worker and checkpoint writer, and the rows left in
# weir.topic_watermark when the chain's last run ended (before dropping it).
#
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after the measured statements; psql start-up and connecting are
# left out.  The weir figures include creating the pipelines and their sinks
# and starting the workers.
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value`.  Progress goes to stderr.
#
# Knobs: N (events, default 2000000), RUNS (default 3), KEYS (default
# 10000), WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default
# 600), WEIR_BENCH_INSTALLED (bench/common.sh), BASELINE=<git rev> (chain
# and single_stage on that build too, in the same rounds: baseline.chain,
# ratio.chain_vs_baseline, ...; bench/README.md).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
KEYS="${KEYS:-10000}"
TIMEOUT="${TIMEOUT:-600}"
BATCH=100000		# positions per partition per statement in (c)
KINDS=(chain chain_checkpoint_all single_stage)
TOPICS=(ev)

# Build, install, a throwaway cluster (DIR, PORT, progress()), bench/lib.sh;
# with BASELINE=<rev>, that build and its cluster too.
BENCH_WITH_BASELINE=1
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" chain

# --- data -----------------------------------------------------------------
progress "loading $N events over $KEYS keys into topic ev (4 partitions), and far-future records"
ORIGIN="timestamptz '1970-01-01 00:00:00+00'"
FAR="timestamptz '2100-01-01 00:00:00+00'"
MID_COLUMNS='k bigint, window_start timestamptz, window_end timestamptz, n bigint, total numeric'
# into both clusters with BASELINE (lib.sh, bench_builds), the current one last
for build in $(bench_builds); do
	bench_use "$build"
	[ -z "$BASELINE" ] || progress "  into the $build build's cluster"
	weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
-- figures of every stage of every weir run
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint);
SELECT weir.create_topic('ev', 'k bigint, v bigint, ts timestamptz', partitions => 4, key => 'k');
-- random keys, ts rising evenly over one hour: each partition (a hash of k)
-- is in event-time order, so nothing is late and the watermark is exact
SELECT setseed(0.42);
INSERT INTO ev (k, v, ts)
	SELECT floor(random() * $KEYS)::bigint, floor(random() * 1000)::bigint,
		   timestamptz '2026-01-01 00:00:00+00' + i * (3600.0 / $N) * interval '1 second'
	  FROM generate_series(0, $N - 1) i;
-- far future: in each partition, a key of it at F, then at F + 2 minutes
INSERT INTO ev (k, v, ts)
	SELECT k, 0, $FAR + g * interval '2 minutes'
	  FROM (SELECT DISTINCT ON (part) k FROM ev ORDER BY part, k) keys, generate_series(0, 1) g
	 ORDER BY g, k;
VACUUM ANALYZE ev;

-- the oracles: (a) and (c), 5-minute buckets of the end of each event's
-- minute (stage 2's event time is window_end) before F; (b) the minutes
-- that end at or before F + 2 minutes, stage 1's final watermark
CREATE TABLE bench_oracle5 AS
	SELECT k, date_bin('5 minutes', date_bin('1 minute', ts, $ORIGIN) + interval '1 minute', $ORIGIN) AS window_start,
		   count(*)::numeric AS n, sum(v)::numeric AS total
	  FROM ev WHERE ts < $FAR GROUP BY 1, 2;
CREATE TABLE bench_oracle1 AS
	SELECT k, date_bin('1 minute', ts, $ORIGIN) AS window_start, count(*)::numeric AS n, sum(v)::numeric AS total
	  FROM ev WHERE date_bin('1 minute', ts, $ORIGIN) + interval '1 minute' <= $FAR + interval '2 minutes'
	 GROUP BY 1, 2;
ANALYZE bench_oracle5, bench_oracle1;
CHECKPOINT;

-- (c) the chain in plain SQL: per-minute rows, rolled into 5-minute rows
CREATE TABLE sql_minute (k bigint NOT NULL, window_start timestamptz NOT NULL,
	window_end timestamptz NOT NULL, n bigint, total numeric, PRIMARY KEY (window_start, k));
CREATE TABLE sql_5min (k bigint NOT NULL, window_start timestamptz NOT NULL,
	window_end timestamptz NOT NULL, n numeric, total numeric, PRIMARY KEY (window_start, k));
EOF
	# what the weir runs need (bench_wait_published, bench_ckpt, ...)
	create_bench_helpers

	batch_function bench_sql_chain \
		--declare "m timestamptz[] := ARRAY['-infinity', '-infinity', '-infinity', '-infinity']::timestamptz[]; bm timestamptz; wm timestamptz; prev timestamptz := '-infinity';" \
		--round-end "
		wm := least(m[1], m[2], m[3], m[4]);
		IF wm > prev THEN
			INSERT INTO sql_5min AS s (k, window_start, window_end, n, total)
			SELECT k, date_bin('5 minutes', window_end, $ORIGIN),
				   date_bin('5 minutes', window_end, $ORIGIN) + interval '5 minutes', sum(mi.n), sum(mi.total)
			  FROM sql_minute mi
			 WHERE window_start > prev - interval '1 minute' AND window_start <= wm - interval '1 minute'
			 GROUP BY 1, 2
			ON CONFLICT (window_start, k) DO UPDATE
				SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;
			prev := wm;
		END IF;" <<EOF
			WITH b AS (
				SELECT k, date_bin('1 minute', ts, $ORIGIN) AS ws, count(*) AS bn, sum(v) AS bt, max(ts) AS mt
				  FROM ev
				 WHERE part = p AND pos > a AND pos <= a + $BATCH
				 GROUP BY 1, 2),
			ins AS (
				INSERT INTO sql_minute AS s (k, window_start, window_end, n, total)
				SELECT k, ws, ws + interval '1 minute', bn, bt FROM b
				ON CONFLICT (window_start, k) DO UPDATE
					SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total)
			SELECT max(mt) INTO bm FROM b;
			m[p + 1] := greatest(m[p + 1], bm);
			acc := acc + 1;
EOF
done
baseline_check_data
TOTAL=$((N + 8))
expect_equal "records loaded" "$(q 'SELECT count(*) FROM ev')" "$TOTAL"
progress "partitions: $(partition_counts ev)"
expect_equal "partitions with far-future records" "$(q "SELECT count(DISTINCT part) FROM ev WHERE ts >= $FAR")" 4
# stage 1's watermark once everything is read: the smallest partition maximum
WATERMARK=$(q "SELECT min(m) FROM (SELECT max(ts) m FROM ev GROUP BY part) s")
expect_equal "stage 1's final watermark" "$WATERMARK" "$(q "SELECT $FAR + interval '2 minutes'")"
progress "expected final watermark of stage 1: $WATERMARK"

# --- (c) plain SQL ----------------------------------------------------------
# same_rows TABLE ORACLE [WHERE]: '<rows of TABLE not in ORACLE> <rows of
# ORACLE not in TABLE>' over (k, window_start, n, total), duplicates counted.
same_rows() {
	q "SELECT (SELECT count(*) FROM (SELECT k, window_start, n::numeric, total::numeric FROM $1 ${3:-}
									  EXCEPT ALL SELECT k, window_start, n, total FROM $2) d)
		   || ' ' ||
		   (SELECT count(*) FROM (SELECT k, window_start, n, total FROM $2
								   EXCEPT ALL SELECT k, window_start, n::numeric, total::numeric FROM $1 ${3:-}) d)"
}

sql_chain_run() {
	local diff
	sql_run sql_chain "$1" sql_minute sql_5min
	expect_equal "sum(n) of sql_minute" "$(q "SELECT sum(n) FROM sql_minute")" "$TOTAL"
	diff=$(same_rows sql_5min bench_oracle5 "WHERE window_start < $FAR")
	if [ "$diff" != "0 0" ]; then
		invalid sql_chain "run $1: sql_5min (before F) and the GROUP BY over ev differ: rows only in sql_5min, only in the GROUP BY: $diff"
	else
		progress "  sql_5min checked: = GROUP BY over ev ($(q "SELECT count(*) FROM sql_5min WHERE window_start < $FAR") rows)"
	fi
}

# --- (a), (b) weir ------------------------------------------------------------
declare -A TOPIC_WM_ROWS=()
declare -A MID_ROWS=()
# stage_ckpt KIND RUN NAME: keep the checkpoints NAME committed until
# bench_t1 in bench_ckpt as KIND (SQL for the timed session, after bench_t1).
stage_ckpt() {
	cat <<EOF
INSERT INTO bench_ckpt
	SELECT '$1', $2, c.id, a.backend_start, c.committed_at, c.start_delay_ms,
		   c.sync_ms, c.async_ms, c.bytes, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
	  FROM weir.checkpoints c JOIN weir.pipeline pl ON pl.id = c.pipeline_id,
		   weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
	 WHERE pl.name = '$3' AND p.name = '$3' AND c.committed_at <= :'bench_t1';
EOF
}

# stage_cpu KIND NAME: the CPU its worker and checkpoint writer used so far.
stage_cpu() {
	local -a pids
	local worker_cpu writer_cpu
	read -ra pids <<<"$(q "SELECT coalesce(worker_pid, 0) || ' ' || coalesce(writer_pid, 0) FROM weir.pipelines WHERE name = '$2'")"
	worker_cpu=$(cpu_ms "${pids[0]:-}")
	writer_cpu=$(cpu_ms "${pids[1]:-}")
	[ -z "$worker_cpu" ] || WORKER_CPU[$1]="${WORKER_CPU[$1]:+${WORKER_CPU[$1]} }$worker_cpu"
	[ -z "$writer_cpu" ] || WRITER_CPU[$1]="${WRITER_CPU[$1]:+${WRITER_CPU[$1]} }$writer_cpu"
}

# weir_run KIND RUN: one timed run of KIND (chain, chain_checkpoint_all,
# single_stage) over the whole backlog, checked; the pipelines, their sinks
# and the intermediate topic dropped afterwards.
weir_run() {
	local kind=$1 run=$2 s1="s1_$1_$2" s2="s2_$1_$2" res errf="$DIR/psql.err" create wait mid_rows diff late travels noted=""
	local -a f

	progress "$kind, run $run of $RUNS"
	q "VACUUM weir.pipeline_chunk" >/dev/null
	create="SELECT weir.create_pipeline('$s1', 'ev', key => 'k', event_time => 'ts',
				windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS total'"
	if [ "$kind" = single_stage ]; then
		create+=");"
		wait="SELECT weir.checkpoint('$s1', '$TIMEOUT s');"
	else
		q "SELECT weir.create_topic('mid', '$MID_COLUMNS', partitions => 4, key => 'k')" >/dev/null
		create+=", sink => 'mid');
			SELECT weir.create_pipeline('$s2', 'mid', key => 'k', event_time => 'window_end',
				windowing => weir.tumbling('5 minutes'), aggregates => 'sum(n) AS n, sum(total) AS total');"
		if [ "$kind" = chain ]; then
			wait="SELECT weir.checkpoint('$s1', '$TIMEOUT s');
				  SELECT weir.checkpoint('$s2', '$TIMEOUT s');"
		else
			wait="SELECT count(*) FROM weir.checkpoint(timeout => '$TIMEOUT s');"
		fi
	fi
	q "CHECKPOINT" >/dev/null
	if ! res=$(weir_psql -At -F ' ' 2>"$errf" <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
$create
$wait
SELECT clock_timestamp() AS bench_t1 \gset
SELECT 'secs', extract(epoch FROM :'bench_t1'::timestamptz - :'bench_t0'::timestamptz);
$(stage_ckpt "$kind.stage1" "$run" "$s1")
$([ "$kind" = single_stage ] || stage_ckpt "$kind.stage2" "$run" "$s2")
EOF
	); then
		invalid "$kind" "run $run failed: $(tr '\n' ' ' <"$errf") (weir.pipelines: $(q "SELECT string_agg(name || ' ' || status || ' ' || coalesce(last_error, ''), '; ') FROM weir.pipelines"))"
		weir_drop "$kind" "$run"
		return 0
	fi
	SECS=$(sed -n 's/^secs //p' <<<"$res")
	BAD=""
	# stage 1: everything read, its watermark, nothing late
	if [ "$(q "SELECT bench_wait_published('$s1', $TOTAL, '30 s')")" != t ]; then
		BAD+="stage 1's records_in/lag_rows not $TOTAL/0 after the checkpoint ($(q "SELECT records_in || '/' || lag_rows FROM weir.pipelines WHERE name = '$s1'")); "
	fi
	read -ra f <<<"$(q "SELECT CASE WHEN watermark = '$WATERMARK' THEN 't' ELSE 'f' END || ' ' || records_late || ' ' || coalesce(watermark::text, 'none')
						  FROM weir.pipelines WHERE name = '$s1'")"
	[ "${f[0]:-}" = t ] || BAD+="stage 1's watermark ${f[*]:2} instead of $WATERMARK; "
	[ "${f[1]:-}" = 0 ] || BAD+="stage 1's records_late ${f[1]:-}; "
	q "INSERT INTO bench_state SELECT '$kind.stage1', $run, $SECS, windows, state_bytes FROM weir.pipelines WHERE name = '$s1'" >/dev/null
	stage_cpu "$kind.stage1" "$s1"
	if [ "$kind" = single_stage ]; then
		diff=$(same_rows "$s1" bench_oracle1)
		[ "$diff" = "0 0" ] || BAD+="its table and the GROUP BY over ev differ: rows only in the table, only in the GROUP BY: $diff; "
	else
		# stage 2: every row of mid read, nothing late, the final table
		mid_rows=$(q "SELECT count(*) FROM mid")
		MID_ROWS[$kind]=$mid_rows
		if [ "$(q "SELECT bench_wait_published('$s2', $mid_rows, '30 s')")" != t ]; then
			BAD+="stage 2's records_in/lag_rows not $mid_rows/0 after the checkpoint ($(q "SELECT records_in || '/' || lag_rows FROM weir.pipelines WHERE name = '$s2'")); "
		fi
		[ "$(q "SELECT count(DISTINCT part) FROM mid WHERE window_start >= $FAR")" = 4 ] ||
			BAD+="mid has far-future rows in partitions $(q "SELECT string_agg(DISTINCT part::text, ',') FROM mid WHERE window_start >= $FAR") only; "
		late=$(q "SELECT records_late FROM weir.pipelines WHERE name = '$s2'")
		travels=$(q "SELECT to_regclass('weir.topic_watermark') IS NOT NULL")
		q "INSERT INTO bench_state SELECT '$kind.stage2', $run, $SECS, windows, state_bytes FROM weir.pipelines WHERE name = '$s2'" >/dev/null
		diff=$(same_rows "$s2" bench_oracle5)
		if [ "$travels" = t ]; then
			[ "$late" = 0 ] || BAD+="stage 2's records_late $late; "
			[ "$diff" = "0 0" ] || BAD+="stage 2's table and the GROUP BY over ev differ: rows only in the table, only in the GROUP BY: $diff; "
		elif [ "$late" != 0 ] || [ "$diff" != "0 0" ]; then
			# a build from before watermarks travelled (no weir.topic_watermark):
			# stage 2's watermark comes from the event times it reads, and a
			# checkpoint's windows reach the topic in no particular order, so
			# stage 2 finds records late and drops them.  Reported, not counted
			# as invalid: the build cannot do otherwise with this definition.
			problem "$kind run $run (a build without weir.topic_watermark): stage 2 dropped $late late records; its table and the GROUP BY over ev differ: rows only in the table, only in the GROUP BY: $diff"
			noted=1
		fi
		stage_cpu "$kind.stage2" "$s2"
		# weir.topic_watermark: none before the chains kept event time
		if [ "$(q "SELECT to_regclass('weir.topic_watermark') IS NOT NULL")" = t ]; then
			TOPIC_WM_ROWS[$kind]="$(q "SELECT count(*) FROM weir.topic_watermark") $(q "SELECT string_agg('part ' || part || ' pos ' || pos || ' ' || watermark, ', ' ORDER BY part, pos) FROM weir.topic_watermark")"
			progress "  weir.topic_watermark: ${TOPIC_WM_ROWS[$kind]%% *} rows: ${TOPIC_WM_ROWS[$kind]#* }"
		fi
		progress "  stage 2: $mid_rows rows of mid read, watermark $(q "SELECT watermark FROM weir.pipelines WHERE name = '$s2'"), $(q "SELECT count(*) FROM $s2") rows in its table"
	fi
	progress "  checkpoints: stage 1 $(q "SELECT count(*) FROM bench_ckpt WHERE kind = '$kind.stage1' AND run = $run")${mid_rows:+, stage 2 $(q "SELECT count(*) FROM bench_ckpt WHERE kind = '$kind.stage2' AND run = $run")}"
	if [ -n "$BAD" ]; then
		invalid "$kind" "run $run: $BAD"
	elif [ -z "$noted" ]; then
		progress "  checked: the final table = GROUP BY over ev, nothing late"
	fi
	record "$kind" "$SECS"
	weir_drop "$kind" "$run"
}

# weir_drop KIND RUN: drop the run's pipelines (downstream first), their
# tables and the intermediate topic.
weir_drop() {
	if [ "$1" != single_stage ]; then
		drop_pipeline "s2_$1_$2"
	fi
	if [ "$1" = single_stage ]; then
		drop_pipeline "s1_$1_$2"
	else
		stop_pipeline "s1_$1_$2" || true	# its sink is the topic mid
		q "SELECT weir.drop_pipeline('s1_$1_$2')" >/dev/null
	fi
	if [ "$(q "SELECT to_regclass('mid') IS NOT NULL")" = t ]; then
		q "SELECT weir.drop_topic('mid')" >/dev/null
	fi
}

# Round after round, a run of each figure.  With BASELINE, chain and
# single_stage on the baseline too, just before or after (lib.sh,
# baseline_before), checked against the oracles of its own cluster (the
# same topic on both: baseline_check_data).  chain_checkpoint_all needs
# weir.checkpoint() without arguments: this build only.
for ((run = 1; run <= RUNS; run++)); do
	ROUND=$run
	sql_chain_run "$run"
	for kind in "${KINDS[@]}"; do
		[ "$kind" = chain_checkpoint_all ] || baseline_before weir_run "$kind" "$run"
		weir_run "$kind" "$run"
		[ "$kind" = chain_checkpoint_all ] || baseline_after weir_run "$kind" "$run"
	done
done

# --- figures --------------------------------------------------------------
echo "# weir bench/chain: $N events, $KEYS keys, 4 partitions, ts over one hour (+ 8 far-future records);"
echo "#  stage 1 tumbling 1 minute count(*) + sum(int8) per key into a 4-partition topic, stage 2 tumbling"
echo "#  5 minutes (event_time => window_end) sum + sum per key into a table"
echo "# rates: events/s of the N events, each the best of $RUNS runs; chain: from creating stage 1 until"
echo "#  weir.checkpoint(stage 1) and weir.checkpoint(stage 2) return; chain_checkpoint_all: until one"
echo "#  weir.checkpoint() returns; single_stage: stage 1 alone into a table; sql_chain: $BATCH-position"
echo "#  micro-batches per partition into per-minute rows, rolled into 5-minute rows after each round"
echo "events: $N events"
echo "runs: $RUNS runs"
for kind in "${KINDS[@]}"; do
	figure "$kind"
done
figure sql_chain
for kind in chain chain_checkpoint_all; do
	if [ -n "${MID_ROWS[$kind]:-}" ]; then
		echo "$kind.intermediate_rows: ${MID_ROWS[$kind]} rows"
	fi
done
for kind in chain.stage1 chain.stage2 chain_checkpoint_all.stage1 chain_checkpoint_all.stage2 single_stage.stage1; do
	worker_start_figure "$kind"
done
echo "# what the chain costs: its rate / stage 1 alone's (< 1: the second stage and the topic between"
echo "#  them cost that much), / the plain-SQL chain's; and one weir.checkpoint() against two"
if valid chain; then
	valid single_stage && ratio_lines chain single_stage
	valid sql_chain && ratio_lines chain sql_chain chain_vs_sql
	valid chain_checkpoint_all && ratio_lines chain_checkpoint_all chain
fi
echo "# checkpoints per run of each stage (interval 1 s): count, per_run, duration = sync_ms + async_ms"
for kind in chain.stage1 chain.stage2 chain_checkpoint_all.stage1 chain_checkpoint_all.stage2 single_stage.stage1; do
	checkpoint_figures "$kind" "checkpoint.$kind." rows "" count per_run max_ms p50_ms
done
echo "# weir.topic_watermark rows when the last run of the chain ended (before it was dropped)"
for kind in chain chain_checkpoint_all; do
	if [ -n "${TOPIC_WM_ROWS[$kind]:-}" ]; then
		echo "topic_watermark.$kind.rows: ${TOPIC_WM_ROWS[$kind]%% *} rows"
		echo "#  ${TOPIC_WM_ROWS[$kind]#* }"
	fi
done
finish
