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
#   (a) weir: weir.create_dedup(key => 'id', event_time => 'ts',
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
# WEIR_PORT, TIMEOUT (seconds weir.checkpoint() may wait, default 600),
# WEIR_BENCH_INSTALLED, BASELINE=<git rev> (the dedup figure of that build
# too, run in the same rounds: baseline.dedup, ratio.dedup_vs_baseline;
# bench/common.sh, bench/README.md).

set -euo pipefail

N="${N:-2000000}"
RUNS="${RUNS:-3}"
RATE="${RATE:-1000}"
DUPS="${DUPS:-25}"
TIMEOUT="${TIMEOUT:-600}"
BATCH=100000		# positions per partition per statement in (b) to (e)
HORIZON="1 minute"
BACK=$((RATE * 30))	# a repeat copies an id from up to this many records back (30 s)
TOPICS=(ev)

# Build, install, a throwaway cluster (DIR, PORT, progress()), bench/lib.sh;
# with BASELINE=<rev>, that build and its cluster too.
BENCH_WITH_BASELINE=1
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" dedup

# What a set of records looks like, to compare outputs: rows, sum(id),
# sum(amount), sum(epoch of ts).
SUMMARY="count(*) || ' ' || coalesce(sum(id), 0) || ' ' || coalesce(sum(amount), 0) || ' ' ||
		 coalesce(sum(extract(epoch FROM ts)), 0)"

# --- data -----------------------------------------------------------------
progress "loading $N records into topic ev (4 partitions): $RATE per second of event time, $DUPS% repeats"
# into both clusters with BASELINE (lib.sh, bench_builds), the current one last
for build in $(bench_builds); do
	bench_use "$build"
	[ -z "$BASELINE" ] || progress "  into the $build build's cluster"
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
WITH g AS MATERIALIZED (
	SELECT i, dup, back, amount,
		   max(CASE WHEN NOT dup THEN i END) OVER (ORDER BY i) AS last_new
	  FROM (SELECT i, i > 0 AND random() < $DUPS / 100.0 AS dup,
				   1 + floor(random() * least(i, $BACK))::int AS back,
				   floor(random() * 1000)::int AS amount
			  FROM generate_series(0, $N - 1) i) r)
INSERT INTO ev (id, ts, amount)
	SELECT coalesce(h.last_new, g.i) * 2654435761 % 1099511627776,
		   timestamptz '2026-01-01 00:00:00+00' + g.i * (1.0 / $RATE) * interval '1 second',
		   g.amount
	  FROM g LEFT JOIN g h ON g.dup AND h.i = g.i - g.back
	 ORDER BY g.i;
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

-- the watermark after reading up to position upto of every partition: the
-- smallest partition maximum of ts (each partition is in ts order, so its
-- maximum is the ts at its last position read; one index probe)
CREATE FUNCTION bench_watermark(upto bigint) RETURNS timestamptz LANGUAGE sql STABLE AS \$\$
	SELECT min((SELECT e.ts FROM ev e WHERE e.part = p AND e.pos <= upto
				 ORDER BY e.pos DESC LIMIT 1))
	  FROM generate_series(0, 3) p
\$\$;

CREATE TABLE dedup_sql (id bigint PRIMARY KEY, ts timestamptz, amount int);
CREATE TABLE dedup_sql_expiry (LIKE dedup_sql INCLUDING ALL);
CREATE TABLE dedup_state (id bigint PRIMARY KEY, ts timestamptz);
CREATE TABLE dedup_sink (id bigint, ts timestamptz, amount int);

-- figures of every weir run
CREATE TABLE bench_state (kind text, run int, secs float8, windows bigint, state_bytes bigint,
	peak_windows bigint, peak_windows_bytes bigint, peak_bytes bigint, chunks bigint, chunk_bytes bigint);
