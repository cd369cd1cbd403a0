# 025_exporter_metrics.pl
#
# Metrics for Prometheus (issue 20): contrib/postgres_exporter/weir_queries.yaml
# served by the real exporter (prometheus-postgres-exporter, 0.11 in Debian
# 12) exposes weir's figures with the values SQL gives.
#
# A cluster with weir runs two pipelines on one topic: win (tumbling
# one-minute windows per key, late records kept) and dd (deduplication),
# which is then stopped.  win is restarted once (a restore in
# weir.restores), reads 3,000 records and a few late ones, and takes its
# checkpoints; then nothing moves.  The exporter, on a free port, connects
# to the cluster's socket with --extend.query-path pointing at the file
# and its default metrics off; /metrics is scraped with HTTP::Tiny, and
# for each pipeline
#
#   weir_pipeline_records_{in,out,late,dead,dropped}  (counters)
#   weir_pipeline_{lag_rows,state_bytes,windows}      (gauges)
#   weir_pipeline_watermark_lag_seconds               (within 10 s)
#   weir_pipeline_status_current{status=...}          1
#   weir_checkpoint_*                                 weir.checkpoint_summary
#   weir_last_restore_*                               the latest weir.restores
#   weir_topic_partition_*                            per partition
#
# must equal the same figure queried from SQL after the scrape, and
# records_in, records_out and records_late the rows of the topic, the
# sink and the late-records table.  The TYPE lines say counter for the
# counters and gauge for the rest.
#
# Skipped when the exporter is not installed (scripts/setup.sh installs
# it).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HTTP::Tiny;
use Time::HiRes qw(usleep);
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $exporter = '/usr/bin/prometheus-postgres-exporter';
# scripts/setup.sh installs it: missing, this is a failure, unless the run
# was told not to install packages (WEIR_SKIP_APT=1, a developer's machine)
unless (-x $exporter)
{
	plan skip_all => "$exporter is not installed and WEIR_SKIP_APT=1"
	  if ($ENV{WEIR_SKIP_APT} // '') eq '1';
	plan tests => 1;
	fail("$exporter is installed (scripts/setup.sh installs prometheus-postgres-exporter)");
	exit 0;
}
my $queries = "$FindBin::RealBin/../../contrib/postgres_exporter/weir_queries.yaml";
ok(-r $queries, 'the queries file is there');

my $node = start_weir_node('exporter_metrics', 'weir.launcher_naptime' => 200);
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION weir;
SELECT weir.create_topic('ev', 'k int, v int, ts timestamptz', partitions => 3, key => 'k');
SELECT weir.create_pipeline('win', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							late_records => 'win_late', checkpoint_interval => '1 hour');
SELECT weir.create_dedup('dd', 'ev', key => 'k', event_time => 'ts', horizon => '1 minute',
						 checkpoint_interval => '1 hour');
});
wait_pipelines_running($node, 2);

# 3,000 records over ten minutes, one in the far future per partition that
# closes their windows, a checkpoint; a restart of win (a restore); then
# five late records and a checkpoint.
$node->safe_psql(
	'postgres', q{
INSERT INTO ev (k, v, ts)
SELECT g % 50, g, timestamptz '2024-01-01 00:00:00+00' + g * interval '200 ms'
  FROM generate_series(1, 3000) g;
INSERT INTO ev (part, k, v, ts)
SELECT p, 1000 + p, 0, timestamptz '2024-01-01 01:00:00+00' FROM generate_series(0, 2) p;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('win'); SELECT weir.checkpoint('dd');});
$node->safe_psql('postgres', q{SELECT weir.stop('win')});
ok($node->poll_query_until('postgres',
		q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'win'}), 'win stopped');
$node->safe_psql('postgres', q{SELECT weir.start('win')});
ok($node->poll_query_until('postgres',
		q{SELECT worker_pid IS NOT NULL FROM weir.pipelines WHERE name = 'win'}), 'win runs again');
