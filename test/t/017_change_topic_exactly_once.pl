# 017_change_topic_exactly_once.pl
#
# Change topics through crashes.  Concurrent clients insert, update
# (values, event times, groups, keys, a large value) and delete rows of a
# plain table `items` (id int PRIMARY KEY, grp int, amount int, ts
# timestamptz, note text), and a client truncates it twice early in the
# run.
# Triggers on items write what a capture would into two change topics of
# 4 partitions each, each row image into the partition of its own key
# ((hashint4(id) & 2147483647) % 4), with commit_time = clock_timestamp():
#
#   ch_default  as under the default replica identity: an update's before
#               image only when the key changes, and then the key alone; a
#               delete as its key; an update that leaves a large note
#               (over 2000 characters) alone without it, named in
#               unchanged_columns; a truncate as a 'T' in every partition;
#   ch_full     as under REPLICA IDENTITY FULL: before images and deletes
#               as whole rows; a truncate as a delete of every row (what
#               a producer writing a changelog by hand may do).
#
# Three pipelines run, reading ahead:
#
#   mirror      last value per id over ch_default (event time: commit
#               time), columns grp, amount, ts, note;
#   per_minute  1-minute tumbling count(*), count(amount), sum(amount),
#               avg(amount) per grp over ch_full (event time: ts), emit
#               'updates', allowed lateness 1 day;
#   per_2min    2-minute windows sliding by 1 minute of count(*),
#               sum(amount) and avg(amount) per grp over ch_full, final
#               rows, allowed lateness 1 day: windows fire while rows
#               keep changing, and are rewritten, or deleted when no row
#               is left.
#
# Event time ts is a clock shared by all clients (a sequence, 5 ms per
# inserted row) minus up to 20 s; updates move it by up to a second.  The
# windows allow 30 s of out-of-orderness and a day of lateness, the mirror
# a minute: nothing is late.  Meanwhile each pipeline's worker is killed
# with kill -9 once (at a random moment, as soon as it is in a checkpoint,
# and its read-ahead process), and the server is stopped in immediate mode
# once, at moments placed at random.  At the end each sink equals its
# oracle in plain SQL over items, row for row:
#
#   mirror      SELECT id, grp, amount, ts, note FROM items
#   per_minute  GROUP BY grp, date_bin('1 minute', ts, ...) over items
#   per_2min    the same over both windows of each row, for the windows
#               the final watermark has closed
#
# WEIR_TAP_CHANGE_ROWS overrides the number of rows of ch_full to write
# (200000), WEIR_TAP_SECONDS the time the clients take for them (40),
# WEIR_TAP_SEED the seed that places the crashes.

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

my $target   = env_or('WEIR_TAP_CHANGE_ROWS', 200_000);
my $seconds  = env_or('WEIR_TAP_SECONDS',     40);
my $seed     = env_or('WEIR_TAP_SEED',        int(time()) ^ $$);
my $deadline = 300;
my $clients  = 6;
my $groups   = 50;
my $base     = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin   = q{timestamptz '1970-01-01 00:00:00+00'};
my $part     = q{(hashint4(%s) & 2147483647) % 4};

my $t_start = time;
my $node = start_weir_node('change_topic_exactly_once', crash_test_conf(40),
	'weir.read_ahead' => 'on');

my $new_part = sprintf($part, 'NEW.id');
my $old_part = sprintf($part, 'OLD.id');
my $row_part = sprintf($part, 'id');
$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE ids;
CREATE SEQUENCE clock;
CREATE TABLE items (id int PRIMARY KEY, grp int, amount int, ts timestamptz, note text);
CREATE TABLE truncated (at int PRIMARY KEY);
SELECT weir.create_topic('ch_default',
	'change_op "char", commit_lsn pg_lsn, commit_time timestamptz, unchanged_columns name[], '
	'id int, grp int, amount int, ts timestamptz, note text', partitions => 4);
SELECT weir.create_topic('ch_full',
	'change_op "char", commit_lsn pg_lsn, commit_time timestamptz, unchanged_columns name[], '
	'id int, grp int, amount int, ts timestamptz, note text', partitions => 4);

