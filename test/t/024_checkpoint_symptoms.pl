# 024_checkpoint_symptoms.pl
#
# Checkpoint symptoms (issue 20): each cause of a slow checkpoint raises its
# own phase in weir.checkpoints and weir.checkpoint_summary, so that the
# breakdown tells them apart:
#
#   slow batch   a filter that sleeps 0.5 s on each of 8 marked records: the
#                worker is inside one long batch when the checkpoint falls
#                due (checkpoint_interval 1 s), so start_delay_ms rises (to
#                seconds);
#   slow sink    a sink whose trigger sleeps 0.5 s on each of 4 marked rows:
#                writing the checkpoint takes seconds, so async_ms rises;
#   large change 400,000 windows opened between two checkpoints (none
#                closes, so no sink rows): collecting their images stops
#                processing, so sync_ms rises;
#
# each against a calm pipeline of the same kind fed the same small input,
# which is the baseline.  For each symptom the raised phase must be at
# least 4 times the calm pipeline's and past an absolute floor; a slow
# batch's start delay and a slow sink's async part are the largest phase,
# the other phases under half of it.  A large change set's sync part rises
# with its async part (what it collects must be written), so there the
# test checks what tells it from a slow sink: sync over a tenth of async
# (under a hundredth at a slow sink) and 100 times the bytes; alignment_ms
# stays 0 everywhere (one input process).  The effects are seconds long and
# the margins wide, so the test holds on two busy shared cores.
#
# weir.read_ahead is off: the filter runs in the worker, whose batches it
# slows (with read-ahead the other process would run it).
#
# Last, a compaction (a checkpoint that rewrites the whole state) slowed by
# weir.fault_point = 'compaction_chunk_slow' shows in weir.progress with
# every live key as its total, by the checkpoint writer, and leaves it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $node = start_weir_node(
	'checkpoint_symptoms',
	'weir.launcher_naptime' => 200,
	'weir.read_ahead'       => 'off',
	max_worker_processes    => 30);

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v int, ts timestamptz', partitions => 1);
-- a filter that takes 0.5 s on a marked record (v < 0); declared
-- immutable, which weir requires of a filter (its answer does not change)
CREATE FUNCTION slow_pass(v int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF v < 0 THEN
		PERFORM pg_sleep(0.5);
	END IF;
	RETURN true;
END $$;
-- a sink trigger that takes 0.5 s on a marked row
CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(0.5);
	RETURN NEW;
END $$;
CREATE TABLE slow_sink (k int PRIMARY KEY, v int, ts timestamptz);
CREATE TRIGGER slow_row BEFORE INSERT OR UPDATE ON slow_sink
	FOR EACH ROW WHEN (NEW.v < 0) EXECUTE FUNCTION slow_row();

-- batch: last value per key, checkpoints every second, the slow filter
SELECT weir.create_last_value('calm_batch', 'ev', key => 'k', event_time => 'ts',
							  filter => 'v IS NOT NULL', checkpoint_interval => '1 second');
SELECT weir.create_last_value('slow_batch', 'ev', key => 'k', event_time => 'ts',
							  filter => 'slow_pass(v)', checkpoint_interval => '1 second');
-- sink: last value per key, checkpoints on request, the slow sink
SELECT weir.create_last_value('calm_sink', 'ev', key => 'k', event_time => 'ts',
							  checkpoint_interval => '1 hour');
SELECT weir.create_last_value('slow_sink', 'ev', key => 'k', event_time => 'ts',
							  sink => 'slow_sink', checkpoint_interval => '1 hour');
});
wait_pipelines_running($node, 4);

# windows that do not close (no sink rows): the large change set's shape
sub create_windows
{
	my ($name, $topic) = @_;
	$node->safe_psql('postgres', qq{
SELECT weir.create_topic('$topic', 'k int, v int, ts timestamptz', partitions => 1);
SELECT weir.create_pipeline('$name', '$topic', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 hour'), aggregates => 'count(*) AS n',
							checkpoint_interval => '1 hour');
});
	return;
}
create_windows('calm_change', 'ev_calm');
create_windows('large_change', 'ev_large');
wait_pipelines_running($node, 6);

