# 027_upgrade.pl
#
# ALTER EXTENSION weir UPDATE on a live database: weir 0.1's SQL objects
# (weir--0.1.sql, kept as released) with the new library, producers
# writing and a pipeline of each kind running with state and checkpoints;
# the update while they run; a kill -9 after it; and at the end every sink
# equals its SQL oracle over all the data, exactly once.
#
# Topics (the producers take one clock tick, 1 ms of event time, per ev
# record; disorder up to 2 s):
#   ev     (id bigint, k int, v bigint, phase int, ts timestamptz),
#          3 partitions keyed by k;
#   marks  (k int, tag text, phase int, ts timestamptz), 2 partitions by k;
#   ids    (id bigint, phase int, ts timestamptz), 2 partitions by id: ids
#          drawn from 20,000, so most come back, before and after the
#          update.
# phase is 1 for rows written before the update and 2 after: the producers
# read it from a table that the update's transaction changes.
#
# Pipelines, created at 0.1 and started before the update:
#   win   tumbling 10 s count(*), sum(v), max(v) per k over ev;
#   dd    dedup of ids on id without horizon (every id kept forever);
#   lv    last value per k over ev;
#   jn    interval join ev (l) x marks (r) on k, r.ts within l.ts +- 1 s;
#   proj  projection of ev where v % 3 <> 0.
#
# Sequence: the pipelines run at 0.1 (the library is already the new one,
# as after a package upgrade and a restart: the launcher says the database
# is behind), each takes checkpoints with state; then, producers still
# writing, ALTER EXTENSION weir UPDATE; each pipeline takes checkpoints
# after it; a worker is killed with kill -9 (the postmaster reinitializes
# shared memory, every pipeline restores its last checkpoint, written
# after the update); the producers go on, then stop; sentinels far in the
# future close the windows and flush the join; each pipeline takes a
# checkpoint; then:
#   - each sink equals its oracle (EXCEPT ALL both ways, and counts);
#   - some windows hold records from both sides of the update, and some
#     ids seen before it came back after it, and none of those is in dd's
#     sink (the state of before the update was kept and used);
#   - the committed checkpoints account for every record once;
#   - the server log has the one intended kill and no ERROR.
# Then:
#   - a chunk stamped with a state format this build does not read (a
#     superuser changes the number) is refused at restore: the pipeline is
#     failed and disabled with the error, positions unmoved, one error in
#     the log (no restart loop); put back, it restores and runs;
#   - weir--0.1.sql is byte for byte the released script;
#   - the objects of the updated database equal those of a fresh
#     CREATE EXTENSION weir in another database (a catalog listing, as
#     contrib's tests compare), and weir.library_version() is the
#     default_version of weir.control.
#
# WEIR_TAP_EVENTS overrides the number of ev records (60000),
# WEIR_TAP_SECONDS the time the producers take to write them (24).

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

# weir 0.1 as released (commit 54accb9): never edited again
my $released_0_1_sha256 = 'ec5de15625869f20e2527ccc38d707cad29de79c2a850137bc07421d57ef21cb';

my $target  = env_or('WEIR_TAP_EVENTS',  60_000);
my $seconds = env_or('WEIR_TAP_SECONDS', 24);
my $keys    = 100;
my $base    = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin  = q{timestamptz '1970-01-01 00:00:00+00'};
my $flush   = q{timestamptz '2100-01-01 00:00:00+00'};
my @pipelines  = ('win', 'dd', 'lv', 'jn', 'proj');
my $npipelines = scalar(@pipelines);

# a transaction writes 70 ev records on average
my $rate = bench_rate($target, 70.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('upgrade', crash_test_conf(30));

########################################################################
# weir 0.1, with the new library
########################################################################

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir VERSION '0.1';
CREATE SEQUENCE clock;
CREATE TABLE phase_now (phase int NOT NULL);
INSERT INTO phase_now VALUES (1);
SELECT weir.create_topic('ev', 'id bigint, k int, v bigint, phase int, ts timestamptz',
						 partitions => 3, key => 'k');
SELECT weir.create_topic('marks', 'k int, tag text, phase int, ts timestamptz',
						 partitions => 2, key => 'k');
SELECT weir.create_topic('ids', 'id bigint, phase int, ts timestamptz', partitions => 2, key => 'id');
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('10 seconds'),
							aggregates => 'count(*) AS n, sum(v) AS total, max(v) AS top',
							out_of_orderness => '5 seconds');
