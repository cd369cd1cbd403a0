# 028_failover.pl
#
# A hot standby of a server running weir, then a failover to it:
#
#   ev     (k int, id bigint, d bigint, v int, ts timestamptz), 2 partitions
#          keyed by k; record s of the run (s from a sequence) has
#          k = s % 20, id = s, d = s / 3 (three records per d),
#          v = s * 7919 % 1000 and ts = 2024-01-01 + s x 10 ms;
#   marks  (id bigint, tag text, ts timestamptz), 2 partitions: for every
#          fifth s, a mark naming record s + 3, 170 ms after it (inside the
#          join's interval), or for every fifteenth, 1.97 s after it
#          (outside);
#
#   win    10-second tumbling count and sum of v per k over ev;
#   dd     deduplication of ev by d (1-minute horizon), into its d;
#   lv     last value of ev per k;
#   jn     ev JOIN marks ON id within 1 s either way;
#   proj   projection of ev: id and v * 2 where v % 3 = 0;
#   cap    a capture of table src (a row for every tenth s) into topic
#          cap_src.
#
# Producers (pgbench, two clients) write the records in order of s on the
# primary while a standby, made from a base backup taken during the run,
# streams its WAL.  On the standby, while it replays: no weir process runs
# (the launcher starts only when recovery is finished), weir's views and
# weir.read() answer, and functions that must write fail with SQLSTATE
# 25006.  At a random moment (seeded, the seed printed) the primary is
# stopped in immediate mode; the standby, now static, must show through
# weir.read() and weir.topic_partitions exactly the rows of its topic
# tables.  Then it is promoted: its launcher starts every pipeline, which
# restores the last checkpoint that reached the standby, and the producers
# write the rest of the records (up to s = WEIR_TAP_FAILOVER_EVENTS) to
# it, from where the sequence stands after promotion (what the primary
# committed after the standby's last replayed record is lost with it, and
# no checkpoint on the standby covers it).  One far-future record per
# partition closes every window, each pipeline takes a checkpoint, and
# every sink must equal its oracle, computed in SQL over the topics as
# they are on the promoted server: exactly once across the failover.  The
# capture, whose replication slot stayed on the old primary, stops on the
# promoted server (status failed) instead of creating a new slot that would
# skip changes, and its topic holds only rows of the captured table.
#
# WEIR_TAP_FAILOVER_EVENTS sets the number of records (60000),
# WEIR_TAP_SEED the seed that places the failover.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target = env_or('WEIR_TAP_FAILOVER_EVENTS', 60_000);
my $seed   = env_or('WEIR_TAP_SEED',            int(time()) ^ $$);
my $base   = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin = q{timestamptz '1970-01-01 00:00:00+00'};
my @pipelines = qw(win dd lv jn proj);
my $npipelines = scalar(@pipelines);

note "seed $seed (WEIR_TAP_SEED=$seed repeats this run)";
srand($seed);
# the failover comes when the primary has written this share of the records
my $fail_at = int($target * (0.3 + rand(0.4)));
my $t_start = time;

my $conf = q{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 200
max_worker_processes = 40
max_connections = 40
log_statement = 'none'
wal_level = logical
};
my $primary = PostgreSQL::Test::Cluster->new('failover_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;

$primary->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'k int, id bigint, d bigint, v int, ts timestamptz',
						 partitions => 2, key => 'k');
SELECT weir.create_topic('marks', 'id bigint, tag text, ts timestamptz', partitions => 2, key => 'id');
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('10 seconds'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							out_of_orderness => '1 minute', late_records => 'win_late');
SELECT weir.create_dedup('dd', 'ev', key => 'd', event_time => 'ts', horizon => '1 minute',
						 columns => 'd', out_of_orderness => '1 minute', late_records => 'dd_late');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 'ts', columns => 'id, v, ts',
							  out_of_orderness => '1 minute', late_records => 'lv_late');
SELECT weir.create_join('jn', 'ev', 'marks', left_key => 'id', right_key => 'id',
						left_event_time => 'ts', right_event_time => 'ts',
						right_before => '1 second', right_after => '1 second',
						columns => 'l.id, l.v, r.tag, r.ts AS marked_at',
						out_of_orderness => '1 minute', late_records => 'jn_late');
SELECT weir.create_projection('proj', 'ev', columns => 'id, v * 2 AS v2', filter => 'v % 3 = 0',
							  checkpoint_column => 'checkpoint_id');
