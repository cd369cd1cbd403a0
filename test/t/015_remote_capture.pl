# 015_remote_capture.pl
#
# A remote capture through restarts of both sides.  A publisher (wal_level
# logical, no weir) has a table t and a publication p; a weir server
# captures it into topic r1_t.  Transactions of inserts, updates and
# deletes run on the publisher in three rounds: after the first the
# publisher stops with an immediate shutdown and starts again; after the
# second the weir server does.  Each transaction also records on the
# publisher, in a table outside the publication, how many rows it
# inserted, updated and deleted.  At the end:
#   - the topic's I, U and D rows number exactly the row changes made (no
#     transaction lost or written twice), and a B row before each U;
#   - its transactions are exactly those made (distinct commit_lsn);
#   - replaying the topic per key (the newest change of each id in
#     commit_lsn, pos order; a delete removes it) gives the publisher's
#     table, row for row;
#   - a last value over the topic equals the publisher's table, and
#     10-second windows of count and sum per group equal GROUP BY over it
#     (t is REPLICA IDENTITY FULL: updates and deletes are taken back);
#   - dropping the capture drops its slot on the publisher.
#
# WEIR_TAP_ROWS overrides the transactions per round (100).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $txns = env_or('WEIR_TAP_ROWS', 100);

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;
$pub->safe_psql(
	'postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text, n int, grp int NOT NULL DEFAULT 0,
				ts timestamptz NOT NULL DEFAULT clock_timestamp());
-- updates carry their old row, which windows take back
ALTER TABLE t REPLICA IDENTITY FULL;
CREATE TABLE changes (k int PRIMARY KEY, ins int, upd int, del int);
CREATE PUBLICATION p FOR TABLE t;
});

my $node = start_weir_node('remote_capture', crash_test_conf(20));
my $conninfo = $pub->connstr('postgres');
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
SELECT weir.create_capture('r1', publication => 'p', conninfo => \$\$$conninfo\$\$);
-- pipelines over the remote changes: a mirror of t, and 10-second windows
-- of t's rows per group by their (never updated) time
SELECT weir.create_last_value('r1_mirror', 'r1_t', key => 'id', event_time => 'commit_time',
							  columns => 'v, n, grp, ts', out_of_orderness => '5 seconds');
SELECT weir.create_pipeline('r1_windows', 'r1_t', key => 'grp', event_time => 'ts',
							windowing => weir.tumbling('10 seconds'),
							aggregates => 'count(*) AS c, sum(n) AS total',
							emit => 'updates', out_of_orderness => '30 seconds',
							allowed_lateness => '1 day');
});
is($node->safe_psql('postgres', 'SELECT key_columns FROM weir.capture_table'),
	'{id}', 'the key is the primary key');
$node->poll_query_until('postgres',
	q{SELECT status = 'running' FROM weir.captures WHERE name = 'r1'})
  or die 'the capture did not start';
like($node->safe_psql('postgres', q{SELECT last_error IS NULL FROM weir.capture}), qr/t/,
	'no error once running');

# Transaction $k: 10 new rows, an update of about a 13th of the older ones
# and a delete of about a 17th; it records its counts in changes.
my $next = 0;
sub round
{
	my $sql = '';
	for my $i (1 .. $txns)
	{
		my $k = ++$next;
		$sql .= qq{
DO \$\$
DECLARE i int; u int; d int;
BEGIN
	INSERT INTO t (id, v, n, grp)
		SELECT g, 'v' || g || repeat('x', g % 50), g, g % 5 FROM generate_series($k * 10 + 1, $k * 10 + 10) g;
	GET DIAGNOSTICS i = ROW_COUNT;
	UPDATE t SET n = n + 1, v = v || '.' WHERE id % 13 = $k % 13 AND id <= $k * 10;
	GET DIAGNOSTICS u = ROW_COUNT;
	DELETE FROM t WHERE id % 17 = $k % 17 AND id <= $k * 10 - 100;
	GET DIAGNOSTICS d = ROW_COUNT;
	INSERT INTO changes VALUES ($k, i, u, d);
END
\$\$;};
	}
	$pub->safe_psql('postgres', $sql);
	return;
}

round();
my $pid_before = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.captures WHERE name = 'r1'});
$pub->stop('immediate');
# the worker notices, says so, and waits to reconnect
ok( $node->poll_query_until('postgres',
		q{SELECT status = 'failed' AND last_error IS NOT NULL FROM weir.captures WHERE name = 'r1'}),
	'a lost publisher shows as failed with its error');
$pub->start;
ok( $node->poll_query_until('postgres',
		q{SELECT status = 'running' AND connects >= 2 FROM weir.captures WHERE name = 'r1'}),
	'the capture reconnects in its own process, with back-off');
