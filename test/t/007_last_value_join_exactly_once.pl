# 007_last_value_join_exactly_once.pl
#
# Concurrent producers write three topics while four pipelines run:
#
#   lv         (k int, v bigint, ts timestamptz), 4 partitions keyed by k:
#              readings of 20,000 keys, out of order;
#   orders     (order_id bigint, amount int, ts timestamptz), 4 partitions;
#   shipments  (order_id bigint, carrier text, ts timestamptz), 3 partitions;
#
#   lv_all     last value per k, no ttl, with the winning row's part and pos
#              in the sink;
#   lv_ttl     last value per k with a 1-minute ttl (keys leave, their sink
#              rows are deleted, some keys come back later);
#   j_inner    orders JOIN shipments ON order_id and
#              l.ts BETWEEN r.ts - 1 minute AND r.ts + 10 seconds, with both
#              rows' part and pos in the sink, a filter on each side
#              (amount % 7 <> 0; carrier <> 'c2') and a late-records table,
#              which must stay empty;
#   j_left     the same as a LEFT JOIN (default columns).
#
# The pipelines read ahead (weir.read_ahead: a second process per pipeline
# reads and evaluates the topics, the worker applies).  Meanwhile a process
# is killed with kill -9 four times (one for each pipeline, in random
# order: a worker at a random moment, a read-ahead process at a random
# moment, two workers as soon as they are seen in a checkpoint), and the
# server is stopped in immediate mode once, at moments of the run placed at
# random.  Each kill makes the
# postmaster reinitialize shared memory, so every pipeline restores its
# last checkpoint each time.  When the producers are done, one order and
# one shipment per partition far in the future flush the joins, each
# pipeline takes a checkpoint, and each sink must equal its oracle, row for
# row (EXCEPT ALL both ways, and counts):
#
#   lv_all   SELECT DISTINCT ON (k) ... ORDER BY k, ts DESC, part DESC, pos DESC
#   lv_ttl   the same, without the keys whose newest ts + ttl is at or below
#            the watermark of lv_ttl's last checkpoint
#   j_inner  the inner join in SQL, of the filtered topics
#   j_left   the left outer join in SQL
#
# Event time.  Every record takes the next tick of a clock shared by all
# producers (a sequence, 1 ms of event time per tick) minus a random
# disorder of up to 20 s.
#
# Last value.  A record's key is drawn from a band of 4,000 keys that
# slides over the 20,000 keys as the clock advances (tick / 40), and wraps
# around near the end: early keys stop receiving records, expire from
# lv_ttl, and some come back after the wrap.  For one key in 25, each
# record also has copies with the same event time written with an explicit
# part into random partitions (sometimes its own): exact ties of event time
# between partitions, decided by the partition, and within one, decided by
# the position.
#
# Join.  An order's id is its tick (some ids are written twice, with
# another amount and a nearby time); each order gets 0 to 3 shipments at
# offsets from its event time inside and outside the interval, some exactly
# on its bounds (-10 s and +60 s) or 1 ms outside them; stray shipments
# name ids of orders up to 200 s older or 50 s younger (or of no order),
# with a time near the clock.  The pipelines allow 3 minutes of
# out-of-orderness, so nothing is late.
#
# WEIR_TAP_EVENTS overrides the number of records of the three topics
# together (1000000), WEIR_TAP_SECONDS the time the producers take to write
# them (40), WEIR_TAP_SEED the seed that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use List::Util qw(shuffle);
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my ($target, $seconds, $seed) = crash_test_knobs();
my $keys      = 20_000;
my $producers = 6;
my $deadline  = 300;    # seconds for the produce phase, crashes included
my $ttl       = q{interval '1 minute'};
my $right_before = q{interval '10 seconds'};
my $right_after  = q{interval '1 minute'};
my $base      = q{timestamptz '2024-01-01 00:00:00+00'};

