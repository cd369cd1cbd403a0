#!/usr/bin/env bash
# bench/remote_sink.sh — what does a remote sink cost beside the local one?
#
#   N=200000 RUNS=3 bench/remote_sink.sh
#
# Builds and installs weir, starts its own throwaway cluster and a second
# one on the same machine (the remote, max_prepared_transactions 8), fills
# a topic with N records (4 partitions, 5,000 keys, 10 ms of event time a
# record, so that nearly every record ends in a window row of its own:
# the sink is most of the work), and times, each round, the same window
# pipeline (1-minute tumbling windows, count and sum per key, emit final,
# checkpoint_interval 1 s) over the whole topic, from its creation until
# weir.checkpoint() returns with every window in its sink, with its sink:
#   local       a table of the same database;
#   two_phase   a table of the remote, prepared and committed with each
#               checkpoint;
#   idempotent  the same, upserted with a fence row.
# The order of the three changes by round.  Each run's sink is checked
# against the local one (same rows).
# stdout: one figure a line, `name: value unit`: sink rows/s of each (best
# run), each one's checkpoints (median sync and async ms, their count);
# ratios `ratio.<a>_vs_local: value` (rate a / rate local), best / best and
# the median of the rounds' paired ratios.  Targets (issue 19): two_phase
# at most 2x the local cost (ratio >= 0.5), idempotent at most 1.5x
# (ratio >= 0.667).
#
# Knobs: N (records, default 200000), RUNS (default 3), WEIR_PORT.

set -euo pipefail

N="${N:-200000}"
RUNS="${RUNS:-3}"
KEYS=5000

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" remote_sink

REMOTE_DIR="/tmp/weir-bench-remote-sink-$$"
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

declare -A SECS=()			# KIND@ROUND -> seconds
declare -A ROWS=()			# KIND@ROUND -> sink rows
declare -A PHASES=()		# KIND@ROUND -> 'checkpoints median_sync_ms median_async_ms'

progress "preparing: the topic (N = $N), the remote server"
weir_psql -c "CREATE EXTENSION weir"
q "SELECT weir.create_topic('ev', 'k int, v int, t timestamptz', partitions => 4, key => 'k')" >/dev/null
q "INSERT INTO ev (k, v, t)
   SELECT i % $KEYS, i % 1000, timestamptz '2026-01-01 00:00:00+00' + i * interval '10 ms'
	 FROM generate_series(1, $N) i" >/dev/null
# the last windows fire: one record per partition far in the future
q "INSERT INTO ev (part, k, v, t) SELECT p, -1, 0, '2100-01-01' FROM generate_series(0, 3) p" >/dev/null
q "VACUUM ANALYZE ev" >/dev/null
weir_cluster_start "$REMOTE_DIR" "$REMOTE_PORT" "${CLUSTER_CONF[@]}" "max_prepared_transactions = 8" >&2
WEIR_CLUSTER_DIR=$DIR WEIR_CLUSTER_PORT=$PORT	# weir_psql: the weir server
SINK_DDL="k int, window_start timestamptz, window_end timestamptz, n bigint, total bigint,
		  PRIMARY KEY (window_start, k)"
remote_psql -c "CREATE TABLE public.totals ($SINK_DDL)"
CONNINFO="host=$REMOTE_DIR port=$REMOTE_PORT dbname=postgres user=postgres"

sink_of() {
	case $1 in
	local) echo "'w_local'" ;;
	two_phase) echo "weir.remote_table('$CONNINFO', 'public.totals')" ;;
	idempotent) echo "weir.remote_table('$CONNINFO', 'public.totals', 'idempotent')" ;;
	esac
}
sink_count() {
	if [ "$1" = local ]; then q "SELECT count(*) FROM w_local"; else remote_psql -At -c "SELECT count(*) FROM public.totals"; fi
}
sink_digest() {
	local sql="SELECT md5(string_agg(k || ' ' || window_start || ' ' || n || ' ' || total, ',' ORDER BY window_start, k)) FROM"
	if [ "$1" = local ]; then q "$sql w_local"; else remote_psql -At -c "$sql public.totals"; fi
}

