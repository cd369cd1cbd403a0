# 026_dump_restore.pl
#
# pg_dump and pg_restore of a database that uses weir (issue 21, part 1).
#
# A source cluster runs a pipeline of each kind while two producers write
# two topics:
#
#   ev   (n, k, amount, eid, ts), 4 partitions keyed by k
#   pay  (n, paid, ts), 2 partitions keyed by n, owned by role alice
#   moods (i, m mood, ts), 1 partition, with a column of a user enum type
#
#   win  tumbling 1-minute windows per k of count(*), sum(amount),
#        max(amount), with a late-records table
#   dd   deduplication by eid (two records share each eid), 1-hour horizon,
#        with a late-records table
#   lv   last value per k
#   jn   ev JOIN pay ON n, r.ts BETWEEN l.ts - 5 s AND l.ts + 5 s
#   pj   projection of pay (owned by alice)
#   md   last value of m per i (its state holds rows, enum OIDs in them)
#
# The data comes from a deterministic generator, in chunks of 100 ev rows
# (and a third as many pay rows), one transaction each, numbered by a
# sequence: whatever a cluster holds of it, the rest is the chunks it does
# not hold.  Before the dumps a late record (a day before the others) and a
# poison record (no event time) are written and processed: a late record
# for win and dd, a dead letter for each of win, dd, lv and jn; a consumer
# polls ev once.
#
# While the producers run, the source is dumped twice: custom format
# (pg_dump -Fc) and plain.  A second cluster, with weir preloaded and
# weir.start_pipelines = off, gets the custom dump through pg_restore
# --single-transaction into database restored_c, and the plain dump
# through psql into database restored_p; the plain dump must hold every
# weir catalog table's rows (COPY) and each identity sequence's value.
# Then, for each restored database in turn (weir.database names it):
#   - nothing runs while weir.start_pipelines is off;
#   - what was restored is there: topics, consumer positions, pipelines
#     with their owners, definitions, positions and checkpointed state,
#     dead letters and late records, and new ids follow the restored ones;
#   - weir.start_pipelines = on: every pipeline restores its checkpoint and
#     runs, except md, which refuses its state (the enum's OIDs changed)
#     with an error that says why;
#   - the restored definitions got their dependencies back (ALTER of a
#     sink column a pipeline writes is refused);
#   - the rest of the data is fed, a record per partition far in the
#     future flushes windows and joins, every pipeline takes a checkpoint,
#     and every sink equals the SQL oracle over all the data, row for row;
#     late records and dead letters are exactly those of the dump.
# The source itself passes the same comparisons (the oracle is right).
# Last, the custom dump goes through pg_restore without
# --single-transaction into another database of the source cluster
# (copy_n): the same checks of what was restored (the pipelines' id
# sequence instead of a new pipeline, which only weir.database may have),
# and its topic takes a new row after the restored ones.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $base = q{timestamptz '2024-01-01 00:00:00+00'};
my @ev_pipelines = ('win', 'dd', 'lv', 'jn');
my @running      = (@ev_pipelines, 'pj');
my @catalogs     = qw(topic consumer_position topic_time_index pipeline pipeline_position
  topic_watermark pipeline_chunk checkpoints pipeline_counters restores dead_letters
  pipeline_skip sink_deletes sink_deletes_trimmed pipeline_remote_sink
  remote_sink_to_resolve capture capture_connection capture_table
  capture_remote_slot_to_drop);

my $src = start_weir_node(
	'dump_source',
	'weir.launcher_naptime' => 200,
	'weir.read_ahead'       => 'off',
	max_worker_processes    => 24,
	log_statement           => 'none');