CREATE TABLE src (id bigint PRIMARY KEY, v int);
SELECT weir.create_capture('cap', tables => ARRAY['src'::regclass]);
SELECT weir.create_topic('plain', 'x int', partitions => 1);
INSERT INTO plain (x) SELECT generate_series(1, 10);
SELECT weir.seek('plain', 'reader', 0, 0);
});
wait_pipelines_running($primary, $npipelines);
ok($primary->poll_query_until('postgres', q{SELECT status = 'running' FROM weir.captures WHERE name = 'cap'}),
	'the capture runs');

# The producer: the next n ticks of the clock, until the target.
my $script = bench_script(
	'weir_failover_producer.sql', qq{\\set n random(50, 150)
WITH g AS MATERIALIZED (
	SELECT nextval('clock') AS s
	  FROM generate_series(1, CASE WHEN (SELECT last_value FROM clock) >= $target THEN 0 ELSE :n END)),
m AS (
	INSERT INTO marks (id, tag, ts)
	SELECT s + 3, 't' || (s % 4),
		   $base + (s * 10 + CASE WHEN s % 15 = 0 THEN 2000 ELSE 200 END) * interval '1 ms'
	  FROM g WHERE s % 5 = 0 AND s + 3 <= $target),
c AS (INSERT INTO src (id, v) SELECT s, s % 1000 FROM g WHERE s % 10 = 0 AND s <= $target)
INSERT INTO ev (k, id, d, v, ts)
SELECT s % 20, s, s / 3, (s * 7919) % 1000, $base + s * 10 * interval '1 ms' FROM g WHERE s <= $target;
});
my @bench = ('failover_producer', $script, 2, '-R', bench_rate($target, 100.0, 30));
start_bench($primary, @bench);

# A standby from a base backup taken while everything runs.
ok($primary->poll_query_until('postgres', 'SELECT count(*) > 0 FROM weir.checkpoints'),
	'the pipelines checkpoint on the primary');
$primary->backup('during_run');
my $standby = PostgreSQL::Test::Cluster->new('failover_standby');
$standby->init_from_backup($primary, 'during_run', has_streaming => 1);
$standby->start;
ok($standby->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM weir.checkpoints WHERE committed_at > now() - interval '1 minute'"),
	'the standby replays the checkpoints of the primary');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');

# What a standby must do, checked while it replays and again when static.
sub standby_answers
{
	my ($when) = @_;
	is( $standby->safe_psql('postgres',
			q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'weir%'}),
		'0', "$when: no weir process runs on the standby");
	for my $view (qw(pipelines topics topic_partitions topic_consumers checkpoints
		checkpoint_summary restores state_stats progress captures remote_sinks))
	{
		my ($ret, $out, $err) = $standby->psql('postgres', "SELECT count(*) FROM weir.$view");
		is($ret, 0, "$when: weir.$view answers on the standby") or diag $err;
	}
	# enabled pipelines wait to start: the launcher starts with promotion
	is( $standby->safe_psql('postgres',
			q{SELECT string_agg(name || ':' || status || ':' || (worker_pid IS NULL), ' ' ORDER BY name)
				FROM weir.pipelines}),
		join(' ', map { "$_:starting:true" } sort @pipelines),
		"$when: weir.pipelines lists every pipeline as starting, none with a worker");
	for my $p (@pipelines)
	{
		my ($ret, $out, $err) = $standby->psql('postgres',
			"SELECT count(*) FROM weir.committed_state('$p')");
		is($ret, 0, "$when: weir.committed_state('$p') answers") or diag $err;
		# the live state is in a worker's memory, and none runs here
		($ret, $out, $err) = $standby->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT * FROM weir.explain_state('$p')");
		like($err, qr/ERROR:\s+55000: pipeline "$p" is not running/,
			"$when: weir.explain_state('$p') says the pipeline is not running");
	}
	is( $standby->safe_psql(
			'postgres', q{
SELECT (SELECT count(*) FROM weir.sink_changes('proj', 0, 1000000) WHERE change = 'upsert')
	   = (SELECT count(*) FROM proj)}),
		't', "$when: weir.sink_changes() answers: every row of the sink");
	# weir.read() of every partition: rows of the run, in position order,
	# up to the stable position
	my $bad = $standby->safe_psql(
		'postgres', q{
SELECT count(*) FROM generate_series(0, 1) p,
	   LATERAL (SELECT r.pos, r.k, r.id, lag(r.pos) OVER (ORDER BY r.pos) AS prev
				  FROM weir.read(NULL::ev, p, 0, 1000000) r) x
 WHERE pos <= prev OR k <> id % 20 OR pos > weir.stable_position('ev', p)});
	is($bad, '0', "$when: weir.read() returns rows of the run, in position order, up to the stable position");
	cmp_ok($standby->safe_psql('postgres', q{SELECT count(*) FROM weir.read(NULL::ev, 0, 0, 1000000)}),
		'>', 0, "$when: weir.read() returns rows");
	for my $call (
		q{INSERT INTO ev (k, id, d, v, ts) VALUES (0, 0, 0, 0, now())},
		q{SELECT * FROM weir.poll(NULL::plain, 'reader', 10)},
		q{SELECT weir.seek('plain', 'reader', 0, 1)},
		q{SELECT weir.drop_consumer('plain', 'reader')},
		q{SELECT weir.create_topic('t_new', 'x int')},
		q{SELECT weir.alter_topic_retention('plain', '1 hour')},
		q{SELECT weir.drop_topic('plain')},
		q{SELECT weir.run_retention()},
		q{SELECT weir.create_projection('p_new', 'ev', columns => 'id')},
		q{SELECT weir.start('win')},
		q{SELECT weir.stop('win')},
		q{SELECT * FROM weir.alter_pipeline('win', checkpoint_interval => '2 seconds')},
		q{SELECT weir.skip('win', 'ev', 0, 1000000000)},
		q{SELECT weir.drop_pipeline('proj')},
		q{SELECT weir.checkpoint('win', '1 s')},
		q{SELECT * FROM weir.checkpoint()},
		q{SELECT * FROM weir.restore_drill('win')},
		q{SELECT weir.stop_capture('cap')})
	{
		my ($ret, $out, $err) = $standby->psql('postgres', "\\set VERBOSITY verbose\n$call");
		like($err, qr/ERROR:\s+25006/, "$when: on the standby, $call fails with SQLSTATE 25006")
		  or diag $err;
	}
	return;
}

