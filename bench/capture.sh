#!/usr/bin/env bash
# bench/capture.sh — what does capturing a table's changes cost, and how
# fast does a capture go beside PostgreSQL's own decoding?
#
#   N=200000 RUNS=3 bench/capture.sh
#
# Builds and installs weir, starts its own throwaway cluster (and a second
# one, the remote publisher), and measures, each round over fresh data:
#   (a) decoding: N row changes (inserts, then updates of the same rows of
#       `app`, 100 per transaction) are written while a capture is stopped
#       and a pgoutput slot exists beside its slot; then, over the same WAL,
#       pg_logical_slot_get_binary_changes with pgoutput (the decoding
#       limit: decoding and nothing else) against the capture started until
#       it has read that WAL and committed every change to its topic
#       (worker start-up included);
#   (b) the application: pgbench (4 clients, one upsert per transaction,
#       SECONDS_APP s) with a capture running against the same load
#       without one, the order alternating by round;
#   (c) remote: the same N changes written on a second server and captured
#       through a replication connection (pgoutput), against the local
#       capture of (a);
#   and, as the floor of what a capture does, the topic's N rows copied into
#   a plain table of the same shape (`INSERT ... SELECT`, insert_floor):
#   decode_plus_insert is the pgoutput time plus that.
# stdout: one figure a line, `name: value unit`; ratios as
# `ratio.<a>_vs_<b>: value` (rate a / rate b), best / best and the median
# of the rounds' paired ratios.  Targets (issue 18): capture_vs_pgoutput
# >= 0.5, app_with_capture_vs_app_without >= 0.8.
#
# Knobs: N (changes, default 200000), RUNS (default 3), SECONDS_APP (10),
# WEIR_PORT.

set -euo pipefail

N="${N:-200000}"
RUNS="${RUNS:-3}"
SECONDS_APP="${SECONDS_APP:-10}"
PER_TXN=100

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" capture

REMOTE_DIR="/tmp/weir-bench-capture-remote-$$"
REMOTE_PORT=$(weir_free_port $((PORT + 1)) $((PORT + 100)))
remote_psql() {
	(cd "$REMOTE_DIR" && weir_as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
		-h "$REMOTE_DIR" -p "$REMOTE_PORT" -U postgres -d postgres "$@")
}
stop_remote() {
	if [ -f "$REMOTE_DIR/data/postmaster.pid" ]; then
		(cd "$REMOTE_DIR" && weir_as_pg "$PG_BIN/pg_ctl" -D "$REMOTE_DIR/data" -m immediate -w stop \
			>/dev/null 2>&1) || true
	fi
	rm -rf "$REMOTE_DIR"
}
trap 'stop_remote; cleanup' EXIT

declare -A SECS=()			# NAME@ROUND -> seconds (1/tps for pgbench)
record_secs() {
	SECS["$1@$2"]=$3
	progress "  $1: $(awk -v n="$4" -v t="$3" -v u="$5" 'BEGIN { printf "%.0f %s/s (%.3f s)", n / t, u, t }')"
}
best() {
	local r v b=""
	for ((r = 1; r <= RUNS; r++)); do
		v=${SECS["$1@$r"]:-}
		[ -n "$v" ] || continue
		if [ -z "$b" ] || awk -v a="$v" -v c="$b" 'BEGIN { exit !(a < c) }'; then b=$v; fi
	done
	echo "$b"
}
# paired A B: the median over rounds of rate(A) / rate(B)
paired() {
	local r
	for ((r = 1; r <= RUNS; r++)); do
		if [ -n "${SECS["$1@$r"]:-}" ] && [ -n "${SECS["$2@$r"]:-}" ]; then
			awk -v a="${SECS["$1@$r"]}" -v b="${SECS["$2@$r"]}" 'BEGIN { print b / a }'
		fi
	done | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) printf "n/a";
		else if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

