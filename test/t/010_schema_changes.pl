# 010_schema_changes.pl
#
# Schema changes never crash (issue 15, part 2).  ALTER TABLE of a topic, a
# sink or a late-records table that a running pipeline uses is either
# refused with a clear SQLSTATE, or the pipeline's worker notices it before
# its next record and stops: status 'failed', enabled false in weir.pipeline,
# last_error saying why.  Never a signal, never a wrong value in a sink.
#
# One cluster, pipelines of every kind running at once, owned by a role
# `app` that is no superuser (so that row-level security can apply to it):
#
#   ev      topic (pad int, k int, v bigint, ts timestamptz, note text),
#           4 partitions by k, owned by app; pad and note no pipeline uses
#   tags    topic (ref bigint, tag text, ts timestamptz), 2 partitions by
#           ref, owned by another role, `other`, readable by app
#   ev_1m   topic (k, window_start, window_end, n, total), 2 partitions:
#           sink of `chain` and source of `chain_copy`
#
#   tumble      1-minute tumbling windows of ev, late_records 'tumble_late'
#   hop         2-minute windows sliding by 1 minute
#   sess        session windows (gap 30.0005 s)
#   dd          dedup of ev by v, horizon 10 minutes
#   lv          last value of ev per k
#   proj        projection of the even v of ev
#   jn          left interval join ev.v = tags.ref within 1 minute
#   chain       tumbling windows of ev into the topic ev_1m
#   chain_copy  projection of ev_1m into a table
#   doomed      projection of ev, whose sink is dropped with CASCADE
#
# A producer (pgbench, one client, rate-limited) writes ev and tags all
# along: every record takes the next tick of a sequence (one second of
# event time per tick, minus up to 5 s of disorder); every tenth record
# is written twice (dedup drops the copy), every third has a tag within
# 90 s of it, and every 97th tick also writes a record of the year 2000,
# late for every pipeline with an event time (tumble copies it into
# tumble_late).  The producer names the two columns that get renamed by
# their attribute numbers, so it writes on through the renames.
#
# The changes, one step after another, each followed by new records and by
# a checkpoint of every pipeline that should still run (so its worker has
# seen the change and read records written after it):
#
#   refused: ALTER COLUMN ... TYPE of every column a definition reads or
#     writes (topic columns, part, pos, sink and topic-sink columns) with
#     0A000; DROP COLUMN, DROP CONSTRAINT ev_pkey and DROP TABLE (also of
#     the late-records table) with 2BP01; nothing changes, every worker
#     runs on;
#   allowed, every worker runs on (the same process): columns weir does not
#     write added, changed and dropped on sinks, a column with a default
#     added to a topic sink and to tags, a validated CHECK on a sink, a
#     NOT VALID CHECK on a topic, tags.tag renamed (the join is bound by
#     attribute number), ev rewritten (VACUUM FULL, SET UNLOGGED, SET
#     LOGGED), unused ev columns dropped;
#   dead letters: a NOT VALID CHECK on proj that some rows violate: those
#     rows go to weir.dead_letters (source proj, no partition or position),
#     the others to the sink, proj runs on;
#   the worker stops (failed, disabled, last_error), the others run on, and
#     after the change is undone weir.start() runs it again:
#     - ev.pad TYPE text, a column of tumble_late retyped or dropped, a
#       column added to ev, ev.v renamed: tumble only (its late-records
#       table must have the topic's columns; the others run on, reading
#       the rewritten and renamed topic);
#     - a NOT NULL column without default added to lv's sink;
#     - hop's sink column hi renamed;
#     - tumble's sink primary key dropped;
#     - row-level security enabled on tags, which `other` owns (jn);
#     - row-level security forced on ev_1m for its owner (chain_copy; chain,
#       which writes it through a permissive policy, runs on);
#     - row-level security forced on ev: every pipeline reading it;
#   CASCADE: DROP TABLE doomed CASCADE drops the pipeline doomed, its
#     worker exits.
#
# Then the producer stops, one record per partition far in the future
# closes every window, every pipeline takes a checkpoint, and each sink is
# compared with its oracle in SQL over the topics, row for row (EXCEPT ALL
# both ways): tumble and chain (GROUP BY), hop, sess (gaps and islands), dd
# (NOT EXISTS), lv (DISTINCT ON), proj (with its dead letters), jn (LEFT
# JOIN), chain_copy (ev_1m).  pg_postmaster_start_time() is unchanged and
# the server log has no process terminated by a signal.
#
# WEIR_TAP_RATE overrides the producer's transactions per second (10, of
# about 12 records each).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $rate    = env_or('WEIR_TAP_RATE', 10);
my $t_start = time;
my $node    = start_weir_node(
	'schema_changes',
	'weir.launcher_naptime' => 100,
	max_connections         => 40,
	max_worker_processes    => 40,
	log_statement           => 'none');

my $base   = q{timestamptz '2024-01-01 00:00:00+00'};
my $origin = q{timestamptz '1970-01-01 00:00:00+00'};
my $gap    = q{interval '30.0005 seconds'};
my $every  = q{checkpoint_interval => '500 ms'};

my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

