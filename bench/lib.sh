# shellcheck shell=bash
# shellcheck disable=SC2034  # globals set here (SECS, BAD, RESTORE, ...) are read by the scripts
# bench/lib.sh — what the weir pipeline benches (window, dedup, last_value,
# join) share: timing, best-of-RUNS, checks, the SQL micro-batch driver, the
# read limit, one timed pipeline run and its restore, and the figures they
# print the same way.  Sourced by bench/common.sh, so it may use weir_psql,
# progress() and DIR; a script may redefine any of these after sourcing.
#
# A script using it sets N (events), RUNS, BATCH, TIMEOUT, WATERMARK (the
# final watermark, before the first pipeline run) and TOPICS (its topics).

q() { weir_psql -At -c "$1"; }

# sql_timed SQL: run statements, set OUT to the output of the last one and T
# to the wall-clock seconds they took, read in the same session (so psql
# start-up and connecting are left out).
sql_timed() {
	local res
	res=$(weir_psql -At <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
$1;
SELECT extract(epoch FROM clock_timestamp() - :'bench_t0'::timestamptz);
EOF
	)
	T=$(tail -n 1 <<<"$res")
	OUT=$(sed '$d' <<<"$res")
}

# --- runs, checks and problems -----------------------------------------------
declare -A BEST=()
declare -A ROUND_SECS=()
ROUND=0						# the scripts' round loops set it
# record NAME SECONDS: keep the fastest run (every rate is the best of RUNS),
# and each round's (paired_ratio).
record() {
	if [ -z "${BEST[$1]:-}" ] || awk -v a="$2" -v b="${BEST[$1]}" 'BEGIN { exit !(a < b) }'; then
		BEST[$1]=$2
	fi
	ROUND_SECS["$1@$ROUND"]=$2
	progress "  $1 run: $(awk -v r="$N" -v t="$2" 'BEGIN { printf "%.0f events/s (%.3f s)", r / t, t }')"
}

# A problem is reported at the end of stdout, after the figures; an invalid
# figure is printed as `invalid` and makes the script exit 1 (finish).
declare -A INVALID=()
declare -a PROBLEMS=()
problem() {
	progress "PROBLEM: $*"
	PROBLEMS+=("$*")
}
# invalid NAME WHY: the figure NAME is not to be trusted.
invalid() {
	INVALID[$1]="${INVALID[$1]:+${INVALID[$1]}; }$2"
	problem "$1: $2"
}
# expect_equal WHAT GOT WANT: a set-up that went wrong makes every figure
# meaningless, so stop at once.
expect_equal() {
	if [ "$2" != "$3" ]; then
		echo "bench: $1: got '$2', expected '$3'" >&2
		exit 1
	fi
}

# progress_partitions TOPIC: rows per partition, to see the data is spread.
partition_counts() {
	q "SELECT string_agg(part || ':' || c, ' ' ORDER BY part) FROM (SELECT part, count(*) c FROM $1 GROUP BY part) s"
}

# --- SQL side ------------------------------------------------------------------
# batch_function NAME [--declare DECLS] [--round-end SQL] [--custom-plans] <BODY
# Creates NAME() RETURNS bigint: the micro-batch driver of the plain-SQL
# figures and of the read limit, rounds of BATCH positions of each of the
# 4 partitions of TOPICS, partitions interleaved as the pipeline worker reads
# them.  BODY runs once per partition p for positions a < pos <= a + BATCH and
# may add to acc (returned); n bigint is there for GET DIAGNOSTICS.
# --round-end runs after each round (a is then the round's end);
# --custom-plans plans each statement for its own positions, as a client
# sending each batch's statement gets.
batch_function() {
	local name=$1 decls="" round_end="" attrs="" body hi t
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--declare) decls=$2; shift 2 ;;
		--round-end) round_end=$2; shift 2 ;;
		--custom-plans) attrs="SET plan_cache_mode = force_custom_plan"; shift ;;
		*) echo "batch_function: unknown option $1" >&2; return 2 ;;
		esac
	done
	body=$(cat)
	for t in "${TOPICS[@]}"; do
		hi="${hi:+$hi, }(SELECT max(pos) FROM $t)"
	done
	weir_psql -q >/dev/null <<EOF
