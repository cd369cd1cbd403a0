# 018_sink_readers.pl
#
# Readers that follow sinks by checkpoint (weir.sink_changes, through
# scripts/sink_reader.sh) through crashes on both sides.  Concurrent
# clients insert, update (values, event times, groups) and delete rows of a
# plain table `items` (id int PRIMARY KEY, grp int, amount int, ts
# timestamptz); a trigger writes what a capture would under REPLICA
# IDENTITY FULL into the change topic `ch` (4 partitions).  Two pipelines
# with a checkpoint_column run over it:
#
#   mirror      last value per id (event time: commit time): rows upserted
#               and deleted;
#   per_minute  1-minute tumbling count(*) and sum(amount) per id (event
#               time ts), emit 'updates', allowed lateness 1 day: windows
#               rewritten, and deleted when their row goes or moves to
#               another minute (per id, so that windows empty often).
#
# A reader per pipeline (scripts/sink_reader.sh, small batches) applies
# the changes into a copy in a second database, `readers`, of the same
# server.  Each copy has a trigger that logs every row the reader inserts
# with the checkpoint id it carries, under a unique key (key, checkpoint):
# a change applied twice fails the reader's batch, which the test finds in
# the readers' output.
#
# Meanwhile the pipelines' workers are killed with kill -9 (once at a
# random moment, once inside a checkpoint) and the server is stopped in
# immediate mode once, at moments placed at random; and the readers are
# killed with kill -9 (the script and its psql) every second or so at a
# random moment, and restarted, as they are whenever they end (a server
# restart ends them).  At the end, once the readers have caught up, each
# copy equals its sink and the sink equals its oracle in plain SQL over
# items, row for row, and no change was applied twice.
#
# WEIR_TAP_READER_ROWS overrides the number of rows of ch to write
# (40000), WEIR_TAP_SECONDS the time the clients take for them (30),
# WEIR_TAP_SEED the seed that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target   = env_or('WEIR_TAP_READER_ROWS', 40_000);
my $seconds  = env_or('WEIR_TAP_SECONDS',     30);
my $seed     = env_or('WEIR_TAP_SEED',        int(time()) ^ $$);
my $deadline = 300;
my $clients  = 4;
my $groups   = 20;
my $base     = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin   = q{timestamptz '1970-01-01 00:00:00+00'};
my $reader_script = "$FindBin::RealBin/../../scripts/sink_reader.sh";

my $node = start_weir_node('sink_readers', crash_test_conf(30));

my $new_part = q{(hashint4(NEW.id) & 2147483647) % 4};
my $old_part = q{(hashint4(OLD.id) & 2147483647) % 4};
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE ids;
CREATE SEQUENCE clock;
CREATE TABLE items (id int PRIMARY KEY, grp int, amount int, ts timestamptz);
SELECT weir.create_topic('ch',
	'change_op "char", commit_lsn pg_lsn, commit_time timestamptz, unchanged_columns name[], '
	'id int, grp int, amount int, ts timestamptz', partitions => 4);
CREATE FUNCTION capture() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO ch (part, change_op, commit_time, id, grp, amount, ts)
		VALUES ($old_part, CASE TG_OP WHEN 'UPDATE' THEN 'B' ELSE 'D' END, clock_timestamp(),
				OLD.id, OLD.grp, OLD.amount, OLD.ts);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO ch (part, change_op, commit_time, id, grp, amount, ts)
		VALUES ($new_part, CASE TG_OP WHEN 'UPDATE' THEN 'U' ELSE 'I' END, clock_timestamp(),
				NEW.id, NEW.grp, NEW.amount, NEW.ts);
	END IF;
	RETURN NULL;
END \$\$;
CREATE TRIGGER capture AFTER INSERT OR UPDATE OR DELETE ON items
	FOR EACH ROW EXECUTE FUNCTION capture();
SELECT weir.create_last_value('mirror', 'ch', key => 'id', event_time => 'commit_time',
							  columns => 'grp, amount, ts', out_of_orderness => '1 minute',
							  checkpoint_column => 'ck');
SELECT weir.create_pipeline('per_minute', 'ch', key => 'id', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(amount) AS total',
							emit => 'updates', out_of_orderness => '30 seconds',
							allowed_lateness => '1 day', checkpoint_column => 'ck');
CREATE DATABASE readers;
});
my @pipelines = ('mirror', 'per_minute');
wait_pipelines_running($node, scalar(@pipelines));

