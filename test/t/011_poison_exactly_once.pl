# 011_poison_exactly_once.pl
#
# Poison records through crashes (issue 15): concurrent producers write two
# topics, with a poison record every WEIR_TAP_POISON_EVERY ticks of their
# shared clock, while a pipeline of each kind runs, and the worker of a
# pipeline is killed with kill -9 three times at random moments (each kill
# makes the postmaster reinitialize shared memory, so every pipeline
# restores its last checkpoint and reads again what came after it, poison
# included).  When the producers are done, one record per partition far in
# the future flushes the windows, every pipeline takes a checkpoint, and:
#
#   - every sink equals its oracle, the same computation in SQL over the
#     records that are good for that pipeline, row for row and value for
#     value (EXCEPT ALL both ways, and counts);
#   - weir.dead_letters holds, for each pipeline, exactly the records that
#     are poison to it, once each (source, partition, position), each with
#     the error its kind of poison raises and the whole record as JSON; and
#     the sink rows the projection's sink refuses, once each, with the row;
#     nothing else;
#   - every pipeline still runs, without error, and its committed
#     checkpoints account for every record of its sources once.
#
# Topics:
#   ev     (k int, v bigint, d int, s text, ts timestamptz, poison int),
#          4 partitions keyed by k;
#   marks  (k int, tag text, ts timestamptz, poison int), 3 partitions
#          keyed by k: about one for every five good ev records, with the
#          same key and a time within 15 s of it, and one for each ev
#          record of kinds 5 and 6 below, that joins it.
# poison says what a record is (0: good), and no pipeline reads it.
#
# Every record takes the next tick of a clock shared by all producers (a
# sequence; 20 ms of event time per tick) minus a random disorder of up to
# 20 s.  The ev record of tick s is poison when s is a multiple of
# WEIR_TAP_POISON_EVERY (default 500, so that the default run has about 20
# records of each kind; the issue's ratio is 10,000, for larger runs:
# WEIR_TAP_EVENTS=300000 WEIR_TAP_SECONDS=60 WEIR_TAP_POISON_EVERY=10000
# has 5 of each), of kind 1 + (s / every) % 6:
#
#   1  d = 0: v / d and 100 / d raise "division by zero"
#   2  ts is null
#   3  ts at an end of timestamptz (294276-12-31 23:59:59+00 or
#      4714-11-24 00:00:00+00 BC): outside what a pipeline can place
#   4  k is null (written with an explicit partition)
#   5  s = 'x': s::int raises "invalid input syntax for type integer"
#   6  v = 2000000001: the projection's sink has CHECK (v <> 2000000001)
#
# and the tick halfway between two of those gives a poison mark, of kind
# 2 + (s / every) % 3 (null time, time at an end, null key).
#
# Pipelines (with weir.read_ahead's default, auto, dd, lv and jn read
# through read-ahead processes, win and proj read themselves), and the
# kinds of poison that are dead letters of records for each:
#
#   win   tumbling 1-minute windows per k of count(*), sum(v), sum(v / d),
#         max(s::int)                                       ev 1 2 3 4 5
#   dd    deduplication by k, 5-second horizon, of k, v, s::int, ts, part,
#         pos                                               ev 2 3 4 5
#   lv    last value per k of v, 100 / d, ts, part, pos     ev 1 2 3 4
#   proj  projection of part, pos, k, v, v / d, s::int, ts  ev 1 5
#         (and kind 6 as sink rows its sink refuses)
#   jn    interval join of ev and marks on k, l.ts between r.ts - 10 s and
#         r.ts + 5 s, with l.v / l.d                        ev 1 2 3 4,
#                                                           marks 2 3 4
#
# So a record that is poison to one pipeline is good for another (a null
# event time passes the projection, d = 0 the deduplication, s = 'x' the
# last value and the join, v = 2000000001 all but the projection's sink),
# and the oracles say so.  Poison with an event time far in the future
# must not move a watermark: if it did, the windows, duplicates and join
# buffers of every good record after it would be late and the sinks would
# not equal their oracles.
#
# WEIR_TAP_EVENTS overrides the number of ev records (60000),
# WEIR_TAP_SECONDS the time the producers take to write them (30),
# WEIR_TAP_SEED the seed that places the kills, WEIR_TAP_POISON_EVERY the
# ticks between two poison records (500).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use List::Util qw(shuffle);
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target    = env_or('WEIR_TAP_EVENTS',       60_000);
my $seconds   = env_or('WEIR_TAP_SECONDS',      30);
my $seed      = env_or('WEIR_TAP_SEED',         int(time()) ^ $$);
my $every     = env_or('WEIR_TAP_POISON_EVERY', 500);
my $keys      = 500;
my $producers = 4;
my $deadline  = 150;    # seconds for the produce phase, kills included
my $base      = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin    = q{timestamptz '1970-01-01 00:00:00+00'};
my $far_future = q{timestamptz '294276-12-31 23:59:59+00'};
my $far_past   = q{timestamptz '4714-11-24 00:00:00+00 BC'};
my $horizon   = q{interval '5 seconds'};
my $right_before = q{interval '5 seconds'};
my $right_after  = q{interval '10 seconds'};
my $flush     = q{timestamptz '2100-01-01 00:00:00+00'};
die "WEIR_TAP_POISON_EVERY must be an integer of at least 6\n"
  unless $every =~ /^\d+$/ && $every >= 6;
