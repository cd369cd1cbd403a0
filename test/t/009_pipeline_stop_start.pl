# 009_pipeline_stop_start.pl
#
# weir.stop() and weir.start() only change the catalog and wake the
# launcher: the worker of a stop exits a little later.  A weir.checkpoint()
# right after a stop and a start may therefore take its ticket from that
# worker just before it exits; it must then wait for the next worker (the
# pipeline is still meant to run) and not fail.  Rounds of stop, start (with
# and without a pause between them), new events and a checkpoint: every
# checkpoint returns, the worker was really replaced, and the sink equals
# the aggregation written as SQL GROUP BY over the topic.  Those rounds hit
# the race only by chance (a busy machine); a worker frozen with SIGSTOP
# while the launcher's SIGTERM is pending hits it for certain.  A stop
# without a start still makes a checkpoint fail, with its SQLSTATE.  And
# with weir.read_ahead: weir.pipelines shows the read-ahead process, the
# sink stays exact, and when the process is terminated the worker reads
# itself, exactly, from there on.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $rounds = env_or('WEIR_TAP_ROUNDS', 18);
my $node = start_weir_node('stop_start', 'weir.launcher_naptime' => 100);

# The signals pending for a process (Linux: /proc/PID/status, ShdPnd), as
# a number; 0 once it is gone.
sub pending_signals
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return 0;
	my ($mask) = map { /^ShdPnd:\s*([0-9a-f]+)/ ? $1 : () } <$fh>;
	close($fh);
	return defined $mask ? hex($mask) : 0;
}

# Whether $cond becomes true within 60 s.
sub wait_until
{
	my ($cond) = @_;
	for (1 .. 600)
	{
		return 1 if $cond->();
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# Every closed window of p's sink equals SQL over the topic.
sub check_sink
{
	my ($what) = @_;
	check_minute_sink($node, 'p',
		$node->safe_psql('postgres', q{SELECT watermark FROM weir.pipelines WHERE name = 'p'}), $what);
	return;
}

# 30,000 more events from $from, and a checkpoint covering them.
sub produce_and_checkpoint
{
	my ($from) = @_;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO ev (k, v, ts)
SELECT i % 50, i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 s'
  FROM generate_series($from, $from + 29999) i;
SELECT weir.checkpoint('p', timeout => '60 s');});
	return;
}

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v bigint, ts timestamptz', partitions => 2, key => 'k');
SELECT weir.create_pipeline('p', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total');
});
ok( $node->poll_query_until('postgres',
		q{SELECT status = 'running' AND worker_pid IS NOT NULL FROM weir.pipelines WHERE name = 'p'}),
	'pipeline p runs');

my @pauses = (0, 0, 0, 0.001, 0.003, 0.3);    # seconds between stop and start, by round
my ($failed, @errors) = (0);
my %workers;
for my $round (1 .. $rounds)
{
	my $from  = ($round - 1) * 500;
	my $pause = $pauses[ $round % @pauses ];
	my $events = qq{
INSERT INTO ev (k, v, ts)
SELECT i % 50, i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 s'
  FROM generate_series($from, $from + 499) i;};
	# odd rounds write their events before the stop: the checkpoint then
	# follows the start at once
	my ($ret, $out, $err) = $node->psql(
		'postgres', ($round % 2 ? $events : '') . qq{
SELECT weir.stop('p');
SELECT pg_sleep($pause);
SELECT weir.start('p');} . ($round % 2 ? '' : $events) . q{
SELECT weir.checkpoint('p', timeout => '60 s') > 0;
}, on_error_stop => 1);
	if ($ret != 0 || $out !~ /\bt$/)
	{
		$failed++;
		push @errors, "round $round: $err";
	}
	my $pid = $node->safe_psql('postgres',
		q{SELECT worker_pid FROM weir.pipelines WHERE name = 'p'});
	$workers{$pid} = 1 if $pid ne '';
}
is($failed, 0, "every checkpoint after a stop and a start returned ($rounds rounds)")
  or diag(join "\n", @errors);
my $restores = $node->safe_psql('postgres',
	q{SELECT count(*) FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
	   WHERE p.name = 'p'});
