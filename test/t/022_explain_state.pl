# 022_explain_state.pl
#
# weir.state_stats and weir.explain_state on a real clock (issue 20), where
# pg_regress (sql/explain_state.sql) uses weir.clock_offset:
#
#   - a partition that stays silent for more than 10 s of wall-clock time
#     while another has data holds the watermark: the verdict becomes
#     growing_watermark_stalled, naming the partition and its topic, and
#     bounded again once the partition has data;
#   - weir.state_stats read in a loop while a worker consumes a backlog (the
#     walk under the slot's shared lock against a worker that changes the
#     store between records): no error, and at the end its keys and entries
#     equal a GROUP BY over the topic;
#   - after a kill -9 of the worker, the restarted worker's figures (restored
#     from the checkpoint) are the same again, and its rates start anew.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $node = start_weir_node(
	'explain_state',
	'weir.launcher_naptime'      => 200,
	'weir.state_stats_interval'  => 200,
	restart_after_crash          => 'on');
$node->safe_psql('postgres', 'CREATE EXTENSION weir');

# --- a silent partition, on the wall clock --------------------------------
$node->safe_psql('postgres', q{
SELECT weir.create_topic('two_src', 'k int, t timestamptz', partitions => 2);
SELECT weir.create_pipeline('two', 'two_src', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            checkpoint_interval => '1 hour');
INSERT INTO two_src (part, k, t) VALUES (1, 1, '2024-01-01 00:00:30+00');
SELECT weir.checkpoint('two');
});
$node->safe_psql('postgres', q{
INSERT INTO two_src (part, k, t)
	SELECT 0, g % 5, '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 seconds'
	  FROM generate_series(1, 100) g;
SELECT weir.checkpoint('two');
});
is($node->safe_psql('postgres',
		q{SELECT verdict FROM weir.explain_state('two') WHERE question = 'verdict'}),
	'bounded', 'a partition silent for less than 10 s is not a stall');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT verdict = 'growing_watermark_stalled' FROM weir.explain_state('two')
		   WHERE question = 'verdict'}),
	'after 10 s of silence, the verdict says the watermark is stalled');
like(
	$node->safe_psql('postgres',
		q{SELECT answer FROM weir.explain_state('two') WHERE question = 'verdict'}),
	qr/^growing_watermark_stalled: .*partition 1 of two_src has had no data since/,
	'the verdict names the silent partition and its topic');
# both partitions have data again (partition 1 alone would leave partition
# 0, silent for as long, holding the watermark): the watermark moves
$node->safe_psql('postgres', q{
INSERT INTO two_src (part, k, t) VALUES (1, 1, '2024-01-01 00:20:00+00'), (0, 1, '2024-01-01 00:20:10+00');
SELECT weir.checkpoint('two');
});
is($node->safe_psql('postgres',
		q{SELECT verdict FROM weir.explain_state('two') WHERE question = 'verdict'}),
	'bounded', 'bounded again once the partition has data');

# --- read while a backlog is consumed ---------------------------------------
$node->safe_psql('postgres', q{
SELECT weir.create_topic('ev', 'k int, t timestamptz, v int', partitions => 4, key => 'k');
INSERT INTO ev (k, t, v)
	SELECT g % 1000, '2024-01-01 00:00:00+00'::timestamptz + g * interval '10 milliseconds', g
	  FROM generate_series(1, 600000) g;
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 't',
                            windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                            allowed_lateness => '1 minute', checkpoint_interval => '1 s');
});
my $reads = 0;
my $failed = '';
while (1)
{
	my ($rc, $out, $err) = $node->psql('postgres',
		q{SELECT coalesce((SELECT keys || ' ' || entries FROM weir.state_stats WHERE pipeline = 'win'), '-'),
		         (SELECT records_in FROM weir.pipelines WHERE name = 'win')});
	if ($rc != 0)
	{
		$failed = $err;
		last;
	}
	$reads++;
	last if $out =~ /\|600000$/;
	last if $reads > 5000;
}
is($failed, '', "weir.state_stats read $reads times while the worker consumed the backlog");
$node->safe_psql('postgres', q{SELECT weir.checkpoint('win')});

# the oracle: the (key, window) groups whose end + lateness the watermark has not passed
my $oracle = q{
SELECT s.keys = (SELECT count(DISTINCT k) FROM (SELECT DISTINCT k, date_bin('1 minute', t, '1970-01-01') AS ws
                                                   FROM ev) g
                  WHERE g.ws + interval '2 minutes' > s.watermark)
       AND s.entries = (SELECT count(*) FROM (SELECT DISTINCT k, date_bin('1 minute', t, '1970-01-01') AS ws
                                               FROM ev) g
                         WHERE g.ws + interval '2 minutes' > s.watermark)
  FROM weir.state_stats s WHERE s.pipeline = 'win'};
is($node->safe_psql('postgres', $oracle), 't', 'keys and entries equal the GROUP BY over the topic');
my $before = $node->safe_psql('postgres',
	q{SELECT keys || ' ' || entries || ' ' || entry_bytes FROM weir.state_stats WHERE pipeline = 'win'});

# --- after a crash ------------------------------------------------------------
my $pid = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'win'});
kill 'KILL', $pid;
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT EXISTS (SELECT FROM weir.state_stats s JOIN weir.pipelines p ON p.name = s.pipeline
		                   WHERE s.pipeline = 'win' AND p.worker_pid <> $pid)}),
	'the restarted worker is measured');
$node->safe_psql('postgres', q{SELECT weir.checkpoint('win')});
is( $node->safe_psql('postgres',
		q{SELECT keys || ' ' || entries || ' ' || entry_bytes FROM weir.state_stats WHERE pipeline = 'win'}),
	$before, 'the restored state has the same keys, entries and bytes');
is($node->safe_psql('postgres', $oracle), 't', 'and they still equal the GROUP BY');
is( $node->safe_psql('postgres',
		q{SELECT rates_over < interval '1 minute' FROM weir.state_stats WHERE pipeline = 'win'}),
	't', 'the rates start anew with the new worker');

$node->stop;
done_testing();
