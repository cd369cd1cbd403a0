# 019_remote_sink.pl
#
# Remote sinks, exactly once through crashes on both sides.  A remote
# server (max_prepared_transactions 10; its role sinker logs in with a
# password) holds the sink tables; a weir server runs, as alice (not a
# superuser), two pipelines over topic ev:
#
#   w2pc   5-second windows per key (count, sum), two-phase, into s.totals;
#   lv     last value per key, idempotent, into s.latest.
#
# The test inserts batches of records into ev, and meanwhile, at moments
# spread over the run:
#   - kill -9 of w2pc's worker, then of lv's worker (the postmaster
#     restarts everything, as after any backend crash);
#   - kill -9 of w2pc's checkpoint writer while it is in a checkpoint;
#   - the fault point remote_after_prepare (the writer exits between
#     PREPARE TRANSACTION there and the local commit), then
#     remote_after_local_commit (between the local commit and COMMIT
#     PREPARED);
#   - an immediate restart of the remote server, then the remote server
#     down for 4 seconds;
#   - an immediate restart of the weir server.
# At the end one record per partition far in the future flushes the
# windows, each pipeline takes a checkpoint, and:
#   - s.totals equals GROUP BY over ev, s.latest equals the newest row per
#     key, row for row;
#   - the remote has no prepared transaction left;
#   - the resolution after each fault point did what it had to (rolled
#     back the one prepared before the local commit, committed the one
#     after);
#   - the password appears in no line of the weir server's log, though a
#     create_pipeline naming it failed.
#
# WEIR_TAP_ROWS overrides the records per batch (60).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $batch    = env_or('WEIR_TAP_ROWS', 60);
my $password = 'sink-secret-pw-19';

# The remote: the sinks' role must give its password.
my $remote = PostgreSQL::Test::Cluster->new('remote');
$remote->init;
$remote->append_conf('postgresql.conf', "max_prepared_transactions = 10\n");
my $hba = slurp_file($remote->data_dir . '/pg_hba.conf');
open(my $fh, '>', $remote->data_dir . '/pg_hba.conf') or die $!;
print $fh "local all sinker scram-sha-256\n$hba";
close($fh);
$remote->start;
$remote->safe_psql(
	'postgres', qq{
CREATE ROLE sinker LOGIN PASSWORD '$password';
CREATE SCHEMA s AUTHORIZATION sinker;
SET ROLE sinker;
CREATE TABLE s.totals (k int, window_start timestamptz, window_end timestamptz,
					   n bigint, total bigint, PRIMARY KEY (window_start, k));
CREATE TABLE s.latest (k int PRIMARY KEY, v int, t timestamptz);
});
my $conninfo = 'host=' . $remote->host . ' port=' . $remote->port
  . " dbname=postgres user=sinker password=$password";

my $node = start_weir_node('remote_sink', crash_test_conf(20),
	'log_min_error_statement' => 'error');
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE ROLE alice;
GRANT CREATE ON SCHEMA public TO alice;
CREATE SEQUENCE clock;
GRANT USAGE ON SEQUENCE clock TO alice;
SET ROLE alice;
SELECT weir.create_topic('ev', 'k int, v int, t timestamptz', partitions => 4, key => 'k');
});

# A failing definition: its statement, which holds the password, is not logged.
my ($ret, $out, $err) = $node->psql(
	'postgres', qq{SET ROLE alice;
SELECT weir.create_pipeline('w_bad', 'ev', key => 'k', event_time => 't',
	windowing => weir.tumbling('5 seconds'), aggregates => 'count(*) AS n, sum(v) AS total',
	sink => weir.remote_table(\$\$$conninfo\$\$, 's.nosuch'))});
like($err, qr/the remote server has no table s\.nosuch/, 'a missing remote table is refused');

$node->safe_psql(
	'postgres', qq{SET ROLE alice;
SELECT weir.create_pipeline('w2pc', 'ev', key => 'k', event_time => 't',
	windowing => weir.tumbling('5 seconds'), aggregates => 'count(*) AS n, sum(v) AS total',
	out_of_orderness => '2 seconds',
	sink => weir.remote_table(\$\$$conninfo\$\$, 's.totals'));
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 't', columns => 'v, t',
	sink => weir.remote_table(\$\$$conninfo\$\$, 's.latest', 'idempotent'));
});
wait_pipelines_running($node, 2);