CREATE FUNCTION $name() RETURNS bigint LANGUAGE plpgsql $attrs AS \$\$
DECLARE
	p int; a bigint := 0; hi bigint; n bigint; acc bigint := 0; $decls
BEGIN
	SELECT greatest($hi) INTO hi;
	WHILE a < hi LOOP
		FOR p IN 0..3 LOOP
$body
		END LOOP;
		a := a + $BATCH;
$round_end
	END LOOP;
	RETURN acc;
END \$\$;
EOF
}

# create_bench_helpers: the SQL the weir runs rely on: the read limit over
# TOPICS, waits on what weir.pipelines publishes, the peak sampler, and
# bench_ckpt, where every run's checkpoints are kept after its pipeline is
# dropped.
create_bench_helpers() {
	local t scans="" heap_scans=""
	for t in "${TOPICS[@]}"; do
		scans+=" + weir._scan_count('$t', p, a, a + $BATCH)"
		heap_scans+=" + weir._scan_count_partitions('$t', a, a + $BATCH)"
	done
	# the read limits: the PK index through the low-level scan API with
	# nothing done per row but counting; row by row in position order (the
	# issue's (c)), and as the pipeline worker reads: the range of every
	# partition at once, a heap page at a time (once, in the loop's first
	# partition)
	batch_function bench_read_limit <<<"			acc := acc$scans;"
	batch_function bench_read_limit_heap_order <<<"			IF p = 0 THEN acc := acc$heap_scans; END IF;"
	weir_psql -q >/dev/null <<'EOF'
-- wait until the pipeline has (want_worker) or has not a worker
CREATE FUNCTION bench_wait_worker(name text, want_worker boolean, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT (p.worker_pid IS NOT NULL) = want_worker FROM weir.pipelines p
			 WHERE p.name = bench_wait_worker.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;

-- wait until the figures the worker publishes after a round say it is done
-- (weir.checkpoint() may return just before that round's figures appear)
CREATE FUNCTION bench_wait_published(name text, want bigint, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT p.lag_rows = 0 AND p.records_in = want FROM weir.pipelines p
			 WHERE p.name = bench_wait_published.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;

-- wait until the pipeline's worker publishes this many windows (open
-- windows, ids, keys or key entries, as the pipeline kind counts them)
CREATE FUNCTION bench_wait_windows(name text, want bigint, timeout interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
BEGIN
	LOOP
		IF (SELECT p.windows = want FROM weir.pipelines p
			 WHERE p.name = bench_wait_windows.name) THEN
			RETURN true;
		END IF;
		IF clock_timestamp() > deadline THEN
			RETURN false;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;

-- the peak of windows and of state bytes the worker publishes, sampled
-- every 10 ms from before the pipeline exists until it has read want
-- records: 'max_windows bytes_then max_state_bytes samples'
CREATE FUNCTION bench_sample_peak(name text, want bigint, timeout interval)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + timeout;
	w bigint; b bigint; n bigint; lag bigint;
	max_w bigint := 0; b_then bigint := 0; max_b bigint := 0; samples int := 0;
BEGIN
	LOOP
		SELECT p.windows, p.state_bytes, p.records_in, p.lag_rows INTO w, b, n, lag
		  FROM weir.pipelines p WHERE p.name = bench_sample_peak.name;
		IF w IS NOT NULL THEN
			samples := samples + 1;
			IF w > max_w THEN
				max_w := w;
				b_then := b;
			END IF;
			max_b := greatest(max_b, b);
		END IF;
		EXIT WHEN (n = want AND lag = 0) OR clock_timestamp() > deadline;
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN max_w || ' ' || b_then || ' ' || max_b || ' ' || samples;
END $$;

-- checkpoints of every weir run, kept after dropping pipelines
CREATE TABLE bench_ckpt (kind text, run int, id bigint, worker_start timestamptz,
	committed_at timestamptz, start_delay_ms float8, sync_ms float8, async_ms float8,
	bytes bigint, sink_rows bigint, state_rows bigint, state_deletes bigint, records_in bigint);
EOF
}

# read_limit_warm_up: one read of every row before any figure is measured,
# checking it reads all N rows.
read_limit_warm_up() {
	progress "warm-up read"
	expect_equal "warm-up read" "$(q 'SELECT bench_read_limit()')" "$N"
}

# read_limit_run RUN: one run of each read limit figure (read_limit,
# read_limit_heap_order), checking they read all N rows.  The scripts run it in each round beside a run of each other
# figure (read limit, SQL, weir, round after round), so that every figure's
# best run comes from the same stretch of a shared, noisy machine: measured
# all up front, the read limit moved 3.3M-4.2M events/s between runs of the
# same script, and the ratios against it with it.
read_limit_run() {
	progress "read limit, run $1 of $RUNS"
	sql_timed 'SELECT bench_read_limit()'
	expect_equal "read limit" "$OUT" "$N"
	record read_limit "$T"
	sql_timed 'SELECT bench_read_limit_heap_order()'
	expect_equal "read limit, heap order" "$OUT" "$N"
	record read_limit_heap_order "$T"
}

# sql_run NAME RUN TABLE...: one run of the plain-SQL figure NAME, the
# function bench_NAME() over emptied TABLEs, after a checkpoint so that none
# lands inside the measurement; OUT is what it returned.
sql_run() {
	local name=$1 run=$2
	shift 2
	progress "$name, run $run of $RUNS"
	q "TRUNCATE $(IFS=,; echo "$*")" >/dev/null
	q "CHECKPOINT" >/dev/null
	sql_timed "SELECT bench_$name()"
	record "$name" "$T"
}

# --- weir side -----------------------------------------------------------------
# stop_pipeline NAME: weir.stop() and wait for its worker to exit (the wait
# in a transaction of its own, after the stop has woken the launcher).
stop_pipeline() {
	if [ "$(weir_psql -At -c "SELECT weir.stop('$1')" \
		-c "SELECT bench_wait_worker('$1', false, '60 s')" | tail -n 1)" != t ]; then
		problem "$1: the worker did not exit within 60 s of weir.stop()"
		return 1
	fi
}

# drop_pipeline NAME: stop it and drop it with its sink, so that the next
# run starts from nothing.
drop_pipeline() {
	stop_pipeline "$1" || true
	q "SELECT weir.drop_pipeline('$1')" >/dev/null
	q "DROP TABLE IF EXISTS $1" >/dev/null
}

declare -A WORKER_MS=()
declare -A WORKER_CPU=() WRITER_CPU=() READER_CPU=()
CLOCK_TICKS=$(getconf CLK_TCK)
# cpu_ms PID: CPU time (user + system) the process has used so far, in ms;
# empty when there is no such process.
cpu_ms() {
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 0
	# fields after the command name (which may hold spaces): utime is the 12th, stime the 13th
	sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$CLOCK_TICKS" '{ printf "%d", ($12 + $13) * 1000 / hz }'
}
RESTORE=""
RESTORED_STATE=""
PEAK=""
# run_pipeline KIND RUN NAME START_SQL COUNTERS [sample]: one timed weir run
# over the whole backlog: from START_SQL (creating and/or starting pipeline
# NAME) until weir.checkpoint() returns, every record processed, its results
# in the sink and checkpointed.  Then waits for weir.pipelines to show it
# (records_in = N, lag 0) and keeps its checkpoints in bench_ckpt.  With
# `sample`, a second session samples the state's peak meanwhile (PEAK:
# 'max_windows bytes_then max_state_bytes samples').
# Sets SECS, ID, CKPT (the checkpoint's id), RECORDS, LAG, COUNTS (the
# weir.pipelines COUNTERS, e.g. 'p.records_out, p.records_late', space
# separated), WINDOWS, BYTES, and BAD: what is wrong so far (not all read,
# wrong watermark).  Returns 1, the figure KIND invalid and the pipeline
# dropped, when the run fails.
run_pipeline() {
	local kind=$1 run=$2 name=$3 start=$4 counters=$5 sample=${6:-}
	local res errf="$DIR/psql.err" samplef="$DIR/sample.out" sampler="" worker_ms published wm
	local -a f

	progress "$kind, run $run of $RUNS"
	if [ "$sample" = sample ]; then
		weir_psql -At -c "SELECT bench_sample_peak('$name', $N, '$TIMEOUT s')" >"$samplef" 2>&1 &
		sampler=$!
	fi
	if ! res=$(weir_psql -At -F ' ' 2>"$errf" <<EOF
SELECT clock_timestamp() AS bench_t0 \gset
$start;
SELECT weir.checkpoint('$name', '$TIMEOUT s');
SELECT clock_timestamp() AS bench_t1 \gset
SELECT bench_wait_published('$name', $N, '30 s');
SELECT extract(epoch FROM :'bench_t1'::timestamptz - :'bench_t0'::timestamptz),
	   round(extract(epoch FROM a.backend_start - :'bench_t0'::timestamptz) * 1000, 1),
	   p.records_in, p.lag_rows, ${counters:+$counters,} p.windows, p.state_bytes, p.watermark = '$WATERMARK'
  FROM weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
 WHERE p.name = '$name';
INSERT INTO bench_ckpt
	SELECT '$kind', $run, c.id, a.backend_start, c.committed_at, c.start_delay_ms,
		   c.sync_ms, c.async_ms, c.bytes, c.sink_rows, c.state_rows, c.state_deletes, c.records_in
	  FROM weir.checkpoints c JOIN weir.pipeline pl ON pl.id = c.pipeline_id,
		   weir.pipelines p LEFT JOIN pg_stat_activity a ON a.pid = p.worker_pid
	 WHERE pl.name = '$name' AND p.name = '$name' AND c.committed_at <= :'bench_t1';
EOF
	); then
		invalid "$kind" "run $run failed: $(tr '\n' ' ' <"$errf") (weir.pipelines: $(q "SELECT status || ' ' || coalesce(last_error, '') FROM weir.pipelines WHERE name = '$name'"))"
		if [ -n "$sampler" ]; then
			kill "$sampler" 2>/dev/null || true
			wait "$sampler" || true
		fi
		drop_pipeline "$name" || true
		return 1
	fi
	PEAK=""
	if [ -n "$sampler" ]; then
		wait "$sampler" || true
		PEAK=$(tail -n 1 "$samplef")
	fi
	ID=$(q "SELECT id FROM weir.pipeline WHERE name = '$name'")
	# lines: START_SQL's result, checkpoint id, wait result, figures
	read -ra f <<<"$(tail -n 1 <<<"$res")"
	SECS=${f[0]} worker_ms=${f[1]} RECORDS=${f[2]} LAG=${f[3]}
	COUNTS="${f[*]:4:${#f[@]}-7}"
	WINDOWS=${f[-3]} BYTES=${f[-2]} wm=${f[-1]}
	CKPT=$(sed -n '2p' <<<"$res")
	published=$(sed -n '3p' <<<"$res")
	progress "  checkpoint $CKPT done; worker started after $worker_ms ms; $RECORDS in, lag $LAG"
	if [ -n "$worker_ms" ]; then
		WORKER_MS[$kind]="${WORKER_MS[$kind]:+${WORKER_MS[$kind]} }$worker_ms"
	fi
	# the worker and writer of this run stay (idle) until the pipeline is
	# stopped: what they used so far is the run's (and the worker's start)
	local pids worker_cpu writer_cpu reader_cpu=""
	read -ra pids <<<"$(q "SELECT coalesce(worker_pid, 0) || ' ' || coalesce(writer_pid, 0) || ' ' || coalesce(reader_pid, 0) FROM weir.pipelines WHERE name = '$name'")"
	worker_cpu=$(cpu_ms "${pids[0]:-}")
	writer_cpu=$(cpu_ms "${pids[1]:-}")
	[ "${pids[2]:-0}" = 0 ] || reader_cpu=$(cpu_ms "${pids[2]}")
	[ -z "$reader_cpu" ] || READER_CPU[$kind]="${READER_CPU[$kind]:+${READER_CPU[$kind]} }$reader_cpu"
	[ -z "$worker_cpu" ] || WORKER_CPU[$kind]="${WORKER_CPU[$kind]:+${WORKER_CPU[$kind]} }$worker_cpu"
	[ -z "$writer_cpu" ] || WRITER_CPU[$kind]="${WRITER_CPU[$kind]:+${WRITER_CPU[$kind]} }$writer_cpu"

	BAD=""
	[ "$published" = t ] || BAD+="records_in/lag_rows not $N/0 in weir.pipelines after the checkpoint ($RECORDS/$LAG); "
	[ "$wm" = t ] || BAD+="watermark $(q "SELECT watermark FROM weir.pipelines WHERE name = '$name'") instead of $WATERMARK; "
	progress "  its checkpoints (id start_delay_ms sync_ms async_ms bytes sink_rows state_rows state_deletes records_in):"
	q "SELECT 'bench:     ' || id || ' ' || round(start_delay_ms::numeric, 1) || ' ' || round(sync_ms::numeric, 1) || ' ' ||
			  round(async_ms::numeric, 1) || ' ' || bytes || ' ' || sink_rows || ' ' || state_rows || ' ' ||
			  state_deletes || ' ' || records_in
		 FROM bench_ckpt WHERE kind = '$kind' AND run = $run ORDER BY id" >&2
}

# chunks_of ID: 'chunks bytes' of the pipeline's state chunks left in
# weir.pipeline_chunk.
chunks_of() {
	q "SELECT count(*) || ' ' || coalesce(sum(length(data)), 0) FROM weir.pipeline_chunk WHERE pipeline_id = $1"
}

# restore_pipeline NAME ID [PREFIX]: restore the final state of pipeline
# NAME: stop, start, and a checkpoint once running.  Sets RESTORE ('ms bytes
# windows' of the newest weir.restores row) and, once the worker publishes
# the restored windows, RESTORED_STATE ('windows state_bytes').  Returns 1,
# a problem reported (PREFIX before it), when there was no restore.
restore_pipeline() {
	local name=$1 id=$2 prefix=${3:-} errf="$DIR/psql.err"
	RESTORE=""
	RESTORED_STATE=""
	stop_pipeline "$name" || return 1
	if ! weir_psql -At -c "SELECT weir.start('$name')" -c "SELECT weir.checkpoint('$name', '$TIMEOUT s')" >/dev/null 2>"$errf"; then
		problem "${prefix}restore: $(cat "$errf")"
		return 1
	fi
	RESTORE=$(q "SELECT round(duration_ms::numeric, 1) || ' ' || bytes || ' ' || windows
				   FROM weir.restores WHERE pipeline_id = $id
				  ORDER BY restored_at DESC LIMIT 1")
	# the restored state's size, once the worker has published it
	if [ "$(q "SELECT bench_wait_windows('$name', ${RESTORE##* }, '10 s')")" = t ]; then
		RESTORED_STATE=$(q "SELECT windows || ' ' || state_bytes FROM weir.pipelines WHERE name = '$name'")
	else
		problem "${prefix}restore: weir.pipelines did not show the ${RESTORE##* } restored windows within 10 s (it shows $(q "SELECT windows FROM weir.pipelines WHERE name = '$name'"))"
	fi
}

# --- figures ---------------------------------------------------------------------
# rate SECONDS: events/s over N events.
rate() { awk -v r="$N" -v t="$1" 'BEGIN { printf "%.0f", r / t }'; }
# ratio SECONDS_A SECONDS_B: how many times faster a is than b (rate a / rate b).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; }
# paired_ratio A B: the median, over the rounds in which both ran, of A's rate
# / B's rate in the same round.  Runs of one round are minutes apart at most,
# so this follows the machine's drift less than best / best does (printed
# as ratio.A_vs_B.paired_median beside it).  n/a when no round has both.
paired_ratio() {
	local r
	for ((r = 1; r <= RUNS; r++)); do
		if [ -n "${ROUND_SECS["$1@$r"]:-}" ] && [ -n "${ROUND_SECS["$2@$r"]:-}" ]; then
			awk -v a="${ROUND_SECS["$1@$r"]}" -v b="${ROUND_SECS["$2@$r"]}" 'BEGIN { print b / a }'
		fi
	done | sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) printf "n/a"; else if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
			  else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# ratio_lines A B [NAME]: ratio.NAME (default A_vs_B): best / best, and its
# paired median.
ratio_lines() {
	local name=${3:-${1}_vs_$2}
	echo "ratio.$name: $(ratio "${BEST[$1]}" "${BEST[$2]}")"
	echo "ratio.$name.paired_median: $(paired_ratio "$1" "$2")"
}
# per TOTAL COUNT: TOTAL / COUNT to one decimal, n/a without a COUNT.
per() { awk -v b="$1" -v w="$2" 'BEGIN { if (w > 0) printf "%.1f", b / w; else printf "n/a" }'; }
valid() { [ -z "${INVALID[$1]:-}" ] && [ -n "${BEST[$1]:-}" ]; }
# figure NAME: its best rate, or why there is none.
figure() {
	if [ -n "${INVALID[$1]:-}" ]; then
		echo "$1: invalid (${INVALID[$1]})"
	elif [ -z "${BEST[$1]:-}" ]; then
		echo "$1: not run"
	else
		echo "$1: $(rate "${BEST[$1]}") events/s"
	fi
}
# worker_start_figure KIND: the fastest worker start of KIND's runs, to see
# how much of the weir figure starting the worker was; and the least CPU
# time its worker and checkpoint writer used in a run (user + system, from
# /proc): steadier than rates on a shared machine, and it says which of the
# two processes the run waited on (a run takes at least its busier one).
worker_start_figure() {
	if [ -n "${WORKER_MS[$1]:-}" ]; then
		echo "$1.worker_start_ms: $(tr ' ' '\n' <<<"${WORKER_MS[$1]}" | sort -n | head -n 1) ms"
	fi
	if [ -n "${WORKER_CPU[$1]:-}" ]; then
		local least
		least=$(tr ' ' '\n' <<<"${WORKER_CPU[$1]}" | sort -n | head -n 1)
		echo "$1.worker_cpu_ms: $least ms"
		echo "$1.worker_cpu_us_per_event: $(awk -v ms="$least" -v n="$N" 'BEGIN { printf "%.3f", ms * 1000 / n }') us"
	fi
	if [ -n "${WRITER_CPU[$1]:-}" ]; then
		echo "$1.writer_cpu_ms: $(tr ' ' '\n' <<<"${WRITER_CPU[$1]}" | sort -n | head -n 1) ms"
	fi
	if [ -n "${READER_CPU[$1]:-}" ]; then
		echo "$1.read_ahead_cpu_ms: $(tr ' ' '\n' <<<"${READER_CPU[$1]}" | sort -n | head -n 1) ms"
	fi
}

# operator_figures KIND SQL_KIND...: KIND's per-run rates (RUN_RATE), the
# target line, and KIND's ratios to each valid SQL_KIND and to the read limit.
operator_figures() {
	local kind=$1 run other
	shift
	for ((run = 1; run <= RUNS; run++)); do
		if [ -n "${RUN_RATE[$run]:-}" ]; then
			echo "$kind.run$run: ${RUN_RATE[$run]} events/s"
		fi
	done
	echo "# target: $kind >= 3x sql"
	if valid "$kind"; then
		for other in "$@"; do
			if valid "$other"; then
				ratio_lines "$kind" "$other"
			fi
		done
		ratio_lines "$kind" read_limit
		ratio_lines "$kind" read_limit_heap_order
	fi
}

# checkpoint_figures KIND PREFIX ROWS_UNIT CHUNK_PER FIELD...: the
# checkpoints of KIND's runs in bench_ckpt (duration = sync_ms + async_ms;
# time_share against bench_state's secs of KIND), printed as PREFIXFIELD;
# FIELDs from count per_run max_ms p50_ms max_gap_ms max_start_delay_ms
# max_state_rows (in ROWS_UNIT) max_bytes sink_rows_per_run chunk_bytes_per
# (named chunk_bytes_per_CHUNK_PER) time_share async_share max_sync_ms (the
# longest the worker stopped reading for one: with a checkpoint writer the
# async part runs beside the reading).  Nothing when
# KIND took no checkpoint.
checkpoint_figures() {
	local kind=$1 prefix=$2 rows_unit=$3 chunk_per=$4 field
	local -a vals names=(count per_run max_ms p50_ms max_gap_ms max_start_delay_ms max_state_rows
		max_bytes sink_rows_per_run chunk_bytes_per time_share async_share max_sync_ms)
	local -A v=()
	local i
	shift 4
	IFS='|' read -ra vals <<<"$(q "SELECT count(*), round(count(*)::numeric / nullif(count(DISTINCT run), 0), 1),
				   round(max(sync_ms + async_ms)::numeric, 1),
				   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY sync_ms + async_ms)::numeric, 1),
				   round(max(gap_ms)::numeric, 1), round(max(start_delay_ms)::numeric, 1),
				   max(state_rows), max(bytes),
				   round(sum(sink_rows)::numeric / nullif(count(DISTINCT run), 0)),
				   round(sum(bytes)::numeric / nullif(sum(state_rows), 0), 1),
				   round((sum(sync_ms + async_ms) / (SELECT sum(secs) * 1000 FROM bench_state s WHERE s.kind = '$kind'))::numeric, 3),
				   round((sum(async_ms) / nullif(sum(sync_ms + async_ms), 0))::numeric, 3),
				   round(max(sync_ms)::numeric, 1)
			  FROM (SELECT *, extract(epoch FROM committed_at - lag(committed_at, 1, worker_start)
					  OVER (PARTITION BY run ORDER BY id)) * 1000 AS gap_ms
					  FROM bench_ckpt WHERE kind = '$kind') c")"
	for i in "${!names[@]}"; do
		v[${names[$i]}]=${vals[$i]:-}
	done
	[ "${v[count]}" != 0 ] || return 0
	for field in "$@"; do
		case $field in
		count | per_run) echo "$prefix$field: ${v[$field]:-n/a} checkpoints" ;;
		*_ms) echo "$prefix$field: ${v[$field]:-n/a} ms" ;;
		max_state_rows) echo "$prefix$field: ${v[$field]:-n/a} $rows_unit" ;;
		max_bytes) echo "$prefix$field: ${v[$field]:-n/a} bytes" ;;
		sink_rows_per_run) echo "$prefix$field: ${v[$field]:-n/a} rows" ;;
		chunk_bytes_per) echo "${prefix}chunk_bytes_per_$chunk_per: ${v[$field]:-n/a} bytes" ;;
		*) echo "$prefix$field: ${v[$field]:-n/a}" ;;
		esac
	done
}

