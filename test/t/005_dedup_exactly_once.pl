# 005_dedup_exactly_once.pl
#
# Concurrent producers write orders (id bigint, shop int, amount bigint,
# ts timestamptz) into a 4-partition topic keyed by id, with many copies of
# each id, while three pipelines run:
#
#   dedup_table  a deduplication (1-minute horizon) into a table;
#   dedup_topic  the same deduplication into a second topic, ev_unique,
#                keyed by id like the source;
#   per_shop     a tumbling 1-minute window aggregate per shop over
#                ev_unique: the second stage of a chain.
#
# Meanwhile a dedup worker is killed with kill -9 five times (the
# postmaster reinitializes shared memory and every pipeline restores its
# last checkpoint), three times at a random moment and twice as soon as the
# worker is seen in a checkpoint, and the server is stopped in immediate
# mode once, in random order.  When the producers are done, one order per
# partition far in the future pushes every watermark past the last window,
# each pipeline takes a checkpoint, and then:
#
#   - the dedup table equals the oracle, the definition of deduplication
#     written in SQL: a record is kept when no earlier record of its
#     partition (lower position) has the same id and an event time later
#     than its own minus the horizon;
#   - ev_unique holds exactly the oracle's records;
#   - the window sink equals SQL GROUP BY shop, date_bin('1 minute', ts)
#     over the oracle's records;
# row for row and value for value (EXCEPT ALL both ways, and counts); no
# record was late, and the pipelines' counters and checkpoints account for
# every record once.
#
# Ids.  Each record takes the next tick of a clock shared by all producers
# (a sequence, 1 ms of event time per tick); its id is tick/4 plus a random
# number below 45,000, so an id is drawn about 4 times, by records whose
# ticks lie within 180 s: some of its copies fall within the 1-minute
# horizon of an earlier one, others outside it.  Event time is the tick
# minus a random disorder of up to 20 s, so copies also arrive out of order
# of event time.  About one record in ten is also written twice in its
# transaction, as a producer retry would (same id, same event time).  The
# window allows 1 minute of out-of-orderness, so no record is late; the
# dedups allow 5 minutes, which keeps each id about 6 minutes of event time
# in their state: its chunks then hold several versions of most ids, and
# the dedups compact them every few checkpoints, so restores read both
# compacted and incremental chunks.
#
# WEIR_TAP_EVENTS overrides the number of records (1000000), WEIR_TAP_SECONDS
# the time the producers take to write them (40), WEIR_TAP_SEED the seed
# that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use List::Util qw(shuffle);
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

sub env_or
{
	my ($name, $default) = @_;
	return defined $ENV{$name} && $ENV{$name} ne '' ? $ENV{$name} : $default;
}

my $target    = env_or('WEIR_TAP_EVENTS',  1_000_000);
my $seconds   = env_or('WEIR_TAP_SECONDS', 40);
my $seed      = env_or('WEIR_TAP_SEED',    int(time()) ^ $$);
my $producers = 6;
my $deadline  = 300;    # seconds for the produce phase, crashes included
my $horizon   = q{interval '1 minute'};
my $origin    = q{timestamptz '1970-01-01 00:00:00+00'};

# pgbench's rate (transactions of about 1100 records) that spreads the
# records over $seconds, so that the crashes fall while the producers run
my $rate = $target / 1100.0 / $seconds;
$rate = 1 if $rate < 1;

my $t_start = time;
my $node    = PostgreSQL::Test::Cluster->new('dedup_exactly_once');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'weir'
weir.database = 'postgres'
weir.launcher_naptime = 200
restart_after_crash = on
max_connections = 40
max_worker_processes = 20
log_statement = none
});
$node->start;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE clock;
SELECT weir.create_topic('ev', 'id bigint, shop int, amount bigint, ts timestamptz',
						 partitions => 4, key => 'id');
SELECT weir.create_topic('ev_unique', 'id bigint, shop int, amount bigint, ts timestamptz',
						 partitions => 4, key => 'id');
SELECT weir.create_dedup('dedup_table', 'ev', id => 'id', event_time => 'ts',
						 horizon => $horizon, out_of_orderness => '5 minutes',
						 late_records => 'dedup_table_late');
