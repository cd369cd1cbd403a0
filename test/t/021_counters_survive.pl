# 021_counters_survive.pl
#
# Counters that survive (issue 20): records_in, records_out, records_late,
# records_dead and records_dropped of weir.pipelines are cumulative across
# restarts and crashes, and what a worker reads again after a crash is
# counted once.
#
# Concurrent producers write a 4-partition topic while two pipelines read
# it, and the server crashes four times at random moments: a kill -9 of a
# pipeline's worker, a kill -9 inside a checkpoint (of the worker while it
# collects, or of its checkpoint writer while it writes: the checkpoint
# rolls back, its counts with it), another kill -9, and an immediate stop
# (each kill makes the postmaster reinitialize shared memory, so the live
# counters are gone and every worker restores its last checkpoint and reads
# again what came after it).  When the producers are done, one record per
# partition far in the future closes every window, each pipeline takes a
# checkpoint, and every counter must equal what SQL says of the tables:
#
#   win  tumbling 10-second windows per k of count(*) AS n, sum(v) AS total,
#        sum(v / d) AS vd, emit 'final' (each window one sink row, once),
#        2 s out-of-orderness, late records kept in win_late; its sink has
#        CHECK (total <> 4242)
#   dd   deduplication by k with a 5-second horizon of k, v, ts, late
#        records kept in dd_late
#
# Each record takes the next tick s of a clock shared by the producers (5
# ms of event time per tick) minus up to 1 s of disorder, and is of a kind:
#
#   late    s % 97 = 0: its time 60 s earlier, so late once the watermark
#           has passed it
#   null    s % 101 = 0: ts is null (a dead letter of both pipelines)
#   zero    s % 103 = 0: d = 0, so v / d raises (a dead letter of win)
#   refused s % 211 = 0: a key of its own and v = 4242: its window's total
#           is 4242, and win's sink refuses that row (a dead letter
#           written by the checkpoint, not by the worker)
#   good    the others (keys 0..499)
#
# and the checks, after the run:
#
#   records_in    = the rows of the topic, for both;
#   records_out   = the rows of the sink; win's sink equals the GROUP BY of
#                   the topic without the dead and late records and the
#                   windows of total 4242, row for row;
#   records_late  = the rows of the late-records table, all of kind late;
#   records_dead  = the rows of weir.dead_letters of the pipeline: for win
#                   the records of kinds null and zero (each once) and the
#                   windows of total 4242 (each once); for dd those of kind
#                   null;
#   records_dropped (dd) = records_in - out - late - dead: every record is
#                   exactly one of them;
#   weir.pipeline_counters holds the same, and the sum of records_in over
#   the pipeline's checkpoints too; after a clean restart, the same again.
#
# Without counters kept in the checkpoints, each crash sets them back to 0
# (and a worker restarted without a crash counts again what it reads
# again): records_in falls short of the topic's rows.
#
# WEIR_TAP_EVENTS overrides the number of records (30000),
# WEIR_TAP_SECONDS the time the producers take to write them (20),
# WEIR_TAP_SEED the seed that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target    = env_or('WEIR_TAP_EVENTS',  30_000);
my $seconds   = env_or('WEIR_TAP_SECONDS', 20);
my $seed      = env_or('WEIR_TAP_SEED',    int(time()) ^ $$);
my $producers = 3;
my $deadline  = 200;    # seconds for the produce phase, crashes included
my $base      = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin    = q{timestamptz '1970-01-01 00:00:00+00'};
my $flush     = q{timestamptz '2100-01-01 00:00:00+00'};
my @pipelines = ('win', 'dd');

# pgbench's rate: transactions of 10 to 100 records, 55 on average
my $rate = bench_rate($target, 55.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('counters_survive', crash_test_conf(30));

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'k int, v bigint, d int, ts timestamptz, kind text',
						 partitions => 4, key => 'k');
CREATE TABLE win (k int, window_start timestamptz, window_end timestamptz,
				  n bigint, total numeric, vd numeric,
				  PRIMARY KEY (k, window_start), CONSTRAINT not_4242 CHECK (total <> 4242));
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('10 seconds'),
							aggregates => 'count(*) AS n, sum(v) AS total, sum(v / d) AS vd',
							out_of_orderness => '2 seconds', late_records => 'win_late',
							sink => 'win');
