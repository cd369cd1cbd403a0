# 005_dedup_exactly_once.pl
#
# Concurrent producers write orders (id bigint, shop int, amount bigint,
# ts timestamptz) into a 4-partition topic keyed by id, with many copies of
# each id, while three pipelines run:
#
#   dedup_table  a deduplication (1-minute horizon) into a table;
#   dedup_topic  the same deduplication into a second topic, ev_unique,
#                keyed by id like the source;
#   dedup_first  the same horizon with refresh_horizon => false (copies
#                dropped do not extend an id's life) into a table;
#   per_shop     a tumbling 1-minute window aggregate per shop over
#                ev_unique: the second stage of a chain.
#
# With weir.read_ahead's default (auto) the three dedups read through
# read-ahead processes, the window stage reads itself.
#
# Meanwhile a dedup worker is killed with kill -9 five times (the
# postmaster reinitializes shared memory and every pipeline restores its
# last checkpoint: dedup_first twice, each other dedup at least once),
# three times at a random moment and twice as soon as the worker is seen
# in a checkpoint, and the server is stopped in immediate mode once, in
# random order.  When the producers are done, one order per partition far
# in the future pushes every watermark past the last window, each pipeline
# takes a checkpoint, and then:
#
#   - the dedup table equals the oracle, the definition of deduplication
#     written in SQL: a record is kept when no earlier record of its
#     partition (lower position) has the same id and an event time later
#     than its own minus the horizon;
#   - ev_unique holds exactly the oracle's records;
#   - the dedup_first table equals its own oracle: per partition and id in
#     position order, a record is kept when no record was kept before it
#     or the last one kept has an event time at or before its own minus
#     the horizon (a plpgsql walk);
#   - the window sink equals SQL GROUP BY shop, date_bin('1 minute', ts)
#     over the oracle's records;
# row for row and value for value (EXCEPT ALL both ways, and counts); no
# record was late, and the pipelines' counters and checkpoints account for
# every record once.
#
# Ids.  Each record takes the next tick of a clock shared by all producers
# (a sequence, 1 ms of event time per tick); its id is tick/4 plus a random
# number below 45,000, so an id is drawn about 4 times, by records whose
# ticks lie within 180 s: some of its copies fall within the 1-minute
# horizon of an earlier one, others outside it.  Event time is the tick
# minus a random disorder of up to 20 s, so copies also arrive out of order
# of event time.  About one record in ten is also written twice in its
# transaction, as a producer retry would (same id, same event time).  The
# window allows 1 minute of out-of-orderness, so no record is late; the
# dedups allow 5 minutes, which keeps each id about 6 minutes of event time
# in their state: its chunks then hold several versions of most ids, and
# the dedups compact them every few checkpoints, so restores read both
# compacted and incremental chunks.
#
# WEIR_TAP_EVENTS overrides the number of records (1000000), WEIR_TAP_SECONDS
# the time the producers take to write them (40), WEIR_TAP_SEED the seed
# that places the crashes.

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
my $producers = 6;
my $deadline  = 300;    # seconds for the produce phase, crashes included
my $horizon   = q{interval '1 minute'};
my $origin    = q{timestamptz '1970-01-01 00:00:00+00'};

# pgbench's rate: transactions of about 1100 records
my $rate = bench_rate($target, 1100.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('dedup_exactly_once', crash_test_conf(40));

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'id bigint, shop int, amount bigint, ts timestamptz',
						 partitions => 4, key => 'id');
SELECT weir.create_topic('ev_unique', 'id bigint, shop int, amount bigint, ts timestamptz',
						 partitions => 4, key => 'id');
SELECT weir.create_dedup('dedup_table', 'ev', key => 'id', event_time => 'ts',
						 horizon => $horizon, out_of_orderness => '5 minutes',
						 late_records => 'dedup_table_late');
SELECT weir.create_dedup('dedup_topic', 'ev', key => 'id', event_time => 'ts',
						 horizon => $horizon, out_of_orderness => '5 minutes',
						 sink => 'ev_unique', late_records => 'dedup_topic_late');
