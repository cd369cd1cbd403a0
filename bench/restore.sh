#!/usr/bin/env bash
# bench/restore.sh — how long does a restore take as the state grows, and
# does a drill (weir.restore_drill) time it as a restart does?
#
#   KEYS="100000 1000000" RUNS=3 bench/restore.sh
#
# Builds and installs weir, starts its own throwaway cluster, and for each
# number of keys n in KEYS (default "100000 1000000 5000000"):
#   - creates a 4-partition topic ev(k int, v int, t timestamptz) keyed by k
#     and a last-value pipeline over it (checkpoint_interval 1 hour, so only
#     the checkpoints asked for are taken; max_state_memory 4 GB);
#   - inserts n records of n distinct keys (INSERT ... SELECT
#     generate_series), waits until the worker has read them all, and takes
#     a checkpoint: the state to restore holds n keys;
#   - RUNS times (default 3): stops and starts the pipeline and reads the
#     new weir.restores row of kind 'restore' (the worker's restore: read the
#     chunks of the checkpoint and rebuild the state), then calls
#     weir.restore_drill while the worker runs (the same restore, in the
#     calling backend);
#   - prints the median over the runs of each duration, the bytes read, keys
#     per second (n / restore duration) and the drill/restore ratio:
#       restore.keys_<n>.ms: <ms> ms
#       restore.keys_<n>.bytes: <bytes> bytes
#       restore.keys_<n>.keys_per_s: <keys/s> keys/s
#       drill.keys_<n>.ms: <ms> ms
#       ratio.drill_vs_restore.keys_<n>: <drill ms / restore ms>
# Each restore's row count is checked against n (a different count makes
# the figure invalid).  The pipeline and topic are dropped before the next n.

set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh" restore

KEYS="${KEYS:-100000 1000000 5000000}"
RUNS="${RUNS:-3}"
TIMEOUT="${TIMEOUT:-600}"

weir_psql -q -c "SET client_min_messages = warning" -c "CREATE EXTENSION weir" >/dev/null
# lib.sh's helpers (bench_wait_worker for stop_pipeline) over topic ev
TOPICS=(ev) BATCH=100000
create_bench_helpers

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

STATUS=0
for n in $KEYS; do
	progress "$n keys: loading"
	weir_psql -q >/dev/null <<SQL
SET client_min_messages = warning;
SELECT weir.create_topic('ev', 'k int, v int, t timestamptz', partitions => 4, key => 'k');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 't',
							  checkpoint_interval => '1 hour',
							  max_state_memory => 4096::bigint * 1024 * 1024);
INSERT INTO ev (k, v, t) SELECT g, g, timestamptz '2024-01-01' + g * interval '1 ms'
  FROM generate_series(1, $n) g;
SQL
	q "SELECT weir.checkpoint('lv', '$TIMEOUT s')" >/dev/null
	expect_equal "records read" "$(q "SELECT records_in FROM weir.pipelines WHERE name = 'lv'")" "$n"
	ID=$(q "SELECT id FROM weir.pipeline WHERE name = 'lv'")
	restores=() drills=() bytes=""
	for ((run = 1; run <= RUNS; run++)); do
		before=$(q "SELECT coalesce(max(id), 0) FROM weir.restores WHERE pipeline_id = $ID AND kind = 'restore'")
		stop_pipeline lv || { STATUS=1; break; }
		q "SELECT weir.start('lv')" >/dev/null
		# the worker's restore row, once it has restored
		row=""
		for ((i = 0; i < TIMEOUT * 10; i++)); do
			row=$(q "SELECT duration_ms || ' ' || bytes || ' ' || rows FROM weir.restores
					  WHERE pipeline_id = $ID AND kind = 'restore' AND id > $before ORDER BY id LIMIT 1")
			[ -z "$row" ] || break
			sleep 0.1
		done
		read -r ms b rows <<<"$row"
		if [ "${rows:-}" != "$n" ]; then
			problem "keys_$n run $run: the restore restored '${rows:-none}' keys, not $n"
			STATUS=1
			continue
		fi
		drill=$(q "SELECT duration_ms || ' ' || rows FROM weir.restore_drill('lv')")
		read -r dms drows <<<"$drill"
		[ "$drows" = "$n" ] || { problem "keys_$n run $run: the drill restored $drows keys, not $n"; STATUS=1; }
		progress "  run $run: restore $ms ms, drill $dms ms, $b bytes"
		restores+=("$ms") drills+=("$dms") bytes=$b
	done
	if [ "${#restores[@]}" -gt 0 ]; then
		r=$(median "${restores[@]}") d=$(median "${drills[@]}")
		echo "restore.keys_$n.ms: $(awk -v v="$r" 'BEGIN { printf "%.1f", v }') ms"
		echo "restore.keys_$n.bytes: $bytes bytes"
		echo "restore.keys_$n.keys_per_s: $(awk -v n="$n" -v v="$r" 'BEGIN { printf "%.0f", n / (v / 1000) }') keys/s"
		echo "drill.keys_$n.ms: $(awk -v v="$d" 'BEGIN { printf "%.1f", v }') ms"
		echo "ratio.drill_vs_restore.keys_$n: $(awk -v a="$d" -v b="$r" 'BEGIN { printf "%.3f", a / b }')"
	else
		echo "restore.keys_$n.ms: invalid (no restore)"
	fi
	stop_pipeline lv || true
	q "SELECT weir.drop_pipeline('lv')" >/dev/null
	q "DROP TABLE lv" >/dev/null
	q "SELECT weir.drop_topic('ev')" >/dev/null
done
for p in "${PROBLEMS[@]}"; do echo "problem: $p"; done
exit "$STATUS"