# the checkpoint figures of a bench with one weir kind
CHECKPOINT_FIGURES=(count per_run max_ms p50_ms max_sync_ms max_start_delay_ms max_state_rows max_bytes
	sink_rows_per_run chunk_bytes_per time_share async_share)

# restore_figures PREFIX WINDOWS_NAME UNIT: the restore of the final state
# (RESTORE, from restore_pipeline) as PREFIXms, PREFIXbytes and
# PREFIXWINDOWS_NAME.
restore_figures() {
	local ms bytes windows
	read -r ms bytes windows <<<"$RESTORE"
	echo "${1}ms: $ms ms"
	echo "${1}bytes: $bytes bytes"
	echo "$1$2: $windows $3"
}

# --- BASELINE: the pipelines on a second build ------------------------------------
# common.sh builds the weir of BASELINE=<git rev> and starts a cluster for it;
# bench_use current|baseline switches between the two clusters.  A script
# loads its data into both, the current one last:
#   for build in $(bench_builds); do bench_use "$build"; ...load...; done
#   baseline_check_data
# and in each round runs its pipelines on both back to back:
#   baseline_before CMD ARG...; CMD ARG... [restore]; baseline_after CMD ARG...
# Without BASELINE these run the current build only, as before.  The
# read limit and the plain-SQL figures run on the current cluster only.