# the same small input for every pipeline, a few rounds of it, with a
# checkpoint after each (requested, or by the interval)
my $small = q{SELECT g % 20, g, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second'
			   FROM generate_series(1, 200) g};
for my $round (1 .. 3)
{
	$node->safe_psql('postgres', qq{
INSERT INTO ev (k, v, ts) $small;
INSERT INTO ev_calm (k, v, ts) $small;
INSERT INTO ev_large (k, v, ts) $small;
});
	$node->safe_psql('postgres', q{
SELECT weir.checkpoint('calm_sink'); SELECT weir.checkpoint('slow_sink');
SELECT weir.checkpoint('calm_change'); SELECT weir.checkpoint('large_change');
SELECT weir.checkpoint('calm_batch'); SELECT weir.checkpoint('slow_batch');
});
}

# slow batch and slow sink: 8 marked records in one transaction (the slow
# filter sleeps 4 s in one batch; the sink's trigger sleeps on the 4 keys
# whose newest record is marked: 2 s)
$node->safe_psql('postgres', q{
INSERT INTO ev (k, v, ts)
SELECT 100 + g % 4, -g, timestamptz '2024-01-01 01:00:00+00' + g * interval '1 second'
  FROM generate_series(1, 8) g;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('calm_sink'); SELECT weir.checkpoint('slow_sink');});
# the batch pipelines check point by themselves, every second
ok($node->poll_query_until('postgres', q{
SELECT bool_and(n = (SELECT count(*) FROM ev))
  FROM (SELECT sum(c.records_in) AS n FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
		 WHERE p.name IN ('calm_batch', 'slow_batch') GROUP BY p.name) s}),
	'the batch pipelines have checkpointed every record');

# large change: 400,000 new windows for large_change, 400 for calm_change
$node->safe_psql('postgres', q{
INSERT INTO ev_large (k, v, ts)
SELECT g, g, timestamptz '2024-01-01 00:00:00+00' FROM generate_series(1, 400000) g;
INSERT INTO ev_calm (k, v, ts)
SELECT g, g, timestamptz '2024-01-01 00:00:00+00' FROM generate_series(1, 400) g;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('calm_change'); SELECT weir.checkpoint('large_change');});

# each pipeline's largest of each phase, from the summary
my %max;
for my $line (split /\n/, $node->safe_psql('postgres', q{
SELECT pipeline, start_delay_max_ms, sync_max_ms, async_max_ms, alignment_max_ms, bytes_max
  FROM weir.checkpoint_summary ORDER BY pipeline}))
{
	my ($p, $start, $sync, $async, $align, $bytes) = split /\|/, $line;
	$max{$p} = { start_delay => $start, sync => $sync, async => $async, alignment => $align,
		bytes => $bytes };
	diag(sprintf('%-13s start_delay %8.1f ms  sync %8.1f ms  async %8.1f ms  alignment %s  bytes %d',
			$p, $start, $sync, $async, $align, $bytes));
}

# the raised phase: past the floor and 4x the calm pipeline's; the phases
# named as not raised below half of it
sub symptom
{
	my ($slow, $calm, $phase, $floor, @not_raised) = @_;
	my $m = $max{$slow};
	my $raised = $m->{$phase};
	ok($raised >= $floor, "$slow: $phase ${raised} ms >= $floor ms");
	ok($raised >= 4 * $max{$calm}{$phase},
		"$slow: $phase ${raised} ms >= 4 x $calm\'s $max{$calm}{$phase} ms");
	for my $other (@not_raised)
	{
		ok($m->{$other} < $raised / 2,
			"$slow: $other $m->{$other} ms < half its $phase");
	}
	return;
}
# a slow batch: start delay, the largest phase
symptom('slow_batch', 'calm_batch', 'start_delay', 1500, 'sync', 'async');
# a slow sink: the asynchronous part, the largest phase; nothing else
symptom('slow_sink', 'calm_sink', 'async', 1500, 'start_delay', 'sync');
# a large change set: the synchronous part, which neither of the others
# raises; the asynchronous part rises with it, as the state it collected
# must be written (bytes), so it is told from a slow sink by its sync part
# and its bytes: there sync is over a tenth of async, at a slow sink under
# a hundredth
symptom('large_change', 'calm_change', 'sync', 50, 'start_delay');
ok($max{large_change}{sync} > $max{large_change}{async} / 10,
	'large_change: sync is over a tenth of async');
