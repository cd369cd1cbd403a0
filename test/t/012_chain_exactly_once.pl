# 012_chain_exactly_once.pl
#
# Event time through a three-stage chain, exactly once, while producers
# fall behind and catch up and every stage's worker is killed:
#
#   bids, asks   (k int, v int, ts timestamptz), 2 partitions each, one
#                producer per partition (partition p writes the keys with
#                k % 2 = p, 800 keys in all), each with its own clock: a
#                record's time is its tick x 10 ms minus up to 2 s;
#   s1_bids      10-second tumbling count and sum per k of bids, into the
#                topic bids_10s; s1_asks the same for asks, into asks_10s
#                (5 s of out-of-orderness: nothing is late at the sources);
#   s2_join      bids_10s JOIN asks_10s on k and window_end, into the topic
#                pairs (one partition; no out-of-orderness);
#   s3_window    1-minute tumbling count and sums per k over pairs, by the
#                pair's window end, into a table (no out-of-orderness).
#
# The producer of asks' partition 1 pauses for a third of the run, then
# catches up: one transaction writes every tick it missed.  Meanwhile
# s1_asks's watermark waits for that partition; when it comes back s1_asks
# fires the backlog, and the join pairs it with bids windows long fired,
# partition after partition of asks_10s: the pairs topic gets rows far
# behind rows before them, more than a reading round of s3_window holds.
# A pipeline that guessed its watermark from the event times it sees makes
# them late (and never closes the last minute: the far-future records below
# never reach the pairs topic); s3_window takes the join's published
# watermark, so nothing is late anywhere.  With the published watermarks
# ignored (take_published_watermarks not called), this test fails: rows in
# s3_window_late, and the pairs topic and s3_window's sink differ from
# their oracles (seen on 2026-12-02: 13,600 oracle rows, 11,523 in the sink).
#
# Five crashes at moments placed at random: kill -9 of each stage's worker
# (s1_bids, s1_asks, s2_join, s3_window, in random order) and one immediate
# stop.  At the end one far-future record per partition of bids and asks,
# and ONE call of weir.checkpoint() (every running pipeline, upstream
# first) must bring everything through: each sink (the three topics and the
# table) equals its oracle computed in SQL from bids and asks, row for row,
# and no stage counted a late record.
#
# WEIR_TAP_CHAIN_EVENTS overrides the number of records (400000),
# WEIR_TAP_SECONDS the time the producers take (40), WEIR_TAP_SEED the seed
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

my $target   = env_or('WEIR_TAP_CHAIN_EVENTS', 400_000);
my $seconds  = env_or('WEIR_TAP_SECONDS',      40);
my $seed     = env_or('WEIR_TAP_SEED',         int(time()) ^ $$);
my $deadline = 300;
my $base     = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin   = q{timestamptz '1970-01-01 00:00:00+00'};
my $pause_at  = 0.15;    # of the target: the producer of asks 1 pauses
my $resume_at = 0.50;    # and resumes
my $keys      = 800;

my $t_start = time;
my $node    = start_weir_node('chain_exactly_once', crash_test_conf(40));

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
CREATE TABLE control (producer text PRIMARY KEY, paused boolean NOT NULL);
INSERT INTO control VALUES ('asks_1', false);
CREATE SEQUENCE clock_bids_0; CREATE SEQUENCE clock_bids_1;
CREATE SEQUENCE clock_asks_0; CREATE SEQUENCE clock_asks_1;
SELECT weir.create_topic('bids', 'k int, v int, ts timestamptz', partitions => 2);
SELECT weir.create_topic('asks', 'k int, v int, ts timestamptz', partitions => 2);
SELECT weir.create_topic('bids_10s',
	'k int, window_start timestamptz, window_end timestamptz, n bigint, total bigint',
	partitions => 2, key => 'k');
SELECT weir.create_topic('asks_10s',
	'k int, window_start timestamptz, window_end timestamptz, n bigint, total bigint',
	partitions => 2, key => 'k');
SELECT weir.create_topic('pairs', 'k int, ts timestamptz, bid_n bigint, ask_n bigint, bid_total bigint, ask_total bigint',
	partitions => 1);
SELECT weir.create_pipeline('s1_bids', 'bids', key => 'k', event_time => 'ts',
	windowing => weir.tumbling('10 seconds'), aggregates => 'count(*) AS n, sum(v) AS total',
	out_of_orderness => '5 seconds', sink => 'bids_10s', late_records => 's1_bids_late');