CREATE FUNCTION capture() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		INSERT INTO ch_default (part, change_op, commit_time)
		SELECT p, 'T', clock_timestamp() FROM generate_series(0, 3) p;
		INSERT INTO ch_full (part, change_op, commit_time, id, grp, amount, ts, note)
		SELECT $row_part, 'D', clock_timestamp(), id, grp, amount, ts, note FROM items;
		RETURN NULL;
	END IF;
	-- REPLICA IDENTITY FULL: whole old rows
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO ch_full (part, change_op, commit_time, id, grp, amount, ts, note)
		VALUES ($old_part, CASE TG_OP WHEN 'UPDATE' THEN 'B' ELSE 'D' END, clock_timestamp(),
				OLD.id, OLD.grp, OLD.amount, OLD.ts, OLD.note);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO ch_full (part, change_op, commit_time, id, grp, amount, ts, note)
		VALUES ($new_part, CASE TG_OP WHEN 'UPDATE' THEN 'U' ELSE 'I' END, clock_timestamp(),
				NEW.id, NEW.grp, NEW.amount, NEW.ts, NEW.note);
	END IF;
	-- the default replica identity: old rows as their key, only when needed
	IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.id <> OLD.id) THEN
		INSERT INTO ch_default (part, change_op, commit_time, id)
		VALUES ($old_part, CASE TG_OP WHEN 'UPDATE' THEN 'B' ELSE 'D' END, clock_timestamp(), OLD.id);
	END IF;
	IF TG_OP = 'UPDATE' AND NEW.note IS NOT DISTINCT FROM OLD.note AND length(OLD.note) > 2000 THEN
		INSERT INTO ch_default (part, change_op, commit_time, unchanged_columns, id, grp, amount, ts)
		VALUES ($new_part, 'U', clock_timestamp(), '{note}', NEW.id, NEW.grp, NEW.amount, NEW.ts);
	ELSIF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO ch_default (part, change_op, commit_time, unchanged_columns, id, grp, amount, ts, note)
		VALUES ($new_part, CASE TG_OP WHEN 'UPDATE' THEN 'U' ELSE 'I' END, clock_timestamp(),
				CASE TG_OP WHEN 'UPDATE' THEN '{}'::name[] END, NEW.id, NEW.grp, NEW.amount, NEW.ts,
				NEW.note);
	END IF;
	RETURN NULL;
END \$\$;
CREATE TRIGGER capture AFTER INSERT OR UPDATE OR DELETE ON items
	FOR EACH ROW EXECUTE FUNCTION capture();
CREATE TRIGGER capture_truncate BEFORE TRUNCATE ON items
	FOR EACH STATEMENT EXECUTE FUNCTION capture();

SELECT weir.create_last_value('mirror', 'ch_default', key => 'id', event_time => 'commit_time',
							  columns => 'grp, amount, ts, note', out_of_orderness => '1 minute',
							  late_records => 'mirror_late');
SELECT weir.create_pipeline('per_minute', 'ch_full', key => 'grp', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, count(amount) AS n_amount, '
										  'sum(amount) AS total, avg(amount) AS mean',
							emit => 'updates', out_of_orderness => '30 seconds',
							allowed_lateness => '1 day', late_records => 'per_minute_late');
SELECT weir.create_pipeline('per_2min', 'ch_full', key => 'grp', event_time => 'ts',
							windowing => weir.hopping('2 minutes', '1 minute'),
							aggregates => 'count(*) AS n, sum(amount) AS total, avg(amount) AS mean',
							out_of_orderness => '30 seconds', allowed_lateness => '1 day',
							late_records => 'per_2min_late');
});
my @pipelines  = ('mirror', 'per_minute', 'per_2min');
my $npipelines = scalar(@pipelines);
wait_pipelines_running($node, $npipelines);