SELECT weir.create_dedup('dedup_topic', 'ev', id => 'id', event_time => 'ts',
						 horizon => $horizon, out_of_orderness => '5 minutes',
						 sink => 'ev_unique', late_records => 'dedup_topic_late');
SELECT weir.create_pipeline('per_shop', 'ev_unique', key => 'shop', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(amount) AS total',
							out_of_orderness => '1 minute',
							late_records => 'per_shop_late');
-- Wait (up to 10 s) until the worker with this PID is in a checkpoint,
-- then write the id of the pipeline's last committed checkpoint (read
-- before seeing it there) to a file and kill -9 the worker.  Killing from
-- here takes a millisecond or two, so the kill lands inside the checkpoint
-- as a rule.  Returns false if it never saw the worker in a checkpoint.
CREATE FUNCTION kill_in_checkpoint(pipeline text, worker integer, file text) RETURNS boolean
LANGUAGE plpgsql AS \$\$
DECLARE
	last bigint;
BEGIN
	FOR i IN 1..10000 LOOP
		SELECT coalesce(max(c.id), 0) INTO last
		  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
		 WHERE p.name = pipeline;
		PERFORM pg_stat_clear_snapshot();
		IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = worker AND query = 'weir: checkpoint') THEN
			EXECUTE format('COPY (SELECT %s) TO %L', last, file);
			-- the program reads what COPY writes: no broken pipe
			EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'kill -9 ' || worker || '; exec cat >/dev/null');
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.001);
	END LOOP;
	RETURN false;
END
\$\$;
});
my @dedups    = ('dedup_table', 'dedup_topic');
my @pipelines = (@dedups, 'per_shop');
my $npipelines = scalar(@pipelines);

ok( $node->poll_query_until(
		'postgres',
		'SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL',
		$npipelines),
	"all $npipelines pipelines run");

# Producers: batches of 500 to 1500 records, and a copy of about one in
# ten of them (a retry: same id, same event time, another amount).
my $producer_script = "$PostgreSQL::Test::Utils::tmp_check/weir_dedup_producer.sql";
PostgreSQL::Test::Utils::append_to_file(
	$producer_script, qq{\\set n random(500, 1500)
WITH r AS (
	SELECT s / 4 + floor(random() * 45000)::bigint AS id,
		   timestamptz '2024-01-01 00:00:00+00' + (s - floor(random() * 20000)) * interval '1 ms' AS ts
	  FROM (SELECT nextval('clock') AS s FROM generate_series(1, :n)) g)
INSERT INTO ev (id, shop, amount, ts)
SELECT id, (id % 100)::int, floor(random() * 2000001)::bigint - 1000000, ts
  FROM (SELECT id, ts FROM r UNION ALL SELECT id, ts FROM r WHERE random() < 0.1) c;
});

sub committed_rows
{
	my ($ret, $out) = $node->psql('postgres', 'SELECT count(*) FROM ev');
	return $ret == 0 && $out =~ /^\d+$/ ? $out : undef;
}

# After a crash: every pipeline has a worker again and has recorded a
# restore for it (so the next crash hits restored workers).
sub wait_pipelines_restored
{
	my ($restores, $what) = @_;
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT bool_and(s.worker_pid IS NOT NULL
				AND (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id) >= $restores)
	   AND count(*) = $npipelines
  FROM weir.pipeline p JOIN weir.pipelines s ON s.name = p.name}),
		"every pipeline restored its checkpoint after $what");
}

# Six crashes at moments of the run placed by progress, in random order:
# five kill -9 of a dedup worker (each dedup at least twice), three of them
# at a random moment and two as soon as the worker is seen in a checkpoint
# (its transaction writing sink rows, chunks and positions), and one
# immediate stop.
srand($seed);
note "seed $seed (set WEIR_TAP_SEED to place the crashes the same way)";
my $ncrashes = 6;
my @crash_at;
for my $i (0 .. $ncrashes - 1)
{
	push @crash_at, int($target * (0.08 + 0.14 * $i + rand(0.10)));
}
my @crash_kind =
  shuffle('kill', 'kill', 'kill', 'kill in checkpoint', 'kill in checkpoint', 'immediate');
