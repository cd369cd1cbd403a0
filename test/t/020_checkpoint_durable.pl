# 020_checkpoint_durable.pl
#
# A checkpoint that weir.checkpoint() reports committed survives an
# immediate stop even when every commit on the server is asynchronous
# (synchronous_commit = off, and a WAL writer that wakes every 10 s): its
# commit record is flushed before anyone is told (ForceSyncCommit in
# checkpoint_apply.c).  Without that, the commit record may still be in
# WAL buffers when the server stops, the restart forgets the checkpoint,
# and a reader of the sink or a remote sink's COMMIT PREPARED would have
# acted on a checkpoint that no longer exists.
#
# Five rounds: records, weir.checkpoint(), immediate stop at once, start;
# after each the checkpoint it returned is in weir.checkpoints and the sink
# holds the windows it wrote, equal to the GROUP BY over the topic.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $node = start_weir_node(
	'checkpoint_durable', crash_test_conf(20),
	synchronous_commit    => 'off',
	wal_writer_delay      => "'10s'",
	wal_writer_flush_after => "'1GB'");

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v bigint, ts timestamptz', partitions => 2);
SELECT weir.create_pipeline('sums', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							checkpoint_interval => '1 hour');
});
wait_pipelines_running($node, 1);

my $oracle = q{
SELECT k, date_bin('1 minute', ts, 'epoch') AS window_start, count(*) AS n, sum(v) AS total
  FROM ev GROUP BY 1, 2
HAVING date_bin('1 minute', ts, 'epoch') + interval '1 minute' <=
	   (SELECT watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
		 WHERE p.name = 'sums' ORDER BY c.id DESC LIMIT 1)};

for my $round (1 .. 5)
{
	my $from = ($round - 1) * 2000 + 1;
	my $to   = $round * 2000;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO ev (part, k, v, ts)
SELECT i % 2, i % 17, i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second'
  FROM generate_series($from, $to) i;
});
	my $id = $node->safe_psql('postgres', q{SELECT weir.checkpoint('sums')});
	$node->stop('immediate');
	$node->start;
	ok(wait_server_up($node), "round $round: the server is back");
	is( $node->safe_psql(
			'postgres',
			q{SELECT max(c.id) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
			   WHERE p.name = 'sums'}),
		$id,
		"round $round: checkpoint $id, reported committed, survived the immediate stop");
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (
	(SELECT k, window_start, n, total FROM sums EXCEPT $oracle)
	UNION ALL
	($oracle EXCEPT SELECT k, window_start, n, total FROM sums)) d}),
		'0',
		"round $round: the sink equals the GROUP BY up to that checkpoint's watermark");
	wait_pipelines_running($node, 1);
}

$node->stop;
done_testing();