# The clients' transactions, weighted: inserts of 5 to 30 rows; updates of
# the amount and time, the group, the key, a large note, of up to 5 rows
# from a random id on (locked in id order: no deadlocks); deletes of up to
# 4 rows.  Each is one statement, one transaction.
my $pick = q{SELECT id FROM items WHERE id >= :x ORDER BY id LIMIT %d FOR UPDATE};
my $prelude = qq{SELECT last_value AS maxid FROM ids \\gset
\\set x random(1, :maxid)
};
my @scripts = (
	[ 'insert', 4, qq{\\set n random(5, 30)
INSERT INTO items (id, grp, amount, ts, note)
SELECT nextval('ids'), floor(random() * $groups)::int,
	   CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 1000)::int END,
	   $base + (5 * nextval('clock') - floor(random() * 20000)) * interval '1 ms', 'n' || g
  FROM generate_series(1, :n) g;
} ],
	[ 'update', 3, $prelude . sprintf(q{UPDATE items SET amount = CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 1000)::int END,
	   ts = ts + (floor(random() * 2001) - 1000) * interval '1 ms'
 WHERE id IN (%s);
}, sprintf($pick, 5)) ],
	[ 'regroup', 1, $prelude . sprintf(q{UPDATE items SET grp = (grp + 1) %% %d WHERE id IN (%s);
}, $groups, sprintf($pick, 3)) ],
	[ 'rekey', 1, $prelude . sprintf(q{UPDATE items SET id = nextval('ids'), note = 'moved ' || id WHERE id IN (%s);
}, sprintf($pick, 1)) ],
	[ 'bignote', 1, $prelude . sprintf(q{UPDATE items SET note = repeat(md5(random()::text), 80) WHERE id IN (%s);
}, sprintf($pick, 2)) ],
	[ 'delete', 1, $prelude . sprintf(q{DELETE FROM items WHERE id IN (%s);
}, sprintf($pick, 4)) ]);
# the first script is pgbench's last -f (start_bench), the others before it
my @bench_args;
for my $s (@scripts[ 1 .. $#scripts ])
{
	my ($name, $weight, $text) = @$s;
	push @bench_args, '-f', bench_script("weir_change_$name.sql", $text) . "\@$weight";
}
my $first_script = bench_script("weir_change_$scripts[0][0].sql", $scripts[0][2]) . "\@$scripts[0][1]";
# rows of ch_full a transaction writes, on average: 17.5 x 4, 10 x 3, 6, 2,
# 4, 4 over 11 weights
my $rate = bench_rate($target, 10.5, $seconds);
# The truncates: one when the clock passes each of two marks early in the
# run (each once, whatever crashes come), so that rows older than the
# final watermark (closed windows) remain.  The mark is written in the
# truncate's transaction.
my @marks = (int($target / 20), int($target / 5));
my $marks = join(', ', map { "($_)" } @marks);
my $truncator = bench_script('weir_change_truncate.sql', qq{\\sleep 1 s
SELECT count(*) AS due FROM (VALUES $marks) m(at) WHERE at <= (SELECT last_value FROM clock) AND at NOT IN (SELECT at FROM truncated) \\gset
\\if :due
INSERT INTO truncated SELECT max(at) FROM (VALUES $marks) m(at) WHERE at <= (SELECT last_value FROM clock) AND at NOT IN (SELECT at FROM truncated); TRUNCATE items;
\\endif
});

my @plan = plan_crashes($seed, $target, 0.12, 0.20, 0.12,
	'kill', 'kill in checkpoint', 'kill read-ahead', 'immediate');
my $ncrashes    = scalar(@plan);
my @kill_target = shuffle(@pipelines);
my $nkills      = scalar(@kill_target);
my $run         = produce_with_crashes(
	node    => $node,
	benches => [
		[ 'producer', $first_script, $clients, '-R', $rate, @bench_args ],
		[ 'truncator', $truncator, 1 ]
	],
	rows      => sub { try_count($node, 'SELECT count(*) FROM ch_full') },
	target    => $target,
	deadline  => $deadline,
	unit      => 'rows',
	plan      => \@plan,
	pipelines => $npipelines,
	victim    => workers_in_turn($node, @kill_target));
my $t_produced = $run->{t_end};

my ($n_full, $n_default, $n_items) = split /\|/, $node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM ch_full), (SELECT count(*) FROM ch_default), (SELECT count(*) FROM items)');
note "ch_full $n_full rows, ch_default $n_default rows, items $n_items rows";
cmp_ok($n_full, '>=', $target, "ch_full holds at least $target rows");

checkpoint_each($node, 'row', @pipelines);
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the clients ended", $t_caught_up - $t_produced);

# The changes have what the test is about.
my %stat;
@stat{qw(updates before deletes rekeys unchanged truncates)} = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT (SELECT count(*) FROM ch_full WHERE change_op = 'U'),
	   (SELECT count(*) FROM ch_full WHERE change_op = 'B'),
	   (SELECT count(*) FROM ch_full WHERE change_op = 'D'),
	   (SELECT count(*) FROM ch_default WHERE change_op = 'B'),
	   (SELECT count(*) FROM ch_default WHERE unchanged_columns = '{note}'),
	   (SELECT count(*) / 4 FROM ch_default WHERE change_op = 'T')});