standby_answers('while replaying');

# The failover, at a random moment of the run.
ok($primary->poll_query_until('postgres', "SELECT last_value >= $fail_at FROM clock"),
	"the primary reached record $fail_at");
usleep(int(rand(500_000)));
my $primary_rows = try_count($primary, 'SELECT count(*) FROM ev');
note sprintf('%.1f s: the primary stops in immediate mode at about %d records of ev',
	time - $t_start, $primary_rows // -1);
$primary->stop('immediate');
end_bench('failover_producer', 0);

# The standby is static now: weir.read() and weir.topic_partitions show
# exactly what its tables hold.
my $standby_rows = $standby->safe_psql('postgres', 'SELECT count(*) FROM ev');
note "the standby has $standby_rows records of ev";
standby_answers('after the primary stopped');
is( $standby->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	(SELECT part, pos, id FROM weir.read(NULL::ev, 0, 0, 1000000)
	 UNION ALL SELECT part, pos, id FROM weir.read(NULL::ev, 1, 0, 1000000))
	EXCEPT ALL SELECT part, pos, id FROM ev) a}) . ' '
	  . $standby->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT part, pos, id FROM ev
	EXCEPT ALL
	(SELECT part, pos, id FROM weir.read(NULL::ev, 0, 0, 1000000)
	 UNION ALL SELECT part, pos, id FROM weir.read(NULL::ev, 1, 0, 1000000))) a}),
	'0 0', 'weir.read() on the standby returns exactly the rows of the topic');
is( $standby->safe_psql(
		'postgres', q{
SELECT count(*) FROM weir.topic_partitions t
  LEFT JOIN (SELECT part, max(pos) AS last FROM ev GROUP BY part) e ON e.part = t.partition
 WHERE t.topic = 'ev'::regclass
   AND (t.head_position IS DISTINCT FROM coalesce(e.last, 0)
		OR t.stable_position IS DISTINCT FROM coalesce(e.last, 0))}),
	'0', 'weir.topic_partitions on the standby: head and stable positions are those of the table');

# Promotion: the launcher starts and every pipeline restores its last
# checkpoint that reached the standby.
my $restores_before = $standby->safe_psql('postgres', 'SELECT count(*) FROM weir.restores');
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'the standby is promoted');
wait_pipelines_running($standby, $npipelines);
ok( $standby->poll_query_until(
		'postgres',
		"SELECT count(*) >= $restores_before + $npipelines FROM weir.restores"),
	'every pipeline restored a checkpoint after promotion');

