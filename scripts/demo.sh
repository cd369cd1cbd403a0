#!/usr/bin/env bash
# scripts/demo.sh — THE demo command: weir topics end to end.
#
# Builds and installs weir, starts a throwaway cluster in /tmp/weir-demo-$$
# (as the postgres OS user when run as root), then walks through:
#   Topics                          Pipelines
#   2. create a topic               9. a topic of events with an event time;
#   3. 4 concurrent producers          4 concurrent producers, 5 minutes
#      (one rolls back, one            of simulated event time
#       holds its transaction      10. a tumbling pipeline: count and sum
#       open: stable < head)           per customer per minute
#   4. stable vs head positions    11. weir.checkpoint(); the sink and
#   5. read by position                weir.pipelines
#   6. consume with weir.poll      12. sink == SQL oracle (GROUP BY date_bin
#   7. the weir.topics /               over the topic, closed windows)
#      topic_consumers views       13. kill -9 the pipeline's worker while
#   8. verify: consumed ==             producers keep producing; it comes
#      produced, nothing rolled        back and restores its checkpoint
#      back ever shows up          14. sink == oracle again: exactly once
#   Captures
#   15. an ordinary table, a capture of its changes into a topic, a last
#       value pipeline over them; inserts, updates (one changing keys),
#       deletes; kill -9 the capture's worker while the application writes
#   16. the mirror equals the table, and the topic holds every committed
#       row change once (a trigger's count is the oracle)
# Each verification prints PASS or FAIL; the script exits 1 if any failed.
# The cluster is stopped and removed on exit, whatever happens.
#
# Knobs: WEIR_PORT (default: a free port in 5433..5499),
#        WEIR_DEMO_KEEP=1 (leave the cluster directory for inspection),
#        WEIR_USE_INSTALLED=1 (build and install nothing: run against the weir
#        installed already, as scripts/package.sh does with the package).

set -euo pipefail

echo "=== Step 0: install dependencies, build and install weir"
# shellcheck source=scripts/setup.sh
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The demo only needs the installed extension, not the build copy.
[ "$WEIR_TEMP_BUILD" != 1 ] || rm -rf "$WEIR_BUILD"

DEMO_DIR="/tmp/weir-demo-$$"
PORT="${WEIR_PORT:-$(weir_free_port 5433 5499)}"
SQL="$DEMO_DIR/sql"
declare -a BG_PIDS=()
declare -a CHECK_FAILURES=()