########################################################################
# Set-up
########################################################################

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE ROLE app;
CREATE ROLE other;
GRANT CREATE ON SCHEMA public TO app, other;
CREATE SEQUENCE clock;

SET ROLE other;
SELECT weir.create_topic('tags', 'ref bigint, tag text, ts timestamptz', partitions => 2, key => 'ref');
GRANT SELECT ON tags TO app;
RESET ROLE;

SET ROLE app;
SELECT weir.create_topic('ev', 'pad int, k int, v bigint, ts timestamptz, note text',
						 partitions => 4, key => 'k');
SELECT weir.create_topic('ev_1m', 'k int, window_start timestamptz, window_end timestamptz, n bigint, total numeric',
						 partitions => 2, key => 'k');
SELECT weir.create_pipeline('tumble', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							out_of_orderness => '30 seconds', late_records => 'tumble_late', $every);
SELECT weir.create_pipeline('hop', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.hopping('2 minutes', '1 minute'),
							aggregates => 'count(*) AS n, max(v) AS hi, min(ts) AS first_ts',
							out_of_orderness => '30 seconds', $every);
SELECT weir.create_pipeline('sess', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.session($gap),
							aggregates => 'count(*) AS n, sum(v) AS total',
							out_of_orderness => '30 seconds', $every);
SELECT weir.create_dedup('dd', 'ev', key => 'v', event_time => 'ts', horizon => '10 minutes',
						 columns => 'k, v, ts', out_of_orderness => '30 seconds', $every);
SELECT weir.create_last_value('lv', 'ev', key => 'k', event_time => 'ts', columns => 'v, ts', $every);
SELECT weir.create_projection('proj', 'ev', columns => 'k, v, ts', filter => 'v % 2 = 0', $every);
SELECT weir.create_join('jn', 'ev', 'tags', left_key => 'v', right_key => 'ref',
						left_event_time => 'ts', right_event_time => 'ts',
						right_before => '1 minute', right_after => '1 minute', kind => 'left',
						columns => 'l.k, l.v, l.ts AS l_ts, r.tag, r.ts AS r_ts',
						out_of_orderness => '3 minutes', $every);
SELECT weir.create_pipeline('chain', 'ev', key => 'k', event_time => 'ts',
							windowing => weir.tumbling('1 minute'),
							aggregates => 'count(*) AS n, sum(v) AS total',
							out_of_orderness => '30 seconds', sink => 'ev_1m', $every);
SELECT weir.create_projection('chain_copy', 'ev_1m',
							  columns => 'k, window_start, window_end, n, total', $every);
SELECT weir.create_projection('doomed', 'ev', columns => 'k, ts', $every);
RESET ROLE;

-- The producer: n ticks of the clock.  The columns that get renamed (ev's
-- 5th attribute, v, and tags' 4th, tag) are named by attribute number; a
-- rename that commits between the look-up and the insert skips the batch.
CREATE FUNCTION produce(n int, late boolean) RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	vcol name;
	tcol name;
	written bigint := 0;
BEGIN
	SELECT attname INTO vcol FROM pg_attribute WHERE attrelid = 'ev'::regclass AND attnum = 5;
	SELECT attname INTO tcol FROM pg_attribute WHERE attrelid = 'tags'::regclass AND attnum = 4;
	BEGIN
		EXECUTE format(\$f\$
WITH g AS (SELECT s, floor(random() * 50)::int AS k, floor(random() * 5000)::int AS disorder
			 FROM (SELECT nextval('clock') AS s FROM generate_series(1, \$1)) c),
	 e AS (INSERT INTO ev (pad, k, %1\$I, ts)
		   SELECT s, k, s, $base + (s * 1000 - disorder) * interval '1 ms' FROM g
		   UNION ALL
		   SELECT s, k, s, $base + (s * 1000 - disorder) * interval '1 ms' FROM g WHERE s %% 10 = 0
		   UNION ALL
		   SELECT s, (s %% 50)::int, -s, timestamptz '2000-01-01 00:00:00+00' + s * interval '1 ms'
			 FROM g WHERE \$2 AND s %% 97 = 0
		   RETURNING %1\$I AS v, ts),
	 t AS (INSERT INTO tags (ref, %2\$I, ts)
		   SELECT v, 't' || (v %% 5), ts + (floor(random() * 180000) - 90000) * interval '1 ms'
			 FROM (SELECT DISTINCT v, ts FROM e WHERE v > 0 AND v %% 3 = 0) d
		   RETURNING 1)
SELECT (SELECT count(*) FROM e) + (SELECT count(*) FROM t)\$f\$, vcol, tcol)
		USING n, late INTO written;
	EXCEPTION WHEN undefined_column THEN
		RETURN 0;
	END;
	RETURN written;
END \$\$;

-- A statement's refusal: SQLSTATE, message and detail on three lines (or
-- 'accepted', and then rolled back).
CREATE FUNCTION refusal(stmt text) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
	state text;
	message text;
	detail text;
BEGIN
	EXECUTE stmt;
	RAISE EXCEPTION 'accepted';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
							detail = PG_EXCEPTION_DETAIL;
	IF message = 'accepted' THEN
		RETURN 'accepted';
	END IF;
	RETURN state || E'\\n' || message || E'\\n' || coalesce(detail, '');