# A batch of records: 20 ms of event time per record, 300 keys.
sub insert_batch
{
	my ($r) = $node->psql(
		'postgres', qq{
INSERT INTO ev (k, v, t)
SELECT floor(random() * 300)::int, floor(random() * 1000)::int,
	   timestamptz '2026-01-01 00:00:00+00' + nextval('clock') * interval '20 ms'
  FROM generate_series(1, $batch)});
	return $r == 0;
}

sub log_count
{
	my ($pattern) = @_;
	my @n = (slurp_file($node->logfile) =~ /$pattern/g);
	return scalar(@n);
}

sub pid_of
{
	my ($column, $pipeline) = @_;
	my ($r, $pid) = $node->psql('postgres',
		"SELECT $column FROM weir.pipelines WHERE name = '$pipeline' AND $column IS NOT NULL");
	return $r == 0 && $pid =~ /^\d+$/ ? $pid : undef;
}

sub set_fault
{
	my ($point) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET weir.fault_point = '$point'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
}

sub reset_fault
{
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET weir.fault_point');
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
}

# Insert for a while, until the condition holds (at most 60 s).
sub insert_until
{
	my ($what, $cond) = @_;
	my $until = time + 60;
	while (time < $until)
	{
		insert_batch();
		return 1 if $cond->();
		usleep(50_000);
	}
	fail("$what within 60 s");
	return 0;
}

sub insert_for
{
	my ($seconds) = @_;
	my $until = time + $seconds;
	while (time < $until)
	{
		insert_batch();
		usleep(50_000);
	}
}

sub wait_running_again
{
	my ($what) = @_;
	wait_server_up($node);
	ok( $node->poll_query_until(
			'postgres', 'SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL', '2'),
		"both pipelines run again after $what");
}

insert_for(3);

# kill -9 of w2pc's worker
my $pid = pid_of('worker_pid', 'w2pc');
ok(defined $pid && kill('KILL', $pid), 'kill -9 of the two-phase pipeline worker');
wait_running_again('the kill of w2pc');
insert_for(2);

# kill -9 of w2pc's writer in a checkpoint.  The writer is watched from
# the server, every 5 ms for up to 2 s: a checkpoint of a few batches is
# written in milliseconds, too short to be caught by a psql started now
# and then on a busy machine.
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION active_writer(pipeline text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	writer int;
BEGIN
	FOR i IN 1 .. 400 LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT pid INTO writer FROM pg_stat_activity
		 WHERE query LIKE 'weir: writing a checkpoint of pipeline ' || pipeline || '%'
		   AND state = 'active';
		EXIT WHEN writer IS NOT NULL;
		PERFORM pg_sleep(0.005);
	END LOOP;
	RETURN writer;
END $$});
insert_until(
	'the writer seen in a checkpoint',
	sub {
		my ($r, $w) = $node->psql('postgres', q{SELECT active_writer('w2pc')});
		return $r == 0 && $w =~ /^\d+$/ && kill('KILL', $w);
	});
pass('kill -9 of the checkpoint writer of w2pc in a checkpoint');
wait_running_again('the kill of the writer');
insert_for(2);

# between PREPARE there and the local commit
my $hits = log_count(qr/fault point "remote_after_prepare" reached/);
set_fault('remote_after_prepare');
insert_until('the fault point remote_after_prepare',
	sub { log_count(qr/fault point "remote_after_prepare" reached/) > $hits });
reset_fault();
insert_until('the transaction prepared before the local commit rolled back',
	sub { log_count(qr/rolled back the prepared transaction of checkpoint/) > 0 });
pass('the fault point between PREPARE and the local commit');
wait_running_again('remote_after_prepare');
insert_for(2);

# between the local commit and COMMIT PREPARED
$hits = log_count(qr/fault point "remote_after_local_commit" reached/);
set_fault('remote_after_local_commit');
insert_until('the fault point remote_after_local_commit',
	sub { log_count(qr/fault point "remote_after_local_commit" reached/) > $hits });
reset_fault();
insert_until('the transaction prepared before the local commit committed by the next worker',
	sub { log_count(qr/: committed the prepared transaction of checkpoint/) > 0 });