ok($max{slow_sink}{sync} < $max{slow_sink}{async} / 100,
	'slow_sink: sync is under a hundredth of async');
ok($max{large_change}{bytes} >= 100 * $max{calm_change}{bytes},
	"large_change: wrote $max{large_change}{bytes} bytes, 100 x calm_change's $max{calm_change}{bytes}");
ok($max{slow_sink}{bytes} < 100 * $max{calm_sink}{bytes} + 100000,
	"slow_sink: wrote $max{slow_sink}{bytes} bytes, about calm_sink's $max{calm_sink}{bytes}");

is($node->safe_psql('postgres', q{SELECT count(*) FROM weir.checkpoints WHERE alignment_ms <> 0}),
	'0', 'alignment_ms is 0 with one input process');
# the slow sink is still right: the newest of every key
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT DISTINCT ON (k) k, v, ts FROM ev ORDER BY k, ts DESC) o
  FULL JOIN slow_sink s USING (k) WHERE o IS DISTINCT FROM NULL AND (s.v IS DISTINCT FROM o.v)}),
	'0', 'the slow sink holds the newest of every key');

# A compaction in progress (weir.progress): a last value over 20,000 keys,
# every key updated each round and checkpointed every second, until a
# checkpoint rewrites the whole state (the older chunks hold more than the
# state twice over plus 1 MB).  weir.fault_point = 'compaction_chunk_slow'
# makes the process writing it wait a second after each chunk, so that the
# view shows it: a compaction of exactly the live keys, by the checkpoint
# writer.
$node->safe_psql('postgres', q{
ALTER SYSTEM SET weir.fault_point = 'compaction_chunk_slow';
SELECT pg_reload_conf();
SELECT weir.create_topic('ev_keys', 'k int, v int, ts timestamptz', partitions => 1);
SELECT weir.create_last_value('compacting', 'ev_keys', key => 'k', event_time => 'ts',
							  checkpoint_interval => '1 second');
});
ok($node->poll_query_until('postgres',
		q{SELECT worker_pid IS NOT NULL AND writer_pid IS NOT NULL FROM weir.pipelines WHERE name = 'compacting'}),
	'compacting runs, with a checkpoint writer');
my $seen;
for my $round (1 .. 30)
{
	$node->safe_psql('postgres', qq{
INSERT INTO ev_keys (k, v, ts)
SELECT g, $round, timestamptz '2024-01-01 00:00:00+00' + $round * interval '1 second'
  FROM generate_series(1, 20000) g;
});
	# until this round is checkpointed, look for a compaction
	for (my $i = 0; $i < 600; $i++)
	{
		my $row = $node->safe_psql('postgres', q{
SELECT pr.phase || '|' || pr.bytes_done || '|' || pr.bytes_total || '|' || pr.rows_done || '|' ||
	   pr.rows_total || '|' || (pr.pid = pl.writer_pid)
  FROM weir.progress pr JOIN weir.pipelines pl ON pl.name = pr.pipeline
 WHERE pr.pipeline = 'compacting' AND pr.command = 'compaction'});
		$seen //= $row if $row ne '';
		last if $node->safe_psql('postgres', q{
SELECT coalesce(sum(c.records_in), 0) = (SELECT count(*) FROM ev_keys)
  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id WHERE p.name = 'compacting'}) eq 't';
		usleep(50_000);
	}
	last if defined $seen;
}
ok(defined $seen, 'a compaction was seen in weir.progress');
my ($phase, $bytes_done, $bytes_total, $rows_done, $rows_total, $by_writer) =
  split /\|/, $seen // '|||||';
like($phase, qr/^(writing chunks|deleting older chunks)$/, "compaction phase: $phase");
is($rows_total, 20000, 'a compaction writes every live key');
ok($bytes_total > 0 && $bytes_done <= $bytes_total && $rows_done <= $rows_total,
	"compaction: $bytes_done of $bytes_total bytes, $rows_done of $rows_total keys");
is($by_writer, 'true', 'written by the checkpoint writer');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET weir.fault_point; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM weir.progress WHERE pipeline = 'compacting'}),
	'the compaction leaves the view when done');

$node->stop;
done_testing();