END \$\$;

-- A checkpoint of each pipeline named; the failures, one a line.
CREATE FUNCTION settle(names text[]) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
	p text;
	bad text := '';
BEGIN
	FOREACH p IN ARRAY names LOOP
		BEGIN
			PERFORM weir.checkpoint(p, '60 s');
		EXCEPTION WHEN OTHERS THEN
			bad := bad || p || ': ' || SQLSTATE || ' ' || SQLERRM || E'\\n';
		END;
	END LOOP;
	RETURN bad;
END \$\$;
});

my @all = qw(tumble hop sess dd lv proj jn chain chain_copy doomed);
my %running = map { $_ => 1 } @all;    # the pipelines that should run now
my $vcol = 'v';                         # ev's column v, renamed on the way

# name => "worker_pid status enabled" for every pipeline
sub pipeline_states
{
	my %s;
	for my $line (split /\n/,
		$node->safe_psql(
			'postgres', q{
SELECT p.name, coalesce(s.worker_pid::text, '-'), p.status, p.enabled
  FROM weir.pipeline p JOIN weir.pipelines s ON s.name = p.name}))
	{
		my ($name, @rest) = split /\|/, $line;
		$s{$name} = join ' ', @rest;
	}
	return %s;
}

# Checkpoints of the pipelines that should run: each covers every record
# committed so far.
sub settle
{
	my ($what, @names) = @_;
	@names = sort keys %running unless @names;
	my $bad = $node->safe_psql('postgres',
		'SELECT settle(ARRAY[' . join(', ', map { "'$_'" } @names) . '])');
	is($bad, '', "$what: " . join(', ', @names) . ' checkpoint every record so far');
	return;
}

# Wait until the producer has written 40 more rows of ev.
sub more_records
{
	my ($what) = @_;
	my $n0 = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
	ok($node->poll_query_until('postgres', "SELECT count(*) >= $n0 + 40 FROM ev"),
		"$what: the producer writes on");
	return;
}

# A list of pipeline names as SQL
sub names_sql
{
	return join(', ', map { "'$_'" } @_);
}

