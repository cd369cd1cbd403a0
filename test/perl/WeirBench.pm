# WeirBench.pm — what weir's TAP tests share: a cluster with weir
# preloaded, pgbench producers, crashes placed by progress (kill -9 of a
# process, also from inside a pipeline's checkpoint, and immediate stops)
# and the waits around them, and the checks that end a crash test (each
# sink against its oracle, each pipeline's own account, the server log).
#
# pgbench clients: start_bench runs pgbench in the background;
# bench_running tells whether it still runs; end_bench waits for it to end
# (after a crash its connections are lost) or stops it, and reports any
# stderr that is not an expected connection loss; stop_bench also waits
# for its backends to leave.  wait_server_up waits for a crashed server to
# accept connections again.  produce_with_crashes drives a whole produce
# phase with its crashes.
package WeirBench;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use List::Util qw(shuffle);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

our @EXPORT = qw(
  env_or crash_test_knobs start_weir_node crash_test_conf
  bench_script bench_rate start_bench bench_running bench_stderr end_bench stop_bench
  wait_server_up try_count
  wait_pipelines_running wait_pipelines_restored worker_pid
  plan_crashes produce_with_crashes workers_in_turn
  checkpoint_each last_watermark checkpoint_sum restores_with_state
  compare_with_oracle check_pipeline_account
  none_of check_crash_log check_minute_sink);

########################################################################
# Set-up
########################################################################

# An environment knob, or its default when unset or empty (so that
# WEIR_TAP_SEED= on a command line means the default).
sub env_or
{
	my ($name, $default) = @_;
	return defined $ENV{$name} && $ENV{$name} ne '' ? $ENV{$name} : $default;
}

# The knobs of the crash tests (003, 005, 007): the rows to write
# (WEIR_TAP_EVENTS, 1000000), the seconds the producers take for them
# (WEIR_TAP_SECONDS, 40), and the seed that places the crashes
# (WEIR_TAP_SEED, by default from the time and the PID).
sub crash_test_knobs
{
	return (
		env_or('WEIR_TAP_EVENTS',  1_000_000),
		env_or('WEIR_TAP_SECONDS', 40),
		env_or('WEIR_TAP_SEED',    int(time()) ^ $$));
}

# A new cluster, started, with weir preloaded and its launcher in the
# postgres database, plus the postgresql.conf settings given as
# name => value pairs (written in that order, values as given).
sub start_weir_node
{
	my ($name, @settings) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $conf = "\nshared_preload_libraries = 'weir'\nweir.database = 'postgres'\n";
	while (my ($setting, $value) = splice(@settings, 0, 2))
	{
		$conf .= "$setting = $value\n";
	}
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	return $node;
}

# The settings of the crash tests: the postmaster restarts after a kill -9,
# there is room for the pgbench clients, and statements are not logged
# (the tests read the log for crashes and errors).
sub crash_test_conf
{
	my ($max_worker_processes) = @_;
	return (
		'weir.launcher_naptime' => 200,
		restart_after_crash     => 'on',
		max_connections         => 40,
		max_worker_processes    => $max_worker_processes,
		log_statement           => 'none');
}

########################################################################
# pgbench clients
########################################################################

my %bench;    # name => { h => harness, out => \$, err => \$ }

# Write a pgbench script into tmp_check; returns its path.
sub bench_script
{
	my ($file, $text) = @_;
	my $path = "$PostgreSQL::Test::Utils::tmp_check/$file";
	PostgreSQL::Test::Utils::append_to_file($path, $text);
	return $path;
}

# pgbench's rate (-R) that spreads $target rows, written in transactions
# of $per_transaction rows on average, over $seconds, so that crashes
# placed by progress fall while the producers run; at least 1.
sub bench_rate
{
	my ($target, $per_transaction, $seconds) = @_;
	my $rate = $target / $per_transaction / $seconds;
	return $rate < 1 ? 1 : $rate;
}

# start_bench($node, $name, $script, $clients, @more_pgbench_options)
sub start_bench
{
	my ($node, $name, $script, $clients, @more) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGAPPNAME} = "weir_$name";
	my @cmd = (
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-c', $clients, '-j', 2, '-T', 600, @more, '-f', $script, 'postgres');
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err);
	$bench{$name} = { h => $h, out => \$out, err => \$err };
	return;
}

sub bench_running
{
	my ($name) = @_;
	my $b = $bench{$name};
	return 0 unless $b;
	$b->{h}->pump_nb;
	return 1 if $b->{h}->pumpable;
	$b->{h}->finish;
	return 0;
}

