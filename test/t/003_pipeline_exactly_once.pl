# 003_pipeline_exactly_once.pl
#
# Concurrent producers write events (k int, v bigint, ts timestamptz) with
# random out-of-orderness into a 4-partition topic while three pipelines
# aggregate them: a tumbling, a hopping and a session window.  Meanwhile a
# weir worker is killed with kill -9 three times (the postmaster
# reinitializes shared memory and every pipeline restores its last
# checkpoint) and the server is stopped in immediate mode once, at random
# moments of the run.  When the producers are done, one event per partition
# far in the future pushes every watermark past the last window, and each
# sink must then equal its oracle, the same aggregation written as SQL
# GROUP BY over the topic table (without the records that were late), row
# for row and value for value.
#
# Event times come from one logical clock shared by all producers (a
# sequence, one millisecond per event) minus a random disorder of up to 20
# seconds; the pipelines allow 30 seconds of out-of-orderness, so no record
# is late and the oracle is the plain GROUP BY.  The records a pipeline
# did call late are in its late-records table, and the oracle leaves them
# out anyway; that table is expected to be empty.
#
# Event times are whole milliseconds and the session gap is 30.0005 s, so
# no two events of a key are exactly one gap apart: whether such events
# share a session is a question this test does not ask.
#
# WEIR_TAP_EVENTS overrides the number of events (1000000), WEIR_TAP_SECONDS
# the time the producers take to write them (40), WEIR_TAP_SEED the seed
# that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my ($target, $seconds, $seed) = crash_test_knobs();
my $keys      = 10_000;
my $producers = 6;
my $deadline  = 300;    # seconds for the produce phase, crashes included

# pgbench's rate: transactions of 1000 events on average
my $rate = bench_rate($target, 1000.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('pipeline_exactly_once', crash_test_conf(40));

my $aggregates = 'count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi';
my $origin     = q{timestamptz '1970-01-01 00:00:00+00'};
my $gap        = q{interval '30.0005 seconds'};

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'k int, v bigint, ts timestamptz', partitions => 4, key => 'k');
SELECT weir.create_pipeline('tumbling', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => '$aggregates',
							out_of_orderness => '30 seconds',
							late_records => 'tumbling_late');
SELECT weir.create_pipeline('hopping', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.hopping('2 minutes', '1 minute'),
							aggregates => '$aggregates',
							out_of_orderness => '30 seconds',
							late_records => 'hopping_late');
});

# Session windows are being implemented: until they are, create_pipeline
# refuses them with 0A000 and the session part of this test is skipped.
my @pipelines = ('tumbling', 'hopping');
my $have_session = 0;
{
	my ($ret, $out, $err) = $node->psql(
		'postgres', qq{\\set VERBOSITY verbose
SELECT weir.create_pipeline('session', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.session($gap),
							aggregates => '$aggregates',
							out_of_orderness => '30 seconds',
							late_records => 'session_late');
}, on_error_stop => 1);
	if ($ret == 0)
	{
		$have_session = 1;
		push @pipelines, 'session';
	}
	elsif ($err =~ /ERROR:\s+0A000:/)
	{
		diag "session windows are not implemented yet; their pipeline is skipped: $err";
	}
	else
	{
		fail("creating the session pipeline: $err");
	}
}
my $npipelines = scalar(@pipelines);
wait_pipelines_running($node, $npipelines);

# Producers: batches of 500 to 1500 events over $keys keys; event time is
# the shared clock (1 ms per event) minus up to 20 s of disorder.
my $producer_script = bench_script(
	'weir_pipeline_producer.sql', qq{\\set n random(500, 1500)
INSERT INTO ev (k, v, ts)
SELECT floor(random() * $keys)::int,
	   floor(random() * 2000001)::bigint - 1000000,
	   timestamptz '2024-01-01 00:00:00+00' + (s - floor(random() * 20000)) * interval '1 ms'
  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) g;
});

# Four crashes at random moments of the run, placed by progress: three
# kill -9 of a pipeline worker (one as soon as its pipeline is in a
# checkpoint: the worker collecting it or its checkpoint writer writing it)
# and one immediate stop, in random order.
my @plan = plan_crashes($seed, $target, 0.10, 0.20, 0.15, 'kill', 'kill', 'kill in checkpoint', 'immediate');
my $run = produce_with_crashes(
	node      => $node,
	benches   => [ [ 'producer', $producer_script, $producers, '-R', $rate ] ],
	rows      => sub { try_count($node, 'SELECT count(*) FROM ev') },
	target    => $target,
	deadline  => $deadline,
	unit      => 'events',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => sub {
		my ($ret, $out) = $node->psql(
			'postgres', q{
SELECT worker_pid || ' ' || name FROM weir.pipelines
 WHERE worker_pid IS NOT NULL ORDER BY random() LIMIT 1});
		return () if $ret != 0 || $out eq '';
		my ($pid, $name) = split / /, $out;
		return ($pid, "the worker of pipeline $name", $name);
	});
my $t_produced = $run->{t_end};

