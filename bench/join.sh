#!/usr/bin/env bash
# bench/join.sh — how fast does a weir interval join consume a backlog of two
# topics, compared with the plain-SQL alternative and with the limit of
# reading the same rows?  How many bytes does it keep per buffered row?
#
#   N=2000000 bench/join.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N records
# (default 2,000,000) into two 4-partition topics keyed by order_id:
#   orders(order_id bigint, amount int, ts timestamptz): N/2 orders, RATE per
#     second of event time (default 10: 1,000,000 orders over about 28
#     hours), each up to JITTER seconds (default 5) earlier than its place;
#   shipments(order_id bigint, carrier text, ts timestamptz): one per order,
#     at the order's ts plus a delay: uniform within the hour for all but
#     MISS percent (default 5), which come 61 to 120 minutes later and do not
#     join; inserted in ts order give or take JITTER seconds.
# Both topics are mildly out of order (by less than JITTER), so with
# out_of_orderness => JITTER nothing is late.  It measures in one run, each
# rate the best of RUNS runs, over both topics' records (N):
#   (a) weir: weir.create_join(orders, shipments, order_id = order_id,
#       right_before => '0', right_after => '1 hour': r.ts BETWEEN l.ts AND
#       l.ts + 1 hour, a shipment within the hour after its order), inner, columns
#       'l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS
#       shipped_at', from the statement that creates (and starts) it until
#       weir.checkpoint() returns with every record of both topics processed,
#       the joined rows in the sink and checkpointed; as weir runs it by
#       default (weir.read_ahead = auto: a read-ahead process reads the topics
#       while the worker joins), and again with weir.read_ahead = off
#       (join_in_worker: the worker reads them itself);
#   (b) plain SQL, the incremental join over micro-batches: rounds of
#       100,000 positions per partition of both topics (as the worker reads,
#       a round of each); per round and partition p, the delta rule
#         new orders  x shipments so far (this round's included)
#         old orders  x new shipments
#       each an INSERT INTO join_sql SELECT ... FROM orders l JOIN shipments r
#       ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - 1 hour AND r.ts,
#       position ranges in the WHERE clause, into an insert-only table shaped
#       like weir's sink; each pair is produced once, in the round in which
#       its second row arrives, as weir does.  The two topics have the same
#       key and partition count, so an order and its shipments share a
#       partition number (checked); the SQL joins partition p with partition
#       p only (co-partitioned, as Kafka Streams requires for joins).  The
#       "so far" side is every earlier position of the other topic's
#       partition: SQL has no buffer, and the topics no index on ts to find
#       the rows within the hour, so each round scans a growing range
#       (the planner chooses how: hash joins).  All rounds in one PL/pgSQL
#       call, each statement planned for its own positions
#       (plan_cache_mode = force_custom_plan, as a client sending each
#       batch's statement gets; PL/pgSQL's generic plan after five calls
#       took twice as long).  An index on order_id of each topic does not
#       change the plans (tried: the same time within the noise), so there
#       is none;
#   (c) the read limit: weir._scan_count() over ranges of 100,000 positions
#       per partition of both topics.
# It also reports, for weir: key entries (weir.pipelines windows: one per
# key, holding both sides' rows) and state_bytes at the end and at their peak while consuming
# (sampled every 10 ms by a second session); the rows buffered at the end
# (computed in SQL from the final watermark: orders with ts + 1 hour and
# shipments with ts at or after it) and bytes per buffered row; the
# checkpoints taken while consuming (count, duration = sync_ms + async_ms,
# max and p50, their share of the run time and the async share of that);
# and the restore of the final state after the last run.
#
# Correctness: the expected result is the join over the whole topics:
#   SELECT ... FROM orders l JOIN shipments r ON r.order_id = l.order_id
#      AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts
# After every run the weir sink and join_sql must equal it (rows missing
# either way, EXCEPT ALL), printed as <name>.except_rows (0 when equal);
# weir.pipelines must show records_in = N, lag_rows = 0, records_out = the
# expected rows, no late or dead records, and the final watermark.  A failed
# check prints the figure as `invalid`, and the script exits 1 after
# printing everything.
#
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after the measured statements; psql start-up and connecting are
# left out.  The weir figure includes creating the pipeline and its sink and
# starting the worker; join.worker_start_ms says how much of it the start
# was.
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value` (targets in the comment line above each).
# Progress goes to stderr.
#
# Knobs: N (records of both topics, default 2000000), RUNS (default 3),
# RATE (orders per second of event time, default 10), JITTER (seconds,
# default 5), MISS (percent of shipments outside the hour, default 5),
# BATCH (positions per partition per SQL round, default 100000: smaller
# rounds make the SQL scan the growing "so far" side more often),
# WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default 600),
# WEIR_BENCH_INSTALLED (bench/common.sh), BASELINE=<git rev> (the join and
# join_in_worker figures of that build too, run in the same rounds:
# baseline.join, ratio.join_vs_baseline, ...; bench/README.md).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
RATE="${RATE:-10}"
JITTER="${JITTER:-5}"
MISS="${MISS:-5}"
TIMEOUT="${TIMEOUT:-600}"
BATCH="${BATCH:-100000}"	# positions per partition per statement in (b) and (c)
ORDERS=$((N / 2))
SHIPMENTS=$((N - ORDERS))	# one per order, and one more when N is odd
COLUMNS="l.order_id, l.amount, l.ts AS ordered_at, r.carrier, r.ts AS shipped_at"
TOPICS=(orders shipments)

# Build, install, a throwaway cluster (DIR, PORT, progress()), bench/lib.sh;
# with BASELINE=<rev>, that build and its cluster too.
BENCH_WITH_BASELINE=1
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" join

# except_rows TABLE: rows of TABLE not in join_expected plus rows of
# join_expected not in TABLE (EXCEPT ALL both ways); 0 when they are equal.
SINK_COLS="order_id, amount, ordered_at, carrier, shipped_at"
except_rows() {
	q "SELECT (SELECT count(*) FROM (SELECT $SINK_COLS FROM $1
									 EXCEPT ALL SELECT $SINK_COLS FROM join_expected) x)
			+ (SELECT count(*) FROM (SELECT $SINK_COLS FROM join_expected
									 EXCEPT ALL SELECT $SINK_COLS FROM $1) y)"
}

# --- data -----------------------------------------------------------------
progress "loading $ORDERS orders ($RATE per second of event time, up to $JITTER s early) and"
progress "  $SHIPMENTS shipments ($MISS% more than an hour after their order) into 4-partition topics"
# into both clusters with BASELINE (lib.sh, bench_builds), the current one last
for build in $(bench_builds); do
	bench_use "$build"
	[ -z "$BASELINE" ] || progress "  into the $build build's cluster"
	weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
SELECT weir.create_topic('orders', 'order_id bigint, amount int, ts timestamptz',
						 partitions => 4, key => 'order_id');
SELECT weir.create_topic('shipments', 'order_id bigint, carrier text, ts timestamptz',
						 partitions => 4, key => 'order_id');
-- order i: at i / RATE seconds of event time minus up to JITTER seconds,
-- inserted in order of i
SELECT setseed(0.42);
INSERT INTO orders (order_id, amount, ts)
	SELECT i + 1, 1 + floor(random() * 500)::int,
		   timestamptz '2026-01-01 00:00:00+00'
		   + (i * (1.0 / $RATE) - random() * $JITTER) * interval '1 second'
	  FROM generate_series(0, $ORDERS - 1) i
	 ORDER BY i;
-- one shipment per order (and one for order 1 more if N is odd), within
-- the hour after it or (MISS %) 61 to 120 minutes after; inserted by ts
-- plus up to JITTER seconds
INSERT INTO shipments (order_id, carrier, ts)
	SELECT order_id, carrier, ts
	  FROM (SELECT o.order_id,
				   (ARRAY['dhl', 'ups', 'fedex', 'post'])[1 + floor(random() * 4)::int] AS carrier,
				   o.ts + CASE WHEN random() < $MISS / 100.0
							   THEN interval '61 minutes' + random() * interval '59 minutes'
							   ELSE random() * interval '1 hour' END AS ts
			  FROM orders o, generate_series(1, CASE WHEN o.order_id = 1 THEN 1 + $SHIPMENTS - $ORDERS ELSE 1 END)) s
	 ORDER BY ts + random() * $JITTER * interval '1 second';
VACUUM ANALYZE orders;
VACUUM ANALYZE shipments;

-- the expected result, from the definition
CREATE TABLE join_expected AS
	SELECT $COLUMNS
	  FROM orders l JOIN shipments r
		ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts;
CHECKPOINT;

CREATE TABLE join_sql (order_id bigint, amount int, ordered_at timestamptz,
					   carrier text, shipped_at timestamptz);

-- figures of every weir run
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint,
	peak_windows bigint, peak_bytes bigint, chunks bigint, chunk_bytes bigint);
EOF
	# (c) the read limit, of both topics, and what the weir runs need
	create_bench_helpers

	# (b) the incremental join: per round and partition, new orders with the
	# shipments so far, old orders with the new shipments, each statement
	# planned for its positions.  Returns the rows produced.
	batch_function bench_sql --custom-plans <<EOF
			INSERT INTO join_sql (order_id, amount, ordered_at, carrier, shipped_at)
			SELECT $COLUMNS
			  FROM orders l JOIN shipments r
				ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts
			 WHERE l.part = p AND l.pos > a AND l.pos <= a + $BATCH
			   AND r.part = p AND r.pos <= a + $BATCH;
			GET DIAGNOSTICS n = ROW_COUNT;
			acc := acc + n;
			INSERT INTO join_sql (order_id, amount, ordered_at, carrier, shipped_at)
			SELECT $COLUMNS
			  FROM orders l JOIN shipments r
				ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts
			 WHERE l.part = p AND l.pos <= a
			   AND r.part = p AND r.pos > a AND r.pos <= a + $BATCH;
			GET DIAGNOSTICS n = ROW_COUNT;
			acc := acc + n;
EOF
done
baseline_check_data
expect_equal "orders loaded" "$(q 'SELECT count(*) FROM orders')" "$ORDERS"
expect_equal "shipments loaded" "$(q 'SELECT count(*) FROM shipments')" "$SHIPMENTS"
# co-partitioned: an order's shipments are in the partition of its number
expect_equal "shipments in another partition than their order" \
	"$(q 'SELECT count(*) FROM orders l JOIN shipments r USING (order_id) WHERE l.part <> r.part')" 0
progress "partitions: orders $(partition_counts orders), shipments $(partition_counts shipments)"
EXPECTED=$(q "SELECT count(*) FROM join_expected")
# The watermark once everything is read: the smallest partition maximum
# over both topics, minus the out-of-orderness; and the rows still buffered
# then (a left row leaves once ts + right_after, a right row once ts +
# right_before, is below it)
WATERMARK=$(q "SELECT min(m) - interval '$JITTER s'
				 FROM (SELECT max(ts) m FROM orders GROUP BY part
					   UNION ALL SELECT max(ts) FROM shipments GROUP BY part) s")
BUFFERED_LEFT=$(q "SELECT count(*) FROM orders WHERE ts + interval '1 hour' >= '$WATERMARK'")
BUFFERED_RIGHT=$(q "SELECT count(*) FROM shipments WHERE ts >= '$WATERMARK'")
BUFFERED=$((BUFFERED_LEFT + BUFFERED_RIGHT))
# one key entry holds both sides' rows of its key
BUFFERED_KEYS=$(q "SELECT count(DISTINCT order_id)
					 FROM (SELECT order_id FROM orders WHERE ts + interval '1 hour' >= '$WATERMARK'
						   UNION ALL SELECT order_id FROM shipments WHERE ts >= '$WATERMARK') b")
progress "expected: $EXPECTED joined rows; final watermark $WATERMARK, with $BUFFERED_LEFT orders"
progress "  and $BUFFERED_RIGHT shipments still buffered ($BUFFERED_KEYS key entries)"

# --- (c) the read limit -----------------------------------------------------
read_limit_warm_up

# --- (b) plain SQL -----------------------------------------------------------
SQL_EXCEPT=""
SQL_ROWS=""
# sql_round RUN: one run of each SQL figure (the rounds: see the end)
sql_round() {
	local run=$1 got
	sql_run sql "$run" join_sql
	SQL_EXCEPT=$(except_rows join_sql)
	SQL_ROWS=$OUT
	if [ "$SQL_EXCEPT" != 0 ] || [ "$OUT" != "$EXPECTED" ]; then
		invalid sql "run $run: produced $OUT rows, join_sql differs from the expected rows in $SQL_EXCEPT rows"
	else
		progress "  join_sql checked: $OUT rows = expected"
	fi
}

# --- (a) weir ---------------------------------------------------------------
declare -A RUN_RATE=()
JOIN_EXCEPT=""
JOIN_ROWS=""
# weir_run RUN [restore|in_worker]: one join over the whole backlog of
# both topics, as weir runs it by default (figure join: weir.read_ahead
# auto, so a read-ahead process reads the topics); with in_worker, with
# weir.read_ahead off: the worker reads itself (figure join_in_worker).
weir_run() {
	local run=$1 name="jn_$1" kind=join out late dead got chunks chunk_bytes entries
	local peak_windows peak_bytes samples

	if [ "${2:-}" = in_worker ]; then
		kind=join_in_worker name="jw_$1"
		q "ALTER SYSTEM SET weir.read_ahead = off" >/dev/null
		q "SELECT pg_reload_conf()" >/dev/null
		sleep 0.2
	fi

	q "VACUUM weir.pipeline_chunk" >/dev/null
	q "CHECKPOINT" >/dev/null
	run_pipeline "$kind" "$run" "$name" \
		"SELECT weir.create_join('$name', 'orders', 'shipments', left_key => 'order_id',
						right_key => 'order_id', left_event_time => 'ts', right_event_time => 'ts',
						right_before => '0', right_after => '1 hour', columns => '$COLUMNS',
						out_of_orderness => '$JITTER s', start => true) > 0" \
		"p.records_out, p.records_late, p.records_dead" sample || { read_ahead_default; return 0; }
	read_ahead_default
	read -r out late dead <<<"$COUNTS"
	read -r peak_windows _ peak_bytes samples <<<"$PEAK"
	progress "  $out out, $late late, $dead dead; $WINDOWS key entries, $BYTES bytes (peak $peak_windows entries, $peak_bytes bytes; $samples samples)"

	# correctness: everything read, the right watermark and counts, the
	# expected rows in the sink
	[ "$out $late $dead" = "$EXPECTED 0 0" ] ||
		BAD+="records out/late/dead $out/$late/$dead, expected $EXPECTED/0/0; "
	got=$(except_rows "$name")
	JOIN_EXCEPT=$got
	JOIN_ROWS=$(q "SELECT count(*) FROM $name")
	[ "$JOIN_ROWS" = "$out" ] || BAD+="records_out $out but $JOIN_ROWS rows in the sink; "
	[ "$got" = 0 ] || BAD+="the sink differs from the expected rows in $got rows; "
	if [ -n "$BAD" ]; then
		invalid "$kind" "run $run: $BAD"
	else
		progress "  sink checked: $(q "SELECT count(*) FROM $name") rows = expected"
	fi
	record "$kind" "$SECS"
	if [ "$kind" = join_in_worker ]; then
		drop_pipeline "$name"
		return 0
	fi
	RUN_RATE[$run]=$(rate "$SECS")
	read -r chunks chunk_bytes <<<"$(chunks_of "$ID")"
	q "INSERT INTO bench_state VALUES ('join', $run, $SECS, $WINDOWS, $BYTES, ${peak_windows:-NULL},
									   ${peak_bytes:-NULL}, $chunks, $chunk_bytes)" >/dev/null
	progress "  chunks left: $chunks, $chunk_bytes bytes"

	if [ "${2:-}" = restore ]; then
		progress "  restoring the final state ($WINDOWS key entries)"
		if restore_pipeline "$name" "$ID"; then
			entries=${RESTORE##* }
			if [ "$entries" != "$BUFFERED_KEYS" ]; then
				problem "restore: restored $entries key entries, $BUFFERED_KEYS have buffered rows"
			fi
			got=$(except_rows "$name")
			[ "$got" = 0 ] || problem "restore: the sink now differs from the expected rows in $got rows"
		fi
	fi
	drop_pipeline "$name"
}

# weir.read_ahead back to its default (auto) for the next runs
read_ahead_default() {
	q "ALTER SYSTEM RESET weir.read_ahead" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
}

# Round after round, a run of each figure: the read limit, the SQL, weir
# as by default (a read-ahead process), weir's worker reading itself (lib.sh,
# read_limit_run); with BASELINE, each weir run on the baseline too, just
# before or after (lib.sh, baseline_before).
for ((run = 1; run <= RUNS; run++)); do
	ROUND=$run
	read_limit_run "$run"
	sql_round "$run"
	baseline_before weir_run "$run"
	weir_run "$run" "$([ "$run" = "$RUNS" ] && echo restore)"
	baseline_after weir_run "$run"
	baseline_before weir_run "$run" in_worker
	weir_run "$run" in_worker
	baseline_after weir_run "$run" in_worker
done

# what the SQL left behind (its last round)
progress "plans of the second round's statements for partition 0:"
weir_psql -At <<EOF | sed 's/^/bench:     /' >&2
EXPLAIN INSERT INTO join_sql SELECT $COLUMNS FROM orders l JOIN shipments r
	 ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts
	WHERE l.part = 0 AND l.pos > $BATCH AND l.pos <= 2 * $BATCH AND r.part = 0 AND r.pos <= 2 * $BATCH;
EXPLAIN INSERT INTO join_sql SELECT $COLUMNS FROM orders l JOIN shipments r
	 ON r.order_id = l.order_id AND l.ts BETWEEN r.ts - interval '1 hour' AND r.ts
	WHERE l.part = 0 AND l.pos <= $BATCH AND r.part = 0 AND r.pos > $BATCH AND r.pos <= 2 * $BATCH;
EOF

# --- figures --------------------------------------------------------------
echo "# weir bench/join: $ORDERS orders + $SHIPMENTS shipments, 4 partitions each, keyed by order_id;"
echo "#  $RATE orders per second of event time, one shipment each, $MISS% of them more than an hour"
echo "#  after the order; both up to $JITTER s out of order; l.ts BETWEEN r.ts - 1 hour AND r.ts"
echo "# rates: events/s of both topics, each the best of $RUNS runs; join: from weir.create_join() until"
echo "#  weir.checkpoint() returns with every record processed and checkpointed; sql: rounds of $BATCH"
echo "#  positions per partition of both topics, new orders x shipments so far + old orders x new"
echo "#  shipments, per partition, INSERT ... SELECT ... JOIN into an insert-only table;"
echo "#  read_limit: weir._scan_count() (row by row), read_limit_heap_order: weir._scan_count_partitions() (every partition's range in one pass, a heap page at a time, as the worker reads)"
echo "events: $N events"
echo "runs: $RUNS runs"
echo "result_rows.expected: $EXPECTED rows"
figure join
figure join_in_worker
figure sql
figure read_limit
figure read_limit_heap_order
worker_start_figure join
worker_start_figure join_in_worker
operator_figures join sql
echo "# without a read-ahead process (weir.read_ahead = off): the worker reads the topics itself"
if valid join_in_worker; then
	for other in sql read_limit read_limit_heap_order; do
		if valid "$other"; then
			ratio_lines join_in_worker "$other"
		fi
	done
	if valid join; then
		ratio_lines join join_in_worker
	fi
fi
echo "# sanity: rows produced in the last run of each (weir: its sink, checked equal to"
echo "#  records_out), and rows in which they differ from the join over the whole topics"
echo "#  (EXCEPT ALL both ways); 0 when equal"
echo "result_rows.join: ${JOIN_ROWS:-n/a} rows"
echo "result_rows.sql: ${SQL_ROWS:-n/a} rows"
echo "join.except_rows: ${JOIN_EXCEPT:-n/a} rows"
echo "sql.except_rows: ${SQL_EXCEPT:-n/a} rows"
echo "# state: key entries (weir.pipelines windows: one per key, both sides' rows) and state_bytes, weir's accounting of"
echo "#  the pipeline's DSA area (entries, buffered rows and the index; no DSA size-class rounding or"
echo "#  segment slack), at the end and at the peak sampled while consuming; buffered rows at the end"
echo "#  from the final watermark (orders with ts + 1 hour, shipments with ts, at or after it)"
echo "join.buffered_rows_at_end: $BUFFERED rows"
echo "join.buffered_orders_at_end: $BUFFERED_LEFT rows"
echo "join.buffered_shipments_at_end: $BUFFERED_RIGHT rows"
q "SELECT max(windows), max(state_bytes), round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1),
		  round(sum(state_bytes)::numeric / nullif(count(*) * $BUFFERED, 0), 1),
		  max(peak_windows), max(peak_bytes), max(chunks), max(chunk_bytes)
	 FROM bench_state" | tr '|' ' ' |
	while read -r windows bytes per_entry per_row peak_w peak_b chunks chunk_bytes; do
		echo "join.key_entries: ${windows:-n/a} entries"
		echo "join.state_bytes: ${bytes:-n/a} bytes"
		echo "join.bytes_per_key_entry: ${per_entry:-n/a} bytes"
		echo "join.bytes_per_buffered_row: ${per_row:-n/a} bytes"
		echo "join.peak_key_entries: ${peak_w:-n/a} entries"
		echo "join.peak_state_bytes: ${peak_b:-n/a} bytes"
		echo "join.chunks_at_end: ${chunks:-n/a} chunks"
		echo "join.chunk_bytes_at_end: ${chunk_bytes:-n/a} bytes"
	done
if [ -n "$RESTORED_STATE" ]; then
	echo "join.restored_key_entries: ${RESTORED_STATE% *} entries"
	echo "join.restored_state_bytes: ${RESTORED_STATE#* } bytes"
	echo "join.bytes_per_buffered_row.restored: $(per "${RESTORED_STATE#* }" "$BUFFERED") bytes"
fi
echo "# checkpoints while consuming, all runs (interval 1 s): duration = sync_ms + async_ms;"
echo "#  time_share = checkpoint durations / the measured run times (the rest is reading and joining);"
echo "#  async_share = async_ms / duration; chunk_bytes_per_entry = bytes / state_rows written"
checkpoint_figures join checkpoint. entries entry "${CHECKPOINT_FIGURES[@]}"
if [ -n "$RESTORE" ]; then
	echo "# restore of the final state after the last run (weir.restores)"
	restore_figures restore. key_entries entries
fi
finish