$src->safe_psql(
	'postgres', qq{
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO alice;
CREATE EXTENSION weir;
CREATE TYPE mood AS ENUM ('sad', 'calm', 'glad');
CREATE SEQUENCE chunk_seq;
CREATE TABLE control (stop boolean NOT NULL);
INSERT INTO control VALUES (false);
SELECT weir.create_topic('ev', 'n bigint, k int, amount int, eid bigint, ts timestamptz',
						 partitions => 4, key => 'k');
SET ROLE alice;
SELECT weir.create_topic('pay', 'n bigint, paid int, ts timestamptz', partitions => 2, key => 'n');
RESET ROLE;
SELECT weir.create_topic('moods', 'i int, m mood, ts timestamptz');

-- chunk c of the data: ev rows n = 100 c + 1 .. 100 c + 100, and a pay row
-- for every third n, from 6 s before to 6 s after its ev row
CREATE FUNCTION ev_rows(c bigint)
RETURNS TABLE (n bigint, k int, amount int, eid bigint, ts timestamptz)
	LANGUAGE sql IMMUTABLE AS \$\$
	SELECT n, (n % 50)::int, ((n * 7919) % 1000)::int, n / 2, $base + (n / 2) * interval '200 ms'
	  FROM generate_series(c * 100 + 1, c * 100 + 100) n \$\$;
CREATE FUNCTION pay_rows(c bigint) RETURNS TABLE (n bigint, paid int, ts timestamptz)
	LANGUAGE sql IMMUTABLE AS \$\$
	SELECT n, ((n * 31) % 97)::int,
		   $base + (n / 2) * interval '200 ms' + (n % 13 - 6) * interval '1 s'
	  FROM generate_series(c * 100 + 1, c * 100 + 100) n WHERE n % 3 = 0 \$\$;
CREATE PROCEDURE write_chunk(c bigint) LANGUAGE sql AS \$\$
	INSERT INTO ev (n, k, amount, eid, ts) SELECT * FROM ev_rows(c);
	INSERT INTO pay (n, paid, ts) SELECT * FROM pay_rows(c) \$\$;
-- a producer: the next chunk, one transaction each, until told to stop
CREATE PROCEDURE produce() LANGUAGE plpgsql AS \$\$
BEGIN
	WHILE NOT (SELECT stop FROM control) LOOP
		CALL write_chunk(nextval('chunk_seq'));
		COMMIT;
		PERFORM pg_sleep(0.03);
	END LOOP;
END \$\$;
-- the chunks up to `last` a database does not hold, in order
CREATE PROCEDURE write_missing(last bigint) LANGUAGE plpgsql AS \$\$
DECLARE
	c bigint;
BEGIN
	FOR c IN SELECT g FROM generate_series(1, last) g
			  WHERE NOT EXISTS (SELECT FROM ev WHERE n = g * 100 + 1) ORDER BY g LOOP
		CALL write_chunk(c);
		COMMIT;
	END LOOP;
END \$\$;

SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*), sum(amount), max(amount)',
							out_of_orderness => '2 minutes', late_records => 'win_late');
SELECT weir.create_dedup('dd', 'ev', key => 'eid', event_time => 'ts', horizon => '1 hour',
						 columns => 'eid, ts', out_of_orderness => '2 minutes',
						 late_records => 'dd_late');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 'ts',
							  columns => 'n, amount, ts', out_of_orderness => '2 minutes');
SELECT weir.create_join('jn', 'ev', 'pay', left_key => 'n', right_key => 'n',
						left_event_time => 'ts', right_event_time => 'ts',
						right_before => '5 seconds', right_after => '5 seconds',
						columns => 'l.n, l.amount, r.paid, r.ts AS paid_at',
						out_of_orderness => '2 minutes');
SET ROLE alice;
SELECT weir.create_projection('pj', 'pay', columns => 'n, paid', filter => 'paid % 2 = 0');
RESET ROLE;
SELECT weir.create_last_value('md', 'moods', key => 'i', event_time => 'ts', columns => 'm');
});
wait_pipelines_running($src, 6);
my $su = $src->safe_psql('postgres', 'SELECT current_user');

# two producers, in the background until control.stop
my @producers;
for my $i (1 .. 2)
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $src->connstr('postgres'), '-c', 'CALL produce()' ],
		'<', \undef, '>', \$out, '2>', \$err);
	push @producers, [ $h, \$out, \$err ];
}

sub chunks_written
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, 'SELECT count(*) / 100 FROM ev WHERE n > 0');
}

ok($src->poll_query_until('postgres', 'SELECT count(*) >= 3000 FROM ev WHERE n > 0'),
	'the producers write');