progress "preparing: tables, publication, the remote server"
GEN_SQL=$(cat <<'SQL'
CREATE TABLE app (id int PRIMARY KEY, v int NOT NULL, note text);
CREATE PUBLICATION bench_pub FOR TABLE app;
-- n changes, `per` a transaction: inserts of n/2 rows, then updates of them
CREATE PROCEDURE gen(n int, per int) LANGUAGE plpgsql AS $$
DECLARE
	i int := 0;
BEGIN
	WHILE i < n LOOP
		IF i < n / 2 THEN
			INSERT INTO app SELECT g, 0, 'note ' || g
			  FROM generate_series(i + 1, least(i + per, n / 2)) g;
		ELSE
			UPDATE app SET v = v + 1 WHERE id BETWEEN i - n / 2 + 1 AND least(i - n / 2 + per, n / 2);
		END IF;
		i := i + per;
		COMMIT;
	END LOOP;
END $$;
SQL
)
weir_psql -c "CREATE EXTENSION weir"
weir_psql <<<"$GEN_SQL"
weir_psql <<'SQL'
CREATE FUNCTION wait_capture(capture text, lsn pg_lsn, timeout interval) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF EXISTS (SELECT FROM weir.captures c WHERE c.name = capture AND c.received_lsn >= lsn) THEN
			RETURN clock_timestamp();
		END IF;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'capture % did not reach % in %', capture, lsn, timeout;
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SQL
weir_cluster_start "$REMOTE_DIR" "$REMOTE_PORT" "${CLUSTER_CONF[@]}" >&2
WEIR_CLUSTER_DIR=$DIR WEIR_CLUSTER_PORT=$PORT	# weir_psql: the capturing server
remote_psql <<<"$GEN_SQL"
cat >"$DIR/app.sql" <<'SQL'
\set id random(1, 100000)
INSERT INTO app VALUES (:id, 1, 'app') ON CONFLICT (id) DO UPDATE SET v = app.v + 1;
SQL
chmod 644 "$DIR/app.sql"

# seconds from starting capture $1 until it has read up to $2
time_capture() {
	local t0 t1
	t0=$(q "SELECT extract(epoch FROM clock_timestamp())")
	q "SELECT weir.start_capture('$1')" >/dev/null
	t1=$(q "SELECT extract(epoch FROM wait_capture('$1', '$2', '600 s'))")
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }'
}
wait_status() {
	for _ in $(seq 1 1200); do
		[ "$(q "SELECT status FROM weir.captures WHERE name = '$1'")" = "$2" ] && return 0
		sleep 0.05
	done
	echo "bench: capture $1 never reached status $2" >&2
	exit 1
}
# a capture whose slot exists, stopped
stopped_capture() {
	q "SELECT weir.create_capture($1)" >/dev/null
	wait_status "$2" running
	q "SELECT weir.stop_capture('$2')" >/dev/null
	wait_status "$2" stopped
}
app_tps() {
	local out
	out=$(cd "$DIR" && weir_as_pg "$PG_BIN/pgbench" -n -c 4 -j 2 -T "$SECONDS_APP" \
		-f "$DIR/app.sql" -h "$DIR" -p "$PORT" -U postgres postgres)
	sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out"
}