my @kill_target = shuffle(@dedups, @dedups, $dedups[ int(rand(2)) ]);
my $nkills = scalar(@kill_target);
note "crash " . ($_ + 1) . ": $crash_kind[$_] at >= $crash_at[$_] rows" for 0 .. $ncrashes - 1;

start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);

my $t0      = time;
my $rows    = 0;
my $crashes = 0;
my @killed_pids;
my $killed_in_checkpoint;    # the pipeline of a kill in a checkpoint
my $interrupted = 0;          # checkpoints interrupted by such kills
my $last_file = "$PostgreSQL::Test::Utils::tmp_check/weir_last_checkpoint";
while (1)
{
	my $n = committed_rows();
	$rows = $n if defined $n;
	last if $crashes == $ncrashes && $rows >= $target;

	if (time - $t0 > $deadline)
	{
		fail("reached $target records in $deadline s (have $rows)");
		last;
	}

	if ($crashes < $ncrashes && $rows >= $crash_at[$crashes])
	{
		my $kind = $crash_kind[$crashes];
		my $what;
		if ($kind =~ /^kill/)
		{
			my $name = $kill_target[0];
			# a little more randomness than the polling gives
			usleep(int(rand(400_000)));
			my ($ret, $pid) = $node->psql('postgres',
				"SELECT worker_pid FROM weir.pipelines WHERE name = '$name' AND worker_pid IS NOT NULL");
			if ($ret != 0 || $pid eq '')
			{
				usleep(50_000);
				next;
			}
			shift @kill_target;
			my $offset = -s $node->logfile;
			if ($kind eq 'kill')
			{
				kill 'KILL', $pid;
			}
			else
			{
				unlink $last_file;
				my ($r, $killed) = $node->psql('postgres',
					"SELECT kill_in_checkpoint('$name', $pid, '$last_file')");
				my $seen = !($r == 0 && $killed eq 'f');
				ok($seen, "the worker of pipeline $name was seen in a checkpoint within 10 s");
				kill 'KILL', $pid unless $seen;
			}
			push @killed_pids, $pid;
			$what = sprintf('crash %d (kill -9 of the worker of pipeline %s, PID %d%s) at %d rows',
				$crashes + 1, $name, $pid,
				$kind eq 'kill' ? '' : ', seen in a checkpoint', $rows);
			note sprintf('%.1f s: %s', time - $t0, $what);
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
			ok(wait_server_up($node), "server back after $what");
			end_bench('producer', 0);
			$killed_in_checkpoint = $name if $kind ne 'kill';
		}
		else
		{
			usleep(int(rand(400_000)));
			$what = sprintf('crash %d (immediate stop) at %d rows', $crashes + 1, $rows);
			note sprintf('%.1f s: %s', time - $t0, $what);
			$node->stop('immediate');
			end_bench('producer', 0);
			$node->start;
		}
		$crashes++;
		start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);
		wait_pipelines_restored($crashes + 1, $what);
		if (defined $killed_in_checkpoint)
		{
			# the pipeline restored the checkpoint that was the last
			# before the worker was seen in one: that one was interrupted
			my $last = -e $last_file ? slurp_file($last_file) : '';
			chomp $last;
			my $restored = $node->safe_psql(
				'postgres', qq{
SELECT r.checkpoint_id FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = '$killed_in_checkpoint' ORDER BY r.restored_at DESC LIMIT 1});
			if ($last ne '' && $restored eq $last)
			{
				$interrupted++;
				note "the kill interrupted checkpoint " . ($last + 1) . " of $killed_in_checkpoint";
			}
			else
			{
				note "the kill came after the checkpoint of $killed_in_checkpoint had committed";
			}
			$killed_in_checkpoint = undef;
		}
		next;
	}

	# a pgbench that ended on its own (all its clients failed) is restarted
	if (!bench_running('producer'))
	{
		diag "pgbench producer ended unexpectedly: " . bench_stderr('producer');
		end_bench('producer', 0);
		start_bench($node, 'producer', $producer_script, $producers, '-R', $rate);
	}
	usleep(250_000);
}
my $t_produced = time;
note sprintf("produced %d records in %.1f s", $rows, $t_produced - $t0);
is($crashes, $ncrashes, "all $ncrashes crashes happened");
note "$interrupted of the 2 kills aimed at a checkpoint interrupted one";