cmp_ok($restores, '>', $rounds / 4 + 1,
	"workers were replaced: $restores restores, " . scalar(keys %workers) . ' worker pids seen');
check_sink('after the rounds');

# The race itself, made certain: the worker is frozen (SIGSTOP) so that the
# launcher's SIGTERM after the stop stays pending; the start commits, the
# checkpoint takes its ticket from the frozen worker, and only then does the
# worker go on, and die.  The checkpoint must be served by its successor.
my $old_pid = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'p'});
kill 'STOP', $old_pid;
$node->safe_psql('postgres', q{SELECT weir.stop('p')});
ok(wait_until(sub { pending_signals($old_pid) & (1 << 14) }),
	'the launcher sent SIGTERM to the frozen worker of the stopped pipeline');
$node->safe_psql('postgres', q{SELECT weir.start('p');
INSERT INTO ev (k, v, ts)
SELECT i % 50, i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 s'
  FROM generate_series(100000, 100499) i;});
my ($cp_out, $cp_err) = ('', '');
my $checkpoint = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  q{SELECT weir.checkpoint('p', timeout => '60 s') > 0} ],
	'>', \$cp_out, '2>', \$cp_err);
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity
		   WHERE query LIKE 'SELECT weir.checkpoint(%' AND wait_event_type = 'Extension'}),
	'the checkpoint waits, its ticket taken from the frozen worker');
kill 'CONT', $old_pid;
$checkpoint->finish;
chomp $cp_out;
is($cp_out, 't', 'the checkpoint was served by the next worker') or diag($cp_err);
isnt($node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'p'}),
	$old_pid, 'by a new worker');
check_sink('after the frozen worker');

# Read-ahead (weir.read_ahead): a second process reads and evaluates, the
# worker applies; when that process goes, the worker reads itself from its
# own positions on, and nothing is lost or doubled.
$node->append_conf('postgresql.conf', "weir.read_ahead = on\n");
$node->reload;
$node->safe_psql('postgres', q{SELECT weir.stop('p')});
ok( $node->poll_query_until('postgres',
		q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'p'}),
	'stopped to start again with read-ahead');
$node->safe_psql('postgres', q{SELECT weir.start('p')});
ok( $node->poll_query_until('postgres',
		q{SELECT reader_pid IS NOT NULL FROM weir.pipelines WHERE name = 'p'}),
	'weir.pipelines shows the read-ahead process');
my $reader = $node->safe_psql('postgres', q{SELECT reader_pid FROM weir.pipelines WHERE name = 'p'});
is( $node->safe_psql('postgres', qq{SELECT backend_type FROM pg_stat_activity WHERE pid = $reader}),
	'weir read-ahead', 'its process is a weir read-ahead background worker');
produce_and_checkpoint(200000);
check_sink('read ahead');
my $worker = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'p'});
my $offset = -s $node->logfile;
$node->safe_psql('postgres', qq{SELECT pg_terminate_backend($reader)});
$node->wait_for_log(
	qr/weir pipeline "p" stopped its read-ahead process after it exited; its worker reads itself/,
	$offset);
pass('the worker reads itself once its read-ahead process is gone');
produce_and_checkpoint(230000);
check_sink('after the read-ahead process went');
is( $node->safe_psql('postgres', q{SELECT worker_pid || ' ' || (reader_pid IS NULL) FROM weir.pipelines WHERE name = 'p'}),
	"$worker true", 'the same worker, without a read-ahead process');

# a stop alone: once the worker is gone a checkpoint is refused, with 55000
$node->safe_psql('postgres', q{SELECT weir.stop('p')});
ok( $node->poll_query_until('postgres',
		q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'p'}),
	'the stopped worker exits');
my ($ret, $out, $err) = $node->psql('postgres',
	q{\set VERBOSITY verbose
SELECT weir.checkpoint('p', timeout => '5 s')});
isnt($ret, 0, 'a checkpoint of a stopped pipeline fails');
like($err, qr/ERROR:  55000: pipeline "p" is not running/, 'and says so, with SQLSTATE 55000');

none_of('no ERROR in the server log but the one above',
	grep { /\bERROR:/ && !/pipeline "p" is not running/ } split /\n/, slurp_file($node->logfile));

done_testing();