# What a pgbench wrote to stderr so far.
sub bench_stderr
{
	my ($name) = @_;
	return $bench{$name} ? ${ $bench{$name}{err} } : '';
}

# Wait for a pgbench to end by itself (its connections were lost), or stop it.
sub end_bench
{
	my ($name, $stop) = @_;
	my $b = $bench{$name};
	return unless $b;
	$b->{h}->signal('TERM') if $stop;
	my $until = time + 60;
	while (bench_running($name))
	{
		if (time > $until)
		{
			diag "pgbench $name does not end; killing it";
			$b->{h}->kill_kill;
			last;
		}
		usleep(100_000);
	}
	my $err = ${ $b->{err} };
	# connection losses are expected after a crash; anything else is noted
	my @other = grep {
		!/server closed the connection|terminating connection|connection to server|
		  aborted\ in\ command|Run\ was\ aborted|no\ connection\ to\ the\ server|
		  could\ not\ receive\ data|This\ probably\ means|before\ or\ while\ processing|
		  ^(WARNING|DETAIL|HINT):|perhaps\ the\ backend\ died|^\s*$/x
	} split /\n/, $err;
	diag "pgbench $name: $_" for @other;
	delete $bench{$name};
	return;
}

# Stop a pgbench and wait until its backends are gone, so that what they
# wrote is all there is (an abandoned transaction aborts).
sub stop_bench
{
	my ($node, $name) = @_;
	end_bench($name, 1);
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weir_$name'",
			'0'),
		"no weir_$name backend left");
	return;
}

########################################################################
# Waits
########################################################################

# Wait until the server accepts connections again.  (poll_query_until
# feeds its query to psql's stdin, and dies of EPIPE when psql has already
# given up on a server still in recovery; pg_isready reads nothing.)
sub wait_server_up
{
	my ($node) = @_;
	my $until = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $until)
	{
		my ($out, $err);
		return 1
		  if IPC::Run::run(
			[ 'pg_isready', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
			'<', \undef, '>', \$out, '2>', \$err);
		usleep(100_000);
	}
	return 0;
}

# A count taken while the server may be crashing or recovering: undef
# then, where safe_psql would die.
sub try_count
{
	my ($node, $sql) = @_;
	my ($ret, $out) = $node->psql('postgres', $sql);
	return $ret == 0 && $out =~ /^\d+$/ ? $out : undef;
}

sub wait_pipelines_running
{
	my ($node, $npipelines) = @_;
	ok( $node->poll_query_until(
			'postgres',
			'SELECT count(*) FROM weir.pipelines WHERE worker_pid IS NOT NULL',
			$npipelines),
		"all $npipelines pipelines run");
	return;
}

# After a crash: every pipeline has a worker again and has recorded a
# restore for it (so the next crash hits restored workers).
sub wait_pipelines_restored
{
	my ($node, $npipelines, $restores, $what) = @_;
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT bool_and(s.worker_pid IS NOT NULL
				AND (SELECT count(*) FROM weir.restores r WHERE r.pipeline_id = p.id) >= $restores)
	   AND count(*) = $npipelines
  FROM weir.pipeline p JOIN weir.pipelines s ON s.name = p.name}),
		"every pipeline restored its checkpoint after $what");
	return;
}

# The PID of a pipeline's worker, or undef (none yet, or the server is
# down).
sub worker_pid
{
	my ($node, $pipeline) = @_;
	my ($ret, $pid) = $node->psql('postgres',
		"SELECT worker_pid FROM weir.pipelines WHERE name = '$pipeline' AND worker_pid IS NOT NULL");
	return $ret == 0 && $pid ne '' ? $pid : undef;
}

########################################################################
# Crashes
########################################################################