# A record is late once the watermark has passed its window: wait until the
# pipelines have read far enough (the producers' rows reach base + 5 min at
# 3000 rows, watermark = that - 2 min), not only until the topic holds them.
# A worker that starts behind the producers (a loaded machine) would
# otherwise read the late record before any watermark and count it.
ok( $src->poll_query_until(
		'postgres', qq{
SELECT bool_and(coalesce(watermark > $base + interval '1 minute', false))
  FROM weir.pipelines WHERE name IN ('win', 'dd', 'lv', 'jn')}),
	'the event-time pipelines\' watermarks passed base + 1 minute');

# a late record, a poison record (no event time), the enum topic's rows,
# and a consumer's position, all processed before the dumps
$src->safe_psql(
	'postgres', qq{
INSERT INTO ev (n, k, amount, eid, ts) VALUES (-1, 0, 1, -1, $base - interval '1 day');
INSERT INTO ev (n, k, amount, eid, ts) VALUES (-2, 1, 1, -2, NULL);
INSERT INTO moods (i, m, ts) SELECT i % 7, m, $base + i * interval '1 s'
  FROM generate_series(1, 30) i, unnest(enum_range(NULL::mood)) m;
BEGIN;
SELECT count(*) FROM weir.poll(NULL::ev, 'c1', 500);
COMMIT;
});
ok( $src->poll_query_until(
		'postgres', q{
SELECT (SELECT count(*) FROM weir.dead_letters) = 4
   AND (SELECT count(*) FROM win_late) = 1 AND (SELECT count(*) FROM dd_late) = 1
   AND (SELECT count(*) FROM weir.pipeline_chunk c JOIN weir.pipeline p ON p.id = c.pipeline_id
		 WHERE p.name = 'md') > 0}),
	'the source has its dead letters, late records and the enum pipeline\'s state checkpointed');
my $consumer = $src->safe_psql('postgres',
	q{SELECT string_agg(partition || ':' || committed_position, ',' ORDER BY partition)
		FROM weir.topic_consumers WHERE consumer = 'c1'});

# the dumps, while the producers write and the pipelines checkpoint
my $tmp       = PostgreSQL::Test::Utils::tempdir;
my $custom    = "$tmp/source.dump";
my $plain     = "$tmp/source.sql";
my $before    = chunks_written($src, 'postgres');
my $ckpt_before = $src->safe_psql('postgres', 'SELECT count(*) FROM weir.checkpoints');
$src->command_ok([ 'pg_dump', '-Fc', '-f', $custom, '-d', $src->connstr('postgres') ],
	'pg_dump -Fc during the run');
$src->command_ok([ 'pg_dump', '-f', $plain, '-d', $src->connstr('postgres') ],
	'pg_dump (plain) during the run');
ok($src->poll_query_until('postgres', 'SELECT count(*) / 100 > ' . ($before + 20) . ' FROM ev WHERE n > 0'),
	'the producers wrote on after the dumps');
cmp_ok($src->safe_psql('postgres', 'SELECT count(*) FROM weir.checkpoints'),
	'>', $ckpt_before, 'the pipelines checkpointed while the dumps ran');
$src->safe_psql('postgres', 'UPDATE control SET stop = true');
for my $p (@producers)
{
	$p->[0]->finish;
	is(${ $p->[2] }, '', 'a producer ended without error');
}
my $last = $src->safe_psql('postgres', 'SELECT (max(n) - 1) / 100 FROM ev');
is($src->safe_psql('postgres', 'SELECT count(*) FROM ev WHERE n > 0'),
	$last * 100, "the source holds chunks 1 to $last, whole");
note "source: $last chunks; " . $before . ' before the dumps';

