# 002_topic_lifecycle.pl
#
# The life of a topic around the server:
#  (a) CREATE EXTENSION refuses a server that did not preload weir (55000,
#      with a hint about shared_preload_libraries);
#  (b) a transaction that produced to a topic cannot be prepared (0A000),
#      and it leaves nothing behind; one that did not produce can;
#  (c) retention: the launcher deletes consumed rows older than the
#      topic's retention, keeps the rest and the newest row of each
#      partition; positions are never reused after a restart or a crash;
#  (d) topics are append-only: UPDATE, DELETE and TRUNCATE fail;
#  (e) a producer's registration ends with its transaction, whether it
#      rolls back after a failed statement or its backend is terminated;
#      COPY routes rows by key as INSERT does.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('lifecycle');
$node->init;
$node->append_conf('postgresql.conf', "max_prepared_transactions = 4\n");
$node->start;

# Run SQL that must fail; return its stderr (with the SQLSTATE shown).
sub fails
{
	my ($sql, $name) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", on_error_stop => 1);
	isnt($ret, 0, "$name: fails");
	return $err;
}

########################################################################
# (a) without shared_preload_libraries
########################################################################

my $err = fails('CREATE EXTENSION weir;', 'CREATE EXTENSION without preloading');
like($err, qr/ERROR:\s+55000:/, 'CREATE EXTENSION without preloading: SQLSTATE 55000');
like($err, qr/HINT:.*shared_preload_libraries/,
	'CREATE EXTENSION without preloading: the hint names shared_preload_libraries');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'weir'}),
	'0', 'the failed CREATE EXTENSION left no weir schema');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still fine');

########################################################################
# preload weir
########################################################################

$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 100
});
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION weir');
pass('CREATE EXTENSION with weir preloaded');

########################################################################
# (b) PREPARE TRANSACTION
########################################################################

$node->safe_psql(
	'postgres', q{
SELECT weir.create_topic('tp', 'v text');
CREATE TABLE plain (v text);
INSERT INTO tp (v) VALUES ('before');
});

$err = fails(q{
BEGIN;
INSERT INTO tp (v) VALUES ('prepared?');
PREPARE TRANSACTION 'weir_producer';
}, 'PREPARE after producing');
like($err, qr/ERROR:\s+0A000:/, 'PREPARE after producing: SQLSTATE 0A000');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'no prepared transaction left');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tp WHERE v = 'prepared?'}),
	'0', 'the rows of the refused transaction are gone');
is( $node->safe_psql(
		'postgres',
		q{SELECT open_producers FROM weir.topic_partitions WHERE topic = 'tp'::regclass}),
	'0',
	'the refused transaction no longer holds a position');

$err = fails(q{
BEGIN;
INSERT INTO tp (v) VALUES ('in a subtransaction');
SAVEPOINT s;
INSERT INTO tp (v) VALUES ('in a savepoint');
RELEASE SAVEPOINT s;
PREPARE TRANSACTION 'weir_producer_sub';
}, 'PREPARE after producing in a released savepoint');
like($err, qr/ERROR:\s+0A000:/, 'PREPARE after producing in a savepoint: SQLSTATE 0A000');

$node->safe_psql('postgres', q{INSERT INTO tp (v) VALUES ('after')});
is( $node->safe_psql(
		'postgres', q{SELECT string_agg(v, ',' ORDER BY pos) FROM weir.read(NULL::tp, 0)}),
	'before,after',
	'the reader is not held back by the refused transactions');

$node->safe_psql(
	'postgres', q{
BEGIN;
INSERT INTO plain VALUES ('prepared');
SELECT count(*) FROM weir.read(NULL::tp, 0);
PREPARE TRANSACTION 'weir_not_producer';
});
is($node->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts'),
	'weir_not_producer', 'a transaction that did not produce (only read) can be prepared');
$node->safe_psql('postgres', q{COMMIT PREPARED 'weir_not_producer'});
is($node->safe_psql('postgres', 'SELECT v FROM plain'), 'prepared', 'and committed');

########################################################################
# (d) append-only
########################################################################

for my $stmt (
	q{UPDATE tp SET v = 'changed'},
	q{DELETE FROM tp},
	q{TRUNCATE tp},
	q{UPDATE tp SET pos = pos + 100})
{
	$err = fails($stmt, $stmt);
	like($err, qr/ERROR:\s+[0-9A-Z]{5}:/, "$stmt: an error with a SQLSTATE");
	like($err, qr/\btp\b/, "$stmt: the error names the topic");
	note "$stmt: $err";
}
is($node->safe_psql('postgres', 'SELECT string_agg(v, \',\' ORDER BY pos) FROM tp'),
	'before,after', 'the topic is unchanged');