# pgbench's rate: a transaction writes about 960 records on average (the
# last-value script about 1064, the join script about 840, weighted 5:4)
my $rate = bench_rate($target, 960.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('last_value_join_exactly_once', crash_test_conf(40),
	'weir.read_ahead' => 'on');

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('lv', 'k int, v bigint, ts timestamptz', partitions => 4, key => 'k');
SELECT weir.create_topic('orders', 'order_id bigint, amount int, ts timestamptz',
						 partitions => 4, key => 'order_id');
SELECT weir.create_topic('shipments', 'order_id bigint, carrier text, ts timestamptz',
						 partitions => 3, key => 'order_id');
SELECT weir.create_last_value('lv_all', 'lv', key => 'k', event_time => 'ts',
							  columns => 'v, ts, part AS src_part, pos AS src_pos',
							  late_records => 'lv_all_late');
SELECT weir.create_last_value('lv_ttl', 'lv', key => 'k', event_time => 'ts', ttl => $ttl,
							  out_of_orderness => '3 minutes', late_records => 'lv_ttl_late');
SELECT weir.create_join('j_inner', 'orders', 'shipments',
						left_key => 'order_id', right_key => 'order_id',
						left_event_time => 'ts', right_event_time => 'ts', right_before => $right_before, right_after => $right_after,
						columns => 'l.part AS l_part, l.pos AS l_pos, l.order_id, l.amount, '
								   'l.ts AS ordered_at, r.part AS r_part, r.pos AS r_pos, '
								   'r.carrier, r.ts AS shipped_at',
						left_filter => 'amount % 7 <> 0', right_filter => 'carrier <> ''c2''',
						late_records => 'j_inner_late', out_of_orderness => '3 minutes');
SELECT weir.create_join('j_left', 'orders', 'shipments',
						left_key => 'order_id', right_key => 'order_id',
						left_event_time => 'ts', right_event_time => 'ts', right_before => $right_before, right_after => $right_after,
						kind => 'left', out_of_orderness => '3 minutes');
});
my @last_values = ('lv_all', 'lv_ttl');
my @joins       = ('j_inner', 'j_left');
my @pipelines   = (@last_values, @joins);
my $npipelines  = scalar(@pipelines);
wait_pipelines_running($node, $npipelines);

# Producers, two scripts weighted 5:4.  Last value: 500 to 1500 readings,
# the key from the sliding band, and for keys divisible by 25 copies with
# the same event time in explicit partitions.
my $lv_script = bench_script(
	'weir_lv_producer.sql', qq{\\set n random(500, 1500)
WITH r AS MATERIALIZED (
	SELECT ((s / 40 + floor(random() * 4000)::bigint) % $keys)::int AS k,
		   $base + (s - floor(random() * 20000)) * interval '1 ms' AS ts
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) g)
INSERT INTO lv (part, k, v, ts)
SELECT -1, k, floor(random() * 2000001)::bigint - 1000000, ts FROM r
UNION ALL
SELECT p, k, floor(random() * 2000001)::bigint - 1000000, ts
  FROM r, generate_series(0, 3) p
 WHERE k % 25 = 0 AND random() < 0.4;
});

# Join: 100 to 500 orders, one in 20 written twice; 0 to 3 shipments each,
# 10 % of them on a bound of the interval or 1 ms outside it, 45 % inside
# it, 45 % from 30 s before to 90 s after the order; and a quarter as many
# stray shipments.
my $join_script = bench_script(
	'weir_join_producer.sql', qq{\\set n random(100, 500)
WITH g AS MATERIALIZED (
	SELECT s, random() AS a, random() AS b, random() AS c
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) q),
o AS MATERIALIZED (
	SELECT s AS id, floor(a * 100000)::int AS amount,
		   $base + (s - floor(b * 20000)) * interval '1 ms' AS ts, c
	  FROM g),
ins AS (
	INSERT INTO orders (order_id, amount, ts)
	SELECT id, amount, ts FROM o
	UNION ALL
	SELECT id, -amount - 1, ts + (floor(random() * 10001) - 5000) * interval '1 ms'
	  FROM o WHERE c < 0.05)
INSERT INTO shipments (order_id, carrier, ts)
SELECT o.id, 'c' || i,
	   o.ts + CASE WHEN random() < 0.1
				   THEN (ARRAY[-10000, -10001, 60000, 60001])[1 + floor(random() * 4)::int]
				   WHEN random() < 0.5 THEN floor(random() * 70001) - 10000
				   ELSE floor(random() * 120001) - 30000 END * interval '1 ms'
  FROM o, generate_series(1, floor(o.c * 4)::int) i
UNION ALL
SELECT m - 200000 + floor(random() * 250001)::bigint, 'stray',
	   $base + (m - floor(random() * 20000)) * interval '1 ms'
  FROM (SELECT max(s) AS m FROM g) x, generate_series(1, :n / 4);
});

