# 006_dedup_bounded.pl
#
# A deduplication's state stays bounded while its watermark advances, and
# grows, with a status that says why, while the watermark is stalled.
#
# (1) Advancing watermark.  5,000,000 records with ever-new ids (id = 1, 2,
# ...) go through a dedup with a 1-minute horizon and 1 second of
# out-of-orderness.  Event time advances steadily: id g has event time
# base + g * 100 us, so 10,000 new ids per second of event time and 500
# seconds in all.  They are loaded in 50 chunks of 100,000 (one INSERT ...
# SELECT each, spread over the 4 partitions by id % 4, so every partition's
# time advances); after each, weir.checkpoint() and a sample of
# weir.pipelines.  Each id's entry leaves when the watermark passes its
# sighting + horizon, in buckets of horizon/8; entries changed since the
# last checkpoint wait for the next one.  The rate is chosen so that the
# horizon, not the checkpoints, decides the state's size: a chunk spans 10
# s of event time, less than a horizon, so no id of the chunk being read is
# due yet (at 1,000 ids per second a chunk would span 100 s, and the ids of
# the last chunk, all waiting for a checkpoint, would be all the state
# holds).  So after each chunk:
#  - the watermark is the chunk's last event time minus 1 s (the slowest
#    partition's newest record is 3 ids behind the chunk's last);
#  - the entries are exactly the ids the design says: every id seen within
#    one horizon of the watermark (fewer would let duplicates through), and
#    none seen more than 1.125 horizons before it;
#  - the entry count stays below rate x horizon x 1.125 + rate x
#    out-of-orderness + one checkpoint's worth of ids (at most a chunk:
#    every chunk ends with a checkpoint) = 675,000 + 10,000 + 100,000 =
#    785,000, whereas the run has 5,000,000 ids;
#  - state_bytes after the first minutes does not grow: its largest value
#    over the second half of the run (event time 250-500 s) is at most 1.2
#    times its largest over samples 10-15 (event time 100-150 s, once the
#    state has filled up).  state_bytes counts the bytes weir asked the DSA
#    for (entries plus a slot table whose size is a power of two), not the
#    DSA's segments, so the 1.2 leaves room for noise but not for a table
#    doubling.  On Linux the test also notes the DSM segments the worker has
#    mapped, which is what the area really occupies; it is not asserted.
# At the end every record is out (records_out = 5,000,000, none dropped or
# late) and the sink holds each id once.
#
# (2) Stalled watermark, no idle_timeout.  The same dedup over another
# 4-partition topic, at 1,000 ids per second of event time: 20,000 ids go
# to all 4 partitions, then 500,000 more to partitions 0-2 only, while
# partition 3 stays silent.  The watermark stays where partition 3 left it,
# nothing expires, and the entry count equals the number of ids produced
# (520,000, beyond the bound an advancing watermark would keep it under);
# weir.pipelines.state_warning names partition 3 as holding the watermark
# back.  Then one record far ahead in time in partition 3 releases the
# watermark and the entries drop to those within 1 to 1.125 horizons.
# A third dedup, over a topic whose partition 3 never receives a record,
# has no watermark at all, keeps every id, and its warning says partition 3
# has shown no event time yet.
#
# WEIR_TAP_DEDUP_RECORDS overrides the number of records of (1) (5000000;
# at least 3000000, a multiple of 100000).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use List::Util qw(max);
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $records = env_or('WEIR_TAP_DEDUP_RECORDS', 5_000_000);
my $chunk   = 100_000;
die "WEIR_TAP_DEDUP_RECORDS must be a multiple of $chunk, at least 3000000"
  if $records < 3_000_000 || $records % $chunk;

# (1): 10,000 ids per second of event time, 1-minute horizon, 1 s disorder
my $rate1    = 10_000;
my $step1_us = 1_000_000 / $rate1;    # event time between two ids
my $horizon  = 60_000_000;            # us
my $bucket   = $horizon / 8;
my $ooo      = 1_000_000;             # us
my $bound = $rate1 * ($horizon + $bucket + $ooo) / 1_000_000 + $chunk;

# (2): 1,000 ids per second of event time
my $rate2    = 1_000;
my $step2_us = 1_000_000 / $rate2;
my $ids_a    = 20_000;                # to all partitions
my $ids_b    = 500_000;               # to partitions 0-2

my $t_start = time;
my $node    = start_weir_node(
	'dedup_bounded',
	'weir.launcher_naptime' => 100,
	max_worker_processes    => 40,
	max_wal_size            => "'4GB'",
	log_statement           => 'none',
	# the worker reads itself here: its dedup keeps that path under test
	# (weir.read_ahead's default has dedup read ahead)
	'weir.read_ahead'       => 'off');