diag "seed $seed (WEIR_TAP_SEED places the kills the same way), $target ev records, "
  . "a poison record every $every ticks";

# pgbench's rate: a transaction writes 20 to 200 ev records, 110 on average
my $rate = bench_rate($target, 110.0, $seconds);

my $t_start = time;
my $node    = start_weir_node('poison_exactly_once', crash_test_conf(40));

# The kinds of poison that are dead letters of records, per pipeline and
# source, with the error each raises (a LIKE pattern).
my $division = 'division by zero';
my $null_ts  = 'event time is null';
my $range    = 'event time % is outside the range this pipeline can place (% to %)';
my $cast     = 'invalid input syntax for type integer: "x"';
my %poison   = (
	win => [
		[ 'ev', 1, $division ], [ 'ev', 2, $null_ts ], [ 'ev', 3, $range ],
		[ 'ev', 4, 'key "k" is null' ], [ 'ev', 5, $cast ]
	],
	dd => [ [ 'ev', 2, $null_ts ], [ 'ev', 3, $range ], [ 'ev', 4, 'key "k" is null' ], [ 'ev', 5, $cast ] ],
	lv => [
		[ 'ev', 1, $division ], [ 'ev', 2, $null_ts ], [ 'ev', 3, $range ],
		[ 'ev', 4, 'key "k" is null' ]
	],
	proj => [ [ 'ev', 1, $division ], [ 'ev', 5, $cast ] ],
	jn   => [
		[ 'ev',    1, $division ], [ 'ev', 2, $null_ts ], [ 'ev', 3, $range ],
		[ 'ev',    4, 'key "k" is null' ],
		[ 'marks', 2, $null_ts ], [ 'marks', 3, $range ], [ 'marks', 4, 'key "k" is null' ]
	]);
my @pipelines  = ('win', 'dd', 'lv', 'proj', 'jn');
my $npipelines = scalar(@pipelines);
# the ev kinds that are poison to a pipeline, as an SQL list
my %bad_ev = map {
	my $p = $_;
	($p => join(', ', map { $_->[1] } grep { $_->[0] eq 'ev' } @{ $poison{$p} }))
} @pipelines;
$bad_ev{proj} .= ', 6';    # its sink refuses those

my $poison_rows = join(",\n",
	map {
		my $p = $_;
		map { "('$p', '$_->[0]', $_->[1], '" . ($_->[2] =~ s/'/''/gr) . "')" } @{ $poison{$p} }
	} @pipelines);

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'k int, v bigint, d int, s text, ts timestamptz, poison int',
						 partitions => 4, key => 'k');
SELECT weir.create_topic('marks', 'k int, tag text, ts timestamptz, poison int',
						 partitions => 3, key => 'k');
CREATE TABLE poison_of (pipeline text, source text, kind int, error text);
INSERT INTO poison_of VALUES
$poison_rows;
CREATE TABLE proj (src_part int, src_pos bigint, k int, v bigint, vd bigint, si int, ts timestamptz,
				   CONSTRAINT v_fits CHECK (v <> 2000000001));
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total, sum(v / d) AS vd, max(s::int) AS smax',
							out_of_orderness => '5 minutes', late_records => 'win_late');
SELECT weir.create_dedup('dd', 'ev', key => 'k', event_time => 'ts', horizon => $horizon,
						 columns => 'k, v, s::int AS si, ts, part AS src_part, pos AS src_pos',
						 out_of_orderness => '5 minutes', late_records => 'dd_late');
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 'ts',
							  columns => 'v, 100 / d AS q, ts, part AS src_part, pos AS src_pos');