cleanup() {
	local rc=$? pid
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	weir_cluster_stop
	if [ "${WEIR_DEMO_KEEP:-0}" = 1 ]; then
		echo "cluster directory kept: $DEMO_DIR"
	else
		rm -rf "$DEMO_DIR"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() {
	echo
	echo "=== Step $1: $2"
}
say() { echo "--- $*"; }

# psql showing each query before its result (for the audience).
show_sql() { weir_psql -e "$@"; }
# psql returning one bare value (for the script).
value() { weir_psql -At -c "$1"; }

# check DESCRIPTION SQL-returning-boolean
check() {
	local result
	result="$(value "$2")"
	if [ "$result" = t ]; then
		echo "    PASS  $1"
	else
		echo "    FAIL  $1 (got '$result')"
		CHECK_FAILURES+=("$1")
	fi
}

# wait_for DESCRIPTION SQL-returning-boolean [seconds]
wait_for() {
	local i tries=$((${3:-30} * 10))
	for ((i = 0; i < tries; i++)); do
		[ "$(value "$2")" = t ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for: $1" >&2
	return 1
}

# ---------------------------------------------------------------------------
step 1 "start a throwaway cluster in $DEMO_DIR (port $PORT)"
# UTC, so that the timestamps shown line up with the minute windows
weir_cluster_start "$DEMO_DIR" "$PORT" "timezone = 'UTC'"
mkdir -p "$SQL"
chmod 755 "$SQL"
say "server running; connect with: psql -h $DEMO_DIR -p $PORT -U postgres postgres"
show_sql -c "SHOW shared_preload_libraries" -c "SHOW weir.database"

# ---------------------------------------------------------------------------
step 2 "create the extension and a topic with 4 partitions keyed by customer"
show_sql <<'EOF'
CREATE EXTENSION weir;
SELECT weir.create_topic('orders', 'customer int, amount numeric, note text',
                         partitions => 4, key => 'customer');
\d orders
-- lets the demo tell the slow producer when to commit
CREATE TABLE demo_release (released boolean);
EOF

# ---------------------------------------------------------------------------
step 3 "4 concurrent producers insert into orders"
# Each producer is a psql session in the background, naming only the user
# columns: weir computes part from hash(customer) and assigns pos.
ROWS=200		# rows per transaction
cat >"$SQL/producer1.sql" <<EOF
SET application_name = 'weir-demo-producer-1';
$(for t in 1 2 3 4 5; do
	echo "INSERT INTO orders (customer, amount, note) SELECT 100 + g % 25, g * 0.5, 'producer 1, txn $t' FROM generate_series(1, $ROWS) g;"
done)
EOF
cat >"$SQL/producer2.sql" <<EOF
SET application_name = 'weir-demo-producer-2';
INSERT INTO orders (customer, amount, note) SELECT 200 + g % 25, g * 2, 'producer 2, txn 1' FROM generate_series(1, $ROWS) g;
INSERT INTO orders (customer, amount, note) SELECT 200 + g % 25, g * 2, 'producer 2, txn 2' FROM generate_series(1, $ROWS) g;
-- this one changes its mind: none of these rows may ever be read
BEGIN;
INSERT INTO orders (customer, amount, note) SELECT 200 + g % 25, g * 2, 'ROLLED BACK' FROM generate_series(1, $ROWS) g;
ROLLBACK;
INSERT INTO orders (customer, amount, note) SELECT 200 + g % 25, g * 2, 'producer 2, txn 4' FROM generate_series(1, $ROWS) g;
INSERT INTO orders (customer, amount, note) SELECT 200 + g % 25, g * 2, 'producer 2, txn 5' FROM generate_series(1, $ROWS) g;
EOF
cat >"$SQL/producer3.sql" <<EOF
SET application_name = 'weir-demo-producer-3';
BEGIN;
INSERT INTO orders (customer, amount, note) SELECT 300 + g % 25, g * 3, 'producer 3, long transaction' FROM generate_series(1, $ROWS) g;
-- hold the transaction open for a couple of seconds while the others commit,
-- and until the demo has looked at weir.topic_partitions (at most a minute)
SELECT pg_sleep(2);
DO \$\$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM demo_release);
		PERFORM pg_sleep(0.1);
	END LOOP;
END
\$\$;
COMMIT;
EOF
cat >"$SQL/producer4.sql" <<EOF
SET application_name = 'weir-demo-producer-4';
$(for t in 1 2 3 4 5; do
	echo "INSERT INTO orders (customer, amount, note) SELECT 400 + g % 25, g * 4, 'producer 4, txn $t' FROM generate_series(1, $ROWS) g;"
	echo "SELECT pg_sleep(0.2);"
done)
EOF
# psql reads them as the postgres OS user, whatever our umask
chmod 644 "$SQL"/*.sql
# committed rows: producer 1: 5 txns, 2: 4 (+1 rolled back), 3: 1, 4: 5
EXPECTED=$((ROWS * (5 + 4 + 1 + 5)))

producer() {
	weir_psql -f "$SQL/producer$1.sql" >"$DEMO_DIR/producer$1.log" 2>&1
}

say "producer 3 opens a transaction, inserts $ROWS rows and keeps it open"
producer 3 &
P3=$!
BG_PIDS+=("$P3")
wait_for "producer 3 to insert" \
	"SELECT EXISTS (SELECT 1 FROM pg_stat_activity
	                WHERE application_name = 'weir-demo-producer-3' AND backend_xid IS NOT NULL)"
P3_BACKEND=$(value "SELECT pid FROM pg_stat_activity WHERE application_name = 'weir-demo-producer-3'")
say "producer 3 is backend pid $P3_BACKEND"

say "producers 1, 2 and 4 run concurrently and commit (producer 2 rolls one transaction back)"
producer 1 &
P1=$!
producer 2 &
P2=$!
producer 4 &
P4=$!
BG_PIDS+=("$P1" "$P2" "$P4")
for n in 1 2 4; do
	pid_var="P$n"
	if ! wait "${!pid_var}"; then
		echo "producer $n failed:" >&2
		cat "$DEMO_DIR/producer$n.log" >&2
		exit 1
	fi
	say "producer $n done"
done

# ---------------------------------------------------------------------------
step 4 "while producer 3's transaction is still open"
say "positions past producer 3's first row are assigned (head) but not safe to"
say "consume yet (stable): a reader must not skip producer 3's rows once it commits"
show_sql <<'EOF'
SELECT pid, application_name, backend_xid, state, wait_event
  FROM pg_stat_activity WHERE application_name LIKE 'weir-demo-producer-%' ORDER BY 2;
SELECT * FROM weir.topic_partitions ORDER BY partition;
-- weir.read only returns rows up to the stable position
SELECT p AS partition,
       (SELECT count(*) FROM weir.read(NULL::orders, p, 0, 1000000)) AS readable_rows,
       (SELECT max(pos) FROM weir.read(NULL::orders, p, 0, 1000000)) AS last_readable_pos
  FROM generate_series(0, 3) p ORDER BY 1;
EOF
check "producer 3 still has its transaction open" \
	"SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = $P3_BACKEND"
check "some partition has stable_position < head_position" \
	"SELECT bool_or(stable_position < head_position) FROM weir.topic_partitions WHERE topic::text = 'orders'"
check "oldest_producer_pid is producer 3 ($P3_BACKEND)" \
	"SELECT bool_or(oldest_producer_pid = $P3_BACKEND) FROM weir.topic_partitions WHERE topic::text = 'orders'"
check "weir.read returns nothing past the stable position" \
	"SELECT bool_and(coalesce((SELECT max(pos) FROM weir.read(NULL::orders, tp.partition, 0, 1000000)), 0)
	                 <= tp.stable_position)
	   FROM weir.topic_partitions tp WHERE topic::text = 'orders'"

say "releasing producer 3: it commits"
value "INSERT INTO demo_release VALUES (true)" >/dev/null
if ! wait "$P3"; then
	echo "producer 3 failed:" >&2
	cat "$DEMO_DIR/producer3.log" >&2
	exit 1
fi
wait_for "stable positions to catch up with head positions" \
	"SELECT bool_and(stable_position = head_position) FROM weir.topic_partitions WHERE topic::text = 'orders'" 10 ||
	true
show_sql -c "SELECT * FROM weir.topic_partitions ORDER BY partition"
check "every partition is stable up to its head" \
	"SELECT bool_and(stable_position = head_position AND open_producers = 0)
	   FROM weir.topic_partitions WHERE topic::text = 'orders'"
say "positions that hold no row were taken by producer 2's rolled-back transaction"
show_sql <<'EOF'
SELECT part AS partition, count(*) AS rows, max(pos) AS last_pos,
       max(pos) - count(*) AS positions_without_row
  FROM orders GROUP BY part ORDER BY part;
EOF

# ---------------------------------------------------------------------------
step 5 "read by position: partition 0, the first 5 rows, then the next 5"
show_sql <<'EOF'
SELECT * FROM weir.read(NULL::orders, 0, 0, 5);
SELECT * FROM weir.read(NULL::orders, 0, 5, 5);
EOF

# ---------------------------------------------------------------------------
step 6 "consume everything as consumer 'demo' with weir.poll, in one transaction"
say "the poll advances demo's committed positions when the transaction commits"
show_sql <<'EOF'
BEGIN;
CREATE TABLE demo_consumed AS SELECT * FROM weir.poll(NULL::orders, 'demo', 100000);
SELECT count(*) AS consumed FROM demo_consumed;
COMMIT;
-- a second poll finds nothing new
SELECT count(*) AS consumed_again FROM weir.poll(NULL::orders, 'demo', 100000);
EOF

# ---------------------------------------------------------------------------
step 7 "the topic and its consumers"
show_sql <<'EOF'
\x auto
SELECT * FROM weir.topics;
SELECT * FROM weir.topic_consumers ORDER BY consumer, partition;
EOF

# ---------------------------------------------------------------------------
step 8 "verify"
check "orders holds the $EXPECTED committed rows" \
	"SELECT count(*) = $EXPECTED FROM orders"
check "consumed count equals SELECT count(*) FROM orders" \
	"SELECT (SELECT count(*) FROM demo_consumed) = (SELECT count(*) FROM orders)"
check "every row was consumed exactly once" \
	"SELECT NOT EXISTS (SELECT part, pos FROM orders EXCEPT ALL SELECT part, pos FROM demo_consumed)
	    AND NOT EXISTS (SELECT part, pos FROM demo_consumed EXCEPT ALL SELECT part, pos FROM orders)"
check "no rolled-back row was stored or consumed" \
	"SELECT NOT EXISTS (SELECT 1 FROM orders WHERE note = 'ROLLED BACK')
	    AND NOT EXISTS (SELECT 1 FROM demo_consumed WHERE note = 'ROLLED BACK')"
check "rows landed in all 4 partitions, positions start at 1" \
	"SELECT count(DISTINCT part) = 4 AND min(pos) = 1 FROM orders"
check "consumer 'demo' has no lag" \
	"SELECT coalesce(bool_and(lag = 0), false) FROM weir.topic_consumers WHERE consumer = 'demo'"

# ===========================================================================
# Pipelines
# ===========================================================================

# wait_quietly DESCRIPTION SQL-returning-boolean [seconds]: like wait_for,
# but connection errors (a server restarting after a crash) are expected.
wait_quietly() {
	local i tries=$((${3:-30} * 10))
	for ((i = 0; i < tries; i++)); do
		[ "$(value "$2" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for: $1" >&2
	return 1
}

# The simulated clock: every event takes the next tick of a sequence, and a
# tick is 50 ms of event time, so 6,000 events make 5 minutes.  Concurrent
# producers share the clock, so events arrive only slightly out of order.
CLOCK="timestamptz '2026-01-01 12:00:00+00' + nextval('demo_clock') * interval '50 milliseconds'"
EVENTS_PER_TXN=50
TXNS_PER_PRODUCER=30	# 4 producers x 30 x 50 = 6,000 events per phase

# produce_events N PHASE PAUSE: producer N commits TXNS_PER_PRODUCER
# transactions of EVENTS_PER_TXN events, one psql session per transaction,
# pausing PAUSE seconds in between.  A transaction that fails (the server
# restarting after a crash) is retried: the topic holds what committed, and
# that is all the pipeline and the oracle ever see.
produce_events() {
	local n="$1" phase="$2" pause="$3" ok=0 failed=0
	local log="$DEMO_DIR/events-producer$n-phase$phase.log"
	while [ "$ok" -lt "$TXNS_PER_PRODUCER" ]; do
		if weir_psql -c "SET application_name = 'weir-demo-events-$n';" -c "
			INSERT INTO events (customer, amount, ts)
			SELECT 1 + (random() * 39)::int, 1 + (random() * 99)::int, $CLOCK
			  FROM generate_series(1, $EVENTS_PER_TXN)" >>"$log" 2>&1; then
			ok=$((ok + 1))
			sleep "$pause"
		else
			failed=$((failed + 1))
			[ "$failed" -le 600 ] || return 1
			sleep 0.2
		fi
	done
	echo "producer $n: $ok transactions committed, $failed attempts failed" >>"$log"
}

# start_event_producers PHASE PAUSE: sets EV_PIDS
start_event_producers() {
	local n
	EV_PIDS=()
	for n in 1 2 3 4; do
		produce_events "$n" "$1" "$2" &
		EV_PIDS+=("$!")
		BG_PIDS+=("$!")
	done
}

wait_event_producers() {
	local i
	for i in 0 1 2 3; do
		if ! wait "${EV_PIDS[$i]}"; then
			echo "events producer $((i + 1)) failed:" >&2
			tail -n 20 "$DEMO_DIR/events-producer$((i + 1))-phase$1.log" >&2
			exit 1
		fi
		say "$(tail -n 1 "$DEMO_DIR/events-producer$((i + 1))-phase$1.log")"
	done
}

# ---------------------------------------------------------------------------
step 9 "a topic of events with an event time; 4 concurrent producers, 5 simulated minutes"
show_sql <<'EOF'
SELECT weir.create_topic('events', 'customer int, amount int, ts timestamptz',
                         partitions => 4, key => 'customer');
-- the demo's simulated clock (see the producers below)
CREATE SEQUENCE demo_clock;
EOF
say "each producer: $TXNS_PER_PRODUCER transactions of $EVENTS_PER_TXN events, customers 1..40,"
say "ts = 12:00:00 + one 50 ms tick per event, shared by all producers:"
say "  INSERT INTO events (customer, amount, ts)"
say "  SELECT 1 + (random() * 39)::int, 1 + (random() * 99)::int, $CLOCK"
say "    FROM generate_series(1, $EVENTS_PER_TXN)"
start_event_producers 1 0
wait_event_producers 1
show_sql <<'EOF'
SELECT part AS partition, count(*) AS events, min(ts), max(ts)
  FROM events GROUP BY part ORDER BY part;
EOF

# ---------------------------------------------------------------------------
step 10 "a pipeline: events and amount per customer per minute (tumbling windows)"
say "the pipeline starts from position 0, so it first works through the backlog;"
say "a window closes when the watermark (the lowest over partitions of their"
say "largest event time - 5 s) reaches its end"
show_sql <<'EOF'
SELECT weir.create_pipeline(
         name             => 'per_minute',
         source           => 'events',
         key              => 'customer',
         event_time       => 'ts',
         windowing        => weir.tumbling('1 minute'),
         aggregates       => 'count(*) AS events, sum(amount) AS total',
         out_of_orderness => '5 seconds',
         late_records     => 'events_late');
-- the sink weir created: keys, window_start, window_end, aggregates
\d per_minute
EOF

# ---------------------------------------------------------------------------
step 11 "weir.checkpoint(): wait until every event committed so far is processed and checkpointed"
show_sql <<'EOF'
SELECT weir.checkpoint('per_minute', timeout => '120 s') AS checkpoint_id;
-- one row per customer and closed minute; per minute:
SELECT window_start, window_end, count(*) AS customers, sum(events) AS events, sum(total) AS total
  FROM per_minute GROUP BY 1, 2 ORDER BY 1;
SELECT * FROM per_minute WHERE customer <= 3 ORDER BY customer, window_start;
\x on
SELECT * FROM weir.pipelines;
\x off
SELECT id, started_at, committed_at, watermark, start_delay_ms, sync_ms, async_ms,
       sink_rows, state_rows, state_deletes, records_in
  FROM weir.checkpoints ORDER BY id DESC LIMIT 5;
EOF
say "the minute 12:04 is still open: its end, 12:05:00, is past the watermark"

# ---------------------------------------------------------------------------
step 12 "compare the sink with the SQL oracle"
say "oracle: GROUP BY customer, date_bin('1 minute', ts, '1970-01-01') over the topic,"
say "restricted to windows that end at or before the watermark of the last checkpoint,"
say "leaving out records the pipeline dropped as too late (copied to events_late)"
show_sql <<'EOF'
CREATE VIEW demo_watermark AS
  SELECT c.watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
   WHERE p.name = 'per_minute' ORDER BY c.id DESC LIMIT 1;
CREATE VIEW demo_oracle AS
  SELECT customer,
         date_bin('1 minute', ts, timestamptz '1970-01-01 00:00:00+00') AS window_start,
         date_bin('1 minute', ts, timestamptz '1970-01-01 00:00:00+00') + interval '1 minute' AS window_end,
         count(*) AS events, sum(amount) AS total
    FROM events e
   WHERE NOT EXISTS (SELECT 1 FROM events_late l WHERE l.part = e.part AND l.pos = e.pos)
   GROUP BY 1, 2
  HAVING date_bin('1 minute', ts, timestamptz '1970-01-01 00:00:00+00') + interval '1 minute'
         <= (SELECT watermark FROM demo_watermark);
-- one statement, one snapshot: a checkpoint commits the sink and its watermark together
CREATE VIEW demo_compare AS
  SELECT (SELECT watermark FROM demo_watermark) AS watermark,
         (SELECT count(*) FROM demo_oracle) AS oracle_windows,
         (SELECT count(*) FROM per_minute) AS sink_windows,
         (SELECT count(*) FROM (SELECT * FROM demo_oracle
                                EXCEPT SELECT customer, window_start, window_end, events, total FROM per_minute) d)
           AS missing_or_different,
         (SELECT count(*) FROM (SELECT customer, window_start, window_end, events, total FROM per_minute
                                EXCEPT SELECT * FROM demo_oracle) d)
           AS not_in_oracle,
         (SELECT count(*) FROM events_late) AS late_records;
SELECT * FROM demo_compare;
EOF
compare_check() {
	local failures_before=${#CHECK_FAILURES[@]}
	check "$1" \
		"SELECT oracle_windows > 0 AND missing_or_different = 0 AND not_in_oracle = 0 FROM demo_compare"
	if [ "${#CHECK_FAILURES[@]}" -gt "$failures_before" ]; then
		show_sql <<'EOF'
SELECT 'oracle only' AS side, * FROM (SELECT * FROM demo_oracle
  EXCEPT SELECT customer, window_start, window_end, events, total FROM per_minute) d
UNION ALL
SELECT 'sink only', * FROM (SELECT customer, window_start, window_end, events, total FROM per_minute
  EXCEPT SELECT * FROM demo_oracle) d
ORDER BY 2, 3, 1 LIMIT 20;
EOF
	fi
}
compare_check "sink == oracle after the backlog (4 closed minutes x 40 customers)"
check "the sink holds closed windows only" \
	"SELECT coalesce(bool_and(window_end <= (SELECT watermark FROM demo_watermark)), false) FROM per_minute"

# ---------------------------------------------------------------------------
step 13 "crash: kill -9 the pipeline's worker while 4 producers keep producing"
FIRST_CHECKPOINT=$(value "SELECT last_checkpoint FROM weir.pipelines WHERE name = 'per_minute'")
PHASE1_EVENTS=$(value "SELECT count(*) FROM events")
say "the producers add 5 more minutes of events, pausing 0.1 s between transactions"
start_event_producers 2 0.1
say "two odd events: a straggler from 12:00:30 (its window closed long ago: late)"
say "and one without event time (it cannot be placed in a window: a dead letter)"
show_sql <<'EOF'
INSERT INTO events (customer, amount, ts) VALUES (7, 1000, '2026-01-01 12:00:30+00');
INSERT INTO events (customer, amount, ts) VALUES (8, 2000, NULL);
EOF
wait_for "the pipeline to checkpoint some of the new events" \
	"SELECT last_checkpoint > $FIRST_CHECKPOINT AND (SELECT count(*) FROM events) > $PHASE1_EVENTS + 1000
	   FROM weir.pipelines WHERE name = 'per_minute'" 60
show_sql -c "SELECT name, status, worker_pid, positions, watermark, last_checkpoint FROM weir.pipelines"
WORKER_PID=$(value "SELECT worker_pid FROM weir.pipelines WHERE name = 'per_minute'")
say "kill -9 $WORKER_PID (the worker: pid from weir.pipelines.worker_pid)"
say "PostgreSQL treats a killed server process as a crash: it ends every session"
say "(the producers' open transactions abort; they reconnect and go on),"
say "reinitializes shared memory, and the launcher starts the pipeline again"
LOG_LINES_BEFORE=$(wc -l <"$DEMO_DIR/server.log")
weir_as_pg kill -9 "$WORKER_PID"
running=0
for pid in "${EV_PIDS[@]}"; do
	! kill -0 "$pid" 2>/dev/null || running=$((running + 1))
done
say "killed; producers still producing at that moment: $running of 4"
sleep 1
wait_quietly "the pipeline to run again" \
	"SELECT status = 'running' AND worker_pid <> $WORKER_PID FROM weir.pipelines WHERE name = 'per_minute'" 120
say "back: the server log since the kill"
tail -n +"$((LOG_LINES_BEFORE + 1))" "$DEMO_DIR/server.log" |
	grep -E 'terminated by signal|terminating any other|reinitializing|ready to accept|weir (launcher|pipeline)' |
	sed -e 's/^/    /' || true
say "waiting for the producers to finish (they retry what the crash aborted)"
wait_event_producers 2
show_sql <<'EOF'
SELECT weir.checkpoint('per_minute', timeout => '120 s') AS checkpoint_id;
-- the start after the crash restored the last checkpoint committed before it
SELECT r.checkpoint_id, r.restored_at, r.duration_ms, r.bytes, r.windows
  FROM weir.restores r ORDER BY r.restored_at;
SELECT window_start, window_end, count(*) AS customers, sum(events) AS events, sum(total) AS total
  FROM per_minute GROUP BY 1, 2 ORDER BY 1;
\x on
SELECT * FROM weir.pipelines;
\x off
SELECT partition, position, error, record FROM weir.dead_letters;
SELECT part, pos, customer, amount, ts, watermark FROM events_late ORDER BY part, pos;
EOF
say "records_in and the other counters of weir.pipelines live in shared memory:"
say "they started again from zero after the crash"

# ---------------------------------------------------------------------------
step 14 "compare the sink with the oracle again: as if nothing had crashed"
show_sql -c "SELECT * FROM demo_compare"
compare_check "sink == oracle after the crash (every event counted exactly once)"
check "the worker was restored from a checkpoint after the crash" \
	"SELECT EXISTS (SELECT 1 FROM weir.restores WHERE checkpoint_id >= $FIRST_CHECKPOINT)"
check "the straggler is in events_late exactly once, not in the sink" \
	"SELECT count(*) = 1 FROM events_late WHERE amount = 1000 AND ts = '2026-01-01 12:00:30+00'"
check "the event without event time is in weir.dead_letters exactly once" \
	"SELECT count(*) = 1 FROM weir.dead_letters WHERE error = 'event time is null'
	    AND record->>'amount' = '2000'"
check "the pipeline's positions reached the last event of every partition" \
	"SELECT count(*) = 4 AND bool_and((p.positions->>e.part::text)::bigint = e.last_pos)
	   FROM weir.pipelines p, (SELECT part, max(pos) AS last_pos FROM events GROUP BY part) e
	  WHERE p.name = 'per_minute'"

# ---------------------------------------------------------------------------
step 15 "capture an ordinary table's changes: a topic, and a pipeline mirroring the table"
say "an application writes a plain table; a capture decodes its changes from the WAL"
say "(its own worker and replication slot) into the topic shop_accounts, exactly once"
show_sql <<'EOF'
CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric NOT NULL);
-- the oracle: a trigger counts every row change in the application's own transaction
CREATE TABLE account_changes (op text, id int);
CREATE FUNCTION count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO account_changes VALUES (TG_OP, CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
	RETURN NULL;
END $$;
CREATE TRIGGER count_change AFTER INSERT OR UPDATE OR DELETE ON accounts
	FOR EACH ROW EXECUTE FUNCTION count_change();
SELECT weir.create_capture('shop', tables => ARRAY['accounts'::regclass]);
EOF
wait_for "the capture to run" "SELECT status = 'running' FROM weir.captures WHERE name = 'shop'" 60
show_sql <<'EOF'
-- the last value per account over the changes: its sink mirrors the table
SELECT weir.create_last_value('accounts_now', 'shop_accounts', key => 'id',
                              event_time => 'commit_time', out_of_orderness => '2 seconds',
                              columns => 'owner, balance');
INSERT INTO accounts SELECT g, 'owner ' || g, 100 FROM generate_series(1, 500) g;
UPDATE accounts SET balance = balance + 10 WHERE id % 3 = 0;
UPDATE accounts SET id = id + 1000 WHERE id % 50 = 0;   -- a key change: a 'B' then a 'U'
DELETE FROM accounts WHERE id % 7 = 0;
EOF
wait_for "the capture to read those changes" \
	"SELECT received_lsn >= '$(value "SELECT pg_current_wal_lsn()")' FROM weir.captures" 60
show_sql <<'EOF'
-- I: inserts, U: updates' new rows, B: a key change's old key, D: deletes
SELECT change_op, count(*) FROM shop_accounts GROUP BY 1 ORDER BY 1;
SELECT name, status, tables, topics, position, lag_bytes, wal_retained_bytes FROM weir.captures;
EOF
CAPTURE_PID=$(value "SELECT worker_pid FROM weir.captures WHERE name = 'shop'")
say "kill -9 the capture's worker ($CAPTURE_PID) while the application keeps writing"
for t in $(seq 1 20); do
	echo "UPDATE accounts SET balance = balance + $t WHERE id % 10 = $((t % 10));"
done | weir_psql -q >/dev/null 2>&1 &	# the crash ends its session: expected
APP_PID=$!
weir_as_pg kill -9 "$CAPTURE_PID"
sleep 1
wait_quietly "the server to accept connections again" "SELECT true" 120
wait "$APP_PID" 2>/dev/null || true
say "the application's transactions the crash aborted are written again"
for t in $(seq 21 40); do
	echo "UPDATE accounts SET balance = balance + $t WHERE id % 10 = $((t % 10));"
done | weir_psql -q >/dev/null
wait_for "the capture to run again" "SELECT status = 'running' FROM weir.captures" 120

# ---------------------------------------------------------------------------
step 16 "the mirror equals the table, every change captured exactly once"
wait_for "the capture to catch up" \
	"SELECT received_lsn >= '$(value "SELECT pg_current_wal_lsn()")' FROM weir.captures" 120
show_sql <<'EOF'
SELECT weir.checkpoint('accounts_now', timeout => '120 s') AS checkpoint_id;
SELECT count(*) AS accounts, sum(balance) AS balance FROM accounts;
SELECT count(*) AS mirrored, sum(balance) AS balance FROM accounts_now;
EOF
check "the last value sink equals the table" \
	"SELECT NOT EXISTS (SELECT id, owner, balance FROM accounts EXCEPT SELECT id, owner, balance FROM accounts_now)
	    AND NOT EXISTS (SELECT id, owner, balance FROM accounts_now EXCEPT SELECT id, owner, balance FROM accounts)"
show_sql -c "SELECT op, count(*) FROM account_changes GROUP BY 1 ORDER BY 1" \
	-c "SELECT change_op, count(*) FROM shop_accounts GROUP BY 1 ORDER BY 1"
check "every committed row change is in the topic exactly once (I+U+D rows = the trigger's count)" \
	"SELECT (SELECT count(*) FROM shop_accounts WHERE change_op IN ('I', 'U', 'D'))
	      = (SELECT count(*) FROM account_changes)"

echo
if [ "${#CHECK_FAILURES[@]}" -gt 0 ]; then
	echo "demo FAILED: ${#CHECK_FAILURES[@]} check(s) failed:"
	printf '  - %s\n' "${CHECK_FAILURES[@]}"
	echo "server log (tail):"
	tail -n 30 "$DEMO_DIR/server.log" || true
	exit 1
fi
echo "demo finished: all checks passed; stopping and removing the cluster"
