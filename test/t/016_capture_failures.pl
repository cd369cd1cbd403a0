# 016_capture_failures.pl
#
# A capture's failure cases give a clear status and leave the server
# running:
#   - wal_level below logical: weir.create_capture refuses, with a hint;
#   - an idle capture (its tables untouched while others are written) holds
#     no WAL: its slot moves on, where a slot nobody reads keeps it all;
#   - a captured table dropped: the capture goes on with its other tables
#     and weir.captures says which table went;
#   - the slot invalidated by max_slot_wal_keep_size (an open transaction
#     on a captured table holds the slot's restart point while other
#     tables write more WAL than that): the capture stops with status
#     slot_invalidated and its error, and is not restarted in a loop;
#     dropping it drops the slot.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

# wal_level replica: refused at creation
my $replica = start_weir_node('capture_replica', wal_level => 'replica');
$replica->safe_psql('postgres', 'CREATE EXTENSION weir; CREATE TABLE t (id int PRIMARY KEY)');
my ($ret, $out, $err) = $replica->psql('postgres',
	q{SELECT weir.create_capture('c', tables => ARRAY['t'::regclass])},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'create_capture fails under wal_level replica');
like($err, qr/55000: capturing changes needs wal_level "logical"/, 'with SQLSTATE 55000 and why');
like($err, qr/HINT:  Set wal_level = logical in postgresql.conf and restart the server/,
	'and a hint');
$replica->stop;

my $node = start_weir_node('capture_failures', wal_level => 'logical',
	max_replication_slots => 8, max_slot_wal_keep_size => "'64MB'",
	logical_decoding_work_mem => "'64kB'", work_mem => "'64kB'",
	'weir.launcher_naptime' => 200, log_checkpoints => 'off');
$node->safe_psql('postgres', q{
CREATE EXTENSION weir;
CREATE TABLE quiet (id int PRIMARY KEY, v text);
CREATE TABLE busy (id bigserial PRIMARY KEY, filler text);
ALTER TABLE busy ALTER COLUMN filler SET STORAGE EXTERNAL;
CREATE TABLE other (id int PRIMARY KEY);
SELECT weir.create_capture('idle', tables => ARRAY['quiet'::regclass, 'other'::regclass]);
SELECT 'reference' FROM pg_create_logical_replication_slot('unread', 'test_decoding');
});
ok($node->poll_query_until('postgres', q{SELECT status = 'running' FROM weir.captures}),
	'the capture runs');

# 48 MB of WAL on a table nobody captures, with checkpoints (which log the
# running transactions a slot's restart point moves with)
for my $round (1 .. 6)
{
	$node->safe_psql('postgres', q{
INSERT INTO busy (filler) SELECT repeat(md5(g::text), 250) FROM generate_series(1, 1000) g;
CHECKPOINT;});
}
my $unread = $node->safe_psql('postgres',
	q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots
	   WHERE slot_name = 'unread'});
cmp_ok($unread, '>', 40 * 1024 * 1024, "a slot nobody reads retains $unread bytes");
ok( $node->poll_query_until('postgres',
		q{SELECT wal_retained_bytes < 16 * 1024 * 1024 AND lag_bytes < 1024 * 1024
			FROM weir.captures WHERE name = 'idle'}),
	'the idle capture retains little WAL and has no lag');
note 'idle capture retains '
  . $node->safe_psql('postgres', q{SELECT wal_retained_bytes FROM weir.captures});
is($node->safe_psql('postgres', q{SELECT count(*) FROM idle_quiet}), '0',
	'and wrote nothing');
$node->safe_psql('postgres', q{SELECT pg_drop_replication_slot('unread')});

# a captured table dropped: the capture goes on with the other
$node->safe_psql('postgres', q{INSERT INTO quiet VALUES (1, 'before'); DROP TABLE quiet;});
$node->safe_psql('postgres', q{INSERT INTO other VALUES (1)});
ok( $node->poll_query_until('postgres', q{SELECT count(*) FROM idle_other}, '1'),
	'the capture goes on after a captured table is dropped');