SELECT weir.create_projection('proj', 'ev',
							  columns => 'part AS src_part, pos AS src_pos, k, v, v / d AS vd, s::int AS si, ts',
							  sink => 'proj');
SELECT weir.create_join('jn', 'ev', 'marks', left_key => 'k', right_key => 'k',
						left_event_time => 'ts', right_event_time => 'ts', right_before => $right_before, right_after => $right_after,
						columns => 'l.part AS l_part, l.pos AS l_pos, l.k, l.v, l.v / l.d AS vd, '
								   'l.ts AS lts, r.part AS r_part, r.pos AS r_pos, r.tag, r.ts AS rts',
						out_of_orderness => '10 minutes');
});
wait_pipelines_running($node, $npipelines);

# Producers: 20 to 200 ticks per transaction, an ev record for each, a
# mark for one good record in five and for every poison mark tick, and a
# mark that joins each ev record of kinds 5 and 6 (poison elsewhere, good
# for the join).
my $half            = int($every / 2);
my $producer_script = bench_script(
	'weir_poison_producer.sql', qq{\\set n random(20, 200)
WITH g AS MATERIALIZED (
	SELECT s, random() AS a, random() AS b, random() AS c, random() AS o
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) q),
e AS MATERIALIZED (
	SELECT s, c, o, CASE WHEN s % $every = 0 THEN 1 + (s / $every) % 6 ELSE 0 END AS poison,
		   floor(a * $keys)::int AS k,
		   $base + (s * 20 - floor(b * 20000)) * interval '1 ms' AS ts
	  FROM g),
ins AS (
	INSERT INTO ev (part, k, v, d, s, ts, poison)
	SELECT CASE WHEN poison = 4 THEN (s % 4)::int ELSE -1 END,
		   CASE WHEN poison = 4 THEN NULL ELSE k END,
		   CASE WHEN poison = 6 THEN 2000000001 ELSE floor(random() * 2000001)::bigint - 1000000 END,
		   CASE WHEN poison = 1 THEN 0 ELSE 1 + floor(random() * 9)::int END,
		   CASE WHEN poison = 5 THEN 'x' ELSE floor(random() * 100000)::int::text END,
		   CASE WHEN poison = 2 THEN NULL
				WHEN poison = 3 AND (s / $every / 6) % 2 = 0 THEN $far_future
				WHEN poison = 3 THEN $far_past
				ELSE ts END,
		   poison
	  FROM e)
INSERT INTO marks (part, k, tag, ts, poison)
SELECT CASE WHEN mpoison = 4 THEN (s % 3)::int ELSE -1 END,
	   CASE WHEN mpoison = 4 THEN NULL ELSE k END,
	   'm' || s,
	   CASE WHEN mpoison = 2 THEN NULL
			WHEN mpoison = 3 AND (s / $every / 3) % 2 = 0 THEN $far_future
			WHEN mpoison = 3 THEN $far_past
			WHEN poison IN (5, 6) THEN ts + floor(o * 15001 - 5000) * interval '1 ms'
			ELSE ts + floor(o * 30001 - 15000) * interval '1 ms' END,
	   mpoison
  FROM (SELECT s, k, ts, o, poison,
			   CASE WHEN s % $every = $half THEN 2 + (s / $every) % 3 ELSE 0 END AS mpoison
		  FROM e
		 WHERE s % $every = $half OR (poison = 0 AND c < 0.2) OR poison IN (5, 6)) m;
});

# Three kill -9 of a pipeline's worker (three different pipelines, in
# random order) at moments of the run placed by progress.
my @plan = plan_crashes($seed, $target, 0.15, 0.25, 0.15, 'kill', 'kill', 'kill');
my $ncrashes = scalar(@plan);
my @kill_target = (shuffle(@pipelines))[ 0 .. $ncrashes - 1 ];
note "kills: the workers of " . join(', ', @kill_target);
my $run = produce_with_crashes(
	node      => $node,
	benches   => [ [ 'producer', $producer_script, $producers, '-R', $rate ] ],
	rows      => sub { try_count($node, 'SELECT count(*) FROM ev') },
	target    => $target,
	deadline  => $deadline,
	unit      => 'ev records',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => workers_in_turn($node, @kill_target));
my $t_produced = $run->{t_end};