# Five crashes at moments of the run placed by progress, in random order:
# four kill -9, one for each pipeline, of its worker at a random moment,
# of its read-ahead process at a random moment, and (two) of its worker as
# soon as it is seen in a checkpoint; one immediate stop.
my @plan = plan_crashes($seed, $target, 0.08, 0.17, 0.10,
	'kill', 'kill read-ahead', 'kill in checkpoint', 'kill in checkpoint', 'immediate');
my $ncrashes    = scalar(@plan);
my @kill_target = shuffle(@pipelines);
my $nkills      = scalar(@kill_target);
my $run         = produce_with_crashes(
	node    => $node,
	benches => [
		[ 'producer', "$lv_script\@5", $producers, '-R', $rate, '-f', "$join_script\@4" ]
	],
	rows => sub {
		try_count($node,
			'SELECT (SELECT count(*) FROM lv) + (SELECT count(*) FROM orders) + (SELECT count(*) FROM shipments)'
		);
	},
	target    => $target,
	deadline  => $deadline,
	unit      => 'records',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => workers_in_turn($node, @kill_target));
my $t_produced = $run->{t_end};

my ($n_lv, $n_orders, $n_shipments) = split /\|/, $node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM lv), (SELECT count(*) FROM orders), (SELECT count(*) FROM shipments)');
note "topics: lv $n_lv, orders $n_orders, shipments $n_shipments records";
cmp_ok($n_lv + $n_orders + $n_shipments, '>=', $target, "the topics hold at least $target records");

# Flush the joins: one order and one shipment per partition far in the
# future, with ids that match nothing.  lv gets none: lv_ttl is checked at
# the watermark its own records give.
$node->safe_psql(
	'postgres', q{
INSERT INTO orders (part, order_id, amount, ts)
SELECT p, -1 - p, 0, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 3) p;
INSERT INTO shipments (part, order_id, carrier, ts)
SELECT p, -11 - p, 'sentinel', timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 2) p;
});
checkpoint_each($node, 'record', @pipelines);
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the producers ended", $t_caught_up - $t_produced);

my $wm_ttl = last_watermark($node, 'lv_ttl');
note "pipeline lv_ttl: final watermark $wm_ttl";
note "pipeline $_: final watermark " . last_watermark($node, $_) for @joins;

# The oracles.
$node->safe_psql(
	'postgres', qq{
CREATE INDEX lv_k ON lv (k, ts DESC, part DESC, pos DESC);
ANALYZE lv;
ANALYZE orders;
ANALYZE shipments;
CREATE TABLE oracle_lv_all AS
SELECT DISTINCT ON (k) k, v, ts, part AS src_part, pos AS src_pos FROM lv
 ORDER BY k, ts DESC, part DESC, pos DESC;
CREATE TABLE oracle_lv_ttl AS
SELECT k, v, ts FROM oracle_lv_all WHERE ts + $ttl > '$wm_ttl';
CREATE TABLE oracle_j_inner AS
SELECT l.part AS l_part, l.pos AS l_pos, l.order_id, l.amount, l.ts AS ordered_at,
	   r.part AS r_part, r.pos AS r_pos, r.carrier, r.ts AS shipped_at
  FROM (SELECT * FROM orders WHERE amount % 7 <> 0) l
  JOIN (SELECT * FROM shipments WHERE carrier <> 'c2') r
	ON l.order_id = r.order_id AND r.ts BETWEEN l.ts - $right_before AND l.ts + $right_after
 WHERE l.order_id >= 0;
CREATE TABLE oracle_j_left AS
SELECT l.order_id, l.amount, l.ts, r.order_id AS right_order_id, r.carrier, r.ts AS right_ts
  FROM orders l LEFT JOIN shipments r
	ON l.order_id = r.order_id AND r.ts BETWEEN l.ts - $right_before AND l.ts + $right_after
 WHERE l.order_id >= 0;
});

