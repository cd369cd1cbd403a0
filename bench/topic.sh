#!/usr/bin/env bash
# bench/topic.sh — what does a weir topic cost compared with a plain table?
#
#   N=200000 bench/topic.sh
#
# Builds and installs weir, starts its own throwaway cluster, and measures in
# one run, each figure the best of 3 runs:
#   (a) COPY of N rows into a 4-partition topic vs a plain table
#       bp(part, pos, ...) PRIMARY KEY (part, pos) with part/pos in the data;
#   (b) INSERT ... SELECT of 1000-row batches from 2 pgbench clients, same
#       two tables (the plain table takes pos from a sequence);
#   (c) reading everything back 10000 rows at a time: weir.read per
#       partition, weir.poll draining the topic, and plain SQL below
#       weir.stable_position(), against index range scans of the same rows
#       in the topic table and of bp.
# Timing: wall clock (clock_timestamp()) read in the same psql session just
# before and after each statement, so psql start-up and connecting are left
# out; pgbench's tps without connection time for (b).
# stdout: one figure per line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value`.  Cost ratios (topic time / plain time, target
# <= 1.3) for copy and insert; rate ratios (weir rate / plain rate, target
# >= 0.67) for read and poll.  Progress goes to stderr.
#
# Knobs: N (rows, default 200000), RUNS (default 3), WEIR_PORT.

set -euo pipefail

N="${N:-200000}"
RUNS="${RUNS:-3}"
BATCH=1000		# rows per INSERT in (b)
PAGE=10000		# rows per read/poll call in (c)

# Build, install, and a throwaway cluster (DIR, PORT, progress()).
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" topic
mkdir -p "$DIR/files"
chmod 755 "$DIR/files"
if weir_is_root; then chown "$WEIR_DB_OS_USER": "$DIR/files"; fi

# q and sql_timed come from bench/lib.sh (through common.sh)

declare -A BEST=()
# record NAME SECONDS: keep the fastest run.
record() {
	if [ -z "${BEST[$1]:-}" ] || awk -v a="$2" -v b="${BEST[$1]}" 'BEGIN { exit !(a < b) }'; then
		BEST[$1]=$2
	fi
	progress "  $1 run: $(awk -v r="$3" -v t="$2" 'BEGIN { printf "%.0f rows/s (%.3f s)", r / t, t }')"
}

expect_rows() {
	if [ "$2" != "$3" ]; then
		echo "bench: $1 saw $2 rows, expected $3" >&2
		exit 1
	fi
}

# Fresh, empty tables, so every run starts from the same state.
recreate_tables() {
	weir_psql -q <<'EOF' >/dev/null
SET client_min_messages = warning;
DO $$ BEGIN
	IF to_regclass('bt') IS NOT NULL THEN PERFORM weir.drop_topic('bt'); END IF;
END $$;
DROP TABLE IF EXISTS bp;
DROP SEQUENCE IF EXISTS bp_pos;
SELECT weir.create_topic('bt', 'k bigint, v bigint, payload text', partitions => 4, key => 'k');
CREATE TABLE bp (part int, pos bigint, k bigint, v bigint, payload text, PRIMARY KEY (part, pos));
CREATE SEQUENCE bp_pos;
CHECKPOINT;
EOF
}

progress "preparing: extension, COPY files, pgbench scripts, read functions"
weir_psql -q <<EOF
CREATE EXTENSION weir;
-- the same N rows for both tables; for bp, part = k % 4 and pos numbers the
-- rows of each part from 1, as weir does for the topic
COPY (SELECT k, k % 1000, md5(k::text) FROM generate_series(0, $N - 1) k)
	TO '$DIR/files/topic.tsv';
COPY (SELECT k % 4, k / 4 + 1, k, k % 1000, md5(k::text) FROM generate_series(0, $N - 1) k)
	TO '$DIR/files/plain.tsv';

-- (c) read everything, one partition after the other, $PAGE rows per call
CREATE FUNCTION bench_read_topic() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	p int; after bigint; c bigint; last bigint; total bigint := 0;
BEGIN
	FOR p IN 0..3 LOOP
		after := 0;
		LOOP
			SELECT count(*), max(pos) INTO c, last FROM weir.read(NULL::bt, p, after, $PAGE);
			EXIT WHEN c = 0;
			total := total + c;
			after := last;
		END LOOP;
	END LOOP;
	RETURN total;
END \$\$;

-- a plain index range scan; index-only scans are off too, so the heap rows
-- are visited as weir.read must
CREATE FUNCTION bench_read_plain() RETURNS bigint LANGUAGE plpgsql
	SET enable_seqscan = off SET enable_bitmapscan = off SET enable_indexonlyscan = off
AS \$\$
DECLARE
	p int; a bigint; c bigint; last bigint; total bigint := 0;
BEGIN
	FOR p IN 0..3 LOOP
		a := 0;
		LOOP
			-- the same work as the weir.read loop: rows and the last position
			SELECT count(*), max(pos) INTO c, last FROM bp WHERE part = p AND pos > a AND pos <= a + $PAGE;
			EXIT WHEN c = 0;
			total := total + c;
			a := a + $PAGE;
		END LOOP;
	END LOOP;
	RETURN total;