# Flush: one good record per partition of each topic far in the future,
# with keys that match nothing else; they are in the oracles like any
# good record (the windows they open stay open).
$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (part, k, v, d, s, ts, poison)
SELECT p, -1 - p, 0, 1, '0', $flush, 0 FROM generate_series(0, 3) p;
INSERT INTO marks (part, k, tag, ts, poison)
SELECT p, -11 - p, 'flush', $flush, 0 FROM generate_series(0, 2) p;
});
checkpoint_each($node, 'record', @pipelines);
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the producers ended", $t_caught_up - $t_produced);

my ($n_ev, $n_marks) = split /\|/,
  $node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM ev), (SELECT count(*) FROM marks)');
note "topics: ev $n_ev, marks $n_marks records";
cmp_ok($n_ev, '>=', $target, "ev holds at least $target records");

# The data has what the test is about: every kind of poison, several
# times, in each topic.
my %kinds = split /[|\n]/, $node->safe_psql(
	'postgres', q{
SELECT 'ev ' || g.kind, (SELECT count(*) FROM ev e WHERE e.poison = g.kind)
  FROM generate_series(1, 6) g(kind)
UNION ALL
SELECT 'marks ' || g.kind, (SELECT count(*) FROM marks m WHERE m.poison = g.kind)
  FROM generate_series(2, 4) g(kind)});
note 'poison records: ' . join(', ', map { "$_: $kinds{$_}" } sort keys %kinds);
cmp_ok($kinds{"ev $_"},    '>=', 2, "ev holds poison records of kind $_")    for 1 .. 6;
cmp_ok($kinds{"marks $_"}, '>=', 2, "marks holds poison records of kind $_") for 2 .. 4;

########################################################################
# The sinks against their oracles
########################################################################

my $wm_win = last_watermark($node, 'win');
note "pipeline win: final watermark $wm_win";
$node->safe_psql(
	'postgres', qq{
CREATE INDEX ev_k ON ev (k, part, pos);
ANALYZE ev;
ANALYZE marks;
CREATE TABLE oracle_win AS
SELECT * FROM (
	SELECT k, date_bin('1 minute', ts, $origin) AS window_start,
		   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
		   count(*) AS n, sum(v) AS total, sum(v / d) AS vd, max(s::int) AS smax
	  FROM ev e
	 WHERE poison NOT IN ($bad_ev{win})
	   AND NOT EXISTS (SELECT 1 FROM win_late l WHERE l.part = e.part AND l.pos = e.pos)
	 GROUP BY 1, 2) o
 WHERE window_end <= '$wm_win';
CREATE TABLE oracle_dd AS
SELECT r.k, r.v, r.s::int AS si, r.ts, r.part AS src_part, r.pos AS src_pos
  FROM ev r
 WHERE r.poison NOT IN ($bad_ev{dd})
   AND NOT EXISTS (SELECT 1 FROM dd_late l WHERE l.part = r.part AND l.pos = r.pos)
   AND NOT EXISTS (SELECT 1 FROM ev e
					WHERE e.k = r.k AND e.part = r.part AND e.pos < r.pos AND e.ts > r.ts - $horizon
					  AND e.poison NOT IN ($bad_ev{dd})
					  AND NOT EXISTS (SELECT 1 FROM dd_late l WHERE l.part = e.part AND l.pos = e.pos));
CREATE TABLE oracle_lv AS
SELECT DISTINCT ON (k) k, v, 100 / d AS q, ts, part AS src_part, pos AS src_pos
  FROM ev WHERE poison NOT IN ($bad_ev{lv})
 ORDER BY k, ts DESC, part DESC, pos DESC;
CREATE TABLE oracle_proj AS
SELECT part AS src_part, pos AS src_pos, k, v, v / d AS vd, s::int AS si, ts
  FROM ev WHERE poison NOT IN ($bad_ev{proj});
CREATE TABLE oracle_jn AS
SELECT l.part AS l_part, l.pos AS l_pos, l.k, l.v, l.v / l.d AS vd, l.ts AS lts,
	   r.part AS r_part, r.pos AS r_pos, r.tag, r.ts AS rts
  FROM ev l JOIN marks r ON l.k = r.k AND r.ts BETWEEN l.ts - $right_before AND l.ts + $right_after
 WHERE l.poison NOT IN ($bad_ev{jn}) AND r.poison = 0;
});