# The data has what the test is about.
my %stat;
@stat{qw(keys tie_part tie_pos expired returned pairs on_bound off_bound multi unmatched dup_orders
	  stray_pairs filtered_pairs)} = split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT (SELECT count(*) FROM oracle_lv_all),
	   -- keys whose newest row tied on event time with a row of another partition
	   (SELECT count(*) FROM oracle_lv_all o
		 WHERE EXISTS (SELECT 1 FROM lv e WHERE e.k = o.k AND e.ts = o.ts AND e.part < o.src_part)),
	   -- ... or with an earlier row of its own partition
	   (SELECT count(*) FROM oracle_lv_all o
		 WHERE EXISTS (SELECT 1 FROM lv e WHERE e.k = o.k AND e.ts = o.ts AND e.part = o.src_part
											 AND e.pos < o.src_pos)),
	   (SELECT count(*) FROM oracle_lv_all WHERE ts + $ttl <= '$wm_ttl'),
	   -- keys of the final lv_ttl sink that had expired once before
	   (SELECT count(*) FROM oracle_lv_ttl o
		 WHERE EXISTS (SELECT 1 FROM (SELECT ts - lag(ts) OVER (ORDER BY ts) AS gap FROM lv e
									   WHERE e.k = o.k) g
						WHERE g.gap > $ttl + interval '4 minutes')),
	   (SELECT count(*) FROM oracle_j_inner),
	   (SELECT count(*) FROM oracle_j_inner
		 WHERE shipped_at - ordered_at IN (interval '-10 seconds', interval '60 seconds')),
	   (SELECT count(*) FROM orders l JOIN shipments r USING (order_id)
		 WHERE r.ts - l.ts IN (interval '-10.001 seconds', interval '60.001 seconds')),
	   (SELECT count(*) FROM (SELECT 1 FROM oracle_j_inner GROUP BY l_part, l_pos HAVING count(*) > 1) m),
	   (SELECT count(*) FROM oracle_j_left WHERE right_order_id IS NULL),
	   (SELECT count(*) FROM (SELECT 1 FROM orders GROUP BY order_id HAVING count(*) > 1) d),
	   (SELECT count(*) FROM oracle_j_inner WHERE carrier = 'stray'),
	   -- pairs of the topics that one of j_inner's filters keeps out
	   (SELECT count(*) FROM orders l JOIN shipments r
		  ON l.order_id = r.order_id AND r.ts BETWEEN l.ts - $right_before AND l.ts + $right_after
		 WHERE l.order_id >= 0 AND (l.amount % 7 = 0 OR r.carrier = 'c2'))});
note join(', ', map { "$_ $stat{$_}" }
	  qw(keys tie_part tie_pos expired returned pairs on_bound off_bound multi unmatched dup_orders
	  stray_pairs filtered_pairs));
cmp_ok($stat{keys},      '>', $keys * 0.9, 'last value: the records cover most keys');
cmp_ok($stat{tie_part},  '>', 0, 'last value: some newest rows tie on event time with another partition');
cmp_ok($stat{tie_pos},   '>', 0, 'last value: some newest rows tie on event time within their partition');
cmp_ok($stat{expired},   '>', 0, 'lv_ttl: some keys expired');
cmp_ok($stat{expired},   '<', $stat{keys}, 'lv_ttl: some keys did not expire');
cmp_ok($stat{returned},  '>', 0, 'lv_ttl: some keys came back after expiring');
cmp_ok($stat{pairs},     '>', 0, 'join: there are pairs');
cmp_ok($stat{on_bound},  '>', 0, 'join: some pairs are exactly on a bound of the interval');
cmp_ok($stat{off_bound}, '>', 0, 'join: some rows are 1 ms outside the interval');
cmp_ok($stat{multi},     '>', 0, 'join: some orders match several shipments');
cmp_ok($stat{unmatched}, '>', 0, 'left join: some orders match nothing');
cmp_ok($stat{dup_orders}, '>', 0, 'join: some order ids are written twice');
cmp_ok($stat{stray_pairs}, '>', 0, 'join: some stray shipments match an order');
cmp_ok($stat{filtered_pairs}, '>', 0, 'j_inner: its filters keep some pairs of the topics out');

# Each sink against its oracle, with what the sub says about the first
# difference on failure.
compare_with_oracle(
	$node,
	pipeline => 'lv_all',
	cols     => 'k, v, ts, src_part, src_pos',
	order    => '1, 2, 3',
	diag     => sub {
		my ($k) = @_;
		return "the records of key $k, newest first (part|pos|v|ts):\n"
		  . $node->safe_psql('postgres',
			"SELECT part, pos, v, ts FROM lv WHERE k = $k ORDER BY ts DESC, part DESC, pos DESC LIMIT 10");
	});
# A key whose newest row is at or more than the ttl behind the watermark
# has left lv_ttl, and its sink row with it.
my $stale = $node->safe_psql(
	'postgres', qq{
SELECT count(*) || ' rows, ts + ttl from ' || coalesce(min(ts + $ttl)::text, '-') || ' to '
	   || coalesce(max(ts + $ttl)::text, '-')
  FROM lv_ttl WHERE ts + $ttl <= '$wm_ttl'});