my $events = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($events, '>=', $target, "the topic holds at least $target events");
is($node->safe_psql('postgres', "SELECT count(DISTINCT k) FROM ev"),
	$keys, "the events cover $keys keys");

# Push every watermark past the last window: one event per partition far
# in the future, with a key outside the normal range.
$node->safe_psql('postgres',
	q{INSERT INTO ev (part, k, v, ts)
	  SELECT p, -1, 0, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 3) p});
checkpoint_each($node, 'event', @pipelines);
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the producers ended", $t_caught_up - $t_produced);

# The oracles: the same aggregations in SQL over the events that were not
# late (none should be), restricted to the windows that the final
# watermark has closed.
my %oracle = (
	tumbling => qq{
SELECT k, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi
  FROM src GROUP BY 1, 2},
	hopping => qq{
SELECT k, w.start AS window_start, w.start + interval '2 minutes' AS window_end,
	   count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi
  FROM src,
	   LATERAL generate_series(date_bin('1 minute', ts, $origin) - interval '1 minute',
							   date_bin('1 minute', ts, $origin), interval '1 minute') w(start)
 GROUP BY 1, 2},
	# a new session starts where the previous event of the key is a gap or
	# more before
	session => qq{
SELECT k, min(ts) AS window_start, max(ts) + $gap AS window_end,
	   count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi
  FROM (SELECT k, ts, v, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
		  FROM (SELECT k, ts, v,
					   CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) < $gap
							THEN 0 ELSE 1 END AS brk
				  FROM src) b) s
 GROUP BY k, sid});

my $cols = 'k, window_start, window_end, n, total, lo, hi';
for my $p (@pipelines)
{
	my $wm = last_watermark($node, $p);
	note "pipeline $p: final watermark $wm";
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE oracle_$p AS
WITH src AS (SELECT * FROM ev e
			  WHERE k >= 0
				AND NOT EXISTS (SELECT 1 FROM ${p}_late l WHERE l.part = e.part AND l.pos = e.pos))
SELECT * FROM ($oracle{$p}) o WHERE window_end <= '$wm'});

	is($node->safe_psql('postgres', "SELECT count(*) FROM ${p}_late"),
		'0', "pipeline $p: no record was late");
	my $late_windows = $node->safe_psql(
		'postgres', qq{
WITH src AS (SELECT * FROM ev WHERE k >= 0)
SELECT count(*) FROM ($oracle{$p}) o WHERE window_end > '$wm'});
	is($late_windows, '0', "pipeline $p: the final watermark closed every window of the events");

	# sets (EXCEPT): the sink's primary key rules out repeated rows
	compare_with_oracle(
		$node,
		pipeline => $p,
		cols     => $cols,
		order    => '1, 2',
		except   => 'EXCEPT',
		diag     => sub {
			my ($k, $start, $end) = @_;
			return "pipeline $p: the oracle for the keys and windows above:\n"
			  . $node->safe_psql(
				'postgres', qq{
SELECT 'sink' AS side, $cols FROM $p
 WHERE (k, window_start) IN (SELECT k, window_start FROM (SELECT $cols FROM $p EXCEPT SELECT $cols FROM oracle_$p) d
							 UNION SELECT k, window_start FROM (SELECT $cols FROM oracle_$p EXCEPT SELECT $cols FROM $p) d)
UNION ALL
SELECT 'oracle', $cols FROM oracle_$p
 WHERE (k, window_start) IN (SELECT k, window_start FROM (SELECT $cols FROM $p EXCEPT SELECT $cols FROM oracle_$p) d
							 UNION SELECT k, window_start FROM (SELECT $cols FROM oracle_$p EXCEPT SELECT $cols FROM $p) d)
ORDER BY 2, 3, 1 LIMIT 40})
			  . "\npipeline $p: the events of key $k from $start to $end (part|pos|ts|v):\n"
			  . $node->safe_psql(
				'postgres', qq{
SELECT part, pos, ts, v FROM ev WHERE k = $k AND ts >= '$start' AND ts < '$end' ORDER BY ts});
		});
}

if (!$have_session)
{
  SKIP:
	{
		skip 'TODO: session windows are not implemented yet '
		  . '(weir.create_pipeline with weir.session() fails with 0A000): '
		  . 'the session pipeline was not checked', 1;
	}
}

my $t_compared = time;
note sprintf("compared the sinks with their oracles in %.1f s", $t_compared - $t_caught_up);

# The pipelines' own account of the run
check_pipeline_account($node, $_, scalar(@plan)) for @pipelines;
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Each checkpoint counts the records read since the previous one; what was
# read after the last checkpoint before a crash is read again after the
# restore and counted then.  So over the committed checkpoints every event
# of the topic counts once.
my $all_events = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
for my $p (@pipelines)
{
	is(checkpoint_sum($node, $p, 'records_in'),
		$all_events,
		"pipeline $p: its committed checkpoints account for every event of the topic once");
}
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s sink rows written (with rewrites)',
						 p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT sum(sink_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});

# The server log: the intended crashes, nothing else.
check_crash_log($node, 3, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