pass('the fault point between the local commit and COMMIT PREPARED');
wait_running_again('remote_after_local_commit');
insert_for(2);

# kill -9 of lv's worker
$pid = pid_of('worker_pid', 'lv');
ok(defined $pid && kill('KILL', $pid), 'kill -9 of the idempotent pipeline worker');
wait_running_again('the kill of lv');
insert_for(2);

# the remote restarts
$remote->stop('immediate');
$remote->start;
insert_for(3);
wait_running_again('the remote restarted');

# the remote is unreachable for a while
$remote->stop('fast');
insert_for(4);
my $note = $node->safe_psql('postgres',
	q{SELECT string_agg(name || ': ' || status || ' ' || coalesce(last_error, ''), '; ') FROM weir.pipelines});
note "while the remote is down: $note";
unlike($note, qr/\Q$password\E/, 'no error shown while the remote is down holds the password');
$remote->start;
insert_for(2);
wait_running_again('the remote came back');

# the weir server restarts
$node->stop('immediate');
$node->start;
wait_running_again('an immediate restart of the weir server');
insert_for(3);

# Flush: one record per partition far in the future fires every window.
$node->safe_psql('postgres',
	q{INSERT INTO ev (part, k, v, t) SELECT p, -1, 0, '2100-01-01' FROM generate_series(0, 3) p});
for my $p ('w2pc', 'lv')
{
	my $id = $node->safe_psql('postgres', "SELECT weir.checkpoint('$p', '120 s')");
	ok($id > 0, "pipeline $p took its last checkpoint ($id)");
}

my $nrecords = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
note "ev holds $nrecords records";

my $remote_totals = $remote->safe_psql('postgres',
	q{SET timezone = UTC; SELECT k, window_start, window_end, n, total FROM s.totals ORDER BY 2, 1});
my $oracle_totals = $node->safe_psql(
	'postgres', q{SET timezone = UTC;
SELECT k, date_bin('5 seconds', t, 'epoch'), date_bin('5 seconds', t, 'epoch') + interval '5 seconds',
	   count(*), sum(v)
  FROM ev WHERE t < '2100-01-01' GROUP BY 1, 2 ORDER BY 2, 1});
my @o = split /\n/, $oracle_totals;
my @r = split /\n/, $remote_totals;
note scalar(@o) . ' windows in the oracle, ' . scalar(@r) . ' in the remote table';
ok(@o > 100, 'the run fired windows');
is($remote_totals, $oracle_totals, 'the two-phase remote table equals GROUP BY over the topic');

my $oracle_latest = $node->safe_psql(
	'postgres', q{SET timezone = UTC;
SELECT DISTINCT ON (k) k, v, t FROM ev ORDER BY k, t DESC, part DESC, pos DESC});
my $remote_latest = $remote->safe_psql('postgres',
	q{SET timezone = UTC; SELECT k, v, t FROM s.latest ORDER BY k});
is($remote_latest, $oracle_latest, 'the idempotent remote table equals the newest row per key');

is($remote->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'no prepared transaction is left on the remote');
is( $remote->safe_psql(
		'postgres', q{SELECT checkpoint_id FROM s.weir_sink_fence}),
	$node->safe_psql('postgres', q{SELECT last_checkpoint FROM weir.pipelines WHERE name = 'lv'}),
	'the fence holds the last checkpoint of the idempotent pipeline');
is($node->safe_psql('postgres', q{SELECT count(*) FROM weir.dead_letters}),
	'0', 'no dead letters');

my $log = slurp_file($node->logfile);
unlike($log, qr/\Q$password\E/, 'the password is in no line of the server log');
note 'restores: ' . $node->safe_psql('postgres', 'SELECT count(*) FROM weir.restores');

# Dropping the two-phase pipeline: stopped first, its transactions resolved.
$node->safe_psql('postgres', q{SET ROLE alice; SELECT weir.stop('w2pc')});
$node->poll_query_until('postgres',
	q{SELECT worker_pid IS NULL AND writer_pid IS NULL FROM weir.pipelines WHERE name = 'w2pc'})
  or die 'w2pc did not stop';
$node->safe_psql('postgres', q{SET ROLE alice; SELECT weir.drop_pipeline('w2pc')});
is($remote->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'dropped, nothing prepared there');

$node->stop;
$remote->stop;
done_testing();
