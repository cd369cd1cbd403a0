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
use IPC::Run;
use List::Util qw(shuffle);
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

sub env_or
{
	my ($name, $default) = @_;
	return defined $ENV{$name} && $ENV{$name} ne '' ? $ENV{$name} : $default;
}

my $target    = env_or('WEIR_TAP_EVENTS',  1_000_000);
my $seconds   = env_or('WEIR_TAP_SECONDS', 40);
my $seed      = env_or('WEIR_TAP_SEED',    int(time()) ^ $$);
my $keys      = 10_000;
my $producers = 6;
my $deadline  = 300;    # seconds for the produce phase, crashes included

# pgbench's rate (transactions of 1000 events on average) that spreads the
# events over $seconds, so that the crashes fall while the producers run
my $rate = $target / 1000.0 / $seconds;
$rate = 1 if $rate < 1;

my $t_start = time;
my $node    = PostgreSQL::Test::Cluster->new('pipeline_exactly_once');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 200
restart_after_crash = on
max_connections = 40
max_worker_processes = 20
log_statement = none
});
$node->start;

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

ok( $node->poll_query_until(
		'postgres',
		'SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL',
		$npipelines),
	"all $npipelines pipelines run");

# Producers: batches of 500 to 1500 events over $keys keys; event time is
# the shared clock (1 ms per event) minus up to 20 s of disorder.
my $producer_script = "$PostgreSQL::Test::Utils::tmp_check/weir_pipeline_producer.sql";
PostgreSQL::Test::Utils::append_to_file(
	$producer_script, qq{\\set n random(500, 1500)
INSERT INTO ev (k, v, ts)
SELECT floor(random() * $keys)::int,
	   floor(random() * 2000001)::bigint - 1000000,
	   timestamptz '2024-01-01 00:00:00+00' + (s - floor(random() * 20000)) * interval '1 ms'
  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) g;
});






sub committed_rows
{
	my ($ret, $out) = $node->psql('postgres', 'SELECT count(*) FROM ev');
	return $ret == 0 && $out =~ /^\d+$/ ? $out : undef;
}

sub wait_backends_gone
{
	my ($app) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app'",
			'0'),
		"no $app backend left");
}

# After a crash: every pipeline has a worker again and has recorded a
# restore for it (so the next crash hits restored workers).
sub wait_pipelines_restored
{
	my ($restores, $what) = @_;
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT bool_and(s.worker_pid IS NOT NULL
				AND (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id) >= $restores)
	   AND count(*) = $npipelines
  FROM weir.pipeline p JOIN weir.pipelines s ON s.name = p.name}),
		"every pipeline restored its checkpoint after $what");
}

# Four crashes at random moments of the run, placed by progress: three
# kill -9 of a pipeline worker and one immediate stop, in random order.
srand($seed);
note "seed $seed (set WEIR_TAP_SEED to place the crashes the same way)";
my @crash_at;
for my $i (0 .. 3)
{
	push @crash_at, int($target * (0.10 + 0.20 * $i + rand(0.15)));
}
my @crash_kind = shuffle('kill', 'kill', 'kill', 'immediate');
note "crash " . ($_ + 1) . ": $crash_kind[$_] at >= $crash_at[$_] rows" for 0 .. 3;

start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);

my $t0      = time;
my $rows    = 0;
my $crashes = 0;
my @killed_pids;
while (1)
{
	my $n = committed_rows();
	$rows = $n if defined $n;
	last if $crashes == 4 && $rows >= $target;

	if (time - $t0 > $deadline)
	{
		fail("reached $target events in $deadline s (have $rows)");
		last;
	}

	if ($crashes < 4 && $rows >= $crash_at[$crashes])
	{
		# a little more randomness than the polling gives
		usleep(int(rand(400_000)));
		my $what;
		if ($crash_kind[$crashes] eq 'kill')
		{
			my ($ret, $pid) = $node->psql(
				'postgres', q{
SELECT worker_pid || ' ' || name FROM weir.pipelines
 WHERE worker_pid IS NOT NULL ORDER BY random() LIMIT 1});
			if ($ret != 0 || $pid eq '')
			{
				usleep(50_000);
				next;
			}
			my $name;
			($pid, $name) = split / /, $pid;
			my $offset = -s $node->logfile;
			$what = sprintf('crash %d (kill -9 of the worker of pipeline %s, PID %d) at %d rows',
				$crashes + 1, $name, $pid, $rows);
			note sprintf('%.1f s: %s', time - $t0, $what);
			kill 'KILL', $pid;
			push @killed_pids, $pid;
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
			ok(wait_server_up($node), "server back after $what");
			end_bench('producer', 0);
		}
		else
		{
			$what = sprintf('crash %d (immediate stop) at %d rows', $crashes + 1, $rows);
			note sprintf('%.1f s: %s', time - $t0, $what);
			$node->stop('immediate');
			end_bench('producer', 0);
			$node->start;
		}
		$crashes++;
		start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);
		wait_pipelines_restored($crashes + 1, $what);
		next;
	}

	# a pgbench that ended on its own (all its clients failed) is restarted
	if (!bench_running('producer'))
	{
		diag "pgbench producer ended unexpectedly: " . bench_stderr('producer');
		end_bench('producer', 0);
		start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);
	}
	usleep(250_000);
}
my $t_produced = time;
note sprintf("produced %d events in %.1f s", $rows, $t_produced - $t0);
is($crashes, 4, 'all four crashes happened');

end_bench('producer', 1);
wait_backends_gone('weir_producer');