my $base = q{timestamptz '2024-01-01 00:00:00+00'};

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('fresh_ids', 'id bigint, ts timestamptz', partitions => 4);
SELECT weir.create_dedup('fresh', 'fresh_ids', key => 'id', event_time => 'ts',
						 horizon => '1 minute', out_of_orderness => '1 second');
SELECT weir.create_topic('stall_ids', 'id bigint, ts timestamptz', partitions => 4);
SELECT weir.create_dedup('stalled', 'stall_ids', key => 'id', event_time => 'ts',
						 horizon => '1 minute', out_of_orderness => '1 second');
SELECT weir.create_topic('quiet_ids', 'id bigint, ts timestamptz', partitions => 4);
SELECT weir.create_dedup('quiet', 'quiet_ids', key => 'id', event_time => 'ts',
						 horizon => '1 minute', out_of_orderness => '1 second');
});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) FROM weir.pipelines WHERE status = 'running' AND name IN ('fresh', 'stalled', 'quiet')},
		'3'),
	'the three dedups run');

# The pipeline's figures: windows (ids in memory), state_bytes, the
# watermark in microseconds after $base, state_warning, worker_pid.
sub figures
{
	my ($name) = @_;
	return split /\|/,
	  $node->safe_psql(
		'postgres', qq{
SELECT windows, state_bytes,
	   coalesce((extract(epoch FROM watermark - $base) * 1000000)::bigint::text, 'none'),
	   coalesce(state_warning, ''), worker_pid
  FROM weir.pipelines WHERE name = '$name'}), -1;
}

# Bytes of the DSM segments a process has mapped (Linux), or undef.
sub dsm_mapped
{
	my ($pid) = @_;
	my %seg;
	no warnings 'portable';    # 64-bit addresses: this perl has 64-bit integers
	open my $fh, '<', "/proc/$pid/maps" or return undef;
	while (<$fh>)
	{
		$seg{$3} += hex($2) - hex($1)
		  if m{^([0-9a-f]+)-([0-9a-f]+) .* (/dev/shm/PostgreSQL\.\d+)};
	}
	close $fh;
	my $sum = 0;
	$sum += $_ for values %seg;
	return $sum;
}

# Of the ids 1..$last produced $step_us apart, how many were seen after
# $wm - $age (all times in us after $base).
sub ids_younger
{
	my ($last, $step_us, $wm, $age) = @_;
	my $older = int(($wm - $age) / $step_us);
	$older = 0 if $older < 0;
	$older = $last if $older > $last;
	return $last - $older;
}

# the stalled and the quiet dedups get their first records now, so that
# their silent partition has been silent for long when (2) looks at them
$node->safe_psql(
	'postgres', qq{
INSERT INTO stall_ids (part, id, ts)
SELECT g % 4, g, $base + g * interval '$step2_us microseconds' FROM generate_series(1, $ids_a) g;
INSERT INTO quiet_ids (part, id, ts)
SELECT g % 3, g, $base + g * interval '1 second' FROM generate_series(1, 3000) g;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('stalled', '60 s')});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('quiet', '60 s')});
my @a = figures('stalled');
is($a[0], $ids_a, "stalled: $ids_a ids in memory after the first records");
# partition 1's newest is id $ids_a - 3 (ids % 4 = 1)
is($a[2], ($ids_a - 3) * $step2_us - $ooo, 'stalled: the watermark is partition 1\'s newest event time minus 1 s');

########################################################################
# (1) ever-new ids, advancing watermark
########################################################################

my $t1 = time;
my $pid1 = (figures('fresh'))[4];
my @samples;    # { last, windows, bytes, wm, warning, dsm }
for (my $first = 1; $first <= $records; $first += $chunk)
{
	my $last = $first + $chunk - 1;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO fresh_ids (part, id, ts)
SELECT g % 4, g, $base + g * interval '$step1_us microseconds' FROM generate_series($first, $last) g});
	$node->safe_psql('postgres', q{SELECT weir.checkpoint('fresh', '120 s')});
	my ($windows, $bytes, $wm, $warning, $pid) = figures('fresh');
	push @samples,
	  {
		last    => $last,
		windows => $windows,
		bytes   => $bytes,
		wm      => $wm,
		warning => $warning,
		pid     => $pid,
		dsm     => dsm_mapped($pid1)
	  };
}
my $t1_loaded = time;
note sprintf('(1): %d records loaded and deduplicated in %.1f s', $records, $t1_loaded - $t1);
note "(1) after each chunk: last id | event time of the watermark (s) | ids in memory "
  . "[required, allowed] | state_bytes | DSM mapped by the worker";