end_bench('producer', 1);
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weir_producer'",
		'0'),
	'no producer backend left');

my $records = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
cmp_ok($records, '>=', $target, "the topic holds at least $target records");

# Push every watermark past the last window: one record per partition far
# in the future, with a new (negative) id, so that both dedups keep it and
# it reaches every partition of ev_unique too.  Ids are routed by a hash,
# the same in both topics (same key type, same number of partitions): pick
# one id per partition and check where they went.
$node->safe_psql(
	'postgres', q{
INSERT INTO ev (id, shop, amount, ts)
SELECT DISTINCT ON (hashint8extended(i, 0) & 3) i, -1, 0, timestamptz '2100-01-01 00:00:00+00'
  FROM generate_series(-1::bigint, -100::bigint, -1::bigint) i
 ORDER BY hashint8extended(i, 0) & 3, i DESC});
is($node->safe_psql('postgres', 'SELECT count(DISTINCT part) FROM ev WHERE id < 0'),
	'4', 'a far-future record in every partition of ev');
for my $p (@pipelines)
{
	my ($ret, $out, $err) =
	  $node->psql('postgres', "SELECT weir.checkpoint('$p', '180 s')");
	is($ret, 0, "pipeline $p took a checkpoint covering every record")
	  or diag $err;
}
is($node->safe_psql('postgres', 'SELECT count(DISTINCT part) FROM ev_unique WHERE id < 0'),
	'4', 'a far-future record in every partition of ev_unique');
my $t_caught_up = time;
note sprintf("pipelines caught up %.1f s after the producers ended", $t_caught_up - $t_produced);

# The oracle: the definition of deduplication, in SQL.
$node->safe_psql(
	'postgres', qq{
CREATE INDEX ev_part_id_pos ON ev (part, id, pos);
ANALYZE ev;
CREATE TABLE oracle AS
SELECT r.part, r.pos, r.id, r.shop, r.amount, r.ts FROM ev r
 WHERE NOT EXISTS (SELECT 1 FROM ev s
					WHERE s.part = r.part AND s.pos < r.pos AND s.id = r.id
					  AND s.ts > r.ts - $horizon);
});

# The data has what the test is about: duplicates dropped within the
# horizon, copies kept because the earlier ones are outside it, and
# duplicates that came after a copy of a later event time.
my ($nkept, $ndup, $nrepeat, $ndup_disorder) = split /\|/, $node->safe_psql(
	'postgres', qq{
SELECT (SELECT count(*) FROM oracle),
	   (SELECT count(*) FROM ev) - (SELECT count(*) FROM oracle),
	   (SELECT count(*) FROM oracle o
		 WHERE EXISTS (SELECT 1 FROM ev s WHERE s.part = o.part AND s.pos < o.pos AND s.id = o.id)),
	   (SELECT count(*) FROM ev r
		 WHERE EXISTS (SELECT 1 FROM ev s WHERE s.part = r.part AND s.pos < r.pos AND s.id = r.id
												AND s.ts > r.ts)
		   AND NOT EXISTS (SELECT 1 FROM oracle o WHERE o.part = r.part AND o.pos = r.pos))});
note "oracle: $nkept records kept, $ndup duplicates, $nrepeat kept although their id was seen "
  . "before (outside the horizon), $ndup_disorder duplicates of an earlier record with a later event time";
cmp_ok($ndup,          '>', $records / 5,  'many records are duplicates within the horizon');
cmp_ok($nrepeat,       '>', $records / 20, 'many records repeat an id seen outside the horizon');
cmp_ok($ndup_disorder, '>', $records / 20, 'many duplicates came after a copy with a later event time');

