#!/usr/bin/env bash
# bench/state_stats.sh — what does collecting weir.state_stats cost a
# pipeline?  Throughput of the same window pipeline over the same backlog
# with weir.track_state_stats on and off, in one run (target: less than 3%
# apart).
#
#   N=1000000 RUNS=5 bench/state_stats.sh
#
# Builds and installs weir, starts its own throwaway cluster, loads N records
# (default 1,000,000) into a 4-partition topic ev(k int, t timestamptz, v
# int) over KEYS keys (default 10,000), one record per 10 ms of event time.
# Each round runs, in an order that alternates between rounds (on first in
# odd rounds, off first in even ones), a tumbling 1-minute window pipeline
# (count(*), sum(v) per key) over the whole backlog:
#   on:  weir.track_state_stats = on and weir.state_stats_interval =
#        STATS_INTERVAL (default 10s, the setting's default: what a
#        pipeline pays as installed); STATS_INTERVAL=10ms, the least, takes
#        a sample at (almost) every round of the worker, the worst case;
#   off: weir.track_state_stats = off: no sample, not even the clock read.
# Timed from creating the pipeline until weir.checkpoint() returns with
# every record processed and checkpointed (bench/lib.sh run_pipeline).  The
# setting is changed with ALTER SYSTEM and pg_reload_conf() before the
# pipeline is created, so its worker starts with it; `on` runs must show
# rates in weir.state_stats at the end and `off` runs none, or the figure is
# invalid.  The sink is checked against a GROUP BY over the topic.
#
# stdout: state_stats_on and state_stats_off (events/s, best of RUNS),
# ratio.state_stats_on_vs_state_stats_off (best / best) and its
# paired_median (the median over rounds of on / off in the same round: the
# figure to read; the target is 0.97 or more), and the cost in percent;
# the least worker CPU time of each (bench/lib.sh worker_start_figure) and
# ratio.worker_cpu_on_vs_off.paired_median (on / off, the median over rounds).
#
# Knobs: N, RUNS (default 5), KEYS, STATS_INTERVAL, TIMEOUT (seconds weir.checkpoint() may
# wait, default 600), WEIR_PORT, WEIR_BENCH_INSTALLED (bench/common.sh).

set -euo pipefail

N="${N:-1000000}"
RUNS="${RUNS:-5}"
KEYS="${KEYS:-10000}"
TIMEOUT="${TIMEOUT:-600}"
STATS_INTERVAL="${STATS_INTERVAL:-10s}"
BATCH=100000
TOPICS=(ev)

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" state_stats

progress "loading $N records over $KEYS keys into topic ev (4 partitions)"
weir_psql -q >/dev/null <<EOF
SET client_min_messages = warning;
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, t timestamptz, v int', partitions => 4, key => 'k');
SELECT setseed(0.42);
INSERT INTO ev (k, t, v)
	SELECT floor(random() * $KEYS)::int,
		   timestamptz '2026-01-01 00:00:00+00' + i * interval '10 milliseconds', i % 1000
	  FROM generate_series(0, $N - 1) i ORDER BY i;
VACUUM ANALYZE ev;
CREATE TABLE expected AS
	SELECT k, date_bin('1 minute', t, '1970-01-01') AS window_start, count(*) AS n, sum(v) AS total
	  FROM ev GROUP BY 1, 2;
CHECKPOINT;
EOF
create_bench_helpers
expect_equal "records loaded" "$(q 'SELECT count(*) FROM ev')" "$N"
WATERMARK=$(q "SELECT min(m) FROM (SELECT max(t) m FROM ev GROUP BY part) s")

# set_tracking on|off: the setting for the next worker to start
set_tracking() {
	weir_psql -q >/dev/null <<EOF
ALTER SYSTEM SET weir.track_state_stats = $1;
ALTER SYSTEM SET weir.state_stats_interval = '$STATS_INTERVAL';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
EOF
}

# one_run on|off RUN
one_run() {
	local mode=$1 run=$2 name="ss_${1}_$2" kind="state_stats_$1" rates wrong
	set_tracking "$mode"
	run_pipeline "$kind" "$run" "$name" \
		"SELECT weir.create_pipeline('$name', 'ev', key => 'k', event_time => 't',
				windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n, sum(v) AS total',
				checkpoint_interval => '1 s') > 0" "" || return 0
	rates=$(q "SELECT rates_over IS NOT NULL FROM weir.state_stats WHERE pipeline = '$name'")
	if [ "$mode" = on ] && [ "$rates" != t ]; then
		BAD+="no rates in weir.state_stats with tracking on; "
	elif [ "$mode" = off ] && [ "$rates" != f ]; then
		BAD+="rates in weir.state_stats with tracking off; "
	fi
	# the windows fired so far, against the GROUP BY
	wrong=$(q "SELECT count(*) FROM (SELECT k, window_start, n, total FROM $name
									 EXCEPT SELECT k, window_start, n, total FROM expected) x")
	[ "$wrong" = 0 ] || BAD+="$wrong sink rows differ from the GROUP BY over ev; "
	if [ -n "$BAD" ]; then
		invalid "$kind" "run $run: $BAD"
	else
		record "$kind" "$SECS"
	fi
	drop_pipeline "$name"
}

for ((ROUND = 1; ROUND <= RUNS; ROUND++)); do
	if ((ROUND % 2)); then
		one_run on "$ROUND"
		one_run off "$ROUND"
	else
		one_run off "$ROUND"
		one_run on "$ROUND"
	fi
done

echo "# N=$N KEYS=$KEYS RUNS=$RUNS STATS_INTERVAL=$STATS_INTERVAL; tumbling 1 minute, count(*) and sum(v) per key"
figure state_stats_on
figure state_stats_off
if valid state_stats_on && valid state_stats_off; then
	# target: >= 0.97 (less than 3% apart)
	ratio_lines state_stats_on state_stats_off
	echo "state_stats.cost_pct: $(awk -v r="$(paired_ratio state_stats_on state_stats_off)" \
		'BEGIN { printf "%.1f", (1 - r) * 100 }') %"
	# the worker's CPU time per run (user + system, /proc): steadier than
	# wall-clock rates on a shared machine; the median over rounds of
	# on / off in the same round (runs in round order in WORKER_CPU)
	worker_start_figure state_stats_on
	worker_start_figure state_stats_off
	if [ -n "${WORKER_CPU[state_stats_on]:-}" ] && [ -n "${WORKER_CPU[state_stats_off]:-}" ]; then
		echo "ratio.worker_cpu_on_vs_off.paired_median: $(paste <(tr ' ' '\n' <<<"${WORKER_CPU[state_stats_on]}") \
			<(tr ' ' '\n' <<<"${WORKER_CPU[state_stats_off]}") |
			awk '$1 > 0 && $2 > 0 { print $1 / $2 }' | sort -g |
			awk '{ v[NR] = $1 } END { if (NR == 0) printf "n/a"; else if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
				  else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
	fi
fi
finish
