# 013_keyless_restart.pl
#
# Window aggregates without key (issue 17: one group per window, of every
# record) through crashes.  Three keyless pipelines read one 4-partition
# topic: tumbling (fast-path aggregates and a generic one, sum over
# numeric, whose state is serialised into the chunks), hopping and session
# windows.  Three times: records are produced, every pipeline takes a
# checkpoint (so its chunks hold open windows with the empty key image),
# more records are produced, and one pipeline's worker is killed with
# kill -9 (the postmaster reinitializes shared memory and every pipeline
# restores its last checkpoint).  At the end one record per partition far
# ahead closes every window, and each sink must equal its GROUP BY over the
# topic, row for row.
#
# Event times are whole milliseconds, one per record, with 10 seconds of
# silence after every 10,000 records, so the 5-second session gap splits
# the stream into sessions and no two records are exactly one gap apart.
# Each partition's records come in event-time order, so none is late.
#
# WEIR_TAP_ROWS overrides the records produced per step (30000).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $rows   = env_or('WEIR_TAP_ROWS', 30_000);
my $rounds = 3;
my $origin = q{timestamptz '1970-01-01 00:00:00+00'};
my $base   = q{timestamptz '2024-01-01 00:00:00+00'};
my $gap    = q{interval '5 seconds'};

my $node = start_weir_node('keyless_restart', crash_test_conf(20));
my @pipelines = ('tumbling', 'hopping', 'session');

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'i bigint, v bigint, ts timestamptz', partitions => 4);
SELECT weir.create_pipeline('tumbling', 'ev', event_time => 'ts',
							windowing => weir.tumbling('1 second'),
							aggregates => 'count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, '
										  'sum(v::numeric) AS exact',
							out_of_orderness => '1 second');
SELECT weir.create_pipeline('hopping', 'ev', event_time => 'ts',
							windowing => weir.hopping('3 seconds', '1 second'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							out_of_orderness => '1 second');
SELECT weir.create_pipeline('session', 'ev', event_time => 'ts',
							windowing => weir.session($gap),
							aggregates => 'count(*) AS n, sum(v) AS total, max(ts) AS last_ts',
							out_of_orderness => '1 second');
});
is($node->safe_psql('postgres', 'SELECT string_agg(name || nkeys, \',\' ORDER BY name) FROM weir.pipeline'),
	'hopping0,session0,tumbling0', 'the three pipelines have no key');
wait_pipelines_running($node, scalar(@pipelines));

# Records from $from + 1 to $from + $n, over the partitions in turn.
my $next = 0;
sub produce
{
	my ($n) = @_;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO ev (part, i, v, ts)
SELECT i % 4, i, (i * 7919) % 20001 - 10000,
	   $base + i * interval '1 ms' + (i / 10000) * interval '10 seconds'
  FROM generate_series($next + 1, $next + $n) i ORDER BY i});
	$next += $n;
	return;
}

my @killed;
for my $round (1 .. $rounds)
{
	produce($rows);
	checkpoint_each($node, 'record so far', @pipelines);
	produce($rows);
	my $victim = $pipelines[ ($round - 1) % @pipelines ];
	my $pid = worker_pid($node, $victim);
	ok(defined $pid, "round $round: pipeline $victim has a worker");
	next unless defined $pid;
	note "round $round: kill -9 of the worker of pipeline $victim (PID $pid)";
	kill 'KILL', $pid;
	push @killed, $pid;
	ok(wait_server_up($node), "round $round: the server is back after the kill");
	wait_pipelines_restored($node, scalar(@pipelines), $round + 1, "kill $round");
}

# One record per partition far ahead: every window of the data closes.
$node->safe_psql('postgres',
	q{INSERT INTO ev (part, i, v, ts) SELECT p, -1, 0, timestamptz '2100-01-01 00:00:00+00'
	  FROM generate_series(0, 3) p});
checkpoint_each($node, 'record', @pipelines);

my %oracle = (
	tumbling => qq{
SELECT date_bin('1 second', ts, $origin) AS window_start,
	   date_bin('1 second', ts, $origin) + interval '1 second' AS window_end,
	   count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi, sum(v::numeric) AS exact
  FROM src GROUP BY 1, 2},
	hopping => qq{
SELECT w.start AS window_start, w.start + interval '3 seconds' AS window_end,
	   count(*) AS n, sum(v) AS total
  FROM src,
	   LATERAL generate_series(date_bin('1 second', ts, $origin) - interval '2 seconds',
							   date_bin('1 second', ts, $origin), interval '1 second') w(start)
 GROUP BY 1, 2},
	# a new session starts where the previous record is a gap or more before
	session => qq{
SELECT min(ts) AS window_start, max(ts) + $gap AS window_end,
	   count(*) AS n, sum(v) AS total, max(ts) AS last_ts
  FROM (SELECT ts, v, sum(brk) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
		  FROM (SELECT ts, v,
					   CASE WHEN ts - lag(ts) OVER (ORDER BY ts) < $gap THEN 0 ELSE 1 END AS brk
				  FROM src) b) s
 GROUP BY sid});
my %cols = (
	tumbling => 'window_start, window_end, n, total, lo, hi, exact',
	hopping  => 'window_start, window_end, n, total',
	session  => 'window_start, window_end, n, total, last_ts');

for my $p (@pipelines)
{
	my $wm = last_watermark($node, $p);
	note "pipeline $p: final watermark $wm";
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE oracle_$p AS
WITH src AS (SELECT * FROM ev WHERE i >= 0)
SELECT * FROM ($oracle{$p}) o WHERE window_end <= '$wm'});
	is( $node->safe_psql(
			'postgres', qq{
WITH src AS (SELECT * FROM ev WHERE i >= 0)
SELECT count(*) FROM ($oracle{$p}) o WHERE window_end > '$wm'}),
		'0',
		"pipeline $p: the final watermark closed every window of the records");
	compare_with_oracle(
		$node,
		pipeline => $p,
		cols     => $cols{$p},
		order    => '1',
		except   => 'EXCEPT');
	cmp_ok(restores_with_state($node, $p), '>=', $rounds,
		"pipeline $p: its restores after the kills read open windows from its chunks");
	# every committed checkpoint counted what it read once
	is(checkpoint_sum($node, $p, 'records_in'), $next + 4,
		"pipeline $p: its committed checkpoints account for every record once");
}

check_pipeline_account($node, $_, $rounds) for @pipelines;
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');
check_crash_log($node, $rounds, @killed);

$node->stop;
done_testing();