EOF
	# (e) the read limit, and what the weir runs need
	create_bench_helpers

	# (b) the alternative the issue names: a keyed table, ON CONFLICT DO
	# NOTHING.  It keeps every id forever: nothing ever leaves the table.
	# Returns the records kept.
	# insert_new_ids TABLE: the batch's records into a keyed table, ON CONFLICT
	# DO NOTHING, counting those kept (the body of (b) and (c))
	insert_new_ids() {
		cat <<EOF
			INSERT INTO $1 (id, ts, amount)
			SELECT id, ts, amount FROM ev
			 WHERE part = p AND pos > a AND pos <= a + $BATCH
			ON CONFLICT (id) DO NOTHING;
			GET DIAGNOSTICS n = ROW_COUNT;
			acc := acc + n;
EOF
	}
	batch_function bench_sql < <(insert_new_ids dedup_sql)

	# (c) the same with expiry: after each round of the partitions, the ids
	# whose (first) sighting is at least the horizon behind the watermark go.
	# Returns the records kept (inserted), deleted ones included.
	batch_function bench_sql_expiry --declare "expired timestamptz;" --round-end "
		expired := bench_watermark(a) - interval '$HORIZON';
		DELETE FROM dedup_sql_expiry WHERE ts <= expired;" < <(insert_new_ids dedup_sql_expiry)

	# (d) weir's output with bounded state: a keyed state table with expiry,
	# and the kept records into an insert-only sink without index
	batch_function bench_sql_sink --declare "expired timestamptz;" --round-end "
		expired := bench_watermark(a) - interval '$HORIZON';
		DELETE FROM dedup_state WHERE ts <= expired;" <<EOF
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
EOF
done
baseline_check_data
expect_equal "records loaded" "$(q 'SELECT count(*) FROM ev')" "$N"
progress "partitions: $(partition_counts ev)"
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
read_limit_warm_up

# --- (b), (c), (d) plain SQL -------------------------------------------------
# sql_round RUN: one run of each SQL figure (the rounds: see the end)
sql_round() {
	local run=$1 got
	sql_run sql "$run" dedup_sql
	got=$(q "SELECT $SUMMARY FROM dedup_sql")
	[ "$got" = "$EXPECTED" ] || invalid sql "run $run: output ($got), expected ($EXPECTED)"

	sql_run sql_expiry "$run" dedup_sql_expiry
	# everything kept went through the table; what is left is within the
	# horizon of the last watermark
	[ "$OUT" = "$KEPT" ] || invalid sql_expiry "run $run kept $OUT records, expected $KEPT"
	progress "  $OUT kept, $(q "SELECT count(*) FROM dedup_sql_expiry") left"

	sql_run sql_sink "$run" dedup_state dedup_sink
	got=$(q "SELECT $SUMMARY FROM dedup_sink")
	[ "$got" = "$EXPECTED" ] || invalid sql_sink "run $run: output ($got), expected ($EXPECTED)"
}

