# 023_restore_target.pl
#
# Recovery target and restore drills (issue 20), on a 1,000,000-key state:
#
#   - a last-value pipeline over 1,000,000 distinct keys (INSERT ... SELECT
#     generate_series into its topic, in two halves, each checkpointed: the
#     rate before the restart is then known), checkpointed, then the server
#     restarted: weir.restores records the restore with bytes, rows (equal
#     to the topic's distinct keys, SQL's count) and duration, and the rate
#     before;
#   - records that arrive after it fill in its first_record_ms and
#     back_to_rate_ms (the worker updates its row);
#   - weir.restore_drill while the pipeline runs records a drill of the
#     same checkpoint whose duration is within 2x of the restore's (the
#     median of three drills; the figures are printed);
#   - a recovery_target below the latest duration flags the pipeline in
#     weir.pipelines, one above it does not; a drill over the target warns
#     its caller, a restore over it makes the worker log a WARNING;
#     recovery_projection says what a restore would take.
#
# WEIR_TAP_KEYS overrides the number of keys (1000000).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $keys = env_or('WEIR_TAP_KEYS', 1_000_000);
my $half = int($keys / 2);
my $node = start_weir_node('restore_target', 'weir.launcher_naptime' => 200);

$node->safe_psql('postgres', qq{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v int, t timestamptz', partitions => 4, key => 'k');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 't',
							  checkpoint_interval => '1 hour',
							  max_state_memory => 1024 * 1024 * 1024);
});
wait_pipelines_running($node, 1);

# two halves, each checkpointed once read: the minute before the restart
# has two checkpoints, so its rate is known
for my $range ([ 1, $half ], [ $half + 1, $keys ])
{
	my ($from, $to) = @$range;
	$node->safe_psql('postgres', qq{
INSERT INTO ev (k, v, t) SELECT g, g, timestamptz '2024-01-01' + g * interval '1 ms'
  FROM generate_series($from, $to) g;
});
	ok($node->poll_query_until('postgres',
			"SELECT records_in = $to FROM weir.pipelines WHERE name = 'lv'"),
		"the worker read the $to records");
	$node->safe_psql('postgres', "SELECT weir.checkpoint('lv', '5 minutes')");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM lv'), $keys, "the sink holds $keys keys");

# the server restarts: the worker restores the checkpoint
$node->restart;
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 2 FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'lv' AND r.kind = 'restore'}), 'the restart recorded a restore');
my ($ckpt, $rows, $bytes, $ms, $rate_before) = split /\|/, $node->safe_psql('postgres', q{
SELECT r.checkpoint_id, r.rows, r.bytes, r.duration_ms, r.rate_before
  FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = 'lv' AND r.kind = 'restore' ORDER BY r.id DESC LIMIT 1});
is($ckpt, $node->safe_psql('postgres',
	"SELECT max(c.id) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'lv'"),
	'it restored the last checkpoint');
is($rows, $node->safe_psql('postgres', 'SELECT count(DISTINCT k) FROM ev'),
	'its rows are the distinct keys of the topic');
cmp_ok($bytes, '>', $keys * 8, 'its bytes are recorded');
cmp_ok($ms, '>', 0, 'its duration is recorded');
cmp_ok($rate_before, '>', 0, 'the rate before the restart is known');
diag(sprintf('restore of %d keys: %.1f ms, %.1f MB, %.0f keys/s; rate before %.0f records/s',
		$rows, $ms, $bytes / 1e6, $rows / ($ms / 1000), $rate_before));
is($node->safe_psql('postgres', q{
SELECT first_record_ms IS NULL AND back_to_rate_ms IS NULL
  FROM weir.restores WHERE kind = 'restore' ORDER BY id DESC LIMIT 1}),
	't', 'no record yet: no time to the first record, none back to the rate');

# records after the restart: the worker fills in its row
$node->safe_psql('postgres', qq{
INSERT INTO ev (k, v, t) SELECT g, g, timestamptz '2024-01-02' + g * interval '1 ms'
  FROM generate_series($keys + 1, $keys + 1000) g;
});
ok($node->poll_query_until('postgres', q{
SELECT first_record_ms IS NOT NULL AND back_to_rate_ms IS NOT NULL
  FROM weir.restores WHERE kind = 'restore' ORDER BY id DESC LIMIT 1}),
	'the time to the first record and back to the rate are recorded');