# The readers' copies, and the log of every row a reader inserted with the
# checkpoint it came from: (key, checkpoint) once, or the batch fails.
$node->safe_psql(
	'readers', q{
CREATE TABLE mirror_copy (id int PRIMARY KEY, grp int, amount int, ts timestamptz, ck bigint);
CREATE TABLE per_minute_copy (id int, window_start timestamptz, window_end timestamptz,
							  n bigint, total bigint, ck bigint, PRIMARY KEY (id, window_start));
CREATE TABLE applied (pipeline text, key text, ck bigint, PRIMARY KEY (pipeline, key, ck));
CREATE FUNCTION log_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO applied VALUES ('mirror', NEW.id::text, NEW.ck);
	RETURN NULL;
END $$;
CREATE FUNCTION log_per_minute() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO applied VALUES ('per_minute', NEW.id || ' ' || NEW.window_start, NEW.ck);
	RETURN NULL;
END $$;
CREATE TRIGGER log_applied AFTER INSERT ON mirror_copy
	FOR EACH ROW EXECUTE FUNCTION log_mirror();
CREATE TRIGGER log_applied AFTER INSERT ON per_minute_copy
	FOR EACH ROW EXECUTE FUNCTION log_per_minute();
});

########################################################################
# The readers: started, killed at random, restarted
########################################################################

my $conninfo = sprintf('host=%s port=%d dbname=', $node->host, $node->port);
my %reader_args = (
	mirror     => [ '--table', 'mirror_copy',     '--key', 'id',               '--batch', 200 ],
	per_minute => [ '--table', 'per_minute_copy', '--key', 'id,window_start', '--batch', 50 ]);
my %reader;          # pipeline => { h, out, err, pid }
my @reader_runs;     # the output of every run that ended
my $reader_kills = 0;

sub start_reader
{
	my ($p, @more) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PSQL} = 'psql';
	my @cmd = ('bash', $reader_script, '--source', "${conninfo}postgres",
		'--target', "${conninfo}readers", '--pipeline', $p, '--interval', '0.1',
		@{ $reader_args{$p} }, @more);
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err);
	$reader{$p} = { h => $h, out => \$out, err => \$err, pid => $h->{KIDS}[0]{PID} };
	return;
}