# bench_builds: the builds to set up, the current one last (so that what a
# set-up leaves in the script's variables is the current cluster's).
bench_builds() {
	if [ -n "$BASELINE" ]; then
		echo baseline current
	else
		echo current
	fi
}

# baseline_check_data: with BASELINE, both clusters' TOPICS must hold the same
# rows (count and a sum of row hashes, part and pos included): the baseline's
# runs are checked against what the script computed on the current cluster.
baseline_check_data() {
	local t sql="" current baseline
	[ -n "$BASELINE" ] || return 0
	for t in "${TOPICS[@]}"; do
		sql+="${sql:+ || ' ' || }(SELECT '$t:' || count(*) || ':' || coalesce(sum(hashtextextended(x::text, 0)), 0) FROM $t x)"
	done
	current=$(q "SELECT $sql")
	baseline=$(bench_use baseline && q "SELECT $sql")
	expect_equal "the baseline cluster's topics (rows:hash)" "$baseline" "$current"
	progress "baseline: same topics on both clusters ($current)"
}

declare -a BASELINE_KINDS=()
# baseline_run CMD [ARG...]: CMD against the baseline's cluster, in a subshell,
# so that nothing it sets (a script's per-run figures, RESTORE, AVAILABLE...)
# reaches the current build's figures.  What it records (record, invalid,
# problem) comes back as the figure baseline.NAME of this ROUND.  A CMD that
# fails makes the figure `baseline` invalid (the script exits 1 at the end).
baseline_run() {
	local rc log="$BASELINE_TMP/figures.sh"
	: >"$log"
	set +e
	(
		set -e
		bench_use baseline
		progress() { echo "bench: [baseline] $*" >&2; }
		record() { printf 'baseline_record %q %q\n' "$1" "$2" >>"$log"; }
		invalid() { printf 'baseline_invalid %q %q\n' "$1" "$2" >>"$log"; }
		problem() { printf 'baseline_problem %q\n' "$*" >>"$log"; }
		"$@"
	)
	rc=$?
	set -e
	# shellcheck source=/dev/null
	. "$log"
	[ "$rc" = 0 ] || invalid baseline "round $ROUND: '$*' on the baseline failed (exit status $rc)"
}
baseline_kind() {
	local k
	for k in ${BASELINE_KINDS[@]+"${BASELINE_KINDS[@]}"}; do
		[ "$k" != "$1" ] || return 0
	done
	BASELINE_KINDS+=("$1")
}
baseline_record() { baseline_kind "$1"; record "baseline.$1" "$2"; }
baseline_invalid() { baseline_kind "$1"; invalid "baseline.$1" "$2"; }
baseline_problem() { problem "baseline: $1"; }