# What the oracles say about the data.
my %stat;
@stat{qw(late_win late_dd open_windows good_dd dups proj_other dd_other jn_other pairs)} =
  split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT (SELECT count(*) FROM win_late), (SELECT count(*) FROM dd_late),
	   -- windows of the producers' records the final watermark left open
	   (SELECT count(*) FROM ev WHERE k >= 0 AND poison NOT IN ($bad_ev{win})
							  AND date_bin('1 minute', ts, $origin) + interval '1 minute' > '$wm_win'),
	   (SELECT count(*) FROM ev WHERE poison NOT IN ($bad_ev{dd})),
	   (SELECT count(*) FROM ev WHERE poison NOT IN ($bad_ev{dd})) - (SELECT count(*) FROM oracle_dd),
	   -- records poison to another pipeline that these ones take in
	   (SELECT count(*) FROM oracle_proj o JOIN ev e ON e.part = o.src_part AND e.pos = o.src_pos
		 WHERE e.poison IN (2, 3, 4)),
	   (SELECT count(*) FROM ev WHERE poison IN (1, 6)),
	   (SELECT count(*) FROM oracle_jn o JOIN ev e ON e.part = o.l_part AND e.pos = o.l_pos
		 WHERE e.poison IN (5, 6)),
	   (SELECT count(*) FROM oracle_jn)});
note join(', ', map { "$_ $stat{$_}" } sort keys %stat);
is($stat{late_win}, '0', 'pipeline win: no record was late');
is($stat{late_dd},  '0', 'pipeline dd: no record was late');
is($stat{open_windows}, '0', 'pipeline win: the final watermark closed every window of the producers');
cmp_ok($stat{dups}, '>', 0, 'pipeline dd: some good records are duplicates');
cmp_ok($stat{dups}, '<', $stat{good_dd}, 'pipeline dd: some good records are not');
cmp_ok($stat{proj_other}, '>', 0,
	'pipeline proj: records with a null or impossible event time or a null key are good for it');
cmp_ok($stat{dd_other}, '>', 0, 'pipeline dd: records with d = 0 or v = 2000000001 are good for it');
cmp_ok($stat{jn_other}, '>', 0, "pipeline jn: records with s = 'x' or v = 2000000001 join");
cmp_ok($stat{pairs}, '>', 0, 'pipeline jn: there are pairs');

my %cols = (
	win  => 'k, window_start, window_end, n, total, vd, smax',
	dd   => 'k, v, si, ts, src_part, src_pos',
	lv   => 'k, v, q, ts, src_part, src_pos',
	proj => 'src_part, src_pos, k, v, vd, si, ts',
	jn   => 'l_part, l_pos, k, v, vd, lts, r_part, r_pos, tag, rts');
for my $p (@pipelines)
{
	compare_with_oracle(
		$node,
		pipeline => $p,
		cols     => $cols{$p},
		order    => '1, 2, 3',
		diag     => sub {
			my $k = $p eq 'proj' || $p eq 'jn' ? $_[2] : $_[0];
			$k = 'NULL' if !defined $k || $k eq '';
			return "pipeline $p: the ev records of key $k (part|pos|v|d|s|ts|poison):\n"
			  . $node->safe_psql('postgres',
				"SELECT part, pos, v, d, s, ts, poison FROM ev WHERE k IS NOT DISTINCT FROM $k ORDER BY ts LIMIT 40");
		});
}

########################################################################
# The dead letters
########################################################################

$node->safe_psql(
	'postgres', q{
CREATE VIEW dead_records AS
SELECT p.name AS pipeline, d.source::text AS source, d.partition AS part, d.position AS pos,
	   d.error, d.record
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE d.position IS NOT NULL;
CREATE VIEW dead_rows AS
SELECT p.name AS pipeline, d.source::text AS source, d.partition AS part, d.error, d.record
  FROM weir.dead_letters d JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE d.position IS NULL;
CREATE TABLE expected_dead AS
SELECT o.pipeline, o.source, t.part, t.pos, o.kind, o.error AS pattern, t.record
  FROM poison_of o
  JOIN (SELECT 'ev' AS source, part, pos, poison, to_jsonb(e) AS record FROM ev e
		UNION ALL
		SELECT 'marks', part, pos, poison, to_jsonb(m) FROM marks m) t
	ON t.source = o.source AND t.poison = o.kind;
});

# Per pipeline: the dead letters of records are exactly the records poison
# to it, once each.
for my $p (@pipelines)
{
	compare_with_oracle(
		$node,
		label  => "pipeline $p: dead letters of records",
		sink   => "(SELECT * FROM dead_records WHERE pipeline = '$p') d",
		oracle => "(SELECT * FROM expected_dead WHERE pipeline = '$p') x",
		cols   => 'source, part, pos',
		order  => '1, 2, 3');
}
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(format('%s %s %s %s: %s times', pipeline, source, part, pos, n), E'\n')
  FROM (SELECT pipeline, source, part, pos, count(*) AS n FROM dead_records
		 GROUP BY 1, 2, 3, 4 HAVING count(*) > 1) d}),
	'',
	'no record is a dead letter of a pipeline twice');