# Compare a relation with the oracle's records: counts and EXCEPT ALL both
# ways, with the first differences and the records of their ids on failure.
sub compare_with_oracle
{
	my ($what, $rel) = @_;
	my $cols = 'id, shop, amount, ts';
	my $n = $node->safe_psql('postgres', "SELECT count(*) FROM $rel");
	is($n, $nkept, "$what: as many rows as the oracle ($nkept)");
	my $extra = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM $rel EXCEPT ALL SELECT $cols FROM oracle ORDER BY 1, 4 LIMIT 20});
	is($extra, '', "$what: every row is an oracle row, once");
	my $missing = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM oracle EXCEPT ALL SELECT $cols FROM $rel ORDER BY 1, 4 LIMIT 20});
	is($missing, '', "$what: every oracle row is there, once");
	if ($extra ne '' || $missing ne '')
	{
		diag "$what: rows not in the oracle (first 20; id|shop|amount|ts):\n$extra";
		diag "$what: oracle rows missing (first 20):\n$missing";
		my $id = (split /\|/, (split /\n/, ($extra ne '' ? $extra : $missing))[0])[0];
		diag "$what: the records of id $id in ev (part|pos|amount|ts|kept by the oracle):\n"
		  . $node->safe_psql(
			'postgres', qq{
SELECT part, pos, amount, ts, EXISTS (SELECT 1 FROM oracle o WHERE o.part = e.part AND o.pos = e.pos)
  FROM ev e WHERE id = $id ORDER BY pos});
		diag "$what: the rows of id $id there:\n"
		  . $node->safe_psql('postgres', "SELECT $cols FROM $rel WHERE id = $id ORDER BY ts");
	}
}

compare_with_oracle('dedup table sink', 'dedup_table');
compare_with_oracle('chain topic ev_unique', 'ev_unique');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM ev_unique u
 WHERE NOT EXISTS (SELECT 1 FROM ev e WHERE e.part = u.part AND e.id = u.id)}),
	'0', 'chain topic ev_unique: each row is in the partition of its id in ev');

# The second stage: the windows the final watermark closed.
my $wm = $node->safe_psql(
	'postgres', q{
SELECT c.watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = 'per_shop' ORDER BY c.id DESC LIMIT 1});
note "pipeline per_shop: final watermark $wm";
my $window_oracle = qq{
SELECT shop, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(amount) AS total
  FROM oracle WHERE id >= 0 GROUP BY 1, 2};
$node->safe_psql('postgres',
	"CREATE TABLE oracle_per_shop AS SELECT * FROM ($window_oracle) o WHERE window_end <= '$wm'");
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM ($window_oracle) o WHERE window_end > '$wm'"),
	'0', 'pipeline per_shop: the final watermark closed every window of the records');
{
	my $cols   = 'shop, window_start, window_end, n, total';
	my $sink   = $node->safe_psql('postgres', 'SELECT count(*) FROM per_shop');
	my $oracle = $node->safe_psql('postgres', 'SELECT count(*) FROM oracle_per_shop');
	note "pipeline per_shop: sink $sink rows, oracle $oracle rows";
	cmp_ok($oracle, '>', 0, 'pipeline per_shop: the oracle has rows');
	is($sink, $oracle, 'pipeline per_shop: the sink has as many rows as the oracle');
	my $extra = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM per_shop EXCEPT ALL SELECT $cols FROM oracle_per_shop ORDER BY 1, 2 LIMIT 20});
	is($extra, '', 'pipeline per_shop: every sink row is an oracle row');
	my $missing = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM oracle_per_shop EXCEPT ALL SELECT $cols FROM per_shop ORDER BY 1, 2 LIMIT 20});
	is($missing, '', 'pipeline per_shop: every oracle row is in the sink');
	if ($extra ne '' || $missing ne '')
	{
		diag "pipeline per_shop: sink rows not in the oracle (first 20):\n$extra";
		diag "pipeline per_shop: oracle rows not in the sink (first 20):\n$missing";
	}
}

my $t_compared = time;
note sprintf("compared the sinks with their oracles in %.1f s", $t_compared - $t_caught_up);