END \$\$;

-- the same range scan over the topic table itself: the same rows weir.read
-- returns, in the same heap layout
CREATE FUNCTION bench_read_topic_plain() RETURNS bigint LANGUAGE plpgsql
	SET enable_seqscan = off SET enable_bitmapscan = off SET enable_indexonlyscan = off
AS \$\$
DECLARE
	p int; a bigint; c bigint; last bigint; total bigint := 0;
BEGIN
	FOR p IN 0..3 LOOP
		a := 0;
		LOOP
			SELECT count(*), max(pos) INTO c, last FROM bt WHERE part = p AND pos > a AND pos <= a + $PAGE;
			EXIT WHEN c = 0;
			total := total + c;
			a := a + $PAGE;
		END LOOP;
	END LOOP;
	RETURN total;
END \$\$;

-- the plain-SQL reader weir documents: weir.stable_position() in one
-- statement, then a range scan below it in later ones (each statement of a
-- volatile PL/pgSQL function takes a new snapshot in READ COMMITTED)
CREATE FUNCTION bench_read_topic_sql() RETURNS bigint LANGUAGE plpgsql
	SET enable_seqscan = off SET enable_bitmapscan = off SET enable_indexonlyscan = off
AS \$\$
DECLARE
	p int; a bigint; c bigint; last bigint; stable bigint; total bigint := 0;
BEGIN
	FOR p IN 0..3 LOOP
		a := 0;
		stable := weir.stable_position('bt', p);
		WHILE a < stable LOOP
			SELECT count(*), max(pos) INTO c, last FROM bt
			 WHERE part = p AND pos > a AND pos <= least(a + $PAGE, stable);
			total := total + c;
			a := least(a + $PAGE, stable);
		END LOOP;
	END LOOP;
	RETURN total;
END \$\$;

-- drain the topic as a new consumer, in one transaction
CREATE FUNCTION bench_poll(consumer text) RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	c bigint; total bigint := 0;
BEGIN
	LOOP
		SELECT count(*) INTO c FROM weir.poll(NULL::bt, consumer, $PAGE);
		EXIT WHEN c = 0;
		total := total + c;
	END LOOP;
	RETURN total;
END \$\$;
EOF

cat >"$DIR/files/insert_topic.sql" <<EOF
\set base random(0, 1000000000)
INSERT INTO bt (k, v, payload)
	SELECT :base + g, g, md5((:base + g)::text) FROM generate_series(1, $BATCH) g;
EOF
cat >"$DIR/files/insert_plain.sql" <<EOF
\set base random(0, 1000000000)
INSERT INTO bp (part, pos, k, v, payload)
	SELECT (:base + g) % 4, nextval('bp_pos'), :base + g, g, md5((:base + g)::text)
	FROM generate_series(1, $BATCH) g;