for my $s (@samples)
{
	$s->{lower} = ids_younger($s->{last}, $step1_us, $s->{wm}, $horizon);
	$s->{upper} = ids_younger($s->{last}, $step1_us, $s->{wm}, $horizon + $bucket);
	note sprintf(
		'%8d | %7.3f | %7d [%7d, %7d] | %9d | %s',
		$s->{last}, $s->{wm} / 1e6, $s->{windows}, $s->{lower}, $s->{upper},
		$s->{bytes}, defined $s->{dsm} ? $s->{dsm} : 'n/a');
}

is(scalar(grep { $_->{pid} != $pid1 } @samples), 0, '(1): the same worker ran throughout');
my @bad = grep { $_->{wm} != ($_->{last} - 3) * $step1_us - $ooo } @samples;
is(scalar(@bad), 0,
	'(1): after each chunk the watermark is the slowest partition\'s newest event time minus 1 s')
  or diag "first: after id $bad[0]{last} the watermark is at $bad[0]{wm} us";
@bad = grep { $_->{windows} < $_->{lower} } @samples;
is(scalar(@bad), 0, '(1): after each chunk every id seen within the horizon of the watermark is in memory')
  or diag "first: after id $bad[0]{last}, $bad[0]{windows} ids in memory, $bad[0]{lower} required";
@bad = grep { $_->{windows} > $_->{upper} } @samples;
is(scalar(@bad), 0, '(1): after each chunk no id seen more than 1.125 horizons before the watermark is in memory')
  or diag "first: after id $bad[0]{last}, $bad[0]{windows} ids in memory, at most $bad[0]{upper} allowed";
my $max_windows = max(map { $_->{windows} } @samples);
cmp_ok($max_windows, '<=', $bound,
	"(1): the ids in memory never exceed rate x (1.125 horizon + out-of-orderness) + one chunk = $bound "
	  . "(of $records ids)");
note "(1): at most $max_windows ids in memory, bound $bound";

my $n    = scalar @samples;
my $ref  = max(map { $_->{bytes} } @samples[ 9 .. 14 ]);
my $late = max(map { $_->{bytes} } @samples[ int($n / 2) .. $n - 1 ]);
cmp_ok($late, '<=', 1.2 * $ref,
	'(1): state_bytes over the second half of the run stays within 1.2 x its level at 100-150 s of event time');
note sprintf('(1): state_bytes at most %d over samples 10-15, at most %d over samples %d-%d (%.3f x)',
	$ref, $late, int($n / 2) + 1, $n, $late / $ref);
if (defined $samples[0]{dsm})
{
	note sprintf('(1): DSM mapped by the worker: %d after sample 10, %d after sample 15, %d after sample %d, %d at the end',
		$samples[9]{dsm}, $samples[14]{dsm}, $samples[ int($n / 2) ]{dsm}, int($n / 2) + 1, $samples[-1]{dsm});
}
@bad = grep { $_->{warning} ne '' } @samples;
is(scalar(@bad), 0, '(1): no state_warning while the watermark advances')
  or diag "first: after id $bad[0]{last}: $bad[0]{warning}";

is( $node->safe_psql(
		'postgres',
		q{SELECT records_in, records_out, records_dropped, records_late, records_dead
			FROM weir.pipelines WHERE name = 'fresh'}),
	"$records|$records|0|0|0",
	"(1): records in and out: $records, none dropped, late or dead");
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id), min(id), max(id) FROM fresh'),
	"$records|$records|1|$records", "(1): the sink holds each of the $records ids once");
note sprintf('(1): %.1f s in all', time - $t1);

########################################################################
# (2) one partition silent, no idle_timeout: the watermark stalls
########################################################################

my $t2 = time;
my $last2 = $ids_a;
my @growth;
for (my $first = $ids_a + 1; $first <= $ids_a + $ids_b; $first += $chunk)
{
	$last2 = $first + $chunk - 1;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO stall_ids (part, id, ts)
SELECT g % 3, g, $base + g * interval '$step2_us microseconds' FROM generate_series($first, $last2) g});
	$node->safe_psql('postgres', q{SELECT weir.checkpoint('stalled', '120 s')});
	my ($windows, $bytes, $wm) = figures('stalled');
	push @growth, { last => $last2, windows => $windows, bytes => $bytes, wm => $wm };
	note sprintf('(2) after id %d: %d ids in memory, state_bytes %d, watermark at %.3f s',
		$last2, $windows, $bytes, $wm / 1e6);
}
# partition 3's newest is id $ids_a - 1 (ids % 4 = 3)
my $wm_a = ($ids_a - 1) * $step2_us - $ooo;
is(scalar(grep { $_->{wm} != $wm_a } @growth), 0,
	'(2): the watermark stays at partition 3\'s newest event time minus 1 s');