########################################################################
# (e) a producer's position is released however its transaction ends, and
# COPY produces like INSERT
########################################################################

$node->safe_psql('postgres',
	q{SELECT weir.create_topic('tc', 'id integer, v text', partitions => 3, key => 'id')});

# a statement that fails half-way: the transaction holds positions until it
# is rolled back
my $prod = $node->background_psql('postgres', on_error_stop => 0);
$prod->query(q{BEGIN; INSERT INTO tc (id, v) SELECT i, (10 / (3 - i))::text FROM generate_series(1, 5) i});
cmp_ok($node->safe_psql('postgres',
		q{SELECT sum(open_producers) FROM weir.topic_partitions WHERE topic = 'tc'::regclass}),
	'<=', 3, 'a failed statement: at most one registration per partition');
$prod->{stderr} = '';    # BackgroundPsql keeps stderr across queries
$prod->query_safe('ROLLBACK');
is($node->safe_psql('postgres',
		q{SELECT sum(open_producers) FROM weir.topic_partitions WHERE topic = 'tc'::regclass}),
	'0', 'ROLLBACK after a failed statement releases the positions');

# a producer whose backend is terminated inside its transaction
$prod->query_safe(q{BEGIN; INSERT INTO tc (id, v) SELECT i, 'doomed' FROM generate_series(1, 5) i});
my $prod_pid = $prod->query_safe('SELECT pg_backend_pid()');
is($node->safe_psql('postgres',
		q{SELECT sum(open_producers) > 0 FROM weir.topic_partitions WHERE topic = 'tc'::regclass}),
	't', 'an open producer is registered');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($prod_pid)");
ok( $node->poll_query_until(
		'postgres',
		q{SELECT sum(open_producers) FROM weir.topic_partitions WHERE topic = 'tc'::regclass},
		'0'),
	'a terminated producer releases its positions');
$prod->quit;

# COPY routes by key exactly as INSERT does
$node->safe_psql('postgres', q{
COPY tc (id, v) FROM STDIN;
1	copy-1
2	copy-2
3	copy-3
4	copy-4
5	copy-5
6	copy-6
7	copy-7
8	copy-8
9	copy-9
\.
INSERT INTO tc (id, v) SELECT i, 'insert-' || i FROM generate_series(1, 9) i;
});
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE c.part <> i.part)
  FROM tc c JOIN tc i ON i.id = c.id AND i.v LIKE 'insert-%'
 WHERE c.v LIKE 'copy-%'}),
	'0',
	'COPY and INSERT send a key to the same partition');
is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT sum(last) FROM (SELECT max(pos) AS last FROM tc GROUP BY part) m)
	   > (SELECT count(*) FROM tc)}),
	't',
	'the aborted rows left gaps in the positions');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(v, ',' ORDER BY part, pos)
  FROM (SELECT r.* FROM generate_series(0, 2) p, LATERAL weir.read(NULL::tc, p) r) s
 WHERE v NOT LIKE 'copy-%' AND v NOT LIKE 'insert-%'}),
	'',
	'no aborted row is readable');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM generate_series(0, 2) p, LATERAL weir.read(NULL::tc, p) r}),
	'18', 'every committed row is readable');

########################################################################
# (c) retention
########################################################################

# rt: retention 1 second.  Partition 0 gets positions 1..10, consumer c
# commits 6 and consumer slow 3; partition 1 gets 1..5 and both consumers
# commit 5 (all of it).  Rows go up to the lowest consumer, and the newest
# row of each partition stays.
# rt_long: retention 1 hour, fully consumed: nothing may go.
$node->safe_psql(
	'postgres', q{
SELECT weir.create_topic('rt', 'v integer', partitions => 2, retention => '1 second');
SELECT weir.create_topic('rt_long', 'v integer', retention => '1 hour');
});
is( $node->safe_psql(
		'postgres', q{
WITH i AS (INSERT INTO rt (part, v)
		   SELECT 0, i FROM generate_series(1, 10) i
		   UNION ALL
		   SELECT 1, i FROM generate_series(1, 5) i
		   RETURNING part, pos)
SELECT string_agg(part || ':' || pos, ',' ORDER BY part, pos) FROM i}),
	'0:1,0:2,0:3,0:4,0:5,0:6,0:7,0:8,0:9,0:10,1:1,1:2,1:3,1:4,1:5',
	'positions start at 1 in each partition');