# baseline_before CMD [ARG...]: with BASELINE, CMD on the baseline
# (baseline_run) in odd rounds, just before the current build's run of it;
# baseline_after: in even rounds, just after it.  Each round pairs a run of
# either build, the one going first alternating.
baseline_before() {
	if [ -n "$BASELINE" ] && ((ROUND % 2 == 1)); then
		baseline_run "$@"
	fi
}
baseline_after() {
	if [ -n "$BASELINE" ] && ((ROUND % 2 == 0)); then
		baseline_run "$@"
	fi
}

# baseline_figures: with BASELINE, each pipeline figure X the baseline ran:
# baseline.X (its best rate), ratio.X_vs_baseline (the median over the
# rounds of X's rate / baseline.X's rate in the same round: > 1 when the
# current build is faster) and ratio.X_vs_baseline.best (best / best).
baseline_figures() {
	local k
	[ -n "$BASELINE" ] || return 0
	echo "# baseline: BASELINE=$BASELINE ($BASELINE_DESC), each weir figure of the same rounds run on that"
	echo "#  build too (its own cluster, back to back with the current build's run, the baseline first in"
	echo "#  odd rounds); ratio.<X>_vs_baseline: median over the rounds of current / baseline rate in the"
	echo "#  round (> 1: the current build is faster); .best: best / best"
	echo "# target: ratio.<X>_vs_baseline >= 0.95"
	for k in ${BASELINE_KINDS[@]+"${BASELINE_KINDS[@]}"}; do
		figure "baseline.$k"
		if valid "$k" && valid "baseline.$k"; then
			echo "ratio.${k}_vs_baseline: $(paired_ratio "$k" "baseline.$k")"
			echo "ratio.${k}_vs_baseline.best: $(ratio "${BEST[$k]}" "${BEST[baseline.$k]}")"
		fi
	done
}

# finish: the baseline's figures (with BASELINE), then the problems, as
# comments after the figures; the exit status is 1 when a figure is invalid.
finish() {
	local p
	baseline_figures
	if [ "${#PROBLEMS[@]}" -gt 0 ]; then
		echo "# problems:"
		for p in "${PROBLEMS[@]}"; do
			echo "#  $p"
		done
	fi
	[ "${#INVALID[@]}" -eq 0 ]
}