# Place $kinds crashes by progress, after srand($seed) so that WEIR_TAP_SEED
# places them the same way again: the i-th (from 0) at $target x ($first +
# i x $step + rand($spread)) rows, the kinds shuffled.  Returns the plan
# for produce_with_crashes.
sub plan_crashes
{
	my ($seed, $target, $first, $step, $spread, @kinds) = @_;
	srand($seed);
	note "seed $seed (set WEIR_TAP_SEED to place the crashes the same way)";
	my @at;
	for my $i (0 .. $#kinds)
	{
		push @at, int($target * ($first + $step * $i + rand($spread)));
	}
	@kinds = shuffle(@kinds);
	my @plan = map { { at => $at[$_], kind => $kinds[$_] } } 0 .. $#kinds;
	note "crash " . ($_ + 1) . ": $plan[$_]{kind} at >= $plan[$_]{at} rows" for 0 .. $#plan;
	return @plan;
}

# Installed in the server for the kills in a checkpoint: wait (up to 10 s)
# until the pipeline is in a checkpoint, its worker collecting it (sync) or
# its checkpoint writer writing it (async), then write the id of the
# pipeline's last committed checkpoint (read before seeing it there) and
# the PID of that process to a file and kill -9 the process.  Killing from
# here takes a millisecond or two, so the kill lands inside the checkpoint
# as a rule.  Returns false if it never saw a checkpoint.  The program
# reads all COPY writes (exec cat, after the kill): a program that exits
# with its stdin unread can fail COPY with "could not close pipe to
# external command: Broken pipe", an ERROR in the log.
my $kill_in_checkpoint_sql = q{
CREATE FUNCTION kill_in_checkpoint(pipeline text, worker integer, file text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	last bigint;
	victim integer;
BEGIN
	FOR i IN 1..10000 LOOP
		SELECT coalesce(max(c.id), 0) INTO last
		  FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
		 WHERE p.name = pipeline;
		PERFORM pg_stat_clear_snapshot();
		SELECT pid INTO victim FROM pg_stat_activity
		 WHERE (pid = worker AND query = 'weir: checkpoint')
			OR (backend_type = 'weir checkpoint writer'
				AND query = 'weir: writing a checkpoint of pipeline ' || pipeline)
		 LIMIT 1;
		IF victim IS NOT NULL THEN
			EXECUTE format('COPY (SELECT %s || '' '' || %s) TO %L', last, victim, file);
			EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'kill -9 ' || victim || '; exec cat >/dev/null');
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.001);
	END LOOP;
	RETURN false;
END
$$;
};

# Kill -9 a pipeline's worker or its checkpoint writer as soon as one is in
# a checkpoint (or the worker at once, with a failed check, if neither is
# seen in one within 10 s).  Returns the PID killed.
sub kill_in_checkpoint
{
	my ($node, $pipeline, $pid, $last_file) = @_;
	unlink $last_file;
	my ($ret, $killed) =
	  $node->psql('postgres', "SELECT kill_in_checkpoint('$pipeline', $pid, '$last_file')");
	# the kill ends this session too, with the server's crash
	my $seen = !($ret == 0 && $killed eq 'f');
	ok($seen, "pipeline $pipeline was seen in a checkpoint within 10 s");
	kill 'KILL', $pid unless $seen;
	if ($seen && -e $last_file)
	{
		my (undef, $victim) = split / /, slurp_file($last_file);
		chomp $victim;
		return $victim;
	}
	return $pid;
}

# After a kill in a checkpoint and the restore: whether the pipeline
# restored the checkpoint that was the last before the worker was seen in
# one, i.e. the kill interrupted that one.
sub checkpoint_interrupted
{
	my ($node, $pipeline, $last_file) = @_;
	my ($last) = -e $last_file ? split(/ /, slurp_file($last_file)) : ('');
	chomp $last;
	my $restored = $node->safe_psql(
		'postgres', qq{
SELECT r.checkpoint_id FROM weir.restores r JOIN weir.pipeline p ON p.id = r.pipeline_id
 WHERE p.name = '$pipeline' ORDER BY r.restored_at DESC LIMIT 1});
	if ($last ne '' && $restored eq $last)
	{
		note "the kill interrupted checkpoint " . ($last + 1) . " of $pipeline";
		return 1;
	}
	note "the kill came after the checkpoint of $pipeline had committed";
	return 0;
}

