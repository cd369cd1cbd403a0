# 004_pipeline_memory_limit.pl
#
# The memory limit stops a pipeline cleanly, raising it resumes it, and
# nothing is lost.
#
# A tumbling-window pipeline with max_state_memory = 1MB (the minimum)
# first aggregates a few thousand events and checkpoints.  Then 40,000
# events of 40,000 new keys arrive at once: their open windows need several
# megabytes, so the pipeline stops with status out_of_memory and a
# last_error naming max_state_memory; its worker is gone and stays gone;
# its committed positions, checkpoints and sink are exactly those of its
# last checkpoint (the window that fired in memory just before the stop is
# not in the sink).  After weir.alter_pipeline(max_state_memory => 256MB)
# and weir.start() it resumes from that checkpoint, and once the watermark
# has passed every window the sink equals the same aggregation written as
# SQL GROUP BY over the topic, row for row.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $node = start_weir_node('pipeline_memory_limit',
	'weir.launcher_naptime' => 100,
	max_worker_processes    => 40);

my $origin = q{timestamptz '1970-01-01 00:00:00+00'};
my $base   = q{timestamptz '2024-01-01 00:00:00+00'};
my $limit  = 1024 * 1024;
my $cols   = 'k, window_start, window_end, n, total, lo, hi';

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v bigint, ts timestamptz', partitions => 4, key => 'k');
SELECT weir.create_pipeline('p', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi',
							max_state_memory => $limit,
							late_records => 'p_late');
});
ok($node->poll_query_until('postgres', q{SELECT status FROM weir.pipelines WHERE name = 'p'}, 'running'),
	'the pipeline runs');

# The same aggregation in SQL, over the events that were not late, for the
# windows that a watermark has closed.
sub oracle_sql
{
	my ($watermark) = @_;
	return qq{
SELECT k, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(v) AS total, min(v) AS lo, max(v) AS hi
  FROM ev e
 WHERE k >= 0
   AND NOT EXISTS (SELECT 1 FROM p_late l WHERE l.part = e.part AND l.pos = e.pos)
 GROUP BY 1, 2
HAVING date_bin('1 minute', ts, $origin) + interval '1 minute' <= '$watermark'};
}

# Compare a table (or query) with another, both ways, and their sizes.
sub same_rows
{
	my ($a, $b, $name) = @_;
	my $extra = $node->safe_psql('postgres',
		"SELECT $cols FROM ($a) a EXCEPT SELECT $cols FROM ($b) b ORDER BY 1, 2 LIMIT 20");
	my $missing = $node->safe_psql('postgres',
		"SELECT $cols FROM ($b) b EXCEPT SELECT $cols FROM ($a) a ORDER BY 1, 2 LIMIT 20");
	is($extra,   '', "$name: no extra row") or diag "extra rows:\n$extra";
	is($missing, '', "$name: no missing row") or diag "missing rows:\n$missing";
	is( $node->safe_psql('postgres', "SELECT count(*) FROM ($a) a"),
		$node->safe_psql('postgres', "SELECT count(*) FROM ($b) b"),
		"$name: as many rows");
}

sub last_checkpoint
{
	return $node->safe_psql(
		'postgres', q{
SELECT coalesce(max(c.id), 0) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'p'});
}

sub positions
{
	return $node->safe_psql('postgres',
		q{SELECT positions FROM weir.pipelines WHERE name = 'p'});
}

########################################################################
# (1) within the limit: 1,000 keys, three minutes, then a checkpoint
########################################################################

$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (k, v, ts)
SELECT k, k * 10 + m, $base + m * interval '1 minute' + (k % 50) * interval '1 second'
  FROM generate_series(0, 999) k, generate_series(0, 2) m;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('p')});

my $checkpoint1 = last_checkpoint();
my $positions1  = positions();
my $watermark1  = last_watermark($node, 'p');
note "checkpoint $checkpoint1: positions $positions1, watermark $watermark1";
$node->safe_psql('postgres', 'CREATE TABLE sink1 AS SELECT * FROM p');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM sink1'), '>', 0,
	'windows fired before the limit was reached');
same_rows('SELECT * FROM p', oracle_sql($watermark1), 'sink after the first checkpoint vs oracle');
cmp_ok($node->safe_psql('postgres', q{SELECT state_bytes FROM weir.pipelines WHERE name = 'p'}),
	'<', $limit, 'state is below the limit');

########################################################################
# (2) 40,000 new keys at once: the state exceeds 1MB
########################################################################

my $offset = -s $node->logfile;
$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (k, v, ts)
SELECT k, -k, $base + interval '3 minutes' + (k % 60) * interval '1 second'
  FROM generate_series(100000, 139999) k;
});
ok( $node->poll_query_until(
		'postgres', q{SELECT status FROM weir.pipelines WHERE name = 'p'}, 'out_of_memory'),
	'the pipeline stops with status out_of_memory');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'weir worker'}, '0'),
	'no weir worker process is left');
is($node->safe_psql('postgres', q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'p'}),
	't', 'the pipeline has no worker');

my $error = $node->safe_psql('postgres', q{SELECT last_error FROM weir.pipelines WHERE name = 'p'});
note "last_error: $error";
like($error, qr/^state of pipeline "p" reached its limit of $limit bytes \(max_state_memory\)$/,
	'last_error says the state reached max_state_memory and gives the limit');