SELECT weir.create_dedup('dd', 'ids', key => 'id', event_time => 'ts',
						 columns => 'id, phase, ts, part AS src_part, pos AS src_pos',
						 out_of_orderness => '5 seconds');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 'ts',
							  columns => 'v, phase, ts, part AS src_part, pos AS src_pos');
SELECT weir.create_join('jn', 'ev', 'marks', left_key => 'k', right_key => 'k',
						left_event_time => 'ts', right_event_time => 'ts',
						right_before => '1 second', right_after => '1 second',
						columns => 'l.part AS l_part, l.pos AS l_pos, l.k, l.v, l.ts AS lts, '
								   'r.part AS r_part, r.pos AS r_pos, r.tag, r.ts AS rts',
						out_of_orderness => '5 seconds');
SELECT weir.create_projection('proj', 'ev',
							  columns => 'part AS src_part, pos AS src_pos, id, k, v, phase, ts',
							  filter => 'v % 3 <> 0');
});
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'weir'"),
	'0.1', 'the database has weir 0.1');
wait_pipelines_running($node, $npipelines);
ok( $node->wait_for_log(
		qr/database "postgres" has weir 0\.1 installed, the library is weir 0\.2/, 0),
	'the launcher says the database is behind the library');

# 20 to 120 ticks per transaction: an ev record each, a mark for one in 20,
# an ids record for one in two.  phase comes from phase_now.
my $script = bench_script(
	'weir_upgrade_producer.sql', qq{\\set n random(20, 120)
WITH g AS MATERIALIZED (
	SELECT s, random() AS a, random() AS b, random() AS c, random() AS d
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) q),
ph AS MATERIALIZED (SELECT phase FROM phase_now),
e AS (
	INSERT INTO ev (id, k, v, phase, ts)
	SELECT s, floor(a * $keys)::int, floor(b * 1000)::bigint, ph.phase,
		   $base + (s - floor(c * 2000)) * interval '1 ms'
	  FROM g, ph),
m AS (
	INSERT INTO marks (k, tag, phase, ts)
	SELECT floor(b * $keys)::int, 't' || s, ph.phase, $base + (s - floor(a * 2000)) * interval '1 ms'
	  FROM g, ph WHERE d < 0.05)
INSERT INTO ids (id, phase, ts)
SELECT floor(c * 20000)::bigint, ph.phase, $base + s * interval '1 ms'
  FROM g, ph WHERE d >= 0.5;
});

my $t0 = time;
start_bench($node, 'producer', $script, 2, '-R', $rate);

# Wait until the ev topic has $rows records and every pipeline has
# committed $checkpoints checkpoints since $after (an id), restarting a
# pgbench that ended on its own.
sub produce_until
{
	my ($rows, $checkpoints, $after, $what) = @_;
	my $until = time + 150;
	while (time < $until)
	{
		my $n = try_count($node, 'SELECT count(*) FROM ev') // 0;
		my $ready = try_count(
			$node, qq{
SELECT count(*) FROM weir.pipeline p
 WHERE (SELECT count(*) FROM weir.checkpoints c
		 WHERE c.pipeline_id = p.id AND c.id > coalesce(($after)[p.id], 0)) >= $checkpoints});
		return $n if $n >= $rows && defined $ready && $ready == $npipelines;
		if (!bench_running('producer'))
		{
			diag 'pgbench ended unexpectedly: ' . bench_stderr('producer');
			end_bench('producer', 0);
			start_bench($node, 'producer', $script, 2, '-R', $rate);
		}
		usleep(200_000);
	}
	fail("$what: reached $rows ev records and $checkpoints checkpoints per pipeline in time");
	return 0;
}

