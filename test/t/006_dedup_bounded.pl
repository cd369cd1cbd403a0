# 006_dedup_bounded.pl  (exploratory draft 2)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use List::Util qw(max min);

my $records = $ENV{WEIR_TAP_DEDUP_RECORDS} // 5_000_000;
my $chunk   = 100_000;
my $t_start = time;

my $node = PostgreSQL::Test::Cluster->new('dedup_bounded');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 100
max_worker_processes = 16
max_wal_size = '4GB'
log_statement = none
});
$node->start;

my $base = q{timestamptz '2024-01-01 00:00:00+00'};

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('fresh_ids', 'id bigint, ts timestamptz', partitions => 4);
SELECT weir.create_dedup('fresh', 'fresh_ids', id => 'id', event_time => 'ts',
						 horizon => '1 minute', out_of_orderness => '1 second');
});
ok($node->poll_query_until('postgres', q{SELECT status FROM weir.pipelines WHERE name = 'fresh'}, 'running'),
	'the pipeline runs');

sub dsm_mapped
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/maps" or return -1;
	my %seg;
	while (<$fh>)
	{
		next unless m{^([0-9a-f]+)-([0-9a-f]+) .* (/dev/shm/PostgreSQL\.\d+)};
		$seg{$3} += hex($2) - hex($1);
	}
	close $fh;
	my $sum = 0;
	$sum += $_ for values %seg;
	return sprintf("%d in %d", $sum, scalar keys %seg);
}

my $pid = $node->safe_psql('postgres', q{SELECT worker_pid FROM weir.pipelines WHERE name = 'fresh'});
my @samples;
for (my $first = 1; $first <= $records; $first += $chunk)
{
	my $last = $first + $chunk - 1;
	my $t0 = time;
	$node->safe_psql('postgres', qq{
INSERT INTO fresh_ids (part, id, ts)
SELECT g % 4, g, $base + g * interval '100 microseconds' FROM generate_series($first, $last) g});
	my $t1 = time;
	$node->safe_psql('postgres', q{SELECT weir.checkpoint('fresh', '120 s')});
	my $t2 = time;
	my $a = $node->safe_psql('postgres', qq{
SELECT windows, state_bytes, (extract(epoch FROM watermark - $base) * 1000000)::bigint, coalesce(state_warning, '')
  FROM weir.pipelines WHERE name = 'fresh'});
	my ($w, $bytes, $wm) = split /\|/, $a;
	my $lower = $last - int(($wm - 60e6) / 100);
	my $upper = $last - int(($wm - 67.5e6) / 100);
	note sprintf("%8d: %s  [%d, %d]  dsm %s insert %.2fs ckpt %.2fs", $last, $a, $lower, $upper, dsm_mapped($pid), $t1 - $t0, $t2 - $t1);
}
note $node->safe_psql('postgres', q{SELECT records_in, records_out, records_dropped, records_late FROM weir.pipelines WHERE name = 'fresh'});
note sprintf("whole test: %.1f s", time - $t_start);
$node->stop;
done_testing();