@bad = grep { $_->{windows} != $_->{last} } @growth;
is(scalar(@bad), 0, '(2): nothing expires: after each chunk every id produced is in memory')
  or diag "first: after id $bad[0]{last}: $bad[0]{windows} ids in memory";
my $bound2 = $rate2 * ($horizon + $bucket + $ooo) / 1_000_000 + $chunk;
cmp_ok($growth[-1]{windows}, '>', $bound2,
	"(2): the state grew past what an advancing watermark would keep ($bound2)");
cmp_ok($growth[-1]{bytes}, '>', 2 * $growth[0]{bytes}, '(2): state_bytes grew with it');

my $warning_like =
  q{watermark stalled: partition 3 of stall_ids has had no data since % while others have, and holds it back (no idle_timeout); state waiting for the watermark stays, and grows while records arrive};
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT state_warning LIKE '$warning_like' FROM weir.pipelines WHERE name = 'stalled'}),
	'(2): state_warning says partition 3 holds the watermark back');
my $warning = (figures('stalled'))[3];
note "(2): state_warning: $warning";
is( $node->safe_psql(
		'postgres', qq{
SELECT substring(state_warning FROM 'since (.*) while others')::timestamptz < now() - interval '10 seconds'
  FROM weir.pipelines WHERE name = 'stalled'}),
	't', '(2): the warning gives when partition 3 last had data, more than 10 s ago');
is($node->safe_psql('postgres',
		q{SELECT records_out, records_dropped, records_late FROM weir.pipelines WHERE name = 'stalled'}),
	($ids_a + $ids_b) . '|0|0', '(2): every record is out, none dropped or late');

# one record far ahead in partition 3: the watermark moves to partition
# 2's newest (id $last2 - 2, the last with id % 3 = 2) minus 1 s
$node->safe_psql('postgres',
	qq{INSERT INTO stall_ids (part, id, ts) VALUES (3, 0, $base + interval '1 day')});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('stalled', '120 s')});
my ($windows2, $bytes2, $wm2) = figures('stalled');
my $lower2 = ids_younger($last2, $step2_us, $wm2, $horizon) + 1;    # + id 0
my $upper2 = ids_younger($last2, $step2_us, $wm2, $horizon + $bucket) + 1;
note sprintf('(2) after a record in partition 3: %d ids in memory [%d, %d], state_bytes %d, watermark at %.3f s',
	$windows2, $lower2, $upper2, $bytes2, $wm2 / 1e6);
is($wm2, ($last2 - 2) * $step2_us - $ooo, '(2): a record in partition 3 releases the watermark');
ok($windows2 >= $lower2 && $windows2 <= $upper2,
	"(2): the ids in memory drop to those seen within 1 to 1.125 horizons of it ($windows2 in [$lower2, $upper2])");
# event_time is an id's sighting, expires_at its expiry; ids whose expiry
# the watermark has passed, which wait in memory for their bucket
# (horizon/8), have left for weir.live_state
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*), bool_and(expires_at = event_time + interval '1 minute'),
	   bool_and(expires_at > $base + $wm2 * interval '1 microsecond')
  FROM weir.live_state('stalled')}),
	"$lower2|t|t",
	'(2): weir.live_state lists every id the watermark has not passed, and no other: '
	  . 'expiry one horizon after the sighting');

# no record ever in partition 3: no watermark, nothing expires
ok( $node->poll_query_until(
		'postgres', q{
SELECT state_warning LIKE 'watermark stalled: partition 3 of % has had no data since % while others have, and has shown no event time yet (no idle_timeout); state waiting for the watermark stays, and grows while records arrive'
  FROM weir.pipelines WHERE name = 'quiet'}),
	'(2): quiet: state_warning says partition 3 has shown no event time yet');
my ($windows3, undef, $wm3, $warning3) = figures('quiet');
note "(2): quiet: state_warning: $warning3";
is("$windows3|$wm3", '3000|none', '(2): quiet: no watermark, and all 3000 ids (3000 s of event time) are in memory');
note sprintf('(2): %.1f s in all', time - $t2);

# The server log: no error, no crash.
none_of('no error, crash or abnormal exit in the server log',
	grep { /\bERROR:|PANIC|TRAP:|terminated by signal|exited with exit code/ }
	  split /\n/, slurp_file($node->logfile));

$node->stop;
note sprintf('whole test: %.1f s', time - $t_start);
done_testing();