SELECT weir.create_dedup('dedup_first', 'ev', 'id', 'ts', horizon => $horizon,
						 refresh_horizon => false, out_of_orderness => '5 minutes',
						 late_records => 'dedup_first_late');
SELECT weir.create_pipeline('per_shop', 'ev_unique', key => 'shop', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(amount) AS total',
							out_of_orderness => '1 minute',
							late_records => 'per_shop_late');
});
my @dedups    = ('dedup_table', 'dedup_topic', 'dedup_first');
my @pipelines = (@dedups, 'per_shop');
my $npipelines = scalar(@pipelines);
wait_pipelines_running($node, $npipelines);

# Producers: batches of 500 to 1500 records, and a copy of about one in
# ten of them (a retry: same id, same event time, another amount).
my $producer_script = bench_script(
	'weir_dedup_producer.sql', qq{\\set n random(500, 1500)
WITH r AS (
	SELECT s / 4 + floor(random() * 45000)::bigint AS id,
		   timestamptz '2024-01-01 00:00:00+00' + (s - floor(random() * 20000)) * interval '1 ms' AS ts
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) g)
INSERT INTO ev (id, shop, amount, ts)
SELECT id, (id % 100)::int, floor(random() * 2000001)::bigint - 1000000, ts
  FROM (SELECT id, ts FROM r UNION ALL SELECT id, ts FROM r WHERE random() < 0.1) c;
});

# Six crashes at moments of the run placed by progress, in random order:
# five kill -9 of a dedup worker (dedup_first twice, each other at least
# once), three of them at a random moment and two as soon as the worker is
# seen in a checkpoint (its transaction writing sink rows, chunks and
# positions), and one immediate stop.
my @plan = plan_crashes($seed, $target, 0.08, 0.14, 0.10,
	'kill', 'kill', 'kill', 'kill in checkpoint', 'kill in checkpoint', 'immediate');
my $ncrashes    = scalar(@plan);
my @kill_target = shuffle(@dedups, 'dedup_first', $dedups[ int(rand(2)) ]);
my $nkills      = scalar(@kill_target);
my $run         = produce_with_crashes(
	node      => $node,
	benches   => [ [ 'producer', $producer_script, $producers, '-R', $rate ] ],
	rows      => sub { try_count($node, 'SELECT count(*) FROM ev') },
	target    => $target,
	deadline  => $deadline,
	unit      => 'records',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => workers_in_turn($node, @kill_target));
my $t_produced = $run->{t_end};

my $records = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($records, '>=', $target, "the topic holds at least $target records");

# Push every watermark past the last window: one record per partition far
# in the future, with a new (negative) id, so that the dedups keep it and
# it reaches every partition of ev_unique too.  Ids are routed by a hash,
# the same in both topics (same key type, same number of partitions): pick
# one id per partition and check where they went.
$node->safe_psql(
	'postgres', q{
INSERT INTO ev (id, shop, amount, ts)
SELECT DISTINCT ON (hashint8extended(i, 0) & 3) i, -1, 0, timestamptz '2100-01-01 00:00:00+00'
  FROM generate_series(-1::bigint, -100::bigint, -1::bigint) i
 ORDER BY hashint8extended(i, 0) & 3, i DESC});
is($node->safe_psql('postgres', 'SELECT count(DISTINCT part) FROM ev WHERE id < 0'),
	'4', 'a far-future record in every partition of ev');
checkpoint_each($node, 'record', @pipelines);
is($node->safe_psql('postgres', 'SELECT count(DISTINCT part) FROM ev_unique WHERE id < 0'),
	'4', 'a far-future record in every partition of ev_unique');
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the producers ended", $t_caught_up - $t_produced);