# the worker has exited, so its last words are in the log
my $log = slurp_file($node->logfile, $offset);
ok($log =~ qr/LOG:\s+state of pipeline "p" reached its limit of $limit bytes \(max_state_memory\)/,
	'the log says the state reached max_state_memory')
  or diag "the worker's log lines after the inserts:\n"
  . join("\n", grep { !/statement:|^\s/ } split /\n/, $log);
like($log, qr/HINT:\s+Raise max_state_memory of the pipeline and start it with weir\.start\(\)/,
	'the log says how to resume');
is($node->safe_psql('postgres', q{SELECT enabled FROM weir.pipeline WHERE name = 'p'}),
	'f', 'the pipeline is disabled, so the launcher does not restart it');

is(positions(), $positions1, 'committed positions are those of the last checkpoint');
is(last_checkpoint(), $checkpoint1, 'no checkpoint was committed after the limit was reached');
same_rows('SELECT * FROM p', 'SELECT * FROM sink1', 'sink after the stop vs sink at the last checkpoint');
is( $node->safe_psql(
		'postgres',
		qq{SELECT count(*) FROM p WHERE k >= 100000 OR window_start >= $base + interval '2 minutes'}),
	'0', 'the window that fired in memory before the stop is not in the sink');

{
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT weir.checkpoint('p')", on_error_stop => 1);
	isnt($ret, 0, 'weir.checkpoint() fails while the pipeline is stopped');
	like($err, qr/ERROR:\s+55000:.*not running/, 'weir.checkpoint(): 55000, not running');
}

# The launcher keeps its hands off: after several of its rounds (it wakes
# for weir.start/stop of another pipeline) the pipeline is still stopped.
$node->safe_psql(
	'postgres', q{
SELECT weir.create_pipeline('other', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n')});
ok($node->poll_query_until('postgres', q{SELECT status FROM weir.pipelines WHERE name = 'other'}, 'running'),
	'another pipeline starts meanwhile');
my $other_pid = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'other'});
$node->safe_psql('postgres', q{SELECT weir.drop_pipeline('other')});
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'weir worker'}, '0'),
	'its worker is gone after it is dropped');
is($node->safe_psql('postgres', q{SELECT status FROM weir.pipelines WHERE name = 'p'}),
	'out_of_memory', 'the pipeline is still stopped with status out_of_memory');

########################################################################
# (3) raise the limit, start: it resumes from its checkpoint
########################################################################

$node->safe_psql(
	'postgres', q{
SELECT weir.alter_pipeline('p', max_state_memory => 256 * 1024 * 1024);
SELECT weir.start('p');
});
ok($node->poll_query_until('postgres', q{SELECT status FROM weir.pipelines WHERE name = 'p'}, 'running'),
	'the pipeline runs again');
$node->safe_psql('postgres', q{SELECT weir.checkpoint('p')});
cmp_ok(last_checkpoint(), '>', $checkpoint1, 'it took a checkpoint after resuming');
cmp_ok($node->safe_psql('postgres', q{SELECT state_bytes FROM weir.pipelines WHERE name = 'p'}),
	'>', $limit, 'its state is now above the old limit');
is($node->safe_psql('postgres', q{SELECT coalesce(last_error, '') FROM weir.pipelines WHERE name = 'p'}),
	'', 'last_error is cleared');

# Push the watermark past every window: one event per partition far in
# the future, with a key outside the range of the others.
$node->safe_psql('postgres',
	q{INSERT INTO ev (part, k, v, ts)
	  SELECT p, -1, 0, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 3) p});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('p')});
my $watermark2 = last_watermark($node, 'p');
note "final watermark $watermark2";
is( $node->safe_psql(
		'postgres',
		qq{SELECT count(*) FROM ev WHERE k >= 0 AND date_bin('1 minute', ts, $origin) + interval '1 minute' > '$watermark2'}),
	'0', 'the final watermark closed every window');
is($node->safe_psql('postgres', 'SELECT count(*) FROM p_late'), '0', 'no record was late');
same_rows('SELECT * FROM p', oracle_sql($watermark2), 'final sink vs oracle');
is($node->safe_psql('postgres', 'SELECT count(*) FROM p WHERE k >= 100000'),
	'40000', 'the 40,000 keys that hit the limit are in the sink, once each');
my $row = $node->safe_psql(
	'postgres', q{
SELECT status, records_late, records_dead,
	   (SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id WHERE q.name = 'p')
  FROM weir.pipelines WHERE name = 'p'});
is($row, 'running|0|0|2', 'running, nothing late or dead, restored twice (at each start)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'), '0', 'no dead letters');

# The server log: no crash, no abnormal exit.
$log = slurp_file($node->logfile);
my @bad = grep { /PANIC|TRAP:|terminated by signal|exited with exit code/ } split /\n/, $log;
# the worker of the dropped pipeline was terminated (SIGTERM: FATAL, exit 1)
ok(scalar(grep { /"weir worker" \(PID $other_pid\) exited with exit code 1/ } @bad),
	'the worker of the dropped pipeline was terminated');
none_of('no crash or other abnormal exit in the server log',
	grep { !/"weir worker" \(PID $other_pid\) exited with exit code 1/ } @bad);

$node->stop;
done_testing();