# The capture's slot stayed on the old primary (PostgreSQL 15 does not copy
# logical slots to a standby): the capture stops rather than make a new slot
# that would skip the changes after its position.
ok( $standby->poll_query_until(
		'postgres', q{SELECT status FROM weir.captures WHERE name = 'cap'}, 'failed'),
	'the capture stops on the promoted server');
like(
	$standby->safe_psql('postgres', q{SELECT last_error FROM weir.captures WHERE name = 'cap'}),
	qr/^replication slot "[^"]+" of capture "cap" does not exist$/,
	'its last error says that its slot does not exist');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	'0', 'no replication slot was created on the promoted server');
my ($captured, $phantom) = split /\|/, $standby->safe_psql(
	'postgres', q{
SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM src s WHERE s.id = c.id))
  FROM cap_src c});
cmp_ok($captured, '>', 0, "the capture's topic has the $captured changes captured before the failover");
is($phantom, '0', "each of them is a row of the captured table on the promoted server");

# The rest of the records, written to the promoted server.
my $resume_at = $standby->safe_psql('postgres', 'SELECT last_value FROM clock');
note "production continues on the promoted server after record $resume_at";
start_bench($standby, @bench);
ok($standby->poll_query_until('postgres', "SELECT last_value >= $target FROM clock"),
	"the promoted server reached record $target");
stop_bench($standby, 'failover_producer');

# Far-future records close every window; then a checkpoint of each.
$standby->safe_psql(
	'postgres', q{
INSERT INTO ev (part, k, id, d, v, ts)
SELECT p, -1 - p, -1 - p, -1 - p, 0, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 1) p;
INSERT INTO marks (part, id, tag, ts)
SELECT p, -11 - p, 'sentinel', timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 1) p;
});
checkpoint_each($standby, 'record', @pipelines);
my $wm = last_watermark($standby, 'win');
note "pipeline win: final watermark $wm";

my ($n_ev, $after) = split /\|/, $standby->safe_psql(
	'postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id > $resume_at) FROM ev WHERE id >= 0});
note "ev on the promoted server: $n_ev records, $after of them written after promotion";
cmp_ok($after, '>', 0, 'records were written after promotion');

$standby->safe_psql(
	'postgres', qq{
CREATE TABLE oracle_win AS
SELECT k, date_bin('10 seconds', ts, $origin) AS window_start,
	   date_bin('10 seconds', ts, $origin) + interval '10 seconds' AS window_end,
	   count(*) AS n, sum(v) AS total
  FROM ev GROUP BY 1, 2
HAVING date_bin('10 seconds', ts, $origin) + interval '10 seconds' <= '$wm';
CREATE TABLE oracle_dd AS SELECT DISTINCT d FROM ev;
CREATE TABLE oracle_lv AS SELECT DISTINCT ON (k) k, id, v, ts FROM ev ORDER BY k, ts DESC, part DESC, pos DESC;
CREATE TABLE oracle_jn AS
SELECT l.id, l.v, r.tag, r.ts AS marked_at
  FROM ev l JOIN marks r ON l.id = r.id AND r.ts BETWEEN l.ts - interval '1 second' AND l.ts + interval '1 second';
CREATE TABLE oracle_proj AS SELECT id, v * 2 AS v2 FROM ev WHERE v % 3 = 0;
});
compare_with_oracle($standby, pipeline => 'win', cols => 'k, window_start, window_end, n, total',
	order => '1, 2');
compare_with_oracle($standby, pipeline => 'dd',   cols => 'd',             order => '1');
compare_with_oracle($standby, pipeline => 'lv',   cols => 'k, id, v, ts',  order => '1');
compare_with_oracle($standby, pipeline => 'jn',   cols => 'id, v, tag, marked_at', order => '1, 3');
compare_with_oracle($standby, pipeline => 'proj', cols => 'id, v2',        order => '1');
for my $p (@pipelines)
{
	is($standby->safe_psql('postgres',
			"SELECT status || ' ' || records_late || ' ' || records_dead || ' ' || coalesce(last_error, '-') FROM weir.pipelines WHERE name = '$p'"),
		'running 0 0 -', "pipeline $p: running, nothing late or dead, no error");
}

my @log = split /\n/, slurp_file($standby->logfile);
none_of('no PANIC or TRAP in the standby\'s log', grep { /PANIC|TRAP:/ } @log);
none_of('no weir process died on the standby',
	grep { /weir.*(terminated by signal|exited with exit code)/ } @log);
note sprintf('the test took %.1f s', time - $t_start);

$standby->stop;
done_testing();