# The plain dump has every weir catalog's rows and identity sequence.
my $dump = slurp_file($plain);
for my $t (@catalogs)
{
	like($dump, qr/^COPY weir\.$t \(/m, "the plain dump holds weir.${t}'s rows");
}
for my $t (qw(topic pipeline restores capture))
{
	like($dump, qr/^SELECT pg_catalog\.setval\('weir\.${t}_id_seq'/m,
		"the plain dump holds weir.${t}'s identity sequence");
}

# The SQL oracle of each pipeline, over the records of all chunks.
sub oracles
{
	my ($node, $db) = @_;
	$node->safe_psql(
		$db, q{
DROP TABLE IF EXISTS oracle_win, oracle_dd, oracle_lv, oracle_jn, oracle_pj;
CREATE TABLE oracle_win AS
	SELECT k, date_trunc('minute', ts) AS window_start,
		   date_trunc('minute', ts) + interval '1 minute' AS window_end,
		   count(*) AS count, sum(amount) AS sum, max(amount) AS max
	  FROM ev WHERE n > 0 GROUP BY 1, 2;
CREATE TABLE oracle_dd AS SELECT DISTINCT eid, ts FROM ev WHERE n > 0;
CREATE TABLE oracle_lv AS
	SELECT DISTINCT ON (k) k, n, amount, ts FROM ev WHERE n > 0 ORDER BY k, ts DESC;
CREATE TABLE oracle_jn AS
	SELECT l.n, l.amount, r.paid, r.ts AS paid_at
	  FROM ev l JOIN pay r ON r.n = l.n
	   AND r.ts BETWEEN l.ts - interval '5 seconds' AND l.ts + interval '5 seconds'
	 WHERE l.n > 0;
CREATE TABLE oracle_pj AS SELECT n, paid FROM pay WHERE paid % 2 = 0 AND n > 0;
});
	return;
}

my %cols = (
	win => 'k, window_start, window_end, count, sum, max',
	dd  => 'eid, ts',
	lv  => 'k, n, amount, ts',
	jn  => 'n, amount, paid, paid_at',
	pj  => 'n, paid');
my %real = (win => 'k >= 0', dd => 'eid >= 0', lv => 'k >= 0', jn => 'n > 0', pj => 'n > 0');

# Flush, checkpoint, and compare every sink with its oracle, row for row.
sub check_sinks
{
	my ($node, $db, $label) = @_;
	$node->safe_psql(
		$db, qq{
INSERT INTO ev (part, n, k, amount, eid, ts)
	SELECT p, -10 - p, -1 - p, 0, -10 - p, $base + interval '1 day' FROM generate_series(0, 3) p;
INSERT INTO pay (part, n, paid, ts)
	SELECT p, -20 - p, 1, $base + interval '1 day' FROM generate_series(0, 1) p;
});
	for my $p (@running)
	{
		my ($ret, $out, $err) = $node->psql($db, "SELECT weir.checkpoint('$p', '120 s')");
		is($ret, 0, "$label: $p took a checkpoint after the flush") or diag $err;
	}
	oracles($node, $db);
	for my $p (@running)
	{
		my $c = $cols{$p};
		my $sink = "(SELECT * FROM $p WHERE $real{$p}) s";
		my ($sn, $on) = (
			$node->safe_psql($db, "SELECT count(*) FROM $sink"),
			$node->safe_psql($db, "SELECT count(*) FROM oracle_$p"));
		cmp_ok($on, '>', 0, "$label: $p: the oracle has rows");
		is($sn, $on, "$label: $p: the sink has as many rows as the oracle ($on)");
		my $extra = $node->safe_psql($db,
			"SELECT $c FROM $sink EXCEPT ALL SELECT $c FROM oracle_$p ORDER BY 1 LIMIT 10");
		my $missing = $node->safe_psql($db,
			"SELECT $c FROM oracle_$p EXCEPT ALL SELECT $c FROM $sink ORDER BY 1 LIMIT 10");
		is($extra,   '', "$label: $p: every sink row is an oracle row, once");
		is($missing, '', "$label: $p: every oracle row is in the sink, once");
	}
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(p.name || ':' || d.source || ':' || (d.record->>'n'), ',' ORDER BY p.name)
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id}),
		'dd:ev:-2,jn:ev:-2,lv:ev:-2,win:ev:-2',
		"$label: one dead letter per pipeline of ev, the poison record");
	is($node->safe_psql($db, q{SELECT (SELECT string_agg(n::text, ',') FROM win_late) || ' ' ||
								 (SELECT string_agg(n::text, ',') FROM dd_late)}),
		'-1 -1', "$label: the late record, once in each late-records table");
	return;
}

check_sinks($src, 'postgres', 'source');

# The target cluster: weir preloaded, pipelines held back; OIDs moved on
# so that the restored enum gets other OIDs than the source's.
my $dst = start_weir_node(
	'dump_target',
	'weir.launcher_naptime' => 200,
	'weir.read_ahead'       => 'off',
	'weir.database'         => q{'restored_c'},
	'weir.start_pipelines'  => 'off',
	max_worker_processes    => 24,
	log_statement           => 'none');