SELECT weir.create_pipeline('s1_asks', 'asks', key => 'k', event_time => 'ts',
	windowing => weir.tumbling('10 seconds'), aggregates => 'count(*) AS n, sum(v) AS total',
	out_of_orderness => '5 seconds', sink => 'asks_10s', late_records => 's1_asks_late');
SELECT weir.create_join('s2_join', 'bids_10s', 'asks_10s', left_key => 'k', right_key => 'k',
	left_event_time => 'window_end', right_event_time => 'window_end',
	columns => 'l.k, l.window_end AS ts, l.n AS bid_n, r.n AS ask_n, l.total AS bid_total, r.total AS ask_total',
	sink => 'pairs', late_records => 's2_join_late');
SELECT weir.create_pipeline('s3_window', 'pairs', key => 'k', event_time => 'ts',
	windowing => weir.tumbling('1 minute'),
	aggregates => 'count(*) AS windows, sum(bid_n) AS bids, sum(ask_n) AS asks, sum(bid_total + ask_total) AS total',
	sink => 's3_window', late_records => 's3_window_late');
});
my @pipelines  = ('s1_bids', 's1_asks', 's2_join', 's3_window');
my $npipelines = scalar(@pipelines);
wait_pipelines_running($node, $npipelines);

# One producer per partition, one client each (so a partition's records are
# in the order of its clock, give or take the 2 s of disorder); a paused
# producer writes nothing, one behind writes all it missed at once.
my @producers;
for my $topic ('bids', 'asks')
{
	for my $p (0, 1)
	{
		my $name   = "${topic}_$p";
		my $script = bench_script(
			"weir_chain_$name.sql", qq{\\set n random(100, 300)
INSERT INTO $topic (part, k, v, ts)
SELECT $p, $p + 2 * floor(random() * $keys / 2)::int, floor(random() * 1000)::int,
	   $base + (s * 10 - floor(random() * 2000)) * interval '1 ms'
  FROM (SELECT nextval('clock_$name') AS s
		  FROM generate_series(1,
			   CASE WHEN coalesce((SELECT paused FROM control WHERE producer = '$name'), false) THEN 0
					WHEN (SELECT last_value FROM clock_bids_0) - (SELECT last_value FROM clock_$name) > 1000
					THEN (SELECT last_value FROM clock_bids_0) - (SELECT last_value FROM clock_$name)
					ELSE :n END)) g;
});
		push @producers,
		  [ "chain_$name", $script, 1, '-R', bench_rate($target / 4, 200.0, $seconds) ];
	}
}

my @plan = plan_crashes($seed, $target, 0.08, 0.17, 0.10,
	'kill', 'kill', 'kill', 'kill', 'immediate');
my $ncrashes = scalar(@plan);
my @kill_target = shuffle(@pipelines);
my ($paused, $resumed) = (0, 0);
my $run = produce_with_crashes(
	node    => $node,
	benches => \@producers,
	rows    => sub {
		my $n = try_count($node, 'SELECT (SELECT count(*) FROM bids) + (SELECT count(*) FROM asks)');
		return $n unless defined $n;
		# the pause, and the resume, between crashes as they come
		if (!$paused && $n >= $target * $pause_at)
		{
			my ($ret) = $node->psql('postgres', q{UPDATE control SET paused = true});
			if ($ret == 0)
			{
				$paused = 1;
				note sprintf('%.1f s: the producer of asks 1 pauses at %d records', time - $t_start, $n);
			}
		}
		elsif ($paused && !$resumed && $n >= $target * $resume_at)
		{
			my ($ret) = $node->psql('postgres', q{UPDATE control SET paused = false});
			if ($ret == 0)
			{
				$resumed = 1;
				note sprintf('%.1f s: the producer of asks 1 resumes at %d records', time - $t_start, $n);
			}
		}
		return $n;
	},
	target    => $target,
	deadline  => $deadline,
	unit      => 'records',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => workers_in_turn($node, @kill_target));
ok($paused && $resumed, 'the producer of asks 1 paused and resumed');

# Did the producer catch up?  Its clock against the one all go by.
my ($ref_clock, $asks1_clock) = split /\|/, $node->safe_psql('postgres',
	'SELECT (SELECT last_value FROM clock_bids_0), (SELECT last_value FROM clock_asks_1)');
note "clocks at the end: bids 0 at $ref_clock, asks 1 at $asks1_clock ticks";
cmp_ok($ref_clock - $asks1_clock, '<', 30_000,
	'the producer of asks 1 caught up to within 5 minutes of event time');