$node->safe_psql(
	'postgres', q{
INSERT INTO ev (k, v, ts)
SELECT g, g, timestamptz '2024-01-01 00:00:30+00' FROM generate_series(1, 5) g;
});
$node->safe_psql('postgres', q{SELECT weir.checkpoint('win')});
$node->safe_psql('postgres', q{SELECT weir.stop('dd')});
ok($node->poll_query_until('postgres',
		q{SELECT worker_pid IS NULL FROM weir.pipelines WHERE name = 'dd'}), 'dd stopped');
is($node->safe_psql('postgres',
		q{SELECT records_in = (SELECT count(*) FROM ev) AND lag_rows = 0 FROM weir.pipelines WHERE name = 'win'}),
	't', 'win has read every record');

# The exporter, as its Debian service runs it, on the cluster's socket
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $user = getpwuid($<);
local $ENV{DATA_SOURCE_NAME} =
  'host=' . $node->host . ' port=' . $node->port . " user=$user dbname=postgres sslmode=disable";
my ($out, $err) = ('', '');
our $h = IPC::Run::start(
	[
		$exporter, "--web.listen-address=127.0.0.1:$port",
		"--extend.query-path=$queries", '--disable-default-metrics',
		'--disable-settings-metrics', '--log.level=warn'
	],
	'>', \$out, '2>', \$err);
# stopped however the test ends: a failed check must not leave it running
END { $h->kill_kill if $h; }

my $http = HTTP::Tiny->new(timeout => 10);
my $body;
for (my $i = 0; $i < 300; $i++)
{
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	if ($res->{success} && $res->{content} =~ /^weir_pipeline_records_in\{/m)
	{
		$body = $res->{content};
		last;
	}
	usleep(100_000);
}
ok(defined $body, 'the exporter serves weir metrics') or diag("exporter stderr: $err");
$body //= '';

# name{labels} => value; labels sorted by name, server label left out
my (%metric, %type);
for my $line (split /\n/, $body)
{
	if ($line =~ /^# TYPE (\S+) (\S+)/)
	{
		$type{$1} = $2;
		next;
	}
	next if $line =~ /^#/ || $line !~ /^(weir_\w+)(?:\{([^}]*)\})?\s+(\S+)/;
	my ($name, $labels, $value) = ($1, $2 // '', $3);
	my %l = $labels =~ /(\w+)="((?:[^"\\]|\\.)*)"/g;
	delete $l{server};
	my $key = $name . '{' . join(',', map { "$_=$l{$_}" } sort keys %l) . '}';
	$metric{$key} = $value;
}

# A figure of the scrape against SQL's; NULL is NaN
sub same_value
{
	my ($key, $sql_value, $tolerance) = @_;
	my $got = $metric{$key};
	if (!defined $got)
	{
		fail("$key is exported");
		return;
	}
	if ($sql_value eq '')
	{
		is($got, 'NaN', "$key is NaN, as SQL's NULL");
		return;
	}
	$tolerance //= 1e-6 * (abs($sql_value) + 1);
	ok(abs($got - $sql_value) <= $tolerance, "$key = $sql_value (exported: $got)");
	return;
}