# One step: apply the statements (each in its own transaction, each must be
# accepted), let records follow, and check that the pipelines in %$fail
# stop (status failed, disabled, last_error matching each regex,
# weir.checkpoint refused with 55000), that every other pipeline that ran
# runs on with the same worker (it noticed the change and found nothing
# wrong), and that it took a checkpoint covering records written after the
# change.  Then undo (if given) and weir.start the stopped ones: they run
# again, catch up, and last_error is cleared.
sub step
{
	my (%a) = @_;
	my $what = $a{what};
	my %fail = %{ $a{fail} // {} };
	my @failing = sort keys %fail;
	my %before = pipeline_states();
	$node->safe_psql('postgres', join(";\n", @{ $a{change} }) . ';');
	more_records($what);
	if (@failing)
	{
		my $in = names_sql(@failing);
		ok( $node->poll_query_until(
				'postgres', qq{
SELECT count(*) FROM weir.pipeline p JOIN weir.pipelines s ON s.name = p.name
 WHERE p.name IN ($in) AND p.status = 'failed' AND NOT p.enabled AND s.worker_pid IS NULL},
				scalar(@failing)),
			"$what: " . join(', ', @failing) . ' stop, failed and disabled, their workers gone');
		my %why;
		for my $line (split /\n/,
			$node->safe_psql(
				'postgres', qq{
SELECT name, split_part(refusal(format('SELECT weir.checkpoint(%L, ''5 s'')', name)), E'\\n', 1),
	   replace(last_error, E'\\n', ' ')
  FROM weir.pipeline WHERE name IN ($in)}))
		{
			my ($name, $state, $error) = split /\|/, $line, 3;
			$why{$name} = [ $state, $error ];
		}
		for my $p (@failing)
		{
			my ($state, $error) = @{ $why{$p} // [ '', '' ] };
			like($error, $fail{$p}, "$what: pipeline $p says why");
			is($state, '55000', "$what: a checkpoint of $p is refused with 55000");
			delete $running{$p};
		}
	}
	settle($what);
	my %after = pipeline_states();
	my @changed;
	for my $p (sort keys %running)
	{
		my ($pid_before) = split / /, $before{$p} // '-';
		push @changed, "$p: was " . ($before{$p} // 'none') . ', now ' . ($after{$p} // 'none')
		  if ($after{$p} // '') ne "$pid_before running t" || $pid_before eq '-';
	}
	is(join("\n", @changed), '',
		"$what: every other pipeline runs on, with the same worker");
	return unless @failing;

	# the stopped ones stay stopped until started
	is( join(', ', map { "$_: " . ($after{$_} // 'none') }
			  grep { ($after{$_} // '') ne '- failed f' } @failing),
		'', "$what: the stopped pipelines stay stopped");
	$node->safe_psql('postgres',
		join(";\n", @{ $a{undo} // [] }, map { "SELECT weir.start('$_')" } @failing) . ';');
	$running{$_} = 1 for @failing;
	settle("$what, undone", @failing);
	my %now = pipeline_states();
	is( join(', ', map { "$_: $now{$_}" } grep { $now{$_} !~ /^\d+ running t$/ } @failing),
		'', "$what, undone: " . join(', ', @failing) . ' run again');
	is( $node->safe_psql(
			'postgres',
			'SELECT count(*) FROM weir.pipeline WHERE last_error IS NOT NULL AND name IN ('
			  . names_sql(@failing) . ')'),
		'0', "$what, undone: last_error is cleared");
	return;
}

########################################################################
# Start: a first load, then the producer
########################################################################

$node->safe_psql('postgres', 'SELECT produce(10, false) FROM generate_series(1, 60)');
settle('first load');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(name, ', ' ORDER BY name) FROM weir.pipelines
 WHERE operator <> 'projection' AND watermark IS NULL}),
	'',
	'every pipeline with an event time has a watermark (records of 2000 are late from now on)');

my $producer = bench_script('weir_schema_producer.sql', "SELECT produce(10, true);\n");
start_bench($node, 'producer', $producer, 1, '-R', $rate);
more_records('producer started');

########################################################################
# Refused: what a definition reads or writes keeps its type and exists
########################################################################

my $shape_sql = q{
SELECT md5(string_agg(format('%s.%s %s %s %s', attrelid::regclass, attname, atttypid::regtype,
							 attnotnull, attisdropped), ',' ORDER BY attrelid::regclass::text, attnum)
		   || (SELECT string_agg(conname::text || contype::text, ',' ORDER BY conname) FROM pg_constraint
				WHERE conrelid IN ('ev'::regclass, 'tags'::regclass, 'ev_1m'::regclass, 'tumble'::regclass,
								   'tumble_late'::regclass, 'lv'::regclass, 'hop'::regclass)))
  FROM pg_attribute
 WHERE attrelid IN ('ev'::regclass, 'tags'::regclass, 'ev_1m'::regclass, 'tumble'::regclass,
					'tumble_late'::regclass, 'hop'::regclass, 'sess'::regclass, 'dd'::regclass,
					'lv'::regclass, 'proj'::regclass, 'jn'::regclass, 'chain_copy'::regclass)
   AND attnum > 0};
my $shape = $node->safe_psql('postgres', $shape_sql);
my %before_refusals = pipeline_states();

my @refused = (
	# topic columns read by definitions, and the topic's positions
	[ 'ALTER TABLE ev ALTER COLUMN v TYPE numeric',            '0A000' ],
	[ 'ALTER TABLE ev ALTER COLUMN ts TYPE timestamp',         '0A000' ],
	[ 'ALTER TABLE ev ALTER COLUMN k TYPE bigint',             '0A000' ],
	[ 'ALTER TABLE ev ALTER COLUMN pos TYPE numeric',          '0A000' ],
	[ 'ALTER TABLE ev ALTER COLUMN part TYPE bigint',          '0A000' ],
	[ 'ALTER TABLE ev DROP CONSTRAINT ev_pkey',                '2BP01' ],
	[ 'ALTER TABLE ev DROP COLUMN v',                          '2BP01' ],
	[ 'ALTER TABLE ev DROP COLUMN pos',                        '2BP01' ],
	[ 'DROP TABLE ev',                                         '2BP01' ],
	[ 'ALTER TABLE tags ALTER COLUMN ref TYPE int',            '0A000' ],
	[ 'ALTER TABLE tags ALTER COLUMN ts TYPE timestamp',       '0A000' ],
	[ 'ALTER TABLE tags DROP COLUMN tag',                      '2BP01' ],
	[ 'DROP TABLE tags',                                       '2BP01' ],
	# sink columns written
	[ 'ALTER TABLE tumble ALTER COLUMN total TYPE text',       '0A000' ],
	[ 'ALTER TABLE tumble ALTER COLUMN window_start TYPE timestamp', '0A000' ],
	[ 'ALTER TABLE tumble DROP COLUMN n',                      '2BP01' ],
	[ 'DROP TABLE tumble',                                     '2BP01' ],
	[ 'ALTER TABLE hop ALTER COLUMN first_ts TYPE timestamp',  '0A000' ],
	[ 'ALTER TABLE hop ALTER COLUMN k TYPE bigint',            '0A000' ],
	[ 'ALTER TABLE sess ALTER COLUMN window_end TYPE timestamp', '0A000' ],
	[ 'ALTER TABLE sess DROP COLUMN total',                    '2BP01' ],
	[ 'ALTER TABLE dd ALTER COLUMN v TYPE numeric',            '0A000' ],
	[ 'DROP TABLE dd',                                         '2BP01' ],
	[ 'ALTER TABLE lv ALTER COLUMN v TYPE text',               '0A000' ],
	[ 'ALTER TABLE lv DROP COLUMN ts',                         '2BP01' ],
	[ 'ALTER TABLE proj ALTER COLUMN v TYPE int',              '0A000' ],
	[ 'ALTER TABLE jn ALTER COLUMN tag TYPE varchar',          '0A000' ],
	[ 'ALTER TABLE jn DROP COLUMN r_ts',                       '2BP01' ],
	[ 'ALTER TABLE chain_copy ALTER COLUMN total TYPE float8', '0A000' ],
	# a topic as sink (of chain) and as source (of chain_copy)
	[ 'ALTER TABLE ev_1m ALTER COLUMN n TYPE int',             '0A000' ],
	[ 'ALTER TABLE ev_1m DROP COLUMN total',                   '2BP01' ],
	[ 'ALTER TABLE ev_1m DROP CONSTRAINT ev_1m_pkey',          '2BP01' ],
	[ 'DROP TABLE ev_1m',                                      '2BP01' ],
	# the late-records table (its columns may change: below)
	[ 'DROP TABLE tumble_late',                                '2BP01' ]);
# each in a subtransaction of its own (its locks go with it), in one query
my @answers = split /\n/,
  $node->safe_psql(
	'postgres',
	'SELECT replace(refusal(stmt), E\'\n\', \' // \') FROM unnest(ARRAY['
	  . join(', ', map { "\$s\$$_->[0]\$s\$" } @refused)
	  . ']) WITH ORDINALITY AS r(stmt, i) ORDER BY i');
is(scalar(@answers), scalar(@refused), 'every statement was tried');
for my $i (0 .. $#refused)
{
	my ($stmt, $state) = @{ $refused[$i] };
	my ($sqlstate, $message, $detail) = split m{ // }, $answers[$i] // '', 3;
	is($sqlstate, $state, "refused with $state: $stmt") or diag $answers[$i];
	like($detail // '', qr/weir_pipelines\.\w+/, "the refusal names a pipeline's definition: $stmt");
}
is($node->safe_psql('postgres', $shape_sql), $shape,
	'the refused statements changed no column and no constraint');
more_records('refusals');
settle('refusals');
my %after_refusals = pipeline_states();
is( join("\n", map { "$_: $before_refusals{$_} -> $after_refusals{$_}" }
		  grep { $before_refusals{$_} ne $after_refusals{$_} || $after_refusals{$_} !~ / running t$/ } @all),
	'', 'refusals: every pipeline runs on, with the same worker');

########################################################################
# Allowed: what no definition uses
########################################################################

step(
	what   => 'columns and constraints weir does not use',
	change => [
		# sinks: a column weir does not write, added, changed, dropped
		'ALTER TABLE tumble ADD COLUMN note text',
		q{ALTER TABLE tumble ALTER COLUMN note TYPE varchar(20)},
		'ALTER TABLE tumble DROP COLUMN note',
		'ALTER TABLE dd ADD COLUMN note text',
		'ALTER TABLE dd DROP COLUMN note',
		'ALTER TABLE sess ADD COLUMN note text',
		'ALTER TABLE jn ADD COLUMN note text DEFAULT \'n\'',
		# a column with a default, kept: lv's upserts and inserts go by SQL now
		'ALTER TABLE lv ADD COLUMN seen_at timestamptz DEFAULT now()',
		# a CHECK every row meets, validated
		'ALTER TABLE hop ADD CONSTRAINT hop_n_positive CHECK (n > 0)',
		# a topic as sink, and tags: a column with a default
		q{ALTER TABLE ev_1m ADD COLUMN src text DEFAULT 'weir'},
		'ALTER TABLE tags ADD COLUMN extra int DEFAULT 7',
		# a topic constraint, not validated
		'ALTER TABLE ev ADD CONSTRAINT ev_k_range CHECK (k >= -1) NOT VALID',
		q{ALTER TABLE ev ALTER COLUMN note SET DEFAULT 'x'},
		'ALTER TABLE ev ALTER COLUMN pad SET STATISTICS 200',
		# a topic column a definition reads, renamed: bound by attribute number
		'ALTER TABLE tags RENAME COLUMN tag TO label',
	]);

step(
	what   => 'ev rewritten (VACUUM FULL, SET UNLOGGED, SET LOGGED)',
	change => [ 'VACUUM FULL ev', 'ALTER TABLE ev SET UNLOGGED', 'ALTER TABLE ev SET LOGGED' ]);

########################################################################
# Dead letters: a sink CHECK that some rows violate
########################################################################

my $proj_id = $node->safe_psql('postgres', q{SELECT id FROM weir.pipeline WHERE name = 'proj'});
step(
	what   => 'a CHECK on proj that some rows violate',
	change => [ 'ALTER TABLE proj ADD CONSTRAINT proj_v_check CHECK (v % 10 <> 4) NOT VALID' ]);
my $v_at_check = $node->safe_psql('postgres', 'SELECT max(v) FROM ev');
more_records('after the CHECK on proj');
settle('after the CHECK on proj', 'proj');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) > 0, bool_and(source = 'proj'::regclass AND partition IS NULL AND position IS NULL
							  AND (record->>'v')::bigint % 10 = 4
							  AND error LIKE 'sink "proj": new row for relation "proj" violates check constraint "proj_v_check"%')
  FROM weir.dead_letters WHERE pipeline_id = $proj_id}),
	't|t',
	'the rows proj\'s sink refuses are dead letters (source proj, no position, the error, the row)');
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM proj WHERE v % 10 = 4 AND v > $v_at_check"),
	'0', 'no row written after the CHECK violates it');
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM proj WHERE v > $v_at_check"),
	'>', 0, 'the other rows are written');

########################################################################
# The late-records table must have the topic's columns: changes of ev that
# no definition reads stop tumble, and only tumble
########################################################################

step(
	what   => 'ev.pad TYPE text (ev rewritten, the columns after pad moved)',
	change => [ 'ALTER TABLE ev ALTER COLUMN pad TYPE text USING pad::text' ],
	fail   => { tumble => qr/"pad"/ },
	undo   => [ 'ALTER TABLE ev ALTER COLUMN pad TYPE int USING pad::int' ]);

step(
	what   => 'a column of tumble_late retyped',
	change => [ 'ALTER TABLE tumble_late ALTER COLUMN v TYPE text' ],
	fail   => { tumble => qr/column "v" of late-records table "tumble_late" has type text/ },
	undo   => [ 'ALTER TABLE tumble_late ALTER COLUMN v TYPE bigint USING v::bigint' ]);

step(
	what   => 'a column of tumble_late dropped',
	change => [ 'ALTER TABLE tumble_late DROP COLUMN watermark' ],
	fail   => { tumble => qr/late-records table "tumble_late" has no column "watermark"/ },
	undo   => [ 'ALTER TABLE tumble_late ADD COLUMN watermark timestamptz' ]);

step(
	what   => 'a column added to ev',
	change => [ 'ALTER TABLE ev ADD COLUMN extra int' ],
	fail   => { tumble => qr/tumble_late.*"extra"|"extra".*tumble_late/ },
	undo   => [ 'ALTER TABLE tumble_late ADD COLUMN extra int' ]);

step(
	what   => 'unused columns of ev dropped',
	change => [ 'ALTER TABLE ev DROP COLUMN note', 'ALTER TABLE ev DROP COLUMN extra' ]);

step(
	what   => 'ev.v renamed to val',
	change => [ 'ALTER TABLE ev RENAME COLUMN v TO val' ],
	fail   => { tumble => qr/tumble_late.*"val"|"val".*tumble_late/ },
	undo   => [ 'ALTER TABLE tumble_late RENAME COLUMN v TO val' ]);
$vcol = 'val';

########################################################################
# The worker notices, stops, and runs again once the change is undone
########################################################################

step(
	what   => 'a NOT NULL column without default in lv\'s sink',
	change => [
		q{ALTER TABLE lv ADD COLUMN x text NOT NULL DEFAULT 'a'},
		'ALTER TABLE lv ALTER COLUMN x DROP DEFAULT' ],
	fail => { lv => qr/column "x" of sink "lv" is NOT NULL without a default, and weir does not write it/ },
	undo => [ q{ALTER TABLE lv ALTER COLUMN x SET DEFAULT 'b'} ]);

step(
	what   => 'hop\'s sink column hi renamed',
	change => [ 'ALTER TABLE hop RENAME COLUMN hi TO high' ],
	# the worker's check, or the checkpoint writer's INSERT if one was in flight
	fail => { hop => qr/sink "hop" has no column "hi"|column "hi" of relation "hop" does not exist/ },
	undo => [ 'ALTER TABLE hop RENAME COLUMN high TO hi' ]);

step(
	what   => 'tumble\'s sink primary key dropped',
	change => [ 'ALTER TABLE tumble DROP CONSTRAINT tumble_pkey' ],
	fail   => { tumble => qr/sink "tumble" has no unique key on its key columns and window_start/ },
	undo   => [ 'ALTER TABLE tumble ADD PRIMARY KEY (window_start, k)' ]);

step(
	what   => 'row-level security on tags, owned by another role than jn\'s',
	change => [
		'ALTER TABLE tags ENABLE ROW LEVEL SECURITY',
		'CREATE POLICY tags_all ON tags USING (true)' ],
	fail => { jn => qr/topic "tags" has row-level security enabled/ },
	undo => [ 'ALTER TABLE tags DISABLE ROW LEVEL SECURITY', 'DROP POLICY tags_all ON tags' ]);

step(
	what   => 'row-level security forced on ev_1m for its owner',
	# the policy first: forced with none, RLS would deny chain's writes for
	# a moment, which is not what this step is about
	change => [
		'CREATE POLICY ev_1m_all ON ev_1m USING (true) WITH CHECK (true)',
		'ALTER TABLE ev_1m ENABLE ROW LEVEL SECURITY',
		'ALTER TABLE ev_1m FORCE ROW LEVEL SECURITY' ],
	fail => { chain_copy => qr/topic "ev_1m" has row-level security enabled/ },
	undo => [
		'ALTER TABLE ev_1m NO FORCE ROW LEVEL SECURITY',
		'ALTER TABLE ev_1m DISABLE ROW LEVEL SECURITY',
		'DROP POLICY ev_1m_all ON ev_1m' ]);

########################################################################
# CASCADE drops the pipeline with the table
########################################################################

delete $running{doomed};
step(
	what   => 'DROP TABLE doomed CASCADE',
	change => [ 'DROP TABLE doomed CASCADE' ]);
is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM weir.pipeline WHERE name = 'doomed') || ' '
	   || (SELECT count(*) FROM pg_class WHERE relnamespace = 'weir_pipelines'::regnamespace
											AND relname = 'doomed')}),
	'0 0', 'DROP TABLE doomed CASCADE dropped the pipeline doomed and its definition');
ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = (SELECT count(*) FROM weir.pipeline WHERE enabled)
  FROM pg_stat_activity WHERE backend_type = 'weir worker'}),
	'its worker is gone: one worker per pipeline');

