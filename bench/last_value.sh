#!/usr/bin/env bash
# bench/last_value.sh — how fast does a weir last-value pipeline consume a
# backlog, compared with the plain-SQL alternative and with the limit of
# reading the same rows?  How many bytes does it keep per key?
#
#   N=2000000 bench/last_value.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N records
# (default 2,000,000) into a 4-partition topic readings(device bigint,
# temp int, ts timestamptz) keyed by device, over KEYS devices (default
# 100,000, drawn at random).  Event time advances, RATE records per second
# of it (default 1000), each record up to JITTER seconds (default 5) earlier
# than its place: mildly out of order, so that now and then a device's
# newer reading comes before an older one and must win.  It measures in one
# run, each rate the best of RUNS runs:
#   (a) weir: weir.create_last_value(key => 'device', event_time => 'ts')
#       over the whole backlog, from the statement that creates (and starts)
#       it until weir.checkpoint() returns with every record processed and
#       the newest row of every device in the sink and checkpointed;
#   (b) plain SQL, the alternative the issue names: micro-batches of 100,000
#       positions per partition, each one
#         INSERT INTO lv_sql SELECT DISTINCT ON (device) ... FROM readings
#          WHERE part = p AND pos > a AND pos <= a + 100000
#          ORDER BY device, ts DESC, pos DESC
#         ON CONFLICT (device) DO UPDATE SET ... WHERE EXCLUDED.ts >= lv_sql.ts
#       into a table shaped like weir's sink (device PRIMARY KEY, temp, ts),
#       all batches in one PL/pgSQL call, each statement planned for its
#       own positions (plan_cache_mode = force_custom_plan, as a client
#       sending each batch's statement gets).  `>=` is the exact form of weir's
#       order (ts, then partition, then position) here: a device lives in one
#       partition (the topic's key) and batches go in position order, so on
#       equal ts the later batch's row is the newer one;
#   (c) the read limit: weir._scan_count() over ranges of 100,000 positions
#       per partition: the PK index through the low-level scan API, as the
#       pipeline worker reads, with nothing done per row but counting.
# It also reports, for weir: keys in memory (weir.pipelines windows) and
# state_bytes, bytes per key; the checkpoints taken while consuming (count,
# duration = sync_ms + async_ms, max and p50, their share of the run time
# and the async share of that, sink rows written per run); the chunks left;
# and the restore of the final state after the last run (stop, start,
# weir.checkpoint(); the newest weir.restores row).
#
# Correctness: the expected sink comes from the definition, in SQL:
#   SELECT DISTINCT ON (device) device, temp, ts FROM readings
#    ORDER BY device, ts DESC, part DESC, pos DESC
# After every run the weir sink and lv_sql must equal it: rows of either
# side missing from the other (EXCEPT ALL both ways), printed as
# <name>.except_rows (0 when equal); weir.pipelines must show
# records_in = N, lag_rows = 0, records_dropped = the rows that come after
# a newer row of their device, no late or dead records, one key per
# device.  A failed check prints the figure as `invalid`, and the script
# exits 1 after printing everything.
#
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after the measured statements; psql start-up and connecting are
# left out.  The weir figure includes creating the pipeline and its sink and
# starting the worker (launcher wake-up, fork, an empty restore);
# last_value.worker_start_ms says how much of it the start was.
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value` (targets in the comment line above each).
# Progress goes to stderr.
#
# Knobs: N (records, default 2000000), RUNS (default 3), KEYS (default
# 100000), RATE (records per second of event time, default 1000), JITTER
# (seconds, default 5), BATCH (positions per partition per SQL statement,
# default 100000), WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait,
# default 600), WEIR_BENCH_INSTALLED (bench/common.sh), BASELINE=<git rev>
# (the last_value figure of that build too, run in the same rounds:
# baseline.last_value, ratio.last_value_vs_baseline; bench/README.md).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
KEYS="${KEYS:-100000}"
RATE="${RATE:-1000}"
JITTER="${JITTER:-5}"
TIMEOUT="${TIMEOUT:-600}"
BATCH="${BATCH:-100000}"	# positions per partition per statement in (b) and (c)
TOPICS=(readings)

# Build, install, a throwaway cluster (DIR, PORT, progress()), bench/lib.sh;
# with BASELINE=<rev>, that build and its cluster too.
BENCH_WITH_BASELINE=1
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" last_value

# except_rows TABLE: rows of TABLE not in lv_expected plus rows of
# lv_expected not in TABLE (EXCEPT ALL both ways); 0 when they are equal.
except_rows() {
	q "SELECT (SELECT count(*) FROM (SELECT device, temp, ts FROM $1
									 EXCEPT ALL SELECT device, temp, ts FROM lv_expected) x)
			+ (SELECT count(*) FROM (SELECT device, temp, ts FROM lv_expected
									 EXCEPT ALL SELECT device, temp, ts FROM $1) y)"
}

# --- data -----------------------------------------------------------------
progress "loading $N records over $KEYS devices into topic readings (4 partitions):"
progress "  $RATE per second of event time, each up to $JITTER s early"
# into both clusters with BASELINE (lib.sh, bench_builds), the current one last
for build in $(bench_builds); do
	bench_use "$build"
	[ -z "$BASELINE" ] || progress "  into the $build build's cluster"
	weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
SELECT weir.create_topic('readings', 'device bigint, temp int, ts timestamptz',
						 partitions => 4, key => 'device');
-- record i: a random device, at i / RATE seconds of event time minus up to
-- JITTER seconds, inserted in order of i
SELECT setseed(0.42);
INSERT INTO readings (device, temp, ts)
	SELECT floor(random() * $KEYS)::bigint, floor(random() * 600)::int - 200,
		   timestamptz '2026-01-01 00:00:00+00'
		   + (i * (1.0 / $RATE) - random() * $JITTER) * interval '1 second'
	  FROM generate_series(0, $N - 1) i
	 ORDER BY i;
VACUUM ANALYZE readings;

-- the expected sink, from the definition
CREATE TABLE lv_expected AS
	SELECT DISTINCT ON (device) device, temp, ts FROM readings
	 ORDER BY device, ts DESC, part DESC, pos DESC;
CHECKPOINT;

CREATE TABLE lv_sql (device bigint PRIMARY KEY, temp int, ts timestamptz);

-- figures of every weir run
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint,
	dropped bigint, chunks bigint, chunk_bytes bigint);
EOF
	# (c) the read limit, and what the weir runs need
	create_bench_helpers

	# (b) the alternative the issue names: per batch, the newest row of each
	# device in it, upserted when it is at least as new as the table's; each
	# statement planned for its positions.  Returns the rows written (inserted
	# or updated).
	batch_function bench_sql --custom-plans <<EOF
			INSERT INTO lv_sql AS s (device, temp, ts)
			SELECT DISTINCT ON (device) device, temp, ts FROM readings
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			 ORDER BY device, ts DESC, pos DESC
			ON CONFLICT (device) DO UPDATE SET temp = EXCLUDED.temp, ts = EXCLUDED.ts
			 WHERE EXCLUDED.ts >= s.ts;
			GET DIAGNOSTICS n = ROW_COUNT;
			acc := acc + n;
EOF
done
baseline_check_data
expect_equal "records loaded" "$(q 'SELECT count(*) FROM readings')" "$N"
progress "partitions: $(partition_counts readings)"
DEVICES=$(q "SELECT count(*) FROM lv_expected")
# how often the newest row of a device is not its last one by position
# (what the ts comparison is there for)
OVERTAKEN=$(q "SELECT count(*) FROM (SELECT DISTINCT ON (device) device, ts FROM readings
									  ORDER BY device, part DESC, pos DESC) l
								JOIN lv_expected e USING (device) WHERE l.ts <> e.ts")
# rows that come after a newer row of their device (by position; a device
# is in one partition): weir drops them on arrival (records_dropped)
BEHIND=$(q "SELECT count(*) FROM (SELECT ts < max(ts) OVER (PARTITION BY device ORDER BY pos
								ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS behind
								FROM readings) s WHERE behind")
WATERMARK=$(q "SELECT min(m) - interval '$JITTER s' FROM (SELECT max(ts) m FROM readings GROUP BY part) s")
progress "expected: $DEVICES devices; for $OVERTAKEN of them the newest row is not the last one read;"
progress "  $BEHIND rows come after a newer row of their device;"
progress "  final watermark $WATERMARK"

# --- (c) the read limit -----------------------------------------------------
read_limit_warm_up

# --- (b) plain SQL ----------------------------------------------------------
SQL_WRITTEN=""
# sql_round RUN: one run of each SQL figure (the rounds: see the end)
sql_round() {
	local run=$1 got
	sql_run sql "$run" lv_sql
	SQL_WRITTEN=$OUT
	got=$(except_rows lv_sql)
	SQL_EXCEPT=$got
	if [ "$got" != 0 ]; then
		invalid sql "run $run: lv_sql differs from the expected rows in $got rows"
	else
		progress "  lv_sql checked: $(q "SELECT count(*) FROM lv_sql") rows = expected; $OUT rows written"
	fi
}

# --- (a) weir ---------------------------------------------------------------
declare -A RUN_RATE=()
LV_EXCEPT=""
# weir_run RUN [restore]: one last-value pipeline over the whole backlog.
weir_run() {
	local run=$1 name="lv_$1" out dropped late dead got chunks chunk_bytes keys

	q "VACUUM weir.pipeline_chunk" >/dev/null
	q "CHECKPOINT" >/dev/null
	run_pipeline last_value "$run" "$name" \
		"SELECT weir.create_last_value('$name', 'readings', key => 'device', event_time => 'ts',
								  out_of_orderness => '$JITTER s', start => true) > 0" \
		"p.records_out, p.records_dropped, p.records_late, p.records_dead" || return 0
	read -r out dropped late dead <<<"$COUNTS"
	progress "  $out out, $dropped dropped, $late late, $dead dead; $WINDOWS keys, $BYTES bytes"

	# correctness: everything read, the right watermark and counts, the
	# expected rows in the sink
	[ "$dropped $late $dead $WINDOWS" = "$BEHIND 0 0 $DEVICES" ] ||
		BAD+="records dropped/late/dead $dropped/$late/$dead and $WINDOWS keys, expected $BEHIND/0/0 and $DEVICES; "
	got=$(except_rows "$name")
	LV_EXCEPT=$got
	[ "$got" = 0 ] || BAD+="the sink differs from the expected rows in $got rows; "
	if [ -n "$BAD" ]; then
		invalid last_value "run $run: $BAD"
	else
		progress "  sink checked: $(q "SELECT count(*) FROM $name") rows = expected"
	fi
	record last_value "$SECS"
	RUN_RATE[$run]=$(rate "$SECS")
	read -r chunks chunk_bytes <<<"$(chunks_of "$ID")"
	q "INSERT INTO bench_state VALUES ('last_value', $run, $SECS, $WINDOWS, $BYTES, $dropped, $chunks, $chunk_bytes)" >/dev/null
	progress "  chunks left: $chunks, $chunk_bytes bytes"

	if [ "${2:-}" = restore ]; then
		progress "  restoring the final state ($WINDOWS keys)"
		if restore_pipeline "$name" "$ID"; then
			keys=${RESTORE##* }
			if [ "$keys" != "$DEVICES" ]; then
				problem "restore: restored $keys keys, expected $DEVICES"
				INVALID[restore]=1
			fi
			got=$(except_rows "$name")
			[ "$got" = 0 ] || problem "restore: the sink now differs from the expected rows in $got rows"
		fi
	fi
	drop_pipeline "$name"
}

# Round after round, a run of each figure: the read limit, the SQL, weir
# (lib.sh, read_limit_run); with BASELINE, weir on the baseline too, just
# before or after (lib.sh, baseline_before).
for ((run = 1; run <= RUNS; run++)); do
	ROUND=$run
	read_limit_run "$run"
	sql_round "$run"
	baseline_before weir_run "$run"
	weir_run "$run" "$([ "$run" = "$RUNS" ] && echo restore)"
	baseline_after weir_run "$run"
done

# what the SQL left behind (its last round)
SQL_BYTES=$(q "SELECT pg_total_relation_size('lv_sql')")

# --- figures --------------------------------------------------------------
echo "# weir bench/last_value: $N records, $KEYS devices drawn at random, 4 partitions,"
echo "#  $RATE records per second of event time, each up to $JITTER s early"
echo "# rates: events/s, each the best of $RUNS runs; last_value: from weir.create_last_value() until"
echo "#  weir.checkpoint() returns with every record processed and checkpointed; sql: $BATCH-position"
echo "#  micro-batches per partition, INSERT ... SELECT DISTINCT ON (device) ... ON CONFLICT (device)"
echo "#  DO UPDATE ... WHERE EXCLUDED.ts >= lv_sql.ts; read_limit: weir._scan_count() (row by row), read_limit_heap_order: weir._scan_count_partitions() (every partition's range in one pass, a heap page at a time, as the worker reads)"
echo "events: $N events"
echo "runs: $RUNS runs"
echo "keys: $DEVICES keys"
echo "keys_overtaken: $OVERTAKEN keys"
echo "# records_behind: rows that come after a newer row of their device; weir drops them on"
echo "#  arrival (weir.pipelines records_dropped, checked equal in every run)"
echo "records_behind: $BEHIND records"
figure last_value
figure sql
figure read_limit
figure read_limit_heap_order
worker_start_figure last_value
operator_figures last_value sql
echo "# sanity: rows in which the sink (last run) and lv_sql (last run) differ from DISTINCT ON"
echo "#  over the topic (EXCEPT ALL both ways); 0 when equal"
echo "last_value.except_rows: ${LV_EXCEPT:-n/a} rows"
echo "sql.except_rows: ${SQL_EXCEPT:-n/a} rows"
echo "# state: keys in memory (weir.pipelines windows) and state_bytes, weir's accounting of the"
echo "#  pipeline's DSA area (entries and their index table; no DSA size-class rounding or segment"
echo "#  slack), at the end of the runs (the end is the peak: no ttl), and after restoring it"
q "SELECT max(windows), max(state_bytes), round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1),
		  max(chunks), max(chunk_bytes)
	 FROM bench_state" | tr '|' ' ' |
	while read -r windows bytes per chunks chunk_bytes; do
		echo "last_value.keys_in_memory: ${windows:-n/a} keys"
		echo "last_value.state_bytes: ${bytes:-n/a} bytes"
		echo "last_value.bytes_per_key: ${per:-n/a} bytes"
		echo "last_value.chunks_at_end: ${chunks:-n/a} chunks"
		echo "last_value.chunk_bytes_at_end: ${chunk_bytes:-n/a} bytes"
	done
if [ -n "$RESTORED_STATE" ]; then
	echo "last_value.restored_keys: ${RESTORED_STATE% *} keys"
	echo "last_value.restored_state_bytes: ${RESTORED_STATE#* } bytes"
	echo "last_value.bytes_per_key.restored: $(per "${RESTORED_STATE#* }" "${RESTORED_STATE% *}") bytes"
fi
echo "# SQL's table after its last run, and the rows its upserts wrote (inserted or updated)"
echo "sql.rows_written: ${SQL_WRITTEN:-n/a} rows"
echo "sql.table_bytes: $SQL_BYTES bytes"
echo "# checkpoints while consuming, all runs (interval 1 s): duration = sync_ms + async_ms;"
echo "#  time_share = checkpoint durations / the measured run times (the rest is reading and judging);"
echo "#  async_share = async_ms / duration; sink_rows_per_run = rows upserted into the sink per run"
checkpoint_figures last_value checkpoint. keys key "${CHECKPOINT_FIGURES[@]}"
if [ -n "$RESTORE" ]; then
	echo "# restore of the final state after the last run (weir.restores)"
	restore_figures restore. keys keys
fi
finish
