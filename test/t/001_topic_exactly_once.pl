# 001_topic_exactly_once.pl
#
# Many concurrent producers write to a topic in random-sized transactions
# (some aborted, some long-running) while two sessions of one consumer poll
# it and commit their positions; the server crashes twice in the middle
# (kill -9 of a producing backend, which makes the postmaster reinitialize
# shared memory, then an immediate stop and a start).  At the end the
# consumer has seen every committed row exactly once and no aborted row,
# and its committed positions are the last position of each partition.
#
# WEIR_TAP_ROWS overrides the number of committed rows to reach (200000).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target    = $ENV{WEIR_TAP_ROWS} // 200_000;
my $seed      = $ENV{WEIR_TAP_SEED} // (int(time()) ^ $$);
my $producers = 8;
my $deadline  = 300;    # seconds for the produce phase, crashes included

my $node = PostgreSQL::Test::Cluster->new('exactly_once');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 200
restart_after_crash = on
max_connections = 40
max_worker_processes = 16
log_statement = none
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
CREATE SEQUENCE ids;
SELECT weir.create_topic('ev', 'id bigint, producer integer, doomed boolean, payload text',
						 partitions => 4, key => 'id');
CREATE TABLE consumed (id bigint, part integer, pos bigint, doomed boolean);
});

# Producers: random-sized transactions; 1 in 20 rolls back (its rows are
# marked doomed), 1 in 20 is long-running (a pause, then more rows).
my $producer_script = "$PostgreSQL::Test::Utils::tmp_check/weir_producer.sql";
PostgreSQL::Test::Utils::append_to_file(
	$producer_script, q{\set n random(1, 150)
\set r random(1, 20)
\set pause random(100, 1000)
BEGIN;
INSERT INTO ev (id, producer, doomed, payload) SELECT nextval('ids'), :client_id, :r = 1, md5(random()::text) FROM generate_series(1, :n);
\if :r = 1
ROLLBACK;
\elif :r = 2
SELECT pg_sleep(:pause / 1000.0);
INSERT INTO ev (id, producer, doomed, payload) SELECT nextval('ids'), :client_id, false, md5(random()::text) FROM generate_series(1, :n);
COMMIT;
\else
COMMIT;
\endif
});