$node->safe_psql(
	'postgres', q{
INSERT INTO rt_long (v) SELECT i FROM generate_series(1, 5) i;
SELECT weir.seek('rt', 'c', 0, 6);
SELECT weir.seek('rt', 'c', 1, 5);
SELECT weir.seek('rt', 'slow', 0, 3);
SELECT weir.seek('rt', 'slow', 1, 5);
SELECT weir.seek('rt_long', 'c', 0, 5);
});

ok( $node->poll_query_until(
		'postgres',
		q{SELECT string_agg(part || ':' || pos, ',' ORDER BY part, pos) FROM rt},
		'0:4,0:5,0:6,0:7,0:8,0:9,0:10,1:5'),
	'the launcher deleted the rows every consumer consumed that are older than '
	  . 'the retention, kept the others and the newest row of each partition');
is($node->safe_psql('postgres', q{SELECT weir.run_retention('rt')}),
	'0', 'retention finds nothing more to delete in rt');
is($node->safe_psql('postgres', q{SELECT weir.run_retention('rt_long')}),
	'0', 'rows younger than the retention are not deleted');
is($node->safe_psql('postgres', 'SELECT count(*) FROM rt_long'),
	'5', 'the topic with a long retention still holds every row');
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(partition || ':' || rows || ':' || head_position, ',' ORDER BY partition)
		    FROM weir.topic_partitions WHERE topic = 'rt'::regclass}),
	'0:7:10,1:1:5',
	'topic_partitions: rows and head positions after retention');

# positions are never reused: after a clean restart ...
my $old_max = $node->safe_psql('postgres',
	q{SELECT string_agg(part || ':' || max, ',' ORDER BY part) FROM (SELECT part, max(pos) FROM rt GROUP BY part) m});
is($old_max, '0:10,1:5', 'the last positions before the restart');
$node->restart;
$node->safe_psql('postgres', q{INSERT INTO rt (part, v) VALUES (0, 100), (1, 100)});
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(part || ':' || (pos > CASE part WHEN 0 THEN 10 ELSE 5 END), ',' ORDER BY part)
  FROM rt WHERE v = 100}),
	'0:true,1:true',
	'after a restart, new positions continue above the old ones');

# ... and after a crash, with positions held by an open transaction and a
# committed row after them.
my $psql = $node->background_psql('postgres');
$psql->query_safe(q{BEGIN; INSERT INTO rt (part, v) VALUES (0, 200), (1, 200)});
$node->safe_psql('postgres', q{INSERT INTO rt (part, v) VALUES (0, 300), (1, 300)});
$node->stop('immediate');
$psql->quit;
$node->start;
$node->safe_psql('postgres', q{INSERT INTO rt (part, v) VALUES (0, 400), (1, 400)});
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(part || ':' || v, ',' ORDER BY part, pos) FROM rt WHERE v >= 100}),
	'0:100,0:300,0:400,1:100,1:300,1:400',
	'after a crash, new positions continue above the last committed ones');
note $node->safe_psql('postgres',
	q{SELECT string_agg(part || ':' || pos || ':' || v, ',' ORDER BY part, pos) FROM rt});

# The consumer of rt reads on from its committed positions, in position order.
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(part || ':' || v, ',' ORDER BY part, pos) FROM weir.poll(NULL::rt, 'c')}),
	'0:7,0:8,0:9,0:10,0:100,0:300,0:400,1:100,1:300,1:400',
	'the consumer continues after its committed positions across the restarts');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(p.part || ':' || (p.maxpos = c.committed_position), ',' ORDER BY p.part)
  FROM (SELECT part, max(pos) AS maxpos FROM rt GROUP BY part) p
  JOIN weir.topic_consumers c ON c.topic = 'rt'::regclass AND c.consumer = 'c' AND c.partition = p.part}),
	'0:true,1:true',
	'the committed positions are the last ones polled');

########################################################################
# dropping
########################################################################

$node->safe_psql('postgres', q{SELECT weir.drop_topic('rt_long'); DROP TABLE tp; DROP TABLE tc;});
is( $node->safe_psql(
		'postgres', q{SELECT string_agg(topic::text, ',' ORDER BY topic::text) FROM weir.topics}),
	'rt', 'weir.drop_topic and DROP TABLE both forget the topic');
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.topic'),
	'1', 'the catalog holds one topic');

my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP:|terminated by signal/, 'no crash in the server log');

$node->stop;
done_testing();