SELECT weir.create_dedup('dd', 'ev', key => 'k', event_time => 'ts', horizon => '5 seconds',
						 columns => 'k, v, ts', out_of_orderness => '2 seconds',
						 late_records => 'dd_late');
});
wait_pipelines_running($node, scalar(@pipelines));

my $producer_script = bench_script(
	'weir_counters_producer.sql', qq{\\set n random(10, 100)
INSERT INTO ev (k, v, d, ts, kind)
SELECT CASE WHEN kind = 'refused' THEN 100000 + s::int ELSE floor(random() * 500)::int END,
	   CASE WHEN kind = 'refused' THEN 4242 ELSE floor(random() * 2000001)::bigint - 1000000 END,
	   CASE WHEN kind = 'zero' THEN 0 ELSE 1 + floor(random() * 9)::int END,
	   CASE WHEN kind = 'null' THEN NULL
			WHEN kind = 'late' THEN $base + (s * 5 - 60000) * interval '1 ms'
			ELSE $base + (s * 5 - floor(random() * 1000)) * interval '1 ms' END,
	   kind
  FROM (SELECT s, CASE WHEN s % 97 = 0 THEN 'late' WHEN s % 101 = 0 THEN 'null'
					   WHEN s % 103 = 0 THEN 'zero' WHEN s % 211 = 0 THEN 'refused'
					   ELSE 'good' END AS kind
		  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) q) g;
});

# Three kills of a pipeline's process (one inside a checkpoint) and an
# immediate stop, in random order, placed by progress.
my @plan = plan_crashes($seed, $target, 0.10, 0.20, 0.12,
	'kill', 'kill in checkpoint', 'kill', 'immediate');
my $run = produce_with_crashes(
	node      => $node,
	benches   => [ [ 'producer', $producer_script, $producers, '-R', $rate ] ],
	rows      => sub { try_count($node, 'SELECT count(*) FROM ev') },
	target    => $target,
	deadline  => $deadline,
	unit      => 'records',
	plan      => \@plan,
	pipelines => scalar(@pipelines),
	victim    => workers_in_turn($node, 'win', 'dd', 'win'));

# Flush: one good record per partition far in the future (keys of their
# own), counted like any other.
$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (part, k, v, d, ts, kind)
SELECT p, -1 - p, 0, 1, $flush, 'good' FROM generate_series(0, 3) p;
});
checkpoint_each($node, 'record', @pipelines);

my %kinds = split /[|\n]/,
  $node->safe_psql('postgres', 'SELECT kind, count(*) FROM ev GROUP BY kind');
note 'records: ' . join(', ', map { "$_ $kinds{$_}" } sort keys %kinds);
cmp_ok($kinds{$_} // 0, '>=', 5, "the topic has records of kind $_")
  for qw(late null zero refused good);
my $n_ev = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($n_ev, '>=', $target, "ev holds at least $target records");

########################################################################
# What SQL says
########################################################################

my $wm_win = last_watermark($node, 'win');
$node->safe_psql(
	'postgres', qq{
CREATE TABLE oracle_win AS
SELECT * FROM (
	SELECT k, date_bin('10 seconds', ts, $origin) AS window_start,
		   date_bin('10 seconds', ts, $origin) + interval '10 seconds' AS window_end,
		   count(*) AS n, sum(v) AS total, sum(v / d) AS vd
	  FROM ev e
	 WHERE ts IS NOT NULL AND d <> 0
	   AND NOT EXISTS (SELECT 1 FROM win_late l WHERE l.part = e.part AND l.pos = e.pos)
	 GROUP BY 1, 2) o
 WHERE window_end <= '$wm_win';
CREATE VIEW dead AS
SELECT p.name AS pipeline, d.partition AS part, d.position AS pos, d.record, d.error
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id;
});

# The sink of win, as SQL computes it (the windows of total 4242 refused).
compare_with_oracle(
	$node,
	pipeline => 'win',
	oracle   => '(SELECT * FROM oracle_win WHERE total <> 4242) o',
	cols     => 'k, window_start, window_end, n, total, vd',
	order    => '1, 2');

# The late records: only records of kind late, some of them.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM win_late l JOIN ev e USING (part, pos) WHERE e.kind <> 'late'}),
	'0', 'pipeline win: only records of kind late were late');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM win_late'),
	'>', 0, 'pipeline win: some records were late');