# The produce phase of a crash test.  Runs the producers until the rows
# counted by rows->() reach the target and every crash of the plan has
# happened, each as soon as the rows reach its place (progress, not time,
# places crashes, so they fall while the producers write on any machine);
# checks that all happened, then stops the producers and waits for their
# backends to go (abandoned transactions abort), in the order given.
# A crash is
#   kill                 kill -9 of the process victim->() picks,
#   kill in checkpoint   the same from inside the server, as soon as the
#                        victim (a pipeline's worker) is in a checkpoint,
#   kill read-ahead      kill -9 of the read-ahead process of the victim's
#                        pipeline (weir.read_ahead),
#   immediate            an immediate stop and a start;
# a kill -9 makes the postmaster reinitialize shared memory.  The
# pgbenches lose their connections in a crash and start again after it,
# as they do when they end on their own.  Arguments:
#   node, target, deadline (seconds), unit (the rows' name in messages),
#   benches   [[name, script, clients, more pgbench options], ...]
#   rows      sub: the rows so far (undef when the server does not answer)
#   plan      from plan_crashes: [{ at => rows, kind => ... }, ...]
#   victim    sub: (pid, who, pipeline) of the process to kill (who: words
#             for messages; pipeline: needed for a kill in a checkpoint),
#             or () to try again shortly
#   jitter    0: no sleep of up to 0.4 s at random before each crash (by
#             default a little more randomness than the polling gives)
#   pipelines after each crash, wait until these many pipelines restored
# Returns { rows, crashes, killed (PIDs), interrupted (kills in a
# checkpoint that interrupted one), t0, t_end (the end of the run, before
# the stop) }.
sub produce_with_crashes
{
	my %a       = @_;
	my $node    = $a{node};
	my @plan    = @{ $a{plan} };
	my @benches = @{ $a{benches} };
	my $last_file =
	  "$PostgreSQL::Test::Utils::tmp_check/weir_last_checkpoint_" . $node->name;
	$node->safe_psql('postgres', $kill_in_checkpoint_sql)
	  if grep { $_->{kind} eq 'kill in checkpoint' } @plan;

	my $start_benches = sub { start_bench($node, @$_) for @benches };
	my $end_benches   = sub { end_bench($_->[0], 0) for @benches };

	$start_benches->();
	my %r = (rows => 0, crashes => 0, killed => [], interrupted => 0, t0 => time);
	while (1)
	{
		my $n = $a{rows}->();
		$r{rows} = $n if defined $n;
		last if $r{crashes} == @plan && $r{rows} >= $a{target};

		if (time - $r{t0} > $a{deadline})
		{
			fail("reached $a{target} $a{unit} in $a{deadline} s (have $r{rows})");
			last;
		}

		if ($r{crashes} < @plan && $r{rows} >= $plan[ $r{crashes} ]{at})
		{
			my $kind = $plan[ $r{crashes} ]{kind};
			my ($what, $in_checkpoint);
			usleep(int(rand(400_000))) if $a{jitter} // 1;
			if ($kind eq 'immediate')
			{
				$what = sprintf('crash %d (immediate stop) at %d rows', $r{crashes} + 1, $r{rows});
				note sprintf('%.1f s: %s', time - $r{t0}, $what);
				$node->stop('immediate');
				$end_benches->();
				$node->start;
			}
			else
			{
				my ($pid, $who, $pipeline) = $a{victim}->();
				if (!defined $pid)
				{
					usleep(50_000);
					next;
				}
				my $offset = -s $node->logfile;
				if ($kind eq 'kill read-ahead')
				{
					my $reader;
					for (1 .. 200)    # its worker may have just started
					{
						my $ret;
						($ret, $reader) = $node->psql('postgres',
							"SELECT reader_pid FROM weir.pipelines WHERE name = '$pipeline' AND reader_pid IS NOT NULL");
						last if $ret == 0 && $reader ne '';
						usleep(50_000);
					}
					ok($reader ne '', "pipeline $pipeline has a read-ahead process");
					$pid = $reader ne '' ? $reader : $pid;
					$who = "the read-ahead process of pipeline $pipeline";
					kill 'KILL', $pid;
				}
				elsif ($kind eq 'kill')
				{
					kill 'KILL', $pid;
				}
				else
				{
					my $victim = kill_in_checkpoint($node, $pipeline, $pid, $last_file);
					$who = "the checkpoint writer of pipeline $pipeline" if $victim != $pid;
					$pid = $victim;
					$in_checkpoint = $pipeline;
				}
				push @{ $r{killed} }, $pid;
				$what = sprintf('crash %d (kill -9 of %s, PID %d%s) at %d rows',
					$r{crashes} + 1, $who, $pid,
					$kind eq 'kill in checkpoint' ? ', seen in a checkpoint' : '', $r{rows});
				note sprintf('%.1f s: %s', time - $r{t0}, $what);
				$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
				ok(wait_server_up($node), "server back after $what");
				$end_benches->();
			}
			$r{crashes}++;
			$start_benches->();
			wait_pipelines_restored($node, $a{pipelines}, $r{crashes} + 1, $what)
			  if $a{pipelines};
			$r{interrupted} += checkpoint_interrupted($node, $in_checkpoint, $last_file)
			  if defined $in_checkpoint;
			next;
		}

		# a pgbench that ended on its own (all its clients failed) is restarted
		for my $b (@benches)
		{
			next if bench_running($b->[0]);
			diag "pgbench $b->[0] ended unexpectedly: " . bench_stderr($b->[0]);
			end_bench($b->[0], 0);
			start_bench($node, @$b);
		}
		usleep(250_000);
	}
	$r{t_end} = time;
	note sprintf("produced %d $a{unit} in %.1f s", $r{rows}, $r{t_end} - $r{t0});
	is($r{crashes}, scalar(@plan),
		@plan == 2 ? 'both crashes happened' : 'all ' . scalar(@plan) . ' crashes happened');
	my $aimed = grep { $_->{kind} eq 'kill in checkpoint' } @plan;
	note "$r{interrupted} of the $aimed kills aimed at a checkpoint interrupted one" if $aimed;
	stop_bench($node, $_->[0]) for @benches;
	return \%r;
}