# One far-future record per partition of the sources closes every window of
# every stage; then one weir.checkpoint() takes each pipeline through.
$node->safe_psql(
	'postgres', q{
INSERT INTO bids (part, k, v, ts) SELECT p, -1 - p, 0, '2100-01-01' FROM generate_series(0, 1) p;
INSERT INTO asks (part, k, v, ts) SELECT p, -1 - p, 0, '2100-01-01' FROM generate_series(0, 1) p;
});
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT string_agg(pipeline, ' ' ORDER BY ordinality)
		FROM weir.checkpoint(timeout => '300 s') WITH ORDINALITY});
is($ret, 0, 'one weir.checkpoint() took every pipeline through') or diag $err;
is($out, 's1_asks s1_bids s2_join s3_window', 'weir.checkpoint() went upstream first');
note "final watermark of $_: " . last_watermark($node, $_) for @pipelines;

# The oracles, from the sources alone.
$node->safe_psql(
	'postgres', qq{
CREATE TABLE oracle_bids_10s AS
SELECT k, date_bin('10 seconds', ts, $origin) AS window_start,
	   date_bin('10 seconds', ts, $origin) + interval '10 seconds' AS window_end,
	   count(*) AS n, sum(v) AS total
  FROM bids WHERE k >= 0 GROUP BY 1, 2;
CREATE TABLE oracle_asks_10s AS
SELECT k, date_bin('10 seconds', ts, $origin) AS window_start,
	   date_bin('10 seconds', ts, $origin) + interval '10 seconds' AS window_end,
	   count(*) AS n, sum(v) AS total
  FROM asks WHERE k >= 0 GROUP BY 1, 2;
CREATE TABLE oracle_pairs AS
SELECT b.k, b.window_end AS ts, b.n AS bid_n, a.n AS ask_n, b.total AS bid_total, a.total AS ask_total
  FROM oracle_bids_10s b JOIN oracle_asks_10s a ON a.k = b.k AND a.window_end = b.window_end;
CREATE TABLE oracle_s3_window AS
SELECT k, date_bin('1 minute', ts, $origin) AS window_start, count(*) AS windows,
	   sum(bid_n) AS bids, sum(ask_n) AS asks, sum(bid_total + ask_total) AS total
  FROM oracle_pairs GROUP BY 1, 2;
});

# The run made the pairs topic out of order: rows more than a minute behind
# a row before them in their partition (late, had s3_window guessed its
# watermark from the times it saw).
my $behind = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM (
	SELECT ts < max(ts) OVER (PARTITION BY part ORDER BY pos
							  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
				- interval '1 minute' AS behind
	  FROM pairs) x WHERE behind});
note "pairs rows more than a minute behind an earlier row of their partition: $behind";
cmp_ok($behind, '>', 0, 'the pairs topic has rows far behind rows before them');

compare_with_oracle(
	$node,
	label  => 'topic bids_10s (s1_bids)',
	sink   => 'bids_10s',
	oracle => 'oracle_bids_10s',
	cols   => 'k, window_start, window_end, n, total',
	order  => '1, 2');
compare_with_oracle(
	$node,
	label  => 'topic asks_10s (s1_asks)',
	sink   => 'asks_10s',
	oracle => 'oracle_asks_10s',
	cols   => 'k, window_start, window_end, n, total',
	order  => '1, 2');
compare_with_oracle(
	$node,
	label  => 'topic pairs (s2_join)',
	sink   => 'pairs',
	oracle => 'oracle_pairs',
	cols   => 'k, ts, bid_n, ask_n, bid_total, ask_total',
	order  => '1, 2');
compare_with_oracle(
	$node,
	pipeline => 's3_window',
	cols     => 'k, window_start, windows, bids, asks, total',
	order    => '1, 2');

for my $p (@pipelines)
{
	check_pipeline_account($node, $p, $ncrashes);
	cmp_ok(restores_with_state($node, $p), '>=', 1,
		"pipeline $p restored state from its chunks after a crash");
}
for my $t ('s1_bids_late', 's1_asks_late', 's2_join_late', 's3_window_late')
{
	is($node->safe_psql('postgres', "SELECT count(*) FROM $t"), '0', "$t is empty");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');
# what each stage published for the topic it writes: a row per partition at
# least, and (trimmed as readers pass them) not one per checkpoint
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s watermark rows, newest %s', name, n, newest), E'\n' ORDER BY name)
  FROM (SELECT p.name, count(*) AS n, max(w.watermark) AS newest
		  FROM weir.topic_watermark w JOIN weir.pipeline p ON p.id = w.pipeline_id
		 GROUP BY p.name) x});

check_crash_log($node, 4, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