# The last checkpoint id of each pipeline, as an SQL array indexed by id.
sub last_checkpoints
{
	my $list = $node->safe_psql(
		'postgres', q{
SELECT coalesce(string_agg(p.id || ':' || coalesce((SELECT max(c.id) FROM weir.checkpoints c
													 WHERE c.pipeline_id = p.id), 0), ','), '')
  FROM weir.pipeline p});
	my @a;
	for (split /,/, $list)
	{
		my ($id, $c) = split /:/;
		$a[$id] = $c;
	}
	return 'ARRAY[' . join(',', map { $_ // 0 } @a[ 1 .. $#a ]) . ']::bigint[]';
}

my $n1 = produce_until(int($target * 0.3), 3, 'ARRAY[]::bigint[]', 'before the update');
note sprintf('%.1f s: %d ev records before the update', time - $t0, $n1);
is( $node->safe_psql(
		'postgres', q{
SELECT count(DISTINCT c.pipeline_id) FROM weir.pipeline_chunk c}),
	'4', 'before the update every stateful pipeline has its state in checkpoint chunks');

########################################################################
# The update, live
########################################################################

my $before_update = last_checkpoints();
my $offset        = -s $node->logfile;
my ($ret, $out, $err) = $node->psql(
	'postgres', q{
BEGIN;
ALTER EXTENSION weir UPDATE;
UPDATE phase_now SET phase = 2;
COMMIT;
});
is($ret, 0, 'ALTER EXTENSION weir UPDATE while the pipelines run and the producers write')
  or diag $err;
note sprintf('%.1f s: updated', time - $t0);
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'weir'"),
	'0.2', 'the database has weir 0.2');
is( $node->safe_psql(
		'postgres', q{
SELECT weir.library_version() = default_version FROM pg_available_extensions WHERE name = 'weir'}),
	't', "weir.library_version() is weir.control's default_version");

my $n2 = produce_until(int($target * 0.6), 2, $before_update, 'after the update');
note sprintf('%.1f s: %d ev records, every pipeline checkpointed twice since the update',
	time - $t0, $n2);
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM weir.pipelines WHERE status = 'running' AND last_error IS NULL}),
	$npipelines,
	'every pipeline runs, without an error, after the update');

# kill -9 of a worker after the update: every pipeline restores a
# checkpoint written after it
my %restores = map {
	my $p = $_;
	($p => $node->safe_psql(
			'postgres',
			"SELECT count(*) FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id WHERE p.name = '$p'"
	))
} @pipelines;
my $victim = worker_pid($node, 'win');
ok(defined $victim, 'pipeline win has a worker to kill');
$offset = -s $node->logfile;
kill 'KILL', $victim;
note sprintf('%.1f s: kill -9 of the worker of win (PID %d)', time - $t0, $victim);
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
ok(wait_server_up($node), 'server back after the kill');
end_bench('producer', 0);
start_bench($node, 'producer', $script, 2, '-R', $rate);
my $restored_all = join(' AND ',
	map { "(SELECT count(*) FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id WHERE p.name = '$_') > $restores{$_}" }
	  @pipelines);
ok( $node->poll_query_until(
		'postgres',
		"SELECT $restored_all AND (SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL) = $npipelines"
	),
	'every pipeline restored its checkpoint after the kill');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM weir.restores r
 WHERE r.restored_at = (SELECT max(restored_at) FROM weir.restores q WHERE q.pipeline_id = r.pipeline_id)
   AND r.checkpoint_id > ($before_update)[r.pipeline_id]}),
	$npipelines,
	'each restored a checkpoint committed after the update');

my $after_kill = last_checkpoints();
my $n3 = produce_until($target, 1, $after_kill, 'after the kill');
stop_bench($node, 'producer');
note sprintf('%.1f s: produced %d ev records', time - $t0, $n3);

