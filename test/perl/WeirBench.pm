# WeirBench.pm — pgbench clients and crash recovery waits for weir's TAP tests.
#
# start_bench runs pgbench in the background; bench_running tells whether it
# still runs; end_bench waits for it to end (after a crash its connections
# are lost) or stops it, and reports any stderr that is not an expected
# connection loss; wait_server_up waits for a crashed server to accept
# connections again.
package WeirBench;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

our @EXPORT = qw(start_bench bench_running bench_stderr end_bench wait_server_up);

my %bench;    # name => { h => harness, out => \$, err => \$ }

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

1;