like($stale, qr/^0 rows/,
	"lv_ttl: no sink row of a key whose newest ts + ttl is at or below the final watermark $wm_ttl");
if ($stale !~ /^0 rows/)
{
	diag "lv_ttl: stale sink rows: $stale; the watermarks of the checkpoints restored:\n"
	  . $node->safe_psql(
		'postgres', q{
SELECT r.checkpoint_id, c.watermark FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
  JOIN weir.checkpoints c ON c.pipeline_id = p.id AND c.id = r.checkpoint_id
 WHERE p.name = 'lv_ttl' ORDER BY r.restored_at});
}
compare_with_oracle(
	$node,
	pipeline => 'lv_ttl',
	cols     => 'k, v, ts',
	order    => '1, 2, 3',
	diag     => sub {
		my ($k) = @_;
		return "watermark $wm_ttl; the records of key $k, newest first (part|pos|v|ts|ts + ttl):\n"
		  . $node->safe_psql('postgres',
			"SELECT part, pos, v, ts, ts + $ttl FROM lv WHERE k = $k ORDER BY ts DESC, part DESC, pos DESC LIMIT 10");
	});
compare_with_oracle(
	$node,
	pipeline => 'j_inner',
	cols     => 'l_part, l_pos, order_id, amount, ordered_at, r_part, r_pos, carrier, shipped_at',
	order    => '1, 2, 3',
	diag     => sub {
		my $id = $_[2];
		return "the orders of id $id (part|pos|amount|ts):\n"
		  . $node->safe_psql('postgres', "SELECT part, pos, amount, ts FROM orders WHERE order_id = $id")
		  . "\nits shipments (part|pos|carrier|ts):\n"
		  . $node->safe_psql('postgres',
			"SELECT part, pos, carrier, ts FROM shipments WHERE order_id = $id ORDER BY ts");
	});
compare_with_oracle(
	$node,
	pipeline => 'j_left',
	cols     => 'order_id, amount, ts, right_order_id, carrier, right_ts',
	order    => '1, 2, 3',
	diag     => sub {
		my ($id) = @_;
		return "the orders of id $id (part|pos|amount|ts):\n"
		  . $node->safe_psql('postgres', "SELECT part, pos, amount, ts FROM orders WHERE order_id = $id")
		  . "\nits shipments (part|pos|carrier|ts):\n"
		  . $node->safe_psql('postgres',
			"SELECT part, pos, carrier, ts FROM shipments WHERE order_id = $id ORDER BY ts")
		  . "\nin j_left:\n"
		  . $node->safe_psql('postgres', "SELECT * FROM j_left WHERE order_id = $id");
	});
is($node->safe_psql('postgres', 'SELECT count(*) FROM j_left WHERE order_id < 0'),
	'0', 'j_left: the far-future orders are still buffered, not emitted');

my $t_compared = time;
note sprintf("compared the sinks with their oracles in %.1f s", $t_compared - $t_caught_up);

# The pipelines' own account of the run.
for my $p (@pipelines)
{
	check_pipeline_account($node, $p, $ncrashes);
	cmp_ok(restores_with_state($node, $p),
		'>=', $ncrashes - 1, "pipeline $p restored state from its chunks after most crashes");
}
for my $p (@last_values, 'j_inner')
{
	is($node->safe_psql('postgres', "SELECT count(*) FROM ${p}_late"),
		'0', "pipeline $p: its late-records table is empty");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Over the committed checkpoints every record of the sources counts once
# as read, and (the joins' sinks being insert-only) every sink row once as
# written.
my %source_rows = (
	lv_all  => $n_lv,
	lv_ttl  => $n_lv,
	j_inner => $n_orders + $n_shipments + 7,
	j_left  => $n_orders + $n_shipments + 7);
for my $p (@pipelines)
{
	is(checkpoint_sum($node, $p, 'records_in'),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every record of its sources once");
}
for my $p (@joins)
{
	is(checkpoint_sum($node, $p, 'sink_rows'),
		$node->safe_psql('postgres', "SELECT count(*) FROM $p"),
		"pipeline $p: its committed checkpoints wrote every sink row once");
}
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s sink rows written, %s state deletes',
						 p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT sum(sink_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT sum(state_deletes) FROM weir.checkpoints c WHERE c.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s restored %s: %s entries from %s bytes', p.name, r.checkpoint_id,
						 r.windows, r.bytes),
				  E'\n' ORDER BY p.name, r.restored_at)
  FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id});

# The server log: the intended crashes, nothing else.
check_crash_log($node, $nkills, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