# Sentinels: one ev record and one mark per partition far in the future
# (v = 0: the projection filters them out; keys that match nothing).
$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (part, id, k, v, phase, ts)
SELECT p, -1 - p, -1 - p, 0, 3, $flush FROM generate_series(0, 2) p;
INSERT INTO marks (part, k, tag, phase, ts)
SELECT p, -11 - p, 'sentinel', 3, $flush FROM generate_series(0, 1) p;
});
checkpoint_each($node, 'record', @pipelines);

########################################################################
# Every sink against its oracle
########################################################################

my $wm_win = last_watermark($node, 'win');
$node->safe_psql(
	'postgres', qq{
ANALYZE ev; ANALYZE marks; ANALYZE ids;
CREATE TABLE oracle_win AS
SELECT k, date_bin('10 seconds', ts, $origin) AS window_start,
	   count(*) AS n, sum(v) AS total, max(v) AS top
  FROM ev GROUP BY 1, 2
HAVING date_bin('10 seconds', ts, $origin) + interval '10 seconds' <= '$wm_win';
CREATE TABLE oracle_dd AS
SELECT DISTINCT ON (id) id, phase, ts, part AS src_part, pos AS src_pos FROM ids
 ORDER BY id, part, pos;
CREATE TABLE oracle_lv AS
SELECT DISTINCT ON (k) k, v, phase, ts, part AS src_part, pos AS src_pos FROM ev
 ORDER BY k, ts DESC, part DESC, pos DESC;
CREATE TABLE oracle_jn AS
SELECT l.part AS l_part, l.pos AS l_pos, l.k, l.v, l.ts AS lts,
	   r.part AS r_part, r.pos AS r_pos, r.tag, r.ts AS rts
  FROM ev l JOIN marks r
	ON l.k = r.k AND r.ts BETWEEN l.ts - interval '1 second' AND l.ts + interval '1 second';
CREATE TABLE oracle_proj AS
SELECT part AS src_part, pos AS src_pos, id, k, v, phase, ts FROM ev WHERE v % 3 <> 0;
});

compare_with_oracle($node, pipeline => 'win', cols => 'k, window_start, n, total, top',
	order => '1, 2');
compare_with_oracle($node, pipeline => 'dd', cols => 'id, phase, ts, src_part, src_pos',
	order => '1');
compare_with_oracle($node, pipeline => 'lv', cols => 'k, v, phase, ts, src_part, src_pos',
	order => '1');
compare_with_oracle($node, pipeline => 'jn',
	cols => 'l_part, l_pos, k, v, lts, r_part, r_pos, tag, rts', order => '1, 2, 6, 7');
compare_with_oracle($node, pipeline => 'proj', cols => 'src_part, src_pos, id, k, v, phase, ts',
	order => '1, 2');

# What the data shows about the state across the update.
my ($spanning, $returned, $returned_kept, $pairs_across) = split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT (SELECT count(*) FROM (SELECT 1 FROM ev e JOIN win w
								ON w.k = e.k AND e.ts >= w.window_start
							   AND e.ts < w.window_start + interval '10 seconds'
							 GROUP BY w.k, w.window_start
							HAVING count(DISTINCT e.phase) = 2) s),
	   (SELECT count(*) FROM ids i WHERE i.phase = 2
		   AND EXISTS (SELECT 1 FROM ids o WHERE o.id = i.id AND o.phase = 1)),
	   (SELECT count(*) FROM dd d WHERE d.phase = 2
		   AND EXISTS (SELECT 1 FROM ids o WHERE o.id = d.id AND o.phase = 1)),
	   (SELECT count(*) FROM jn j JOIN ev l ON l.part = j.l_part AND l.pos = j.l_pos
							  JOIN marks r ON r.part = j.r_part AND r.pos = j.r_pos
		 WHERE l.phase <> r.phase)});
note "windows spanning the update $spanning, ids back after it $returned, "
  . "join pairs across it $pairs_across";
cmp_ok($spanning, '>', 0,
	'win: some windows in the sink hold records from before and after the update (complete: the oracle says so)');
