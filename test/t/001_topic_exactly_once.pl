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
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target    = $ENV{WEIR_TAP_ROWS} // 200_000;
my $seed      = $ENV{WEIR_TAP_SEED} // (int(time()) ^ $$);
my $producers = 8;
my $deadline  = 300;    # seconds for the produce phase, crashes included

my $node = start_weir_node('exactly_once', crash_test_conf(16));

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
my $producer_script = bench_script(
	'weir_producer.sql', q{\set n random(1, 150)
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
my $reader_script = bench_script(
	'weir_reader.sql', q{INSERT INTO consumed SELECT id, part, pos, doomed FROM weir.poll(NULL::ev, 'reader', 500);
\sleep 5 ms
});

# Crash at random moments of the run, placed by progress.
srand($seed);
note "seed $seed (set WEIR_TAP_SEED to place the crashes the same way)";
my $crash1_at = int($target * (0.15 + rand(0.20)));
my $crash2_at = int($target * (0.50 + rand(0.25)));
note "crash 1 at >= $crash1_at rows, crash 2 at >= $crash2_at rows";

# Crash 1 kills -9 a producer backend, preferably inside a transaction;
# crash 2 is an immediate stop.  At the end the producers stop (abandoned
# transactions abort), then the readers.
my $run = produce_with_crashes(
	node    => $node,
	benches => [
		[ 'producer', $producer_script, $producers ],
		[ 'reader',   $reader_script,   2 ]
	],
	rows     => sub { try_count($node, 'SELECT count(*) FROM ev') },
	target   => $target,
	deadline => $deadline,
	unit     => 'committed rows',
	plan     => [ { at => $crash1_at, kind => 'kill' }, { at => $crash2_at, kind => 'immediate' } ],
	jitter   => 0,
	victim   => sub {
		my $pid = $node->safe_psql(
			'postgres', q{
SELECT pid FROM pg_stat_activity
 WHERE application_name = 'weir_producer'
 ORDER BY state = 'idle in transaction' DESC, xact_start IS NULL, random()
 LIMIT 1});
		return $pid eq '' ? () : ($pid, 'a producer backend');
	});

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
# the consumed rows (sink) against the table (oracle): counts, and sets
# both ways (that nothing was consumed twice is checked next)
compare_with_oracle(
	$node,
	label    => 'consumed rows vs the topic table',
	sink     => 'consumed',
	oracle   => 'ev',
	cols     => 'id, part, pos, doomed',
	order    => '2, 3',
	except   => 'EXCEPT',
	nonempty => 0);
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
check_crash_log($node, 1);

$node->stop;
done_testing();