$dst->safe_psql('postgres',
	'CREATE ROLE alice LOGIN; ' . join(' ', map { "CREATE TYPE filler_$_ AS ENUM ('a');" } 1 .. 20));
$dst->safe_psql('postgres', 'CREATE DATABASE restored_c; CREATE DATABASE restored_p;');

my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[ 'pg_restore', '--single-transaction', '-d', $dst->connstr('restored_c'), $custom ],
	'>', \$out, '2>', \$err);
ok($ok, 'pg_restore --single-transaction of the custom dump');
is($err, '', 'pg_restore said nothing (no error, no warning)');
($out, $err) = ('', '');
$ok = IPC::Run::run(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $dst->connstr('restored_p'), '-f', $plain ],
	'>', \$out, '2>', \$err);
ok($ok, 'psql restores the plain dump');
is($err, '', 'psql said nothing on stderr (no error, no warning)');

# What a restored database holds before its pipelines start.
sub check_restored
{
	my ($node, $db) = @_;
	my $label = $db;
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(topic || ':' || partitions || ':' || (rows = (SELECT count(*) FROM ev))::text
				  || ':' || coalesce(key_column, '-'), ',' ORDER BY topic::text)
  FROM weir.topics WHERE topic = 'ev'::regclass}),
		'ev:4:true:k', "$label: topic ev is a topic again, with its rows");
	is( $node->safe_psql(
			$db, q{
SELECT t.head_positions = ARRAY(SELECT max(pos) FROM ev GROUP BY part ORDER BY part)
  FROM weir.topics t WHERE t.topic = 'ev'::regclass}),
		't', "$label: ev's head positions are those of its rows");
	is( $node->safe_psql(
			$db, q{SELECT string_agg(partition || ':' || committed_position, ',' ORDER BY partition)
				FROM weir.topic_consumers WHERE consumer = 'c1'}),
		$consumer, "$label: consumer c1's positions are restored");
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(name || ':' || owner || ':' || operator || ':' || source || ':' ||
				  coalesce(sink::text, '-') || ':' || definition, ',' ORDER BY name)
  FROM weir.pipelines}),
		"dd:$su:dedup:ev:dd:weir_pipelines.dd,jn:$su:join:ev:jn:weir_pipelines.jn,"
		  . "lv:$su:last_value:ev:lv:weir_pipelines.lv,md:$su:last_value:moods:md:weir_pipelines.md,"
		  . "pj:alice:projection:pay:pj:weir_pipelines.pj,win:$su:window:ev:win:weir_pipelines.win",
		"$label: the pipelines, their owners, sources, sinks and definitions");
	is( $node->safe_psql(
			$db, q{
SELECT bool_and(worker_pid IS NULL AND last_checkpoint > 0 AND positions IS NOT NULL)
  FROM weir.pipelines}),
		't', "$label: every pipeline has its positions and checkpoints, and no worker");
	cmp_ok($node->safe_psql($db, q{SELECT count(*) FROM weir.committed_state('win')}),
		'>', 0, "$label: win's checkpointed state reads back");
	cmp_ok($node->safe_psql($db, q{SELECT count(*) FROM weir.committed_state('dd')}),
		'>', 0, "$label: dd's checkpointed state reads back");
	my ($ret, $o, $e) = $node->psql($db, q{SELECT count(*) FROM weir.committed_state('md')});
	like($e, qr/holds values of types whose OIDs have changed.*mood/s,
		"$label: md's state, of an enum with new OIDs, is refused, never misread");
	is($node->safe_psql($db, 'SELECT count(*) FROM weir.dead_letters'),
		'4', "$label: the dead letters are restored");
	# ids go on after the restored ones (pipelines are made only in
	# weir.database: elsewhere, the restored sequence says it)
	if ($node != $dst)
	{
		is( $node->safe_psql(
				$db, q{
SELECT pg_sequence_last_value(pg_get_serial_sequence('weir.pipeline', 'id')::regclass)
	   >= (SELECT max(id) FROM weir.pipeline)}),
			't', "$label: the pipelines' id sequence is past the restored ids");
		return;
	}
	is( $node->safe_psql(
			$db, q{
BEGIN;
SELECT weir.create_projection('pj_new', 'pay', start => false)
	   > (SELECT max(id) FROM weir.pipeline WHERE name <> 'pj_new');
ROLLBACK;}),
		't', "$label: a new pipeline's id follows the restored ones");
	return;
}