# one row of SQL per pipeline (or partition), columns by name
sub sql_rows
{
	my ($sql) = @_;
	my $res = $node->safe_psql('postgres', "COPY ($sql) TO STDOUT WITH (FORMAT csv, HEADER)");
	my @lines = split /\n/, $res;
	my @cols = split /,/, shift @lines;
	my @rows;
	for my $line (@lines)
	{
		my @v = split /,/, $line, -1;
		push @rows, { map { $cols[$_] => $v[$_] } 0 .. $#cols };
	}
	return @rows;
}

my @counters = qw(records_in records_out records_late records_dead records_dropped);
for my $p (sql_rows(
		q{SELECT name, records_in, records_out, records_late, records_dead, records_dropped,
				 lag_rows, extract(epoch FROM now() - watermark)::float8 AS watermark_lag_seconds,
				 state_bytes, windows, status FROM weir.pipelines ORDER BY name}))
{
	my $name = $p->{name};
	same_value("weir_pipeline_$_\{pipeline=$name}", $p->{$_})
	  for (@counters, qw(lag_rows state_bytes windows));
	same_value("weir_pipeline_watermark_lag_seconds{pipeline=$name}",
		$p->{watermark_lag_seconds}, 10);
	same_value("weir_pipeline_status_current{pipeline=$name,status=$p->{status}}", 1);
	is(scalar(grep { /^weir_pipeline_status_current\{pipeline=$name,/ } keys %metric),
		1, "$name: one status");
}
is($metric{'weir_pipeline_status_current{pipeline=dd,status=stopped}'}, 1, 'dd is stopped');
is($metric{'weir_pipeline_status_current{pipeline=win,status=running}'}, 1, 'win runs');

# the SQL truth of the counters: the tables' rows
my ($topic_rows, $sink_rows, $late_rows) = split /\|/, $node->safe_psql('postgres',
	q{SELECT (SELECT count(*) FROM ev), (SELECT count(*) FROM win), (SELECT count(*) FROM win_late)});
is($metric{'weir_pipeline_records_in{pipeline=win}'},   $topic_rows, 'records_in: the topic\'s rows');
is($metric{'weir_pipeline_records_out{pipeline=win}'},  $sink_rows,  'records_out: the sink\'s rows');
is($metric{'weir_pipeline_records_late{pipeline=win}'}, $late_rows,  'records_late: the late records');
is($late_rows, 5, 'five late records');

my @phases = map { my $ph = $_; map { "${ph}_$_" } qw(p50_ms p95_ms max_ms) }
  qw(start_delay alignment sync async total);
my @summary = sql_rows('SELECT pipeline, checkpoints, ' . join(', ', @phases)
	  . ' FROM weir.checkpoint_summary ORDER BY pipeline');
is(scalar(@summary), 2, 'both pipelines have checkpoints');
for my $c (@summary)
{
	same_value("weir_checkpoint_$_\{pipeline=$c->{pipeline}}", $c->{$_})
	  for ('checkpoints', @phases);
}

my @restores = sql_rows(
	q{SELECT DISTINCT ON (p.name) p.name, r.duration_ms, r.bytes, r.windows AS entries,
			 extract(epoch FROM r.restored_at)::float8 AS restored_at_seconds
		FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
	   ORDER BY p.name, r.restored_at DESC});
ok((grep { $_->{name} eq 'win' && $_->{bytes} > 0 } @restores), 'win\'s last restore read state');
for my $r (@restores)
{
	same_value("weir_last_restore_$_\{pipeline=$r->{name}}", $r->{$_}, $_ eq 'restored_at_seconds' ? 0.001 : undef)
	  for qw(duration_ms bytes entries restored_at_seconds);
}

my @parts = sql_rows(
	q{SELECT partition, head_position, stable_position, open_producers
		FROM weir.topic_partitions WHERE topic = 'ev'::regclass ORDER BY partition});
is(scalar(@parts), 3, 'three partitions');
for my $pp (@parts)
{
	same_value("weir_topic_partition_$_\{partition=$pp->{partition},topic=ev}", $pp->{$_})
	  for qw(head_position stable_position open_producers);
}

# counters are counters, the rest gauges
is($type{"weir_pipeline_$_"}, 'counter', "$_ is a counter") for @counters;
is($type{"weir_pipeline_$_"}, 'gauge', "$_ is a gauge")
  for qw(lag_rows watermark_lag_seconds state_bytes windows);
is($type{'weir_checkpoint_sync_p95_ms'}, 'gauge', 'checkpoint phases are gauges');
is($type{'weir_last_restore_duration_ms'}, 'gauge', 'restore duration is a gauge');
unlike($err, qr/level=error/, 'the exporter logged no error');

$h->kill_kill;
$node->stop;
done_testing();