# Each with the error of its kind and the whole record (event times
# compared as values: the text depends on the time zone).
my ($matched, $wrong) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(*),
	   count(*) FILTER (WHERE d.error NOT LIKE x.pattern
						   OR d.record - 'ts' <> x.record - 'ts'
						   OR (d.record->>'ts')::timestamptz IS DISTINCT FROM (x.record->>'ts')::timestamptz)
  FROM dead_records d JOIN expected_dead x USING (pipeline, source, part, pos)});
is($matched, $node->safe_psql('postgres', 'SELECT count(*) FROM expected_dead'),
	'every poison record has its dead letter');
is($wrong, '0', 'each dead letter of a record has the error of its kind and the whole record');
if ($wrong ne '0')
{
	diag "dead letters with another error or record (first 10):\n"
	  . $node->safe_psql(
		'postgres', q{
SELECT d.pipeline, d.source, d.part, d.pos, x.kind, d.error, d.record, x.record
  FROM dead_records d JOIN expected_dead x USING (pipeline, source, part, pos)
 WHERE d.error NOT LIKE x.pattern OR d.record - 'ts' <> x.record - 'ts'
	OR (d.record->>'ts')::timestamptz IS DISTINCT FROM (x.record->>'ts')::timestamptz
 ORDER BY 1, 2, 3, 4 LIMIT 10});
}

# The sink rows the projection's sink refused: one for each ev record of
# kind 6, once, as the projection computes it; no other pipeline has any.
compare_with_oracle(
	$node,
	label  => 'pipeline proj: dead letters of sink rows',
	sink   => q{(SELECT (record->>'src_part')::int AS part, (record->>'src_pos')::bigint AS pos
				   FROM dead_rows WHERE pipeline = 'proj') d},
	oracle => '(SELECT part, pos FROM ev WHERE poison = 6) x',
	cols   => 'part, pos',
	order  => '1, 2');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM dead_rows d
 WHERE d.pipeline <> 'proj' OR d.source <> 'proj' OR d.part IS NOT NULL
	OR d.error <> 'sink "proj": new row for relation "proj" violates check constraint "v_fits"'
	OR NOT EXISTS (SELECT 1 FROM ev e
					WHERE e.part = (d.record->>'src_part')::int AND e.pos = (d.record->>'src_pos')::bigint
					  AND d.record - 'ts' = jsonb_build_object('src_part', e.part::text, 'src_pos', e.pos::text,
															   'k', e.k::text, 'v', e.v::text,
															   'vd', (e.v / e.d)::text, 'si', e.s)
					  AND (d.record->>'ts')::timestamptz = e.ts)}),
	'0',
	'each dead letter of a sink row is a row of proj, with its error and the whole row');

is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM weir.dead_letters)
	   - (SELECT count(*) FROM expected_dead) - (SELECT count(*) FROM ev WHERE poison = 6)}),
	'0',
	'weir.dead_letters holds nothing else');

########################################################################
# The pipelines' own account
########################################################################

my %source_rows = (
	win  => $n_ev,
	dd   => $n_ev,
	lv   => $n_ev,
	proj => $n_ev,
	jn   => $n_ev + $n_marks);
for my $p (@pipelines)
{
	my %row;
	@row{qw(status late error restores)} = split /\|/, $node->safe_psql(
		'postgres', qq{
SELECT status, records_late, coalesce(last_error, ''),
	   (SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
		 WHERE q.name = s.name)
  FROM weir.pipelines s WHERE name = '$p'}), -1;
	is($row{status}, 'running', "pipeline $p is running");
	is($row{error},  '',        "pipeline $p: no last_error");
	is($row{late},   '0',       "pipeline $p: records_late = 0");
	cmp_ok($row{restores}, '>=', $ncrashes + 1,
		"pipeline $p restored a checkpoint at its start and after each of the $ncrashes kills ($row{restores} restores)");
	is(checkpoint_sum($node, $p, 'records_in'),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every record of its sources once");
}
is(checkpoint_sum($node, 'jn', 'sink_rows'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM jn'),
	'pipeline jn: its committed checkpoints wrote every sink row once');
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s dead letters', p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.dead_letters d WHERE d.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});

# The server log: the intended kills, nothing else.
check_crash_log($node, $ncrashes, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