########################################################################
# Row-level security forced on ev: every pipeline reading it stops
########################################################################

my %ev_readers = map { $_ => qr/topic "ev" has row-level security enabled/ }
  qw(tumble hop sess dd lv proj jn chain);
step(
	what   => 'row-level security forced on ev for its owner',
	change => [
		'ALTER TABLE ev ENABLE ROW LEVEL SECURITY',
		'ALTER TABLE ev FORCE ROW LEVEL SECURITY',
		'CREATE POLICY ev_some ON ev USING (k % 2 = 0)' ],
	fail => \%ev_readers,
	undo => [
		'ALTER TABLE ev NO FORCE ROW LEVEL SECURITY',
		'ALTER TABLE ev DISABLE ROW LEVEL SECURITY',
		'DROP POLICY ev_some ON ev' ]);

########################################################################
# The end: every sink against SQL over the topics
########################################################################

ok(bench_running('producer'), 'the producer wrote through every step');
stop_bench($node, 'producer');

# one record per partition far in the future closes every window
$node->safe_psql(
	'postgres', qq{
INSERT INTO ev (part, pad, k, $vcol, ts)
SELECT p, 0, -1, -1 - p, timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 3) p;
INSERT INTO tags (part, ref, label, ts)
SELECT p, -10, 'end', timestamptz '2100-01-01 00:00:00+00' FROM generate_series(0, 1) p;});
settle('the end', qw(tumble hop sess dd lv proj jn chain));
settle('the end, after chain', 'chain_copy');