EOF
chmod 644 "$DIR"/files/*.sql

# --- (b) batched INSERT, 2 concurrent clients -----------------------------
TXNS=$((N / (2 * BATCH)))
[ "$TXNS" -ge 1 ] || TXNS=1
INSERT_ROWS=$((TXNS * 2 * BATCH))
# pgbench_insert TABLE: sets T to the seconds the run took, from pgbench's
# tps without the connection time.
pgbench_insert() {
	local out tps
	out=$(cd "$DIR" && weir_as_pg "$PG_BIN/pgbench" -n -c 2 -j 2 -t "$TXNS" \
		-f "$DIR/files/insert_$1.sql" -h "$DIR" -p "$PORT" -U postgres postgres)
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
	if [ -z "$tps" ]; then
		echo "$out" >&2
		echo "bench: no tps in pgbench's output" >&2
		exit 1
	fi
	T=$(awk -v n="$((TXNS * 2))" -v tps="$tps" 'BEGIN { printf "%.6f", n / tps }')
}
for ((run = 1; run <= RUNS; run++)); do
	progress "insert, run $run of $RUNS ($INSERT_ROWS rows in $BATCH-row batches, 2 clients)"
	recreate_tables
	# alternate the order so neither table always goes first
	for t in $([ $((run % 2)) = 1 ] && echo "topic plain" || echo "plain topic"); do
		pgbench_insert "$t"
		record "insert.$t" "$T" "$INSERT_ROWS"
	done
	expect_rows "insert into bt" "$(q 'SELECT count(*) FROM bt')" "$INSERT_ROWS"
	expect_rows "insert into bp" "$(q 'SELECT count(*) FROM bp')" "$INSERT_ROWS"
done

# --- (a) COPY -------------------------------------------------------------
copy_into() {
	if [ "$1" = topic ]; then
		sql_timed "COPY bt (k, v, payload) FROM '$DIR/files/topic.tsv'"
	else
		sql_timed "COPY bp (part, pos, k, v, payload) FROM '$DIR/files/plain.tsv'"
	fi
}
for ((run = 1; run <= RUNS; run++)); do
	progress "copy, run $run of $RUNS ($N rows)"
	recreate_tables
	for t in $([ $((run % 2)) = 1 ] && echo "topic plain" || echo "plain topic"); do
		copy_into "$t"
		record "copy.$t" "$T" "$N"
	done
done
expect_rows "copy into bt" "$(q 'SELECT count(*) FROM bt')" "$N"
expect_rows "copy into bp" "$(q 'SELECT count(*) FROM bp')" "$N"

# --- (c) reads, on the tables the last COPY run filled --------------------
progress "VACUUM ANALYZE and a warm-up read of both tables"
q "VACUUM ANALYZE bt" >/dev/null
q "VACUUM ANALYZE bp" >/dev/null
q "CHECKPOINT" >/dev/null
expect_rows "warm-up weir.read" "$(q 'SELECT bench_read_topic()')" "$N"
expect_rows "warm-up plain read" "$(q 'SELECT bench_read_plain()')" "$N"
expect_rows "warm-up weir.poll" "$(q "SELECT bench_poll('warmup')")" "$N"
expect_rows "warm-up plain read of bt" "$(q 'SELECT bench_read_topic_plain()')" "$N"
expect_rows "warm-up stable_position read" "$(q 'SELECT bench_read_topic_sql()')" "$N"
for ((run = 1; run <= RUNS; run++)); do
	progress "read, run $run of $RUNS"
	sql_timed 'SELECT bench_read_topic()'
	expect_rows "weir.read" "$OUT" "$N"
	record read.topic "$T" "$N"
	sql_timed 'SELECT bench_read_plain()'
	expect_rows "plain read" "$OUT" "$N"
	record read.plain "$T" "$N"
	sql_timed "SELECT bench_poll('bench$run')"
	expect_rows "weir.poll" "$OUT" "$N"
	record poll.topic "$T" "$N"
	sql_timed 'SELECT bench_read_topic_plain()'
	expect_rows "plain read of bt" "$OUT" "$N"
	record read.topic_plain "$T" "$N"
	sql_timed 'SELECT bench_read_topic_sql()'
	expect_rows "stable_position read" "$OUT" "$N"
	record read.topic_sql "$T" "$N"
done

# --- figures --------------------------------------------------------------
rate() { awk -v r="$1" -v t="$2" 'BEGIN { printf "%.0f", r / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

echo "# weir bench/topic: $N rows, 4 partitions, each figure the best of $RUNS runs"
echo "# (wall clock: clock_timestamp() around each statement in its psql session; inserts: pgbench"
echo "#  tps without connection time, $INSERT_ROWS rows in $BATCH-row batches from 2 clients)"
echo "rows: $N rows"
echo "runs: $RUNS runs"
echo "copy.topic: $(rate "$N" "${BEST[copy.topic]}") rows/s"
echo "copy.plain: $(rate "$N" "${BEST[copy.plain]}") rows/s"
echo "insert.topic: $(rate "$INSERT_ROWS" "${BEST[insert.topic]}") rows/s"
echo "insert.plain: $(rate "$INSERT_ROWS" "${BEST[insert.plain]}") rows/s"
echo "read.topic: $(rate "$N" "${BEST[read.topic]}") rows/s"
echo "read.plain: $(rate "$N" "${BEST[read.plain]}") rows/s"
echo "poll.topic: $(rate "$N" "${BEST[poll.topic]}") rows/s"
echo "read.topic_plain_scan: $(rate "$N" "${BEST[read.topic_plain]}") rows/s"
echo "read.topic_stable_position_sql: $(rate "$N" "${BEST[read.topic_sql]}") rows/s"
echo "# cost ratios (topic time / plain time, target <= 1.3)"
echo "ratio.copy_topic_vs_plain: $(ratio "${BEST[copy.topic]}" "${BEST[copy.plain]}")"
echo "ratio.insert_topic_vs_plain: $(ratio "${BEST[insert.topic]}" "${BEST[insert.plain]}")"
echo "# rate ratios (weir rate / plain index range scan rate, target >= 0.67)"
echo "# against the same rows (a range scan of the topic table itself):"
echo "ratio.read_vs_plain_same_rows: $(ratio "${BEST[read.topic_plain]}" "${BEST[read.topic]}")"
echo "ratio.poll_vs_plain_same_rows: $(ratio "${BEST[read.topic_plain]}" "${BEST[poll.topic]}")"
echo "ratio.stable_position_sql_vs_plain_same_rows: $(ratio "${BEST[read.topic_plain]}" "${BEST[read.topic_sql]}")"
echo "# against the plain table bp (same data, loaded with COPY's multi-insert):"
echo "ratio.read_vs_plain_table: $(ratio "${BEST[read.plain]}" "${BEST[read.topic]}")"
echo "ratio.poll_vs_plain_table: $(ratio "${BEST[read.plain]}" "${BEST[poll.topic]}")"
echo "ratio.plain_scan_topic_vs_plain_table: $(ratio "${BEST[read.plain]}" "${BEST[read.topic_plain]}")"