# A victim for produce_with_crashes: the worker of each pipeline named, in
# turn (waiting for one whose worker is not up yet).
sub workers_in_turn
{
	my ($node, @names) = @_;
	return sub {
		my $pid = worker_pid($node, $names[0]);
		return () unless defined $pid;
		my $name = shift @names;
		return ($pid, "the worker of pipeline $name", $name);
	};
}

########################################################################
# The checks that end a crash test
########################################################################

# Every pipeline takes a checkpoint: once the sentinels are read, each
# covers every $unit of its sources.
sub checkpoint_each
{
	my ($node, $unit, @pipelines) = @_;
	for my $p (@pipelines)
	{
		my ($ret, $out, $err) =
		  $node->psql('postgres', "SELECT weir.checkpoint('$p', '180 s')");
		is($ret, 0, "pipeline $p took a checkpoint covering every $unit")
		  or diag $err;
	}
	return;
}

# The watermark of a pipeline's last committed checkpoint.
sub last_watermark
{
	my ($node, $p) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT c.watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p' ORDER BY c.id DESC LIMIT 1});
}

# A column of weir.checkpoints summed over a pipeline's committed
# checkpoints (records_in: each counts what was read since the one
# before, so what a crash made it read again counts once).
sub checkpoint_sum
{
	my ($node, $p, $column) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT sum(c.$column) FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
 WHERE p.name = '$p'});
}

# How many of a pipeline's restores read state from its chunks.
sub restores_with_state
{
	my ($node, $p) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
 WHERE q.name = '$p' AND r.windows > 0});
}

# Compare a sink with its oracle, row for row: the counts, then the rows
# each way (EXCEPT ALL, so that a row there too often or too rarely shows,
# unless except => 'EXCEPT' asks for sets); on a difference, the first 20
# rows each way and what diag->(fields of the first of them) adds.
#   pipeline  the sink of pipeline P against table oracle_P, or:
#   label, sink, oracle (relations)
#   cols, order (ORDER BY of the differences), except, diag,
#   nonempty  0: no check that the oracle has rows
sub compare_with_oracle
{
	my ($node, %a) = @_;
	if (defined $a{pipeline})
	{
		$a{label}  //= "pipeline $a{pipeline}";
		$a{sink}   //= $a{pipeline};
		$a{oracle} //= "oracle_$a{pipeline}";
	}
	my ($label, $sink, $oracle, $cols) = @a{qw(label sink oracle cols)};
	my $except = $a{except} // 'EXCEPT ALL';
	my $once   = $except eq 'EXCEPT ALL' ? ', once' : '';
	my $sink_n   = $node->safe_psql('postgres', "SELECT count(*) FROM $sink");
	my $oracle_n = $node->safe_psql('postgres', "SELECT count(*) FROM $oracle");
	note "$label: sink $sink_n rows, oracle $oracle_n rows";
	cmp_ok($oracle_n, '>', 0, "$label: the oracle has rows") if $a{nonempty} // 1;
	is($sink_n, $oracle_n, "$label: the sink has as many rows as the oracle");
	my $extra = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM $sink $except SELECT $cols FROM $oracle ORDER BY $a{order} LIMIT 20});
	is($extra, '', "$label: every sink row is an oracle row$once");
	my $missing = $node->safe_psql(
		'postgres', qq{
SELECT $cols FROM $oracle $except SELECT $cols FROM $sink ORDER BY $a{order} LIMIT 20});
	is($missing, '', "$label: every oracle row is in the sink$once");
	if ($extra ne '' || $missing ne '')
	{
		diag "$label: sink rows not in the oracle (first 20; $cols):\n$extra";
		diag "$label: oracle rows not in the sink (first 20):\n$missing";
		my @first = split /\|/, (split /\n/, ($extra ne '' ? $extra : $missing))[0];
		diag $a{diag}->(@first) if $a{diag};
	}
	return;
}