for ((run = 1; run <= RUNS; run++)); do
	progress "round $run of $RUNS"
	# --- (a) local: the same WAL decoded by pgoutput and by the capture
	q "TRUNCATE app" >/dev/null
	stopped_capture "'cap', tables => ARRAY['app'::regclass]" cap
	q "SELECT 1 FROM pg_create_logical_replication_slot('ref', 'pgoutput')" >/dev/null
	q "CALL gen($N, $PER_TXN)" >/dev/null
	end_lsn=$(q "SELECT pg_current_wal_lsn()")
	sql_timed "SELECT count(*) FROM pg_logical_slot_get_binary_changes('ref', NULL, NULL, 'proto_version', '1', 'publication_names', 'bench_pub')"
	record_secs pgoutput "$run" "$T" "$N" changes
	record_secs capture "$run" "$(time_capture cap "$end_lsn")" "$N" changes
	expect_equal "topic rows" "$(q "SELECT count(*) FROM cap_app")" "$N"
	# the write floor: the same rows into a plain table of the topic's shape
	# (its columns and primary key, no trigger), in one INSERT ... SELECT
	q "CREATE TABLE floor_t (LIKE cap_app INCLUDING ALL)" >/dev/null
	q "CHECKPOINT" >/dev/null
	sql_timed "INSERT INTO floor_t SELECT * FROM cap_app"
	record_secs insert_floor "$run" "$T" "$N" rows
	q "DROP TABLE floor_t" >/dev/null
	SECS["decode_plus_insert@$run"]=$(awk -v a="${SECS["pgoutput@$run"]}" -v b="$T" 'BEGIN { printf "%.6f", a + b }')
	q "SELECT pg_drop_replication_slot('ref')" >/dev/null
	q "SELECT weir.drop_capture('cap')" >/dev/null
	q "SELECT weir.drop_topic('cap_app')" >/dev/null

	# --- (c) remote: the same changes on the other server
	remote_psql -c "TRUNCATE app" >/dev/null
	stopped_capture "'rcap', publication => 'bench_pub', conninfo => 'host=$REMOTE_DIR port=$REMOTE_PORT dbname=postgres user=postgres'" rcap
	remote_psql -c "CALL gen($N, $PER_TXN)" >/dev/null
	remote_end=$(remote_psql -At -c "SELECT pg_current_wal_lsn()")
	record_secs remote "$run" "$(time_capture rcap "$remote_end")" "$N" changes
	expect_equal "remote topic rows" "$(q "SELECT count(*) FROM rcap_app")" "$N"
	q "SELECT weir.drop_capture('rcap')" >/dev/null
	q "SELECT weir.drop_topic('rcap_app')" >/dev/null

	# --- (b) the application with and without a capture
	q "TRUNCATE app" >/dev/null
	for with in $([ $((run % 2)) = 1 ] && echo "no yes" || echo "yes no"); do
		if [ "$with" = yes ]; then
			q "SELECT weir.create_capture('appcap', tables => ARRAY['app'::regclass])" >/dev/null
			wait_status appcap running
		fi
		tps=$(app_tps)
		[ -n "$tps" ] || { echo "bench: no tps from pgbench" >&2; exit 1; }
		name=$([ "$with" = yes ] && echo app_with_capture || echo app_without)
		record_secs "$name" "$run" "$(awk -v t="$tps" 'BEGIN { printf "%.9f", 1 / t }')" 1 transactions
		if [ "$with" = yes ]; then
			q "SELECT weir.drop_capture('appcap')" >/dev/null
			q "SELECT weir.drop_topic('appcap_app')" >/dev/null
		fi
	done
done

rate_of() { awk -v n="$2" -v t="$(best "$1")" 'BEGIN { printf "%.0f", n / t }'; }
echo "capture.changes_per_s: $(rate_of capture "$N") changes/s"
echo "pgoutput.changes_per_s: $(rate_of pgoutput "$N") changes/s"
echo "remote.changes_per_s: $(rate_of remote "$N") changes/s"
echo "insert_floor.rows_per_s: $(rate_of insert_floor "$N") rows/s"
echo "decode_plus_insert.changes_per_s: $(rate_of decode_plus_insert "$N") changes/s"
echo "app.with_capture: $(rate_of app_with_capture 1) transactions/s"
echo "app.without: $(rate_of app_without 1) transactions/s"
for pair in "capture pgoutput" "capture decode_plus_insert" "remote capture" \
	"app_with_capture app_without"; do
	read -r a b <<<"$pair"
	echo "ratio.${a}_vs_$b: $(awk -v x="$(best "$a")" -v y="$(best "$b")" 'BEGIN { printf "%.3f", y / x }')"
	echo "ratio.${a}_vs_$b.paired_median: $(paired "$a" "$b")"
done