# The consumer: each poll and the rows it returned commit together.
my $reader_script = "$PostgreSQL::Test::Utils::tmp_check/weir_reader.sql";
PostgreSQL::Test::Utils::append_to_file(
	$reader_script, q{INSERT INTO consumed SELECT id, part, pos, doomed FROM weir.poll(NULL::ev, 'reader', 500);
\sleep 5 ms
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

# Crash at random moments of the run, placed by progress.
srand($seed);
note "seed $seed (set WEIR_TAP_SEED to place the crashes the same way)";
my $crash1_at = int($target * (0.15 + rand(0.20)));
my $crash2_at = int($target * (0.50 + rand(0.25)));
my $crashes   = 0;
note "crash 1 at >= $crash1_at rows, crash 2 at >= $crash2_at rows";

start_bench($node, 'producer', $producer_script, $producers);
start_bench($node, 'reader',   $reader_script,   2);

my $t0 = time;
my $rows = 0;
while (1)
{
	my $n = committed_rows();
	$rows = $n if defined $n;
	last if $crashes == 2 && $rows >= $target;

	if (time - $t0 > $deadline)
	{
		fail("reached $target committed rows in $deadline s (have $rows)");
		last;
	}

	if ($crashes == 0 && $rows >= $crash1_at)
	{
		# kill -9 one producer backend, preferably inside a transaction
		my $pid = $node->safe_psql(
			'postgres', q{
SELECT pid FROM pg_stat_activity
 WHERE application_name = 'weir_producer'
 ORDER BY state = 'idle in transaction' DESC, xact_start IS NULL, random()
 LIMIT 1});
		if ($pid eq '')
		{
			usleep(50_000);
			next;
		}
		my $offset = -s $node->logfile;
		note "crash 1 at $rows rows: kill -9 of backend $pid";
		kill 'KILL', $pid;
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		ok(wait_server_up($node), 'server back after kill -9 of a backend');
		end_bench('producer', 0);
		end_bench('reader',   0);
		$crashes = 1;
		start_bench($node, 'producer', $producer_script, $producers);
		start_bench($node, 'reader',   $reader_script,   2);
		next;
	}
	if ($crashes == 1 && $rows >= $crash2_at)
	{
		note "crash 2 at $rows rows: immediate stop";
		$node->stop('immediate');
		end_bench('producer', 0);
		end_bench('reader',   0);
		$node->start;
		$crashes = 2;
		start_bench($node, 'producer', $producer_script, $producers);
		start_bench($node, 'reader',   $reader_script,   2);
		next;
	}

	# a pgbench that ended on its own (all its clients failed) is restarted
	for my $name ('producer', 'reader')
	{
		next if bench_running($name);
		diag "pgbench $name ended unexpectedly: " . bench_stderr($name);
		end_bench($name, 0);
		start_bench($node, $name, $name eq 'producer' ? $producer_script : $reader_script,
			$name eq 'producer' ? $producers : 2);
	}
	usleep(250_000);
}
note sprintf("produced %d committed rows in %.1f s", $rows, time - $t0);
is($crashes, 2, 'both crashes happened');

# Stop producing; abandoned transactions abort.  Then stop the readers.
end_bench('producer', 1);
wait_backends_gone('weir_producer');
end_bench('reader', 1);
wait_backends_gone('weir_reader');

ok( $node->poll_query_until(
		'postgres',
		q{SELECT sum(open_producers) FROM weir.topic_partitions WHERE topic = 'ev'::regclass},
		'0'),
	'no open producer registered once the producers are gone');

my $consumed_live = $node->safe_psql('postgres', 'SELECT count(*) FROM consumed');
note "consumed while producing: $consumed_live rows";
cmp_ok($consumed_live, '>', 0, 'the consumer consumed while the producers ran');

# Drain: poll until two consecutive polls return nothing.
my ($empty, $polls) = (0, 0);
while ($empty < 2 && $polls < 1000)
{
	my $got = $node->safe_psql(
		'postgres', q{
WITH c AS (INSERT INTO consumed
		   SELECT id, part, pos, doomed FROM weir.poll(NULL::ev, 'reader', 10000)
		   RETURNING 1)
SELECT count(*) FROM c});
	$empty = $got eq '0' ? $empty + 1 : 0;
	$polls++;
}
cmp_ok($empty, '==', 2, "consumer drained ($polls polls)");

# The oracle: the topic table itself.
my $table_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($table_rows, '>=', $target, "the topic holds at least $target committed rows");
is($node->safe_psql('postgres', 'SELECT count(*) FROM consumed'),
	$table_rows, 'consumed as many rows as the table holds');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id FROM consumed GROUP BY id HAVING count(*) > 1) d'),
	'0',
	'no row consumed twice (by id)');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT part, pos FROM consumed GROUP BY part, pos HAVING count(*) > 1) d'),
	'0',
	'no position consumed twice');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id, part, pos, doomed FROM consumed
							   EXCEPT SELECT id, part, pos, doomed FROM ev) d'),
	'0',
	'every consumed row is a committed row of the table');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id, part, pos, doomed FROM ev
							   EXCEPT SELECT id, part, pos, doomed FROM consumed) d'),
	'0',
	'every committed row of the table was consumed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ev WHERE doomed'),
	'0', 'no row of an aborted transaction in the table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM consumed WHERE doomed'),
	'0', 'no row of an aborted transaction consumed');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ev'),
	'0', 'ids are unique in the table');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(p || ':' || coalesce(m.maxpos::text, '-') || '/' || coalesce(c.committed_position::text, '-'), ' ' ORDER BY p)
  FROM generate_series(0, 3) p
  LEFT JOIN (SELECT part, max(pos) AS maxpos FROM ev GROUP BY part) m ON m.part = p
  LEFT JOIN weir.topic_consumers c
		 ON c.topic = 'ev'::regclass AND c.consumer = 'reader' AND c.partition = p
 WHERE m.maxpos IS DISTINCT FROM c.committed_position}),
	'',
	"the consumer's committed position is the last position of each partition");
ok( $node->safe_psql(
		'postgres',
		q{SELECT sum(head_position - rows) > 0 FROM weir.topic_partitions WHERE topic = 'ev'::regclass}) eq 't',
	'aborted transactions left gaps in the positions (the run exercised them)');
note $node->safe_psql(
	'postgres',
	q{SELECT string_agg(format('part %s: rows %s head %s stable %s', partition, rows, head_position, stable_position), E'\n' ORDER BY partition)
	    FROM weir.topic_partitions WHERE topic = 'ev'::regclass});

# The server log: two intended crashes, nothing else.
my $log = slurp_file($node->logfile);
my @panic = grep { /PANIC|TRAP:/ } split /\n/, $log;
is(scalar(@panic), 0, 'no PANIC or TRAP in the server log')
  or diag join("\n", @panic[ 0 .. ($#panic < 20 ? $#panic : 20) ]);
my @signals = grep { /terminated by signal|exited with exit code/ } split /\n/, $log;
my @killed = grep { /terminated by signal 9/ } @signals;
is(scalar(@killed), 1, 'exactly one process was killed by signal 9 (the intended crash)');
my @other_signals = grep { !/terminated by signal 9/ } @signals;
is(scalar(@other_signals), 0, 'no other process died abnormally')
  or diag join("\n", @other_signals[ 0 .. ($#other_signals < 20 ? $#other_signals : 20) ]);
my @errors = grep { /\bERROR:/ } split /\n/, $log;
is(scalar(@errors), 0, 'no ERROR in the server log')
  or diag join("\n", @errors[ 0 .. ($#errors < 20 ? $#errors : 20) ]);

$node->stop;
done_testing();