my ($first_ms, $back_ms) = split /\|/, $node->safe_psql('postgres', q{
SELECT first_record_ms, back_to_rate_ms FROM weir.restores
 WHERE kind = 'restore' ORDER BY id DESC LIMIT 1});
cmp_ok($back_ms, '>=', $first_ms, 'back to the rate no sooner than the first record');
diag("first record after $first_ms ms, back to the rate (or caught up) after $back_ms ms");

# drills while the pipeline runs (its worker keeps its PID)
my $pid = worker_pid($node, 'lv');
my @drills;
for (1 .. 3)
{
	my ($d_ckpt, $d_rows, $d_bytes, $d_ms) = split /\|/, $node->safe_psql('postgres',
		q{SELECT checkpoint_id, rows, bytes, duration_ms FROM weir.restore_drill('lv')});
	is("$d_ckpt|$d_rows|$d_bytes", "$ckpt|$rows|$bytes",
		'a drill restores the same checkpoint: the same rows and bytes');
	push @drills, $d_ms;
}
is(worker_pid($node, 'lv'), $pid, 'the worker ran on through the drills');
my $drill_ms = (sort { $a <=> $b } @drills)[1];
diag(sprintf('drills: %s ms (median %.1f); restore %.1f ms; ratio %.2f',
		join(', ', map { sprintf('%.1f', $_) } @drills), $drill_ms, $ms, $drill_ms / $ms));
cmp_ok($drill_ms, '<=', 2 * $ms, 'the drill takes at most twice the restore');
cmp_ok($drill_ms, '>=', $ms / 2, 'the drill takes at least half the restore');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM weir.restores WHERE kind = 'drill'}), 3, 'each drill is recorded');

# a target above the latest duration: no flag; below: flagged
my $latest = $node->safe_psql('postgres',
	'SELECT duration_ms FROM weir.restores ORDER BY restored_at DESC, id DESC LIMIT 1');
my $above = int($latest * 4) + 1;
$node->safe_psql('postgres',
	"SELECT weir.alter_pipeline('lv', recovery_target => '$above milliseconds')");
is($node->safe_psql('postgres', q{
SELECT recovery_warning IS NULL, recovery_projection ~ '^restore would take [0-9.]+ s at [0-9.]+ MB; '
  FROM weir.pipelines WHERE name = 'lv'}), 't|t', "a target of $above ms: not flagged, projected");
my $below = sprintf('%.3f', $latest / 2);
$node->safe_psql('postgres',
	"SELECT weir.alter_pipeline('lv', recovery_target => '$below milliseconds')");
like($node->safe_psql('postgres', q{SELECT recovery_warning FROM weir.pipelines WHERE name = 'lv'}),
	qr/^drill of checkpoint $ckpt at .* took [0-9.]+ ms, over the recovery target of /,
	"a target of $below ms: flagged");
like($node->safe_psql('postgres', q{SELECT recovery_projection FROM weir.pipelines WHERE name = 'lv'}),
	qr/is missed now$/, 'and projected missed now');

# a drill over the target warns its caller
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT kind FROM weir.restore_drill('lv')});
is($ret, 0, 'a drill over the target succeeds');
like($err, qr/WARNING:  restore drill of pipeline "lv" took [0-9.]+ ms, over its recovery target of [0-9.e+-]+ ms/,
	'and warns its caller');

# a restore over the target: the worker logs a WARNING
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT weir.stop('lv')");
ok($node->poll_query_until('postgres', q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'lv'}),
	'stopped');
$node->safe_psql('postgres', "SELECT weir.start('lv')");
ok($node->wait_for_log(qr/WARNING:  weir pipeline "lv" restored checkpoint \d+ in [0-9.]+ ms, over its recovery target of/,
		$offset), 'a restore over the target logs a WARNING');

$node->stop;
done_testing();