cmp_ok($returned, '>', 0, 'dd: some ids seen before the update came back after it');
is($returned_kept, '0', 'dd: none of them passed: the ids seen before the update stayed dropped');
cmp_ok($pairs_across, '>', 0, 'jn: some pairs join a row from before the update with one from after');

# Every record read once, every insert-only sink row written once, over
# the committed checkpoints (the kill made some be read twice).
my ($n_ev, $n_marks, $n_ids) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM ev), (SELECT count(*) FROM marks), (SELECT count(*) FROM ids)');
my %source_rows = (
	win  => $n_ev,
	dd   => $n_ids,
	lv   => $n_ev,
	jn   => $n_ev + $n_marks,
	proj => $n_ev);
for my $p (@pipelines)
{
	is(checkpoint_sum($node, $p, 'records_in'),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every record of its sources once");
}
for my $p ('jn', 'proj', 'dd')
{
	is(checkpoint_sum($node, $p, 'sink_rows'),
		$node->safe_psql('postgres', "SELECT count(*) FROM $p"),
		"pipeline $p: its committed checkpoints wrote every sink row once");
}
check_crash_log($node, 1, $victim);

########################################################################
# A state format this build does not read
########################################################################

my $lv_id = $node->safe_psql('postgres', "SELECT id FROM weir.pipeline WHERE name = 'lv'");
$node->safe_psql('postgres', "SELECT weir.stop('lv')");
ok($node->poll_query_until('postgres', "SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'lv'"),
	'lv stopped');
my $format = $node->safe_psql('postgres',
	"SELECT min(format) || ' ' || max(format) FROM weir.pipeline_chunk WHERE pipeline_id = $lv_id");
my ($format_now) = split / /, $format;
is($format, "$format_now $format_now", "lv's chunks are all in one format ($format_now)");
my $positions_sql =
  "SELECT string_agg(part || ':' || pos || ':' || coalesce(max_event_time::text, '-'), ',' ORDER BY part) FROM weir.pipeline_position WHERE pipeline_id = $lv_id";
my $positions   = $node->safe_psql('postgres', $positions_sql);
my $count_checkpoints = "SELECT count(*) FROM weir.checkpoints WHERE pipeline_id = $lv_id";
my $checkpoints       = $node->safe_psql('postgres', $count_checkpoints);
$offset = -s $node->logfile;
$node->safe_psql(
	'postgres', qq{
UPDATE weir.pipeline_chunk SET format = 99 WHERE pipeline_id = $lv_id;
INSERT INTO ev (part, id, k, v, phase, ts) VALUES (0, -100, 7, 5, 3, $flush);
SELECT weir.start('lv');
});
ok( $node->poll_query_until(
		'postgres', q{
SELECT s.status = 'failed' AND s.worker_pid IS NULL AND NOT p.enabled
  FROM weir.pipelines s JOIN weir.pipeline p ON p.name = s.name WHERE s.name = 'lv'}),
	'lv refuses chunks of format 99: failed and disabled');
my $t_refused = time;
like(
	$node->safe_psql('postgres', "SELECT last_error FROM weir.pipelines WHERE name = 'lv'"),
	qr/cannot restore the checkpoint of pipeline "lv": its state is in format 99/,
	'weir.pipelines says why');
my $log = slurp_file($node->logfile, $offset);
like($log,
	qr/ERROR:  cannot restore the checkpoint of pipeline "lv": its state is in format 99\n.*DETAIL:  This build of weir \(library 0\.2\) reads state format $format_now; format 99 was written by a newer build of weir\.\n.*HINT:  Run a build of weir that reads state format 99, or drop and recreate the pipeline to rebuild its state from its topics; then call weir\.start\(\)\./,
	'the server log has the error, its detail (format found, format read) and hint');
is($node->safe_psql('postgres', $positions_sql), $positions, "lv's positions did not move");
is($node->safe_psql('postgres', $count_checkpoints), $checkpoints, 'lv wrote no checkpoint');
is($node->safe_psql('postgres', "SELECT count(*) FROM lv WHERE k = 7 AND v = 5 AND phase = 3"),
	'0', 'nothing reached its sink');

########################################################################
# weir--0.1.sql as released; an updated database equals a fresh one
########################################################################

my $sharedir = $node->config_data('--sharedir');
is(sha256_hex(slurp_file("$sharedir/extension/weir--0.1.sql")),
	$released_0_1_sha256, 'the installed weir--0.1.sql is the released script, byte for byte');
is(sha256_hex(slurp_file("$FindBin::RealBin/../../weir--0.1.sql")),
	$released_0_1_sha256, 'the repository keeps weir--0.1.sql as released');

# Every object of the extension, described in full: its members, and the
# definition of each function, relation (columns in order, defaults,
# storage, constraints, indexes, triggers, policies, privileges, comments),
# view, type, schema and event trigger, and what pg_dump dumps of its tables.
my $objects_sql = q{
WITH ext AS (SELECT oid, extconfig, extcondition FROM pg_extension WHERE extname = 'weir'),
m AS (SELECT d.classid, d.objid FROM pg_depend d, ext
	   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (SELECT c.oid FROM pg_class c JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
		 UNION
		 SELECT t.typrelid FROM pg_type t JOIN m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
		  WHERE t.typrelid <> 0),
lines AS (
	SELECT 'member ' || pg_describe_object(classid, objid, 0) AS line FROM m
	UNION ALL
	SELECT 'function ' || p.oid::regprocedure || E'\n' ||
		   CASE WHEN p.prokind = 'a' THEN 'aggregate' ELSE pg_get_functiondef(p.oid) END ||
		   ' acl ' || coalesce(p.proacl::text, '-') || ' comment ' ||
		   coalesce(obj_description(p.oid, 'pg_proc'), '-')
	  FROM pg_proc p JOIN m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
	UNION ALL
	SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text || c.relpersistence::text ||
		   ' owner ' || c.relowner::regrole || ' acl ' || coalesce(c.relacl::text, '-') ||
		   ' options ' || coalesce(c.reloptions::text, '-') || ' rls ' || c.relrowsecurity ||
		   c.relforcerowsecurity || ' replident ' || c.relreplident::text || ' comment ' ||
		   coalesce(obj_description(c.oid, 'pg_class'), '-') ||
		   CASE WHEN c.relkind = 'v' THEN E'\n' || pg_get_viewdef(c.oid) ELSE '' END
	  FROM pg_class c JOIN rels USING (oid)
	UNION ALL
	SELECT 'column ' || a.attrelid::regclass || ' ' ||
		   row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) || ' ' || a.attname ||
		   ' ' || format_type(a.atttypid, a.atttypmod) || ' notnull ' || a.attnotnull ||
		   ' identity ' || a.attidentity::text || ' generated ' || a.attgenerated::text || ' storage ' ||
		   a.attstorage::text || ' collation ' || a.attcollation::regcollation || ' default ' ||
		   coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-') || ' acl ' ||
		   coalesce(a.attacl::text, '-') || ' comment ' ||
		   coalesce(col_description(a.attrelid, a.attnum), '-')
	  FROM pg_attribute a JOIN rels ON rels.oid = a.attrelid
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
	 WHERE a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' ||
		   pg_get_constraintdef(co.oid)
	  FROM pg_constraint co JOIN rels ON rels.oid = co.conrelid
	UNION ALL
	SELECT 'index ' || pg_get_indexdef(i.indexrelid)
	  FROM pg_index i JOIN rels ON rels.oid = i.indrelid
	UNION ALL
	SELECT 'trigger ' || pg_get_triggerdef(tg.oid) || ' enabled ' || tg.tgenabled::text
	  FROM pg_trigger tg JOIN rels ON rels.oid = tg.tgrelid WHERE NOT tg.tgisinternal
	UNION ALL
	SELECT 'policy ' || po.polrelid::regclass || ' ' || po.polname || ' ' || po.polcmd::text ||
		   ' ' || po.polpermissive || ' ' || po.polroles::regrole[]::text || ' using ' ||
		   coalesce(pg_get_expr(po.polqual, po.polrelid), '-') || ' check ' ||
		   coalesce(pg_get_expr(po.polwithcheck, po.polrelid), '-')
	  FROM pg_policy po JOIN rels ON rels.oid = po.polrelid
	UNION ALL
	SELECT 'type ' || t.oid::regtype || ' ' || t.typtype::text || ' comment ' ||
		   coalesce(obj_description(t.oid, 'pg_type'), '-')
	  FROM pg_type t JOIN m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
	UNION ALL
	SELECT 'schema ' || n.nspname || ' owner ' || n.nspowner::regrole || ' acl ' ||
		   coalesce(n.nspacl::text, '-')
	  FROM pg_namespace n JOIN m ON m.classid = 'pg_namespace'::regclass AND m.objid = n.oid
	UNION ALL
	SELECT 'event trigger ' || e.evtname || ' ' || e.evtevent || ' ' || e.evtfoid::regproc ||
		   ' ' || e.evtenabled::text || ' ' || coalesce(e.evttags::text, '-')
	  FROM pg_event_trigger e JOIN m ON m.classid = 'pg_event_trigger'::regclass AND m.objid = e.oid
	UNION ALL
	SELECT 'dumped ' || coalesce(ext.extconfig::regclass[]::text, '-') || ' where ' ||
		   coalesce(ext.extcondition::text, '-')
	  FROM ext)
SELECT string_agg(line, E'\n' ORDER BY line) FROM lines};

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION weir');
my $updated = $node->safe_psql('postgres', $objects_sql);
my $fresh   = $node->safe_psql('fresh',    $objects_sql);
my @updated_lines = split /\n/, $updated;
my %in_fresh   = map { $_ => 1 } split /\n/, $fresh;
my %in_updated = map { $_ => 1 } @updated_lines;
cmp_ok(scalar(@updated_lines), '>', 300, 'the listing describes the extension\'s objects ('
	  . scalar(@updated_lines) . ' lines)');
my @only_updated = grep { !$in_fresh{$_} } @updated_lines;
my @only_fresh   = grep { !$in_updated{$_} } split /\n/, $fresh;
none_of('every object of the updated database is in a fresh one, the same', @only_updated);
none_of('every object of a fresh database is in the updated one, the same', @only_fresh);

# No restart loop: the launcher runs every 200 ms and would have restarted
# a failed pipeline within 1 s; it did not.
my $quiet = 3 - (time - $t_refused);
usleep(int($quiet * 1_000_000)) if $quiet > 0;
my @refusals = grep { /ERROR:  cannot restore the checkpoint of pipeline "lv"/ }
  split /\n/, slurp_file($node->logfile, $offset);
is(scalar(@refusals), 1, 'one refusal in the server log after 3 s: no restart loop');

# With its chunks back in the format they were written in, lv restores
# its state and goes on from its positions.
$node->safe_psql(
	'postgres', qq{
UPDATE weir.pipeline_chunk SET format = $format_now WHERE pipeline_id = $lv_id;
SELECT weir.start('lv');
});
$node->safe_psql('postgres', "SELECT weir.checkpoint('lv', '60 s')");
is( $node->safe_psql(
		'postgres', qq{
SELECT status, last_error IS NULL FROM weir.pipelines WHERE name = 'lv'}),
	'running|t', 'lv runs again, without an error');
cmp_ok(
	$node->safe_psql(
		'postgres',
		"SELECT windows FROM weir.restores WHERE pipeline_id = $lv_id ORDER BY restored_at DESC LIMIT 1"
	),
	'>=', $keys,
	'lv restored its state from the chunks');
is($node->safe_psql('postgres', 'SELECT v, phase FROM lv WHERE k = 7'),
	'5|3', "lv applied the record written while it was refused, on top of its restored state");
is($node->safe_psql('postgres', "SELECT count(*) FROM lv WHERE k >= 0"),
	$node->safe_psql('postgres', 'SELECT count(DISTINCT k) FROM ev WHERE k >= 0'),
	'lv still has every key');

$node->stop;
note sprintf('whole test: %.1f s', time - $t_start);
done_testing();