my %states = pipeline_states();
is( join(', ', map { "$_: $states{$_}" } grep { $states{$_} !~ /^\d+ running t$/ } sort keys %states),
	'', 'every pipeline runs at the end');

my $events = $node->safe_psql('postgres', 'SELECT count(*) FROM ev');
note "ev holds $events records, tags "
  . $node->safe_psql('postgres', 'SELECT count(*) FROM tags');

# the records of 2000 were late for tumble: all in tumble_late, once, as in ev
is( $node->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) FROM (SELECT part, pos, k, $vcol, ts FROM tumble_late
							   EXCEPT ALL SELECT part, pos, k, $vcol, ts FROM ev WHERE ts < '2001-01-01') a)
	   || ' ' ||
	   (SELECT count(*) FROM (SELECT part, pos, k, $vcol, ts FROM ev WHERE ts < '2001-01-01'
							   EXCEPT ALL SELECT part, pos, k, $vcol, ts FROM tumble_late) b)
	   || ' ' || (SELECT count(*) > 0 FROM tumble_late)}),
	'0 0 true', 'tumble_late holds every record of 2000, once, with its values');

# the records every pipeline with an event time counts: not late, not the end
my $src = qq{SELECT part, pos, k, $vcol AS v, ts FROM ev WHERE ts >= '2001-01-01' AND k >= 0};
my %wm = map { $_ => last_watermark($node, $_) } qw(tumble hop sess chain);
my $tumbling = qq{
SELECT k, date_bin('1 minute', ts, $origin) AS window_start,
	   date_bin('1 minute', ts, $origin) + interval '1 minute' AS window_end,
	   count(*) AS n, sum(v) AS total
  FROM ($src) s GROUP BY 1, 2};