sub run_restored
{
	my ($db) = @_;
	my $label = $db;
	check_restored($dst, $db);
	# held back: the launcher serves this database, and starts nothing
	ok( $dst->poll_query_until(
			'postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'weir launcher' AND datname = '$db'"
		),
		"$label: the launcher serves it");
	$dst->safe_psql($db, 'SELECT pg_sleep(1)');
	is($dst->safe_psql($db, 'SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL'),
		'0', "$label: with weir.start_pipelines off no pipeline runs");

	$dst->safe_psql($db, 'ALTER SYSTEM SET weir.start_pipelines = on; SELECT pg_reload_conf();');
	ok( $dst->poll_query_until(
			$db, q{
SELECT count(*) = 5 FROM weir.pipelines p
 WHERE worker_pid IS NOT NULL
   AND EXISTS (SELECT FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
				WHERE q.name = p.name AND r.kind = 'restore')}),
		"$label: with weir.start_pipelines on every pipeline restores its checkpoint and runs");
	ok( $dst->poll_query_until(
			$db, q{SELECT last_error ~ 'OIDs have changed' FROM weir.pipelines WHERE name = 'md'}),
		"$label: md does not run on state it would misread, and says why");
	# the restored definitions depend on the sink columns they write again
	my ($ret, $o, $e) = $dst->psql($db, 'ALTER TABLE win ALTER COLUMN max TYPE numeric');
	like($e, qr/used by a view or rule/, "$label: a sink column win writes cannot be retyped");

	cmp_ok($dst->safe_psql($db, 'SELECT count(*) FROM ev WHERE n > 0'),
		'<', $last * 100, "$label: the dump, taken during the run, holds part of the data");
	$dst->safe_psql($db, "CALL write_missing($last)");
	is($dst->safe_psql($db, 'SELECT count(*) FROM ev WHERE n > 0'),
		$last * 100, "$label: the rest of the data is fed: chunks 1 to $last");
	check_sinks($dst, $db, $label);
	is($dst->safe_psql($db, q{SELECT count(*) FROM weir.pipelines WHERE last_error IS NOT NULL AND name <> 'md'}),
		'0', "$label: no pipeline but md has an error");
	$dst->safe_psql($db, 'ALTER SYSTEM SET weir.start_pipelines = off; SELECT pg_reload_conf();');
	ok($dst->poll_query_until($db, 'SELECT count(*) = 0 FROM weir.pipelines WHERE worker_pid IS NOT NULL'),
		"$label: weir.start_pipelines off stops them");
	return;
}

# pg_restore without --single-transaction, into another database of the
# source cluster itself: everything is there as in the other cluster, and
# its topics take new rows after the restored ones.  (The launcher serves
# weir.database only, so this copy acts on nothing: a copy for analysis.)
$src->safe_psql('postgres', 'CREATE DATABASE copy_n');
($out, $err) = ('', '');
$ok = IPC::Run::run([ 'pg_restore', '-d', $src->connstr('copy_n'), $custom ],
	'>', \$out, '2>', \$err);
ok($ok, 'pg_restore of the custom dump into another database of the same cluster');
is($err, '', 'pg_restore said nothing (no error, no warning)');
check_restored($src, 'copy_n');
is( $src->safe_psql(
		'copy_n', q{
WITH before AS (SELECT max(pos) AS pos FROM ev WHERE part = 0),
	 added AS (INSERT INTO ev (part, n, k, amount, eid, ts)
			   VALUES (0, -100, 0, 1, -100, '2026-01-01') RETURNING pos)
SELECT (SELECT pos FROM added) > (SELECT pos FROM before)}),
	't', 'copy_n: its topic ev takes a new row after the restored ones');

run_restored('restored_c');
$dst->append_conf('postgresql.conf', "weir.database = 'restored_p'\n");
$dst->restart;
run_restored('restored_p');

$dst->stop;
$src->stop;
done_testing();