my $events = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($events, '>=', $target, "the topic holds at least $target events");
is($node->safe_psql('postgres', "SELECT count(DISTINCT k) FROM ev"),
	$keys, "the events cover $keys keys");

# Push every watermark past the last window: one event per partition far
# in the future, with a key outside the normal range.
$node->safe_psql('postgres',
	q{INSERT INTO ev (part, k, v, ts)
	  SELECT p, -1, 0, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 3) p});
for my $p (@pipelines)
{
	my ($ret, $out, $err) =
	  $node->psql('postgres', "SELECT weir.checkpoint('$p', '180 s')");
	is($ret, 0, "pipeline $p took a checkpoint covering every event")
	  or diag $err;
}
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
	my $wm = $node->safe_psql(
		'postgres', qq{
SELECT c.watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p' ORDER BY c.id DESC LIMIT 1});
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

	my $sink_rows   = $node->safe_psql('postgres', "SELECT count(*) FROM $p");
	my $oracle_rows = $node->safe_psql('postgres', "SELECT count(*) FROM oracle_$p");
	note "pipeline $p: sink $sink_rows rows, oracle $oracle_rows rows";
	cmp_ok($oracle_rows, '>', 0, "pipeline $p: the oracle has rows");
	is($sink_rows, $oracle_rows, "pipeline $p: the sink has as many rows as the oracle");
	my $extra = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM $p EXCEPT SELECT $cols FROM oracle_$p ORDER BY 1, 2 LIMIT 20});
	is($extra, '', "pipeline $p: every sink row is an oracle row");
	my $missing = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM oracle_$p EXCEPT SELECT $cols FROM $p ORDER BY 1, 2 LIMIT 20});
	is($missing, '', "pipeline $p: every oracle row is in the sink");
	if ($extra ne '' || $missing ne '')
	{
		diag "pipeline $p: sink rows that differ from the oracle (first 20):\n$extra";
		diag "pipeline $p: oracle rows that differ from the sink (first 20):\n$missing";
		diag "pipeline $p: the oracle for the keys and windows above:\n"
		  . $node->safe_psql(
			'postgres', qq{
SELECT 'sink' AS side, $cols FROM $p
 WHERE (k, window_start) IN (SELECT k, window_start FROM (SELECT $cols FROM $p EXCEPT SELECT $cols FROM oracle_$p) d
							 UNION SELECT k, window_start FROM (SELECT $cols FROM oracle_$p EXCEPT SELECT $cols FROM $p) d)
UNION ALL
SELECT 'oracle', $cols FROM oracle_$p
 WHERE (k, window_start) IN (SELECT k, window_start FROM (SELECT $cols FROM $p EXCEPT SELECT $cols FROM oracle_$p) d
							 UNION SELECT k, window_start FROM (SELECT $cols FROM oracle_$p EXCEPT SELECT $cols FROM $p) d)
ORDER BY 2, 3, 1 LIMIT 40});
		my ($k, $start, $end) = split /\|/, (split /\n/, ($extra ne '' ? $extra : $missing))[0];
		diag "pipeline $p: the events of key $k from $start to $end (part|pos|ts|v):\n"
		  . $node->safe_psql(
			'postgres', qq{
SELECT part, pos, ts, v FROM ev WHERE k = $k AND ts >= '$start' AND ts < '$end' ORDER BY ts});
	}
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
for my $p (@pipelines)
{
	my $row = $node->safe_psql(
		'postgres', qq{
SELECT status, records_late, records_dead, coalesce(last_error, ''),
	   (SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
		 WHERE q.name = s.name)
  FROM weir.pipelines s WHERE name = '$p'});
	my ($status, $late, $dead, $error, $restores) = split /\|/, $row;
	is($status, 'running', "pipeline $p is running");
	is($late,   '0',       "pipeline $p: records_late = 0");
	is($dead,   '0',       "pipeline $p: records_dead = 0");
	is($error,  '',        "pipeline $p: no last_error");
	cmp_ok($restores, '>=', 5,
		"pipeline $p restored a checkpoint at its start and after each of the 4 crashes ($restores restores)");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Each checkpoint counts the records read since the previous one; what was
# read after the last checkpoint before a crash is read again after the
# restore and counted then.  So over the committed checkpoints every event
# of the topic counts once.
my $all_events = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
for my $p (@pipelines)
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT sum(c.records_in) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p'}),
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
my $log = slurp_file($node->logfile);
my @panic = grep { /PANIC|TRAP:/ } split /\n/, $log;
is(scalar(@panic), 0, 'no PANIC or TRAP in the server log')
  or diag join("\n", @panic[ 0 .. ($#panic < 20 ? $#panic : 20) ]);
my @signals = grep { /terminated by signal|exited with exit code/ } split /\n/, $log;
my @killed = grep { /terminated by signal 9/ } @signals;
is(scalar(@killed), 3, 'exactly three processes were killed by signal 9 (the intended crashes)')
  or diag join("\n", @killed);
for my $pid (@killed_pids)
{
	ok(scalar(grep { /weir worker.*\(PID $pid\) was terminated by signal 9/ } @killed),
		"the log names the killed weir worker $pid");
}
my @other_signals = grep { !/terminated by signal 9/ } @signals;
is(scalar(@other_signals), 0, 'no other process died abnormally')
  or diag join("\n", @other_signals[ 0 .. ($#other_signals < 20 ? $#other_signals : 20) ]);
my @errors = grep { /\bERROR:/ } split /\n/, $log;
is(scalar(@errors), 0, 'no ERROR in the server log')
  or diag join("\n", @errors[ 0 .. ($#errors < 20 ? $#errors : 20) ]);

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