my %oracle = (
	tumble => {
		cols => 'k, window_start, window_end, n, total',
		sql  => qq{SELECT * FROM ($tumbling) o WHERE window_end <= '$wm{tumble}'} },
	hop => {
		cols => 'k, window_start, window_end, n, hi, first_ts',
		sql  => qq{
SELECT * FROM (
	SELECT k, w.start AS window_start, w.start + interval '2 minutes' AS window_end,
		   count(*) AS n, max(v) AS hi, min(ts) AS first_ts
	  FROM ($src) s,
		   LATERAL generate_series(date_bin('1 minute', ts, $origin) - interval '1 minute',
								   date_bin('1 minute', ts, $origin), interval '1 minute') w(start)
	 GROUP BY 1, 2) o
 WHERE window_end <= '$wm{hop}'} },
	sess => {
		cols => 'k, window_start, window_end, n, total',
		sql  => qq{
SELECT * FROM (
	SELECT k, min(ts) AS window_start, max(ts) + $gap AS window_end, count(*) AS n, sum(v) AS total
	  FROM (SELECT k, ts, v, sum(brk) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
			  FROM (SELECT k, ts, v,
						   CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) < $gap
								THEN 0 ELSE 1 END AS brk
					  FROM ($src) s) b) i
	 GROUP BY k, sid) o
 WHERE window_end <= '$wm{sess}'} },
	dd => {
		cols => 'k, v, ts',
		sql  => qq{
SELECT r.k, r.$vcol AS v, r.ts FROM ev r
 WHERE r.ts >= '2001-01-01'
   AND NOT EXISTS (SELECT 1 FROM ev s
					WHERE s.part = r.part AND s.pos < r.pos AND s.$vcol = r.$vcol
					  AND s.ts >= '2001-01-01' AND s.ts > r.ts - interval '10 minutes')} },
	lv => {
		cols => 'k, v, ts',
		sql  => qq{
SELECT DISTINCT ON (k) k, $vcol AS v, ts FROM ev ORDER BY k, ts DESC, part DESC, pos DESC} },
	jn => {
		cols => 'k, v, l_ts, tag, r_ts',
		sql  => qq{
SELECT l.k, l.v, l.ts AS l_ts, r.label AS tag, r.ts AS r_ts
  FROM ($src) l
  LEFT JOIN tags r ON r.ref = l.v
				  AND l.ts BETWEEN r.ts - interval '1 minute' AND r.ts + interval '1 minute'} },
	chain => {
		sink => q{(SELECT * FROM ev_1m WHERE k >= 0) c},
		cols => 'k, window_start, window_end, n, total',
		sql  => qq{SELECT * FROM ($tumbling) o WHERE window_end <= '$wm{chain}'} },
	chain_copy => {
		cols => 'k, window_start, window_end, n, total',
		sql  => q{SELECT * FROM ev_1m} },
	proj => {
		sink => qq{(SELECT k, v, ts FROM proj
					UNION ALL
					SELECT (record->>'k')::int, (record->>'v')::bigint, (record->>'ts')::timestamptz
					  FROM weir.dead_letters WHERE pipeline_id = $proj_id) p},
		cols => 'k, v, ts',
		sql  => qq{SELECT k, $vcol AS v, ts FROM ev WHERE $vcol % 2 = 0} });