# The oracle: the definition of deduplication, in SQL.
$node->safe_psql(
	'postgres', qq{
CREATE INDEX ev_part_id_pos ON ev (part, id, pos);
ANALYZE ev;
CREATE TABLE oracle AS
SELECT r.part, r.pos, r.id, r.shop, r.amount, r.ts FROM ev r
 WHERE NOT EXISTS (SELECT 1 FROM ev s
					WHERE s.part = r.part AND s.pos < r.pos AND s.id = r.id
					  AND s.ts > r.ts - $horizon);
CREATE FUNCTION first_kept(horizon interval) RETURNS TABLE (part int, pos bigint)
LANGUAGE plpgsql AS \$\$
DECLARE
	r record;
	cur_part int;
	cur_id bigint;
	last_kept timestamptz;
BEGIN
	FOR r IN SELECT e.part, e.pos, e.id, e.ts FROM ev e ORDER BY e.part, e.id, e.pos LOOP
		IF r.part IS DISTINCT FROM cur_part OR r.id IS DISTINCT FROM cur_id THEN
			cur_part := r.part;
			cur_id := r.id;
			last_kept := NULL;
		END IF;
		IF last_kept IS NULL OR NOT (last_kept > r.ts - horizon) THEN
			last_kept := r.ts;
			part := r.part;
			pos := r.pos;
			RETURN NEXT;
		END IF;
	END LOOP;
END \$\$;
CREATE TABLE oracle_first AS
SELECT e.part, e.pos, e.id, e.shop, e.amount, e.ts FROM ev e JOIN first_kept($horizon) k USING (part, pos);
});

# The data has what the test is about: duplicates dropped within the
# horizon, copies kept because the earlier ones are outside it, and
# duplicates that came after a copy of a later event time.
my ($nkept, $ndup, $nrepeat, $ndup_disorder) = split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT (SELECT count(*) FROM oracle),
	   (SELECT count(*) FROM ev) - (SELECT count(*) FROM oracle),
	   (SELECT count(*) FROM oracle o
		 WHERE EXISTS (SELECT 1 FROM ev s WHERE s.part = o.part AND s.pos < o.pos AND s.id = o.id)),
	   (SELECT count(*) FROM ev r
		 WHERE EXISTS (SELECT 1 FROM ev s WHERE s.part = r.part AND s.pos < r.pos AND s.id = r.id
												AND s.ts > r.ts)
		   AND NOT EXISTS (SELECT 1 FROM oracle o WHERE o.part = r.part AND o.pos = r.pos))});
note "oracle: $nkept records kept, $ndup duplicates, $nrepeat kept although their id was seen "
  . "before (outside the horizon), $ndup_disorder duplicates of an earlier record with a later event time";
cmp_ok($ndup,          '>', $records / 5,  'many records are duplicates within the horizon');
cmp_ok($nrepeat,       '>', $records / 20, 'many records repeat an id seen outside the horizon');
cmp_ok($ndup_disorder, '>', $records / 20, 'many duplicates came after a copy with a later event time');
my ($nkept_first, $nfirst_only, $nfirst_missing) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT (SELECT count(*) FROM oracle_first),
	   (SELECT count(*) FROM (SELECT part, pos FROM oracle_first EXCEPT SELECT part, pos FROM oracle) x),
	   (SELECT count(*) FROM (SELECT part, pos FROM oracle EXCEPT SELECT part, pos FROM oracle_first) x)});
note "oracle without refresh: $nkept_first records kept, $nfirst_only of them dropped by the oracle "
  . "with refresh (an earlier dropped copy within the horizon)";
cmp_ok($nfirst_only, '>', $records / 100,
	'many records are kept only because dropped copies do not refresh the horizon');
is($nfirst_missing, '0', 'what the refreshing oracle keeps, the other keeps too');

# Compare a relation with the oracle's records, with the records of the
# first differing id on failure.
sub compare_with_dedup_oracle
{
	my ($what, $rel, $oracle) = @_;
	$oracle //= 'oracle';
	my $cols = 'id, shop, amount, ts';
	compare_with_oracle(
		$node,
		label    => $what,
		sink     => $rel,
		oracle   => $oracle,
		cols     => $cols,
		order    => '1, 4',
		nonempty => 0,
		diag     => sub {
			my ($id) = @_;
			return "$what: the records of id $id in ev (part|pos|amount|ts|kept by the oracle):\n"
			  . $node->safe_psql(
				'postgres', qq{
SELECT part, pos, amount, ts, EXISTS (SELECT 1 FROM $oracle o WHERE o.part = e.part AND o.pos = e.pos)
  FROM ev e WHERE id = $id ORDER BY pos})
			  . "\n$what: the rows of id $id there:\n"
			  . $node->safe_psql('postgres', "SELECT $cols FROM $rel WHERE id = $id ORDER BY ts");
		});
}

