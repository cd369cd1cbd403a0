#!/usr/bin/env bash
# scripts/demo.sh — THE demo command: weir topics end to end.
#
# Builds and installs weir, starts a throwaway cluster in /tmp/weir-demo-$$
# (as the postgres OS user when run as root), then walks through:
#   1. create a topic          4. read by position
#   2. 4 concurrent producers  5. consume with weir.poll
#      (one rolls back, one    6. the weir.topics / topic_consumers views
#       holds its transaction  7. verify: consumed == produced, nothing
#       open: stable < head)      rolled back ever shows up
# The cluster is stopped and removed on exit, whatever happens.
# Later issues add pipelines and crash recovery as further steps.
#
# Knobs: WEIR_PORT (default: a free port in 5433..5499),
#        WEIR_DEMO_KEEP=1 (leave the cluster directory for inspection).

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
weir_cluster_start "$DEMO_DIR" "$PORT"
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

echo
if [ "${#CHECK_FAILURES[@]}" -gt 0 ]; then
	echo "demo FAILED: ${#CHECK_FAILURES[@]} check(s) failed:"
	printf '  - %s\n' "${CHECK_FAILURES[@]}"
	echo "server log (tail):"
	tail -n 30 "$DEMO_DIR/server.log" || true
	exit 1
fi
echo "demo finished: all checks passed; stopping and removing the cluster"