# The dead letters: of records, those of kinds null and zero, once each;
# of sink rows, the windows of total 4242, once each.
compare_with_oracle(
	$node,
	label  => 'pipeline win: dead letters of records',
	sink   => q{(SELECT part, pos FROM dead WHERE pipeline = 'win' AND pos IS NOT NULL) d},
	oracle => q{(SELECT part, pos FROM ev WHERE kind IN ('null', 'zero')) x},
	cols   => 'part, pos',
	order  => '1, 2');
compare_with_oracle(
	$node,
	label  => 'pipeline win: dead letters of sink rows',
	sink   => q{(SELECT (record->>'k')::int AS k FROM dead WHERE pipeline = 'win' AND pos IS NULL) d},
	oracle => '(SELECT k FROM oracle_win WHERE total = 4242) x',
	cols   => 'k',
	order  => '1');
compare_with_oracle(
	$node,
	label  => 'pipeline dd: dead letters of records',
	sink   => q{(SELECT part, pos FROM dead WHERE pipeline = 'dd') d},
	oracle => q{(SELECT part, pos FROM ev WHERE kind = 'null') x},
	cols   => 'part, pos',
	order  => '1, 2');

########################################################################
# The counters against it
########################################################################

# SQL's count of each counter, per pipeline.
my %truth;
for my $p (@pipelines)
{
	my %t;
	@t{qw(in out late dead)} = split /\|/, $node->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) FROM ev), (SELECT count(*) FROM $p), (SELECT count(*) FROM ${p}_late),
	   (SELECT count(*) FROM dead WHERE pipeline = '$p')});
	$truth{$p} = \%t;
	note "pipeline $p, SQL: " . join(', ', map { "$_ $t{$_}" } qw(in out late dead));
}

sub counters
{
	my ($from, $p) = @_;
	my $where = $from eq 'weir.pipelines' ? "name = '$p'"
	  : "pipeline_id = (SELECT id FROM weir.pipeline WHERE name = '$p')";
	my %c;
	@c{qw(in out late dead dropped)} = split /\|/, $node->safe_psql(
		'postgres', qq{
SELECT records_in, records_out, records_late, records_dead, records_dropped
  FROM $from WHERE $where});
	return %c;
}

sub check_counters
{
	my ($when) = @_;
	for my $p (@pipelines)
	{
		for my $from ('weir.pipelines', 'weir.pipeline_counters')
		{
			my %c = counters($from, $p);
			my $t = $truth{$p};
			is($c{in},   $t->{in},   "$when: pipeline $p: $from records_in = the rows of the topic");
			is($c{out},  $t->{out},  "$when: pipeline $p: $from records_out = the rows of its sink");
			is($c{late}, $t->{late}, "$when: pipeline $p: $from records_late = the rows of ${p}_late");
			is($c{dead}, $t->{dead},
				"$when: pipeline $p: $from records_dead = its rows of weir.dead_letters");
			if ($p eq 'dd')
			{
				is($c{dropped}, $t->{in} - $t->{out} - $t->{late} - $t->{dead},
					"$when: pipeline dd: $from records_dropped = every record neither written, late nor dead");
				cmp_ok($c{dropped}, '>', 0, "$when: pipeline dd: some records were duplicates");
			}
			else
			{
				is($c{dropped}, '0', "$when: pipeline win: $from records_dropped = 0");
			}
		}
		is(checkpoint_sum($node, $p, 'records_in'), $truth{$p}{in},
			"$when: pipeline $p: the records_in of its checkpoints add up to the rows of the topic");
	}
	return;
}

check_counters('after the crashes');
for my $p (@pipelines)
{
	cmp_ok($node->safe_psql('postgres',
			"SELECT count(*) FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id WHERE p.name = '$p'"),
		'>=', 5, "pipeline $p restored a checkpoint at its start and after each of the 4 crashes");
}

# The server log: the intended kills, nothing else.
check_crash_log($node, 3, @{ $run->{killed} });

# A clean restart: the counters come back from the last checkpoint.
$node->restart;
wait_pipelines_running($node, scalar(@pipelines));
check_counters('after a clean restart');

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