compare_with_dedup_oracle('dedup table sink', 'dedup_table');
compare_with_dedup_oracle('chain topic ev_unique', 'ev_unique');
compare_with_dedup_oracle('dedup_first sink (no refresh)', 'dedup_first', 'oracle_first');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM ev_unique u
 WHERE NOT EXISTS (SELECT 1 FROM ev e WHERE e.part = u.part AND e.id = u.id)}),
	'0', 'chain topic ev_unique: each row is in the partition of its id in ev');

# The second stage: the windows the final watermark closed.
my $wm = last_watermark($node, 'per_shop');
note "pipeline per_shop: final watermark $wm";
my $window_oracle = qq{
SELECT shop, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(amount) AS total
  FROM oracle WHERE id >= 0 GROUP BY 1, 2};
$node->safe_psql('postgres',
	"CREATE TABLE oracle_per_shop AS SELECT * FROM ($window_oracle) o WHERE window_end <= '$wm'");
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM ($window_oracle) o WHERE window_end > '$wm'"),
	'0', 'pipeline per_shop: the final watermark closed every window of the records');
compare_with_oracle(
	$node,
	pipeline => 'per_shop',
	cols     => 'shop, window_start, window_end, n, total',
	order    => '1, 2');

my $t_compared = time;
note sprintf("compared the sinks with their oracles in %.1f s", $t_compared - $t_caught_up);

# The pipelines' own account of the run.  The counters in weir.pipelines
# are cumulative across the crashes (each record counted once: test
# 021), and the worker read everything there is: what it read was either
# written to the sink or dropped.
for my $p (@pipelines)
{
	my %row = check_pipeline_account($node, $p, $ncrashes);
	is($node->safe_psql('postgres', "SELECT count(*) FROM ${p}_late"),
		'0', "pipeline $p: its late-records table is empty");
	next unless grep { $_ eq $p } @dedups;
	cmp_ok(restores_with_state($node, $p),
		'>=', $ncrashes, "pipeline $p restored ids from its chunks after each crash");
	my ($in, $out, $dropped) = @row{qw(in out dropped)};
	note "pipeline $p: $in in, $out out, $dropped dropped";
	cmp_ok($dropped, '>', 0, "pipeline $p: records_dropped > 0");
	cmp_ok($dropped, '<=', $ndup,
		"pipeline $p: records_dropped is at most the oracle's duplicates ($ndup)");
	is($in, $out + $dropped,
		"pipeline $p: records_in = records_out + records_dropped");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Over the committed checkpoints every record of the source counts once as
# read, and every kept record once as written to the sink.
my $unique = $node->safe_psql('postgres', 'SELECT count(*) FROM ev_unique');
my %source_rows = (
	dedup_table => $records + 4,
	dedup_topic => $records + 4,
	dedup_first => $records + 4,
	per_shop    => $unique);
my %kept_rows = (dedup_table => $nkept, dedup_topic => $nkept, dedup_first => $nkept_first);
for my $p (@pipelines)
{
	is(checkpoint_sum($node, $p, 'records_in'),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every record of its source once");
}
for my $p (@dedups)
{
	is(checkpoint_sum($node, $p, 'sink_rows'),
		$kept_rows{$p},
		"pipeline $p: its committed checkpoints wrote every kept record once");
}
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s sink rows written, '
						 || '%s state rows written per checkpoint (median %s)',
						 p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT sum(sink_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT min(state_rows) || ' to ' || max(state_rows)
							FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY state_rows)
							FROM weir.checkpoints c WHERE c.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});

note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s restored %s: %s ids from %s bytes', p.name, r.checkpoint_id, r.windows, r.bytes),
				  E'\n' ORDER BY p.name, r.restored_at)
  FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id WHERE p.operator = 'dedup'});

# The server log: the intended crashes, nothing else.
check_crash_log($node, $nkills, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