# one timed run of the pipeline with sink KIND
run_kind() {
	local kind=$1 run=$2 res t
	progress "  $kind"
	res=$(weir_psql -At -F ' ' <<EOF
SELECT clock_timestamp() AS t0 \gset
SELECT weir.create_pipeline('w', 'ev', key => 'k', event_time => 't',
	windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS total',
	checkpoint_interval => '1 second', sink => $(sink_of "$kind")) > 0;
SELECT weir.checkpoint('w', '600 s') > 0;
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);
SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY c.sync_ms),
	   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.async_ms)
  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'w';
EOF
	)
	t=$(sed -n '3p' <<<"$res")
	SECS["$kind@$run"]=$t
	ROWS["$kind@$run"]=$(sink_count "$kind")
	PHASES["$kind@$run"]=$(sed -n '4p' <<<"$res")
	DIGEST["$kind@$run"]=$(sink_digest "$kind")
	progress "    $(awk -v n="${ROWS["$kind@$run"]}" -v t="$t" 'BEGIN { printf "%d sink rows in %.3f s: %.0f rows/s", n, t, n / t }'); checkpoints, median sync ms, median async ms: ${PHASES["$kind@$run"]}"
	# stopped, so that dropping resolves at once; the sinks emptied
	q "SELECT weir.stop('w')" >/dev/null
	for _ in $(seq 1 600); do
		[ "$(q "SELECT worker_pid IS NULL AND writer_pid IS NULL FROM weir.pipelines WHERE name = 'w'")" = t ] && break
		sleep 0.05
	done
	q "SELECT weir.drop_pipeline('w')" >/dev/null
	q "DROP TABLE IF EXISTS w_local" >/dev/null
	remote_psql -c "TRUNCATE public.totals" >/dev/null
	expect_equal "prepared transactions left on the remote" \
		"$(remote_psql -At -c "SELECT count(*) FROM pg_prepared_xacts")" 0
}
declare -A DIGEST=()

KINDS=(local two_phase idempotent)
for ((run = 1; run <= RUNS; run++)); do
	progress "round $run of $RUNS"
	q "CHECKPOINT" >/dev/null
	remote_psql -c "CHECKPOINT" >/dev/null
	for ((i = 0; i < 3; i++)); do
		run_kind "${KINDS[$(((i + run - 1) % 3))]}" "$run"
	done
	expect_equal "two_phase sink = local sink (round $run)" "${DIGEST["two_phase@$run"]}" "${DIGEST["local@$run"]}"
	expect_equal "idempotent sink = local sink (round $run)" "${DIGEST["idempotent@$run"]}" "${DIGEST["local@$run"]}"
done

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
		awk -v a="${SECS["$1@$r"]}" -v b="${SECS["$2@$r"]}" 'BEGIN { print b / a }'
	done | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
		else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
median_of() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) printf "n/a"; else if (NR % 2) printf "%.1f", v[(NR + 1) / 2];
		else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

rows=${ROWS["local@1"]}
echo "# remote_sink: N=$N records, $rows window rows, RUNS=$RUNS, checkpoint_interval 1 s; remote: a second cluster on this machine"
for kind in "${KINDS[@]}"; do
	b=$(best "$kind")
	echo "$kind.sink_rows_per_s: $(awk -v n="$rows" -v t="$b" 'BEGIN { printf "%.0f", n / t }') rows/s"
	echo "$kind.seconds: $b s"
	echo "$kind.checkpoints: $(for ((r = 1; r <= RUNS; r++)); do cut -d' ' -f1 <<<"${PHASES["$kind@$r"]}"; done | median_of)"
	echo "$kind.checkpoint_sync_ms_median: $(for ((r = 1; r <= RUNS; r++)); do cut -d' ' -f2 <<<"${PHASES["$kind@$r"]}"; done | median_of) ms"
	echo "$kind.checkpoint_async_ms_median: $(for ((r = 1; r <= RUNS; r++)); do cut -d' ' -f3 <<<"${PHASES["$kind@$r"]}"; done | median_of) ms"
done
for kind in two_phase idempotent; do
	echo "ratio.${kind}_vs_local: $(awk -v a="$(best "$kind")" -v b="$(best local)" 'BEGIN { printf "%.3f", b / a }')"
	echo "ratio.${kind}_vs_local.paired_median: $(paired "$kind" local)"
done