sub end_reader
{
	my ($p) = @_;
	my $r = $reader{$p};
	eval { $r->{h}->finish; };
	push @reader_runs, { pipeline => $p, err => ${ $r->{err} }, result => $r->{h}->full_result // 0 };
	delete $reader{$p};
	return;
}

# kill -9 a reader: the script and the psql it runs (mid-read or
# mid-apply), by their PIDs
sub kill_reader
{
	my ($p) = @_;
	my $pid = $reader{$p}{pid};
	my @children = split /\s+/, `pgrep -P $pid` // '';
	kill 'KILL', $pid, grep { /^\d+$/ } @children;
	$reader_kills++;
	end_reader($p);
	return;
}

# Called between the steps of produce_with_crashes (its rows callback): a
# reader that ended is started again; about once a second one is killed.
sub tend_readers
{
	for my $p (@pipelines)
	{
		if (!$reader{$p})
		{
			start_reader($p);
			next;
		}
		eval { $reader{$p}{h}->pump_nb; };
		if (!$reader{$p}{h}->pumpable)
		{
			end_reader($p);
			start_reader($p);
			next;
		}
		kill_reader($p) if rand() < 0.125;
	}
	return;
}

########################################################################
# Clients and crashes
########################################################################

my $pick = q{SELECT id FROM items WHERE id >= :x ORDER BY id LIMIT %d FOR UPDATE};
my $prelude = qq{SELECT last_value AS maxid FROM ids \\gset
\\set x random(1, :maxid)
};
my @scripts = (
	[ 'insert', 4, qq{\\set n random(5, 20)
INSERT INTO items (id, grp, amount, ts)
SELECT nextval('ids'), floor(random() * $groups)::int, floor(random() * 1000)::int,
	   $base + (5 * nextval('clock') - floor(random() * 20000)) * interval '1 ms'
  FROM generate_series(1, :n) g;
} ],
	[ 'update', 3, $prelude . sprintf(q{UPDATE items SET amount = floor(random() * 1000)::int,
	   ts = ts + (floor(random() * 2001) - 1000) * interval '1 ms'
 WHERE id IN (%s);
}, sprintf($pick, 5)) ],
	[ 'regroup', 1, $prelude . sprintf(q{UPDATE items SET grp = (grp + 1) %% %d WHERE id IN (%s);
}, $groups, sprintf($pick, 3)) ],
	[ 'delete', 2, $prelude . sprintf(q{DELETE FROM items WHERE id IN (%s);
}, sprintf($pick, 4)) ]);
my @bench_args;
for my $s (@scripts[ 1 .. $#scripts ])
{
	my ($name, $weight, $text) = @$s;
	push @bench_args, '-f', bench_script("weir_reader_$name.sql", $text) . "\@$weight";
}
my $first_script = bench_script("weir_reader_$scripts[0][0].sql", $scripts[0][2]) . "\@$scripts[0][1]";
# rows of ch a transaction writes, on average: 12.5 x 4, 10 x 3, 6, 4 over 10
my $rate = bench_rate($target, 9, $seconds);

my @plan = plan_crashes($seed, $target, 0.15, 0.25, 0.15, 'kill', 'kill in checkpoint', 'immediate');
my $nkills = grep { $_->{kind} ne 'immediate' } @plan;
my $run = produce_with_crashes(
	node    => $node,
	benches => [ [ 'producer', $first_script, $clients, '-R', $rate, @bench_args ] ],
	rows    => sub {
		tend_readers();
		return try_count($node, 'SELECT count(*) FROM ch');
	},
	target    => $target,
	deadline  => $deadline,
	unit      => 'rows',
	plan      => \@plan,
	pipelines => scalar(@pipelines),
	victim    => workers_in_turn($node, @pipelines));

checkpoint_each($node, 'row', @pipelines);

# The readers keep being killed a little longer, then catch up for good.
for (1 .. 20)
{
	tend_readers();
	usleep(200_000);
}
for my $p (@pipelines)
{
	kill_reader($p) if $reader{$p};
}
note "the readers were killed $reader_kills times";
cmp_ok($reader_kills, '>=', 5, 'the readers were killed at least 5 times');
for my $p (@pipelines)
{
	my $ok = 0;
	for (1 .. 5)
	{
		start_reader($p, '--once');
		end_reader($p);
		if ($reader_runs[-1]{result} == 0)
		{
			$ok = 1;
			last;
		}
	}
	ok($ok, "the reader of $p caught up") or diag $reader_runs[-1]{err};
}

########################################################################
# Checks
########################################################################

my @failures = grep { $_->{err} =~ /duplicate key value violates unique constraint "applied_pkey"/ } @reader_runs;
none_of('no reader run applied a change twice', map { "$_->{pipeline}: $_->{err}" } @failures);
# a reader killed after sending its COMMIT may commit after its successor
# read the position: the successor's batch is refused, not applied twice
note scalar(@reader_runs) . ' reader runs, '
  . scalar(grep { $_->{err} =~ /position moved/ } @reader_runs)
  . ' refused because a killed predecessor had committed meanwhile';

# the copies, brought into the source database for the comparison
my %copy_columns = (
	mirror     => 'id int, grp int, amount int, ts timestamptz, ck bigint',
	per_minute => 'id int, window_start timestamptz, window_end timestamptz, n bigint, total bigint, ck bigint');
for my $p (@pipelines)
{
	my $file = "$PostgreSQL::Test::Utils::tmp_check/${p}_copy.tsv";
	$node->safe_psql('readers', "COPY ${p}_copy TO '$file'");
	$node->safe_psql('postgres',
		"CREATE TABLE ${p}_copy ($copy_columns{$p}); COPY ${p}_copy FROM '$file'");
}

$node->safe_psql(
	'postgres', qq{
CREATE TABLE oracle_mirror AS SELECT id, grp, amount, ts FROM items;
CREATE TABLE oracle_per_minute AS
SELECT id, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(amount) AS total
  FROM items GROUP BY 1, 2;
});
my %cols = (mirror => 'id, grp, amount, ts', per_minute => 'id, window_start, window_end, n, total');
my %order = (mirror => '1', per_minute => '1, 2');
for my $p (@pipelines)
{
	compare_with_oracle($node, pipeline => $p, cols => $cols{$p}, order => $order{$p});
	compare_with_oracle(
		$node,
		label  => "the reader of $p",
		sink   => "${p}_copy",
		oracle => $p,
		cols   => "$cols{$p}, ck",
		order  => $order{$p});
}

# The changes had deletes in them, so the readers applied some.
for my $p (@pipelines)
{
	cmp_ok(
		$node->safe_psql('postgres',
			"SELECT count(*) FROM weir.sink_deletes d JOIN weir.pipeline p ON p.id = d.pipeline_id WHERE p.name = '$p'"),
		'>', 0, "pipeline $p deleted sink rows, kept for its reader");
}
# Every row of a copy came from the checkpoint it carries, applied once.
is( $node->safe_psql(
		'readers', q{
SELECT count(*) FROM mirror_copy c
 WHERE NOT EXISTS (SELECT FROM applied a WHERE a.pipeline = 'mirror' AND a.key = c.id::text AND a.ck = c.ck)}),
	'0',
	'every row of the mirror copy was logged as applied with its checkpoint');

for my $p (@pipelines)
{
	check_pipeline_account($node, $p, scalar(@plan));
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# The server log: the intended crashes; errors only from killed readers.
my @log = split /\n/, slurp_file($node->logfile);
none_of('no PANIC or TRAP in the server log', grep { /PANIC|TRAP:/ } @log);
is(scalar(grep { /terminated by signal 9/ } @log), $nkills,
	"exactly $nkills server processes were killed by signal 9 (the intended crashes)");
none_of('no ERROR in the server log but those of killed readers or a server going down',
	grep { /\bERROR:/ && !/unexpected EOF on client connection|connection to client lost|reader position moved/ } @log);
# and no reader failed for another reason than its kill or the server's restarts
none_of('no reader run failed but by a kill or a server restart',
	map { "$_->{pipeline}: $_->{err}" }
	  grep { $_->{err} =~ /ERROR:/ && $_->{err} !~ /position moved/ } @reader_runs);

$node->stop;
done_testing();