is($node->safe_psql('postgres', q{SELECT count(*) FROM idle_quiet}), '1',
	'the dropped table\'s last changes are captured');
like($node->safe_psql('postgres', q{SELECT status || ': ' || warning FROM weir.captures}),
	qr/^running: captured table \d+ was dropped at /, 'weir.captures says which table went');

# a transaction far larger than memory: the reorder buffer spills it to
# disk, the capture's own buffer to a temporary file, and it is written whole
$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text);
SELECT weir.create_capture('spill', tables => ARRAY['big'::regclass]);});
ok($node->poll_query_until('postgres', q{SELECT status = 'running' FROM weir.captures WHERE name = 'spill'}),
	'a second capture runs');
$node->safe_psql('postgres',
	q{INSERT INTO big SELECT g, repeat('v', 100) FROM generate_series(1, 100000) g});
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM spill_big}, '100000'),
	'a 100,000-row transaction is captured whole');
cmp_ok($node->safe_psql('postgres', q{SELECT spill_count FROM pg_stat_replication_slots s
	JOIN weir.capture c ON c.slot_name = s.slot_name WHERE c.name = 'spill'}),
	'>', 0, 'having been spilled to disk by the reorder buffer');
is($node->safe_psql('postgres', q{SELECT count(DISTINCT commit_lsn) FROM spill_big}), '1',
	'as one transaction');

# an incompatible change of a captured table stops the capture, clearly
$node->safe_psql('postgres', q{INSERT INTO big VALUES (0, 'before')});
$node->safe_psql('postgres', q{ALTER TABLE big ALTER COLUMN id TYPE bigint});
$node->safe_psql('postgres', q{INSERT INTO big VALUES (-1, 'after')});
ok( $node->poll_query_until('postgres',
		q{SELECT status = 'failed' AND last_error ~ 'changed type' FROM weir.captures WHERE name = 'spill'}),
	'a column whose type changed stops the capture with its error');
is($node->safe_psql('postgres', q{SELECT count(*) FROM spill_big WHERE id = 0}), '1',
	'the changes before it are captured');
sleep 2;
is($node->safe_psql('postgres', q{SELECT worker_pid IS NULL AND NOT c.enabled
	FROM weir.captures s JOIN weir.capture c USING (name) WHERE name = 'spill'}), 't',
	'and it is not restarted in a loop');
$node->safe_psql('postgres', q{SELECT weir.drop_capture('spill')});
ok( $node->poll_query_until('postgres', q{SELECT count(*) FROM pg_replication_slots
	WHERE slot_name LIKE 'weir_capture_%'}, '1'),
	'its slot is dropped');

# the slot invalidated: an open transaction on a captured table holds the
# restart point while more than max_slot_wal_keep_size is written
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe('INSERT INTO other VALUES (2)');
for my $round (1 .. 12)
{
	$node->safe_psql('postgres', q{
INSERT INTO busy (filler) SELECT repeat(md5(g::text), 250) FROM generate_series(1, 1000) g;
SELECT pg_switch_wal();
CHECKPOINT;});
}
ok( $node->poll_query_until('postgres',
		q{SELECT status = 'slot_invalidated' FROM weir.captures WHERE name = 'idle'}),
	'an invalidated slot stops the capture with status slot_invalidated');
like($node->safe_psql('postgres', q{SELECT last_error FROM weir.captures}),
	qr/replication slot "weir_capture_\d+_\d+" of capture "idle" has been invalidated/,
	'and says why');
$holder->query_safe('COMMIT');
$holder->quit;
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server keeps running');
sleep 2;
is($node->safe_psql('postgres', q{SELECT worker_pid IS NULL AND NOT c.enabled
	FROM weir.captures s JOIN weir.capture c USING (name)}), 't',
	'and it is not restarted in a loop');
$node->safe_psql('postgres', q{SELECT weir.drop_capture('idle')});
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'weir_capture_%'}, '0'),
	'dropping it drops its slot');

$node->stop;
done_testing();