# --- (a) weir ---------------------------------------------------------------
declare -A RUN_RATE=()
LAST_COUNTS=""
# weir_run RUN [restore]: one deduplication over the whole backlog.
weir_run() {
	local run=$1 name="dedup_$1" out dropped late dead peak_windows peak_windows_bytes peak_bytes samples
	local got chunks chunk_bytes live

	q "VACUUM weir.pipeline_chunk" >/dev/null
	q "CHECKPOINT" >/dev/null
	run_pipeline dedup "$run" "$name" \
		"SELECT weir.create_dedup('$name', 'ev', key => 'id', event_time => 'ts',
								 horizon => '$HORIZON', start => true) > 0" \
		"p.records_out, p.records_dropped, p.records_late, p.records_dead" sample || return 0
	read -r out dropped late dead <<<"$COUNTS"
	read -r peak_windows peak_windows_bytes peak_bytes samples <<<"$PEAK"
	progress "  $out out, $dropped dropped, $late late, $dead dead; $WINDOWS ids, $BYTES bytes (peak $peak_windows ids, $peak_bytes bytes; $samples samples)"

	# correctness: everything read, the right watermark and counts, the
	# expected records in the sink
	[ "$out $dropped $late $dead" = "$KEPT $DROPPED 0 0" ] ||
		BAD+="records out/dropped/late/dead $out/$dropped/$late/$dead, expected $KEPT/$DROPPED/0/0; "
	got=$(q "SELECT $SUMMARY FROM $name")
	[ "$got" = "$EXPECTED" ] || BAD+="sink has ($got), expected ($EXPECTED); "
	if [ -n "$BAD" ]; then
		invalid dedup "run $run: $BAD"
	else
		progress "  sink checked: ($got) = expected"
	fi
	record dedup "$SECS"
	RUN_RATE[$run]=$(rate "$SECS")
	LAST_COUNTS="$out $dropped $late $dead"
	read -r chunks chunk_bytes <<<"$(chunks_of "$ID")"
	q "INSERT INTO bench_state VALUES ('dedup', $run, $SECS, $WINDOWS, $BYTES, ${peak_windows:-NULL},
									   ${peak_windows_bytes:-NULL}, ${peak_bytes:-NULL}, $chunks, $chunk_bytes)" >/dev/null
	progress "  chunks left: $chunks, $chunk_bytes bytes"

	if [ "${2:-}" = restore ]; then
		progress "  restoring the final state ($WINDOWS ids in memory, $LIVE within the horizon)"
		if restore_pipeline "$name" "$ID"; then
			live=${RESTORE##* }
			if [ "$live" != "$LIVE" ]; then
				problem "restore: restored $live ids, $LIVE are within the horizon of the watermark"
				INVALID[restore]=1
			fi
			got=$(q "SELECT $SUMMARY FROM $name")
			[ "$got" = "$EXPECTED" ] || problem "restore: the sink changed to ($got), expected ($EXPECTED)"
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
SQL_LEFT=$(q "SELECT count(*) FROM dedup_sql")
SQL_EXPIRY_LEFT=$(q "SELECT count(*) FROM dedup_sql_expiry")
SQL_SINK_STATE_LEFT=$(q "SELECT count(*) FROM dedup_state")
SQL_BYTES=$(q "SELECT pg_total_relation_size('dedup_sql')")
SQL_INDEX_BYTES=$(q "SELECT pg_relation_size('dedup_sql_pkey')")

# --- figures --------------------------------------------------------------
echo "# weir bench/dedup: $N records, 4 partitions, $RATE records per second of event time,"
echo "#  $DUPS% repeats of an id seen up to 30 s before; horizon $HORIZON"
echo "# rates: events/s, each the best of $RUNS runs; dedup: from weir.create_dedup() until"
echo "#  weir.checkpoint() returns with every record processed and checkpointed; sql: $BATCH-position"
echo "#  micro-batches per partition, INSERT ... ON CONFLICT (id) DO NOTHING into a keyed table that keeps"
echo "#  every id; sql_expiry: the same with a DELETE of expired ids after each round (their output lost);"
echo "#  sql_sink: keyed state table with that expiry + insert-only sink (weir's output, bounded state);"
echo "#  read_limit: weir._scan_count() (row by row), read_limit_heap_order: weir._scan_count_partitions() (every partition's range in one pass, a heap page at a time, as the worker reads)"
echo "events: $N events"
echo "runs: $RUNS runs"
echo "records_kept: $KEPT records"
echo "records_duplicate: $DROPPED records"
figure dedup
figure sql
figure sql_expiry
figure sql_sink
figure read_limit
figure read_limit_heap_order
worker_start_figure dedup
operator_figures dedup sql sql_expiry sql_sink
if [ -n "$LAST_COUNTS" ]; then
	read -r out dropped late dead <<<"$LAST_COUNTS"
	echo "# weir.pipelines after the last run's checkpoint (expected: $KEPT out, $DROPPED dropped, checked every run)"
	echo "dedup.records_out: $out records"
	echo "dedup.records_dropped: $dropped records"
	echo "dedup.records_late: $late records"
	echo "dedup.records_dead: $dead records"
fi
echo "# state: ids in memory (weir.pipelines windows) and state_bytes, weir's accounting of the"
echo "#  pipeline's DSA area (entries and their index table; no DSA size-class rounding or segment"
echo "#  slack); at the end (the index sized for the run's peak), at the peak sampled while consuming"
echo "#  (max over runs; bytes per id at the sample with the most ids), and after restoring the final"
echo "#  state; $LIVE ids are within the horizon of the final watermark.  While catching up the peak"
echo "#  follows the records read per checkpoint interval, not the horizon: ids changed since the last"
echo "#  checkpoint do not expire before the next one"
q "SELECT max(windows), max(state_bytes), round(sum(state_bytes)::numeric / nullif(sum(windows), 0), 1),
		  max(peak_windows), max(peak_bytes),
		  round(sum(peak_windows_bytes)::numeric / nullif(sum(peak_windows), 0), 1),
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
	echo "dedup.bytes_per_id.restored: $(per "${RESTORED_STATE#* }" "${RESTORED_STATE% *}") bytes"
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
checkpoint_figures dedup checkpoint. ids id "${CHECKPOINT_FIGURES[@]}"
if [ -n "$RESTORE" ]; then
	echo "# restore of the final state after the last run (weir.restores)"
	restore_figures restore. ids ids
fi
finish