is($node->safe_psql('postgres', q{SELECT worker_pid FROM weir.captures WHERE name = 'r1'}),
	$pid_before, 'the same worker reconnected');
round();
$node->stop('immediate');
$node->start;
round();

my $expected = $pub->safe_psql('postgres', 'SELECT sum(ins + upd + del) FROM changes');
ok($expected > 3 * $txns * 10, "the publisher made $expected row changes");
$node->poll_query_until('postgres',
	q{SELECT count(*) FROM r1_t WHERE change_op IN ('I', 'U', 'D')}, $expected)
  or diag 'the topic did not reach the expected count';

is($node->safe_psql('postgres', q{SELECT count(*) FROM r1_t WHERE change_op IN ('I', 'U', 'D')}),
	$expected, 'each row change is in the topic once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM r1_t WHERE change_op = 'B'}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM r1_t WHERE change_op = 'U'}),
	'each update carries its old row (REPLICA IDENTITY FULL)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM r1_t WHERE change_op = 'T'}),
	0, 'no truncates');
is($node->safe_psql('postgres', q{SELECT count(DISTINCT commit_lsn) FROM r1_t}),
	3 * $txns, 'each transaction is in the topic');
is($node->safe_psql('postgres', q{SELECT string_agg(x, ',') FROM (
	SELECT change_op || count(*) AS x FROM r1_t WHERE change_op <> 'B'
	 GROUP BY change_op ORDER BY change_op) s}),
	$pub->safe_psql('postgres', q{SELECT 'D' || sum(del) || ',I' || sum(ins) || ',U' || sum(upd) FROM changes}),
	'inserts, updates and deletes as made');

my $replayed = $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s|%s|%s', id, v, n), E'\n' ORDER BY id)
  FROM (SELECT DISTINCT ON (id) id, v, n, change_op
		  FROM r1_t WHERE change_op <> 'B'
		 ORDER BY id, commit_lsn DESC, pos DESC) last
 WHERE change_op <> 'D'});
my $final = $pub->safe_psql('postgres',
	q{SELECT string_agg(format('%s|%s|%s', id, v, n), E'\n' ORDER BY id) FROM t});
ok($replayed eq $final, 'replaying the topic gives the publisher\'s table');

# the pipelines over the remote changes: the mirror is the publisher's table,
# the windows GROUP BY over it
$node->safe_psql('postgres', 'SELECT count(*) FROM weir.checkpoint()');
my $rows = $pub->safe_psql('postgres',
	q{SELECT string_agg(format('(%s, %L, %s, %s, %L)', id, v, n, grp, ts), ', ') FROM t});
$node->safe_psql('postgres', qq{
CREATE TABLE pub_t (id int, v text, n int, grp int, ts timestamptz);
INSERT INTO pub_t VALUES $rows;
CREATE TABLE oracle_r1_mirror AS SELECT id, v, n, grp, ts FROM pub_t;
CREATE TABLE oracle_r1_windows AS
	SELECT grp, date_bin('10 seconds', ts, timestamptz '2000-01-01 00:00:00+00') AS window_start,
		   count(*) AS c, sum(n) AS total
	  FROM pub_t GROUP BY 1, 2;
});
compare_with_oracle($node, pipeline => 'r1_mirror', cols => 'id, v, n, grp, ts', order => '1');
compare_with_oracle($node, pipeline => 'r1_windows', cols => 'grp, window_start, c, total',
	order => '1, 2');

unlike($node->safe_psql('postgres', q{SELECT row_to_json(c)::text FROM weir.captures c}),
	qr/port=/, 'weir.captures does not show the connection string');

# a failing create_capture keeps its statement, which names the password,
# out of the server log (log_statement, on in these tests, is switched off
# for it: that one logs before anything runs, an administrator's choice)
my $offset = -s $node->logfile;
my ($failed) = $node->psql('postgres', q{SET log_statement = 'none';
SELECT weir.create_capture('unreachable', publication => 'p',
	conninfo => 'host=/nonexistent port=1 dbname=postgres user=nobody password=sekrit_pw')});
isnt($failed, 0, 'a capture of a server that cannot be reached fails');
unlike(slurp_file($node->logfile, $offset), qr/sekrit_pw/,
	'its password is not in the server log');

$node->safe_psql('postgres', q{SELECT weir.drop_capture('r1')});
$pub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_replication_slots})
  or diag 'the remote slot was not dropped';
is($pub->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'), 0,
	'dropping the capture dropped its remote slot');
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.capture_remote_slot_to_drop'), 0,
	'and forgot it');

$node->stop;
$pub->stop;
done_testing();
