# 008_checkpoint_writer.pl
#
# Checkpoint writers and background worker slots: a pipeline's worker
# always comes before another pipeline's checkpoint writer, and a pipeline
# without a writer writes its checkpoints itself, with the same results.
#
# max_worker_processes = 4 (no logical replication launcher): the weir
# launcher, then pipeline a's worker and its writer (room: 1 + 1 + 0 + 1 <=
# 4), then pipeline b's worker, whose writer would leave no slot for a
# worker (1 + 2 + 1 + 1 > 4): b writes its own checkpoints and says so.
# Pipeline c's worker then finds no slot at all: the launcher asks writers
# to give theirs back, a's worker stops its writer (and says so), and c
# runs.  All three sinks equal the aggregation written as SQL GROUP BY over
# the topic, row for row, whichever process wrote their checkpoints; and so
# does a after a restart of the server, restored from what its writer and
# then its worker committed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $node = start_weir_node('checkpoint_writer',
	'weir.launcher_naptime'          => 100,
	max_worker_processes             => 4,
	max_logical_replication_workers  => 0,
	max_parallel_workers             => 0,
	max_parallel_workers_per_gather  => 0);

sub writers
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'weir checkpoint writer'});
}

sub running
{
	my ($name) = @_;
	return $node->poll_query_until('postgres',
		qq{SELECT status = 'running' AND worker_pid IS NOT NULL FROM weir.pipelines WHERE name = '$name'});
}

# 20,000 events over 200 keys and 100 minutes, then one far later event in
# every partition so that every window of the first 100 minutes closes.
sub produce
{
	my ($from) = @_;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO ev (k, v, ts)
SELECT i % 200, i, timestamptz '2024-01-01 00:00:00+00' + i * interval '300 ms'
  FROM generate_series($from, $from + 19999) i;
});
}

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v bigint, ts timestamptz', partitions => 2, key => 'k');
});
produce(0);

my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{
SELECT weir.create_pipeline('a', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total')});
ok(running('a'), 'pipeline a runs');
ok($node->poll_query_until('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'weir checkpoint writer'}, '1'),
	'pipeline a has a checkpoint writer');
is( $node->safe_psql('postgres', q{SELECT writer_pid FROM weir.pipelines WHERE name = 'a'}),
	$node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'weir checkpoint writer'}),
	'weir.pipelines shows the pid of a\'s checkpoint writer');

$node->safe_psql('postgres', q{
SELECT weir.create_pipeline('b', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total')});
ok(running('b'), 'pipeline b runs');
$node->wait_for_log(qr/weir pipeline "b" writes its checkpoints itself: no background worker slot to spare/,
	$offset);
pass('pipeline b writes its own checkpoints: no slot to spare for a writer');
is(writers(), '1', 'still one checkpoint writer (a\'s)');
is($node->safe_psql('postgres', q{SELECT writer_pid IS NULL FROM weir.pipelines WHERE name = 'b'}),
	't', 'weir.pipelines shows no checkpoint writer for b');

# a checkpoint of each, written by a's writer and by b's worker
my $watermark_sql = q{SELECT watermark FROM weir.pipelines WHERE name = '%s'};
for my $p ('a', 'b')
{
	$node->safe_psql('postgres', "SELECT weir.checkpoint('$p')");
	check_minute_sink($node, $p, $node->safe_psql('postgres', sprintf($watermark_sql, $p)),
		"before c");
}

# c's worker finds no slot: a's writer gives its slot back
$node->safe_psql('postgres', q{
SELECT weir.create_pipeline('c', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total')});
$node->wait_for_log(qr/could not start a worker for weir pipeline/, $offset);
pass('the launcher found no slot for c\'s worker');
$node->wait_for_log(qr/weir pipeline "a" stopped its checkpoint writer to leave its background worker slot/,
	$offset);
pass('a stopped its checkpoint writer');
ok(running('c'), 'pipeline c runs');
ok(running('a') && running('b'), 'a and b still run');
is(writers(), '0', 'no checkpoint writer is left');
is( $node->safe_psql('postgres', q{SELECT count(writer_pid) FROM weir.pipelines}),
	'0', 'weir.pipelines shows no checkpoint writer');

# more events, every pipeline checkpointed, every sink exact
produce(20000);
for my $p ('a', 'b', 'c')
{
	$node->safe_psql('postgres', "SELECT weir.checkpoint('$p')");
	check_minute_sink($node, $p, $node->safe_psql('postgres', sprintf($watermark_sql, $p)), 'after c');
}

# a restart restores what was committed, by either process
$node->restart;
produce(40000);
for my $p ('a', 'b', 'c')
{
	ok(running($p), "pipeline $p runs after the restart");
	$node->safe_psql('postgres', "SELECT weir.checkpoint('$p')");
	check_minute_sink($node, $p, $node->safe_psql('postgres', sprintf($watermark_sql, $p)), 'after the restart');
}
none_of('no ERROR in the server log',
	grep { /\bERROR:/ } split /\n/, slurp_file($node->logfile));

done_testing();