# A pipeline's own account after a crash test: it runs, nothing was late
# or dead, no error, and it restored a checkpoint at its start and after
# each crash.  Returns its row of weir.pipelines (counters cumulative
# across restarts and crashes) for more checks.
sub check_pipeline_account
{
	my ($node, $p, $ncrashes) = @_;
	my %row;
	@row{qw(status in out dropped late dead error restores)} = split /\|/,
	  $node->safe_psql(
		'postgres', qq{
SELECT status, records_in, records_out, records_dropped, records_late, records_dead,
	   coalesce(last_error, ''),
	   (SELECT count(*) FROM weir.restores r JOIN weir.pipeline q ON q.id = r.pipeline_id
		 WHERE q.name = s.name)
  FROM weir.pipelines s WHERE name = '$p'}), -1;
	is($row{status}, 'running', "pipeline $p is running");
	is($row{late},   '0',       "pipeline $p: records_late = 0");
	is($row{dead},   '0',       "pipeline $p: records_dead = 0");
	is($row{error},  '',        "pipeline $p: no last_error");
	cmp_ok($row{restores}, '>=', $ncrashes + 1,
		"pipeline $p restored a checkpoint at its start and after each of the $ncrashes crashes ($row{restores} restores)"
	);
	return %row;
}

# Pass when no line is given; on failure show the first 21.
sub none_of
{
	my ($name, @lines) = @_;
	is(scalar(@lines), 0, $name)
	  or diag join("\n", @lines[ 0 .. ($#lines < 20 ? $#lines : 20) ]);
	return;
}

# The server log after a crash test: the intended kills (the weir workers
# among them named), no other abnormal exit, no PANIC, TRAP or ERROR.
sub check_crash_log
{
	my ($node, $nkills, @worker_pids) = @_;
	my @log = split /\n/, slurp_file($node->logfile);
	none_of('no PANIC or TRAP in the server log', grep { /PANIC|TRAP:/ } @log);
	my @signals = grep { /terminated by signal|exited with exit code/ } @log;
	my @killed = grep { /terminated by signal 9/ } @signals;
	is(scalar(@killed), $nkills,
		$nkills == 1
		? 'exactly one process was killed by signal 9 (the intended crash)'
		: "exactly $nkills processes were killed by signal 9 (the intended crashes)")
	  or diag join("\n", @killed);
	for my $pid (@worker_pids)
	{
		ok(scalar(grep { /weir (worker|checkpoint writer|read-ahead).*\(PID $pid\) was terminated by signal 9/ } @killed),
			"the log names the killed weir process $pid");
	}
	none_of('no other process died abnormally', grep { !/terminated by signal 9/ } @signals);
	none_of('no ERROR in the server log', grep { /\bERROR:/ } @log);
	return;
}

########################################################################
# A tumbling pipeline's sink against SQL
########################################################################

# The sink of a pipeline of 1-minute tumbling windows of count(*) AS n and
# sum(v) AS total per k over topic `ev`: every window closed by $watermark
# must be in it, as SQL's GROUP BY over the topic computes it, and nothing
# else (EXCEPT ALL both ways).
sub check_minute_sink
{
	my ($node, $sink, $watermark, $what) = @_;
	my $origin = q{timestamptz '1970-01-01 00:00:00+00'};
	my $diff   = $node->safe_psql(
		'postgres', qq{
WITH oracle AS (
	SELECT k, date_bin('1 minute', ts, $origin) AS window_start,
		   count(*) AS n, sum(v) AS total
	  FROM ev GROUP BY 1, 2
	HAVING date_bin('1 minute', ts, $origin) + interval '1 minute' <= '$watermark'),
sink AS (SELECT k, window_start, n, total FROM $sink)
SELECT (SELECT count(*) FROM (SELECT * FROM oracle EXCEPT ALL SELECT * FROM sink) a) || ' ' ||
	   (SELECT count(*) FROM (SELECT * FROM sink EXCEPT ALL SELECT * FROM oracle) b) || ' ' ||
	   (SELECT count(*) FROM oracle)});
	my ($missing, $extra, $rows) = split / /, $diff;
	cmp_ok($rows, '>', 0, "$what: the oracle has closed windows");
	is("$missing $extra", '0 0', "$what: the sink of $sink equals the SQL GROUP BY ($rows rows)");
	return;
}

1;