for my $p (qw(tumble hop sess chain))
{
	is( $node->safe_psql(
			'postgres',
			"SELECT '$wm{$p}' > (SELECT max(ts) + interval '1 hour' FROM ($src) s)"),
		't', "pipeline $p: the final watermark ($wm{$p}) closed every window of the records");
}
# Each sink against its oracle in one query: the rows of each, and the rows
# of each that the other lacks (EXCEPT ALL: a row there too often or too
# rarely counts); on a difference, the first rows each way.
for my $p (qw(tumble hop sess dd lv proj jn chain chain_copy))
{
	my $o     = $oracle{$p};
	my $label = $p eq 'proj' ? 'pipeline proj (sink and dead letters)' : "pipeline $p";
	my $sink  = $o->{sink} // $p;
	my $with  = "WITH s AS (SELECT $o->{cols} FROM $sink), o AS (SELECT $o->{cols} FROM ($o->{sql}) x)";
	my ($sink_n, $oracle_n, $extra, $missing) = split /\|/,
	  $node->safe_psql(
		'postgres', qq{$with
SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM o),
	   (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM o) a),
	   (SELECT count(*) FROM (SELECT * FROM o EXCEPT ALL SELECT * FROM s) b)});
	cmp_ok($oracle_n, '>', 0, "$label: the oracle has rows");
	is("$sink_n $extra $missing", "$oracle_n 0 0",
		"$label: the sink equals its oracle, row for row ($oracle_n rows; sink rows, "
		  . 'rows not in the oracle, oracle rows not in the sink)')
	  or diag "$label: sink rows not in the oracle ($o->{cols}):\n"
	  . $node->safe_psql('postgres',
		"$with SELECT * FROM s EXCEPT ALL SELECT * FROM o ORDER BY 1, 2 LIMIT 20")
	  . "\noracle rows not in the sink:\n"
	  . $node->safe_psql('postgres',
		"$with SELECT * FROM o EXCEPT ALL SELECT * FROM s ORDER BY 1, 2 LIMIT 20");
}

# A checkpoint that was about to write lv's sink when its NOT NULL column
# lost its default (after the worker's check, before the write took the
# sink's lock) checks the sink again before blaming its rows (sink_guard.c):
# it fails, and the rows are written after the fix, not dead letters.
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(p.name || ': ' || d.n, ', ' ORDER BY p.name)
  FROM (SELECT pipeline_id, count(*) AS n FROM weir.dead_letters GROUP BY 1) d
  JOIN weir.pipeline p ON p.id = d.pipeline_id
 WHERE p.name <> 'proj'}),
	'', 'no dead letters but those of the CHECK on proj');

########################################################################
# No crash
########################################################################

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started, 'pg_postmaster_start_time() is unchanged: the server never restarted');
my @log = split /\n/, slurp_file($node->logfile);
none_of('no process terminated by a signal in the server log', grep { /terminated by signal/ } @log);
none_of('no server process was terminated', grep { /server process .* was terminated/ } @log);
none_of('no PANIC, TRAP or reinitialization in the server log',
	grep { /PANIC|TRAP:|all server processes terminated|terminating any other active server processes/ } @log);

$node->stop;
note sprintf('whole test: %.1f s', time - $t_start);
done_testing();