# The pipelines' own account of the run.  The counters in weir.pipelines
# count since the worker last started (a crash resets them), and the
# worker read everything there is: what it read was either written to the
# sink or dropped.
for my $p (@pipelines)
{
	my $row = $node->safe_psql(
		'postgres', qq{
SELECT status, records_in, records_out, records_dropped, records_late, records_dead,
	   coalesce(last_error, ''),
	   (SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
		 WHERE q.name = s.name),
	   (SELECT count(*) FROM ${p}_late)
  FROM weir.pipelines s WHERE name = '$p'});
	my ($status, $in, $out, $dropped, $late, $dead, $error, $restores, $late_rows) =
	  split /\|/, $row;
	is($status,    'running', "pipeline $p is running");
	is($late,      '0',       "pipeline $p: records_late = 0");
	is($late_rows, '0',       "pipeline $p: its late-records table is empty");
	is($dead,      '0',       "pipeline $p: records_dead = 0");
	is($error,     '',        "pipeline $p: no last_error");
	cmp_ok($restores, '>=', $ncrashes + 1,
		"pipeline $p restored a checkpoint at its start and after each of the $ncrashes crashes ($restores restores)");
	next unless grep { $_ eq $p } @dedups;
	cmp_ok(
		$node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
 WHERE q.name = '$p' AND r.windows > 0}),
		'>=', $ncrashes,
		"pipeline $p restored ids from its chunks after each crash");
	note "pipeline $p since its last start: $in in, $out out, $dropped dropped";
	cmp_ok($dropped, '>', 0, "pipeline $p: records_dropped > 0");
	cmp_ok($dropped, '<=', $ndup,
		"pipeline $p: records_dropped is at most the oracle's duplicates ($ndup)");
	is($in, $out + $dropped,
		"pipeline $p: records_in = records_out + records_dropped since its last start");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'),
	'0', 'no dead letters');

# Over the committed checkpoints every record of the source counts once as
# read, and every kept record once as written to the sink.
my $unique = $node->safe_psql('postgres', 'SELECT count(*) FROM ev_unique');
my %source_rows = (dedup_table => $records + 4, dedup_topic => $records + 4, per_shop => $unique);
for my $p (@pipelines)
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT sum(c.records_in) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p'}),
		$source_rows{$p},
		"pipeline $p: its committed checkpoints account for every record of its source once");
}
for my $p (@dedups)
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT sum(c.sink_rows) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p'}),
		$nkept,
		"pipeline $p: its committed checkpoints wrote every kept record once");
}
note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s: %s checkpoints, %s restores, %s sink rows written, '
						 || '%s state rows written per checkpoint (median %s)',
						 p.name,
						 (SELECT count(*) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id),
						 (SELECT sum(sink_rows) FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT min(state_rows) || ' to ' || max(state_rows)
							FROM weir.checkpoints c WHERE c.pipeline_id = p.id),
						 (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY state_rows)
							FROM weir.checkpoints c WHERE c.pipeline_id = p.id)),
				  E'\n' ORDER BY p.name)
  FROM weir.pipeline p});

note $node->safe_psql(
	'postgres', q{
SELECT string_agg(format('%s restored %s: %s ids from %s bytes', p.name, r.checkpoint_id, r.windows, r.bytes),
				  E'\n' ORDER BY p.name, r.restored_at)
  FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id WHERE p.operator = 'dedup'});

# The server log: the intended crashes, nothing else.
my $log = slurp_file($node->logfile);
my @panic = grep { /PANIC|TRAP:/ } split /\n/, $log;
is(scalar(@panic), 0, 'no PANIC or TRAP in the server log')
  or diag join("\n", @panic[ 0 .. ($#panic < 20 ? $#panic : 20) ]);
my @signals = grep { /terminated by signal|exited with exit code/ } split /\n/, $log;
my @killed = grep { /terminated by signal 9/ } @signals;
is(scalar(@killed), $nkills, "exactly $nkills processes were killed by signal 9 (the intended crashes)")
  or diag join("\n", @killed);
for my $pid (@killed_pids)
{
	ok(scalar(grep { /weir worker.*\(PID $pid\) was terminated by signal 9/ } @killed),
		"the log names the killed weir worker $pid");
}
my @other_signals = grep { !/terminated by signal 9/ } @signals;
is(scalar(@other_signals), 0, 'no other process died abnormally')
  or diag join("\n", @other_signals[ 0 .. ($#other_signals < 20 ? $#other_signals : 20) ]);
my @errors = grep { /\bERROR:/ } split /\n/, $log;
is(scalar(@errors), 0, 'no ERROR in the server log')
  or diag join("\n", @errors[ 0 .. ($#errors < 20 ? $#errors : 20) ]);

$node->stop;
note sprintf("whole test: %.1f s", time - $t_start);
done_testing();