note join(', ', map { "$_ $stat{$_}" } qw(updates before deletes rekeys unchanged truncates));
cmp_ok($stat{$_}, '>', 0, "the changes have $_") for qw(updates before deletes rekeys unchanged);
is($stat{truncates}, scalar(@marks), 'items was truncated ' . scalar(@marks) . ' times');

my $wm_2min = last_watermark($node, 'per_2min');
note "pipeline per_2min: final watermark $wm_2min";
$node->safe_psql(
	'postgres', qq{
CREATE TABLE oracle_mirror AS SELECT id, grp, amount, ts, note FROM items;
CREATE TABLE oracle_per_minute AS
SELECT grp, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, count(amount) AS n_amount, sum(amount) AS total, avg(amount) AS mean
  FROM items GROUP BY 1, 2;
CREATE TABLE oracle_per_2min AS
SELECT * FROM (
	SELECT grp, w.start AS window_start, w.start + interval '2 minutes' AS window_end,
		   count(*) AS n, sum(amount) AS total, avg(amount) AS mean
	  FROM items,
		   LATERAL (VALUES (date_bin('1 minute', ts, $origin)),
						   (date_bin('1 minute', ts, $origin) - interval '1 minute')) w(start)
	 GROUP BY 1, 2) o
 WHERE window_end <= '$wm_2min';
});
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM oracle_per_2min'),
	'>', 0, 'per_2min: the final watermark closed windows');

compare_with_oracle(
	$node,
	pipeline => 'mirror',
	cols     => 'id, grp, amount, ts, note',
	order    => '1',
	except   => 'EXCEPT',
	diag     => sub {
		my ($id) = @_;
		return "the changes of id $id (part|pos|op|commit_time|grp|amount|ts|unchanged|note length):\n"
		  . $node->safe_psql('postgres',
			"SELECT part, pos, change_op, commit_time, grp, amount, ts, unchanged_columns, length(note)
			   FROM ch_default WHERE id = $id OR change_op = 'T' ORDER BY commit_time, part, pos");
	});
for my $p ('per_minute', 'per_2min')
{
	compare_with_oracle(
		$node,
		pipeline => $p,
		cols     => $p eq 'per_minute'
		? 'grp, window_start, window_end, n, n_amount, total, mean'
		: 'grp, window_start, window_end, n, total, mean',
		order  => '1, 2',
		except => 'EXCEPT',
		diag   => sub {
			my ($grp, $start, $end) = @_;
			return "pipeline $p: the changes of group $grp from $start to $end (part|pos|op|id|amount|ts):\n"
			  . $node->safe_psql('postgres',
				"SELECT part, pos, change_op, id, amount, ts FROM ch_full
				  WHERE grp = $grp AND ts >= '$start' AND ts < '$end' ORDER BY part, pos");
		});
}

my $t_compared = time;
note sprintf("compared the sinks with their oracles in %.1f s", $t_compared - $t_caught_up);

# The pipelines' own account of the run.
for my $p (@pipelines)
{
	check_pipeline_account($node, $p, $ncrashes);
	is($node->safe_psql('postgres', "SELECT count(*) FROM ${p}_late"),
		'0', "pipeline $p: its late-records table is empty");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Over the committed checkpoints every row of a source counts once as read.
my %source_rows = (mirror => $n_default, per_minute => $n_full, per_2min => $n_full);
for my $p (@pipelines)
{
	is(checkpoint_sum($node, $p, 'records_in'),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every row of its source once");
}
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s sink rows written',
						 p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT sum(sink_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});

# The server log: the intended crashes, nothing else.
check_crash_log($node, $nkills, @{ $run->{killed} });

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
