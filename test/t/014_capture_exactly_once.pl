# 014_capture_exactly_once.pl
#
# A capture under an application-like load, exactly once, while its worker
# is killed and the server stopped at random moments:
#
#   accounts   (id, owner, balance, doc): the default replica identity (its
#              primary key); doc is stored out of line uncompressed, and
#              some rows carry 100 kB in it, so an update of the balance
#              leaves a TOASTed value the change does not carry;
#   transfers  (id, account, amount, note): REPLICA IDENTITY FULL, so
#              updates and deletes carry the whole old row;
#
# pgbench runs three scripts: a transfer (the account's balance updated and
# a transfer inserted), a transfer corrected or cancelled (update or delete
# of a transfer), and an account closed and reopened (delete and insert,
# with a 100 kB document for one id in ten) or its document replaced.
# Triggers write every row change into `history` in the same transaction:
# the oracle.  Two kill -9s of the capture's worker and one immediate stop
# are placed at random, and one kill -9 of each of two pipelines reading the
# topics: a last value of accounts and 10-second windows of transfers'
# count and sum per account.  At the end the topics hold exactly the
# history (every change once, none lost: the same multiset of operations
# and values), every key's changes are in one partition in commit order,
# replaying each topic per key gives the table as it is, the last value's
# sink equals the accounts table and the windows equal GROUP BY over the
# transfers table (updates and deletes taken back), nothing late or dead.
#
# WEIR_TAP_CAPTURE_TXNS overrides the number of transactions (200000),
# WEIR_TAP_SECONDS the time the load takes (40), WEIR_TAP_SEED the seed
# that places the crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use WeirBench;

my $target  = env_or('WEIR_TAP_CAPTURE_TXNS', 200_000);
my $seconds = env_or('WEIR_TAP_SECONDS',      40);
my $seed    = env_or('WEIR_TAP_SEED',         int(time()) ^ $$);
my $accounts = 2000;

my $node = start_weir_node('capture_exactly_once', crash_test_conf(40),
	wal_level => 'logical', max_replication_slots => 8);

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION weir;
CREATE SEQUENCE txns;
CREATE TABLE accounts (id int PRIMARY KEY, owner int NOT NULL, balance bigint NOT NULL,
					   doc text NOT NULL);
ALTER TABLE accounts ALTER COLUMN doc SET STORAGE EXTERNAL;
CREATE TABLE transfers (id bigserial, account int NOT NULL, amount int NOT NULL, note text,
						ts timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX ON transfers (id);
ALTER TABLE transfers REPLICA IDENTITY FULL;
CREATE TABLE history (seq bigserial, tbl text, op "char", id bigint, a bigint, b bigint,
					  doc_md5 text, doc_len int);
CREATE INDEX ON history (tbl, id, seq);
CREATE FUNCTION record_account() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO history (tbl, op, id) VALUES ('accounts', 'D', OLD.id);
		RETURN OLD;
	END IF;
	INSERT INTO history (tbl, op, id, a, b, doc_md5, doc_len)
	VALUES ('accounts', CASE WHEN TG_OP = 'INSERT' THEN 'I' ELSE 'U' END, NEW.id, NEW.owner,
			NEW.balance, md5(NEW.doc), length(NEW.doc));
	RETURN NEW;
END \$\$;
CREATE FUNCTION record_transfer() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		INSERT INTO history (tbl, op, id, a, b, doc_md5)
		VALUES ('transfers', CASE WHEN TG_OP = 'UPDATE' THEN 'B' ELSE 'D' END, OLD.id,
				OLD.account, OLD.amount, md5(OLD.note));
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO history (tbl, op, id, a, b, doc_md5)
		VALUES ('transfers', CASE WHEN TG_OP = 'INSERT' THEN 'I' ELSE 'U' END, NEW.id,
				NEW.account, NEW.amount, md5(NEW.note));
	END IF;
	RETURN NULL;
END \$\$;
CREATE TRIGGER record AFTER INSERT OR UPDATE OR DELETE ON accounts
	FOR EACH ROW EXECUTE FUNCTION record_account();
CREATE TRIGGER record AFTER INSERT OR UPDATE OR DELETE ON transfers
	FOR EACH ROW EXECUTE FUNCTION record_transfer();
SELECT weir.create_capture('app', tables => ARRAY['accounts'::regclass, 'transfers'::regclass],
						   partitions => 4);
-- pipelines over the captured topics: a mirror of accounts, and per-account
-- 10-second windows of transfers by their (never updated) time, which take
-- back what updates and deletes undo
SELECT weir.create_last_value('acc_now', 'app_accounts', key => 'id', event_time => 'commit_time',
							  columns => 'owner, balance, doc', out_of_orderness => '5 seconds',
							  late_records => 'acc_now_late');
SELECT weir.create_pipeline('xfer_windows', 'app_transfers', key => 'account', event_time => 'ts',
							windowing => weir.tumbling('10 seconds'),
							aggregates => 'count(*) AS n, sum(amount) AS total',
							emit => 'updates', out_of_orderness => '30 seconds',
							allowed_lateness => '1 day', late_records => 'xfer_windows_late');
});
ok( $node->poll_query_until('postgres',
		"SELECT status = 'running' FROM weir.captures WHERE name = 'app'"),
	'the capture runs');
wait_pipelines_running($node, 2);
# the accounts exist before the load, and their inserts are captured too
$node->safe_psql('postgres', qq{
INSERT INTO accounts
	SELECT g, g % 7, 0, CASE WHEN g % 10 = 0 THEN repeat(md5(g::text), 3125) ELSE 'doc ' || g END
	  FROM generate_series(1, $accounts) g;
});

my $transfer = bench_script('capture_transfer.sql', qq{
\\set id random(1, $accounts)
\\set amount random(1, 1000)
BEGIN;
SELECT nextval('txns');
UPDATE accounts SET balance = balance + :amount WHERE id = :id;
INSERT INTO transfers (account, amount, note) VALUES (:id, :amount, 'n' || :amount);
END;
});
my $correct = bench_script('capture_correct.sql', qq{
\\set id random(1, 1000000)
\\set cancel random(0, 3)
BEGIN;
SELECT nextval('txns');
UPDATE transfers SET amount = amount + 1, note = note || '+' WHERE id = :id AND :cancel > 0;
DELETE FROM transfers WHERE id = :id + 1 AND :cancel = 0;
END;
});
my $reopen = bench_script('capture_reopen.sql', qq{
\\set id random(1, $accounts)
\\set kind random(0, 1)
BEGIN;
SELECT nextval('txns');
DELETE FROM accounts WHERE id = :id AND :kind = 0;
INSERT INTO accounts SELECT :id, :id % 7, 0,
	CASE WHEN :id % 10 = 0 THEN repeat(md5(random()::text), 3125) ELSE 'reopened' END
	WHERE :kind = 0;
UPDATE accounts SET doc = repeat(md5(random()::text), 3125) WHERE id = :id AND :kind = 1;
END;
});

# the capture's worker twice, each pipeline's once, the server once
my @plan = plan_crashes($seed, $target, 0.1, 0.17, 0.1, 'kill', 'kill', 'kill', 'kill', 'immediate');
my @victims = ('capture', 'acc_now', 'capture', 'xfer_windows');
my $rate = bench_rate($target, 1, $seconds);
my $r = produce_with_crashes(
	node     => $node,
	plan     => \@plan,
	target   => $target,
	unit     => 'transactions',
	deadline => 400,
	benches  => [ [ 'app', "$transfer\@80", 4, '-R', int($rate), '-f', "$correct\@15",
					'-f', "$reopen\@5" ] ],
	rows     => sub { try_count($node, 'SELECT last_value FROM txns') },
	victim   => sub {
		my $who = $victims[0];
		my ($ret, $pid) = $node->psql('postgres',
			$who eq 'capture'
			? "SELECT worker_pid FROM weir.captures WHERE name = 'app' AND worker_pid IS NOT NULL"
			: "SELECT worker_pid FROM weir.pipelines WHERE name = '$who' AND worker_pid IS NOT NULL");
		return () unless $ret == 0 && $pid ne '';
		shift @victims;
		return ($pid, $who eq 'capture' ? 'the capture worker' : "the worker of pipeline $who",
			$who eq 'capture' ? undef : $who);
	});

# everything committed is captured: the capture reads up to the WAL's end
my $lsn = $node->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
ok( $node->poll_query_until('postgres',
		"SELECT received_lsn >= '$lsn' FROM weir.captures WHERE name = 'app'"),
	'the capture caught up');
is($node->safe_psql('postgres', "SELECT status || ' ' || coalesce(last_error, '') FROM weir.captures"),
	'running ', 'the capture runs without error');

my $txns = $node->safe_psql('postgres', 'SELECT count(*) FROM history');
note "history: $txns row changes; transactions: "
  . $node->safe_psql('postgres', 'SELECT last_value FROM txns');

# every change exactly once: the multisets of (table, op, key, values)
my $diff = $node->safe_psql('postgres', q{
WITH topic AS (
	SELECT 'accounts' AS tbl, change_op AS op, id::bigint AS id,
		   CASE WHEN change_op = 'D' THEN NULL ELSE owner::bigint END AS a,
		   CASE WHEN change_op = 'D' THEN NULL ELSE balance END AS b,
		   CASE WHEN change_op = 'D' OR 'doc' = ANY (unchanged_columns) THEN NULL
				ELSE md5(doc) END AS doc_md5
	  FROM app_accounts
	UNION ALL
	SELECT 'transfers', change_op, id, account, amount, md5(note) FROM app_transfers),
oracle AS (
	SELECT h.tbl, h.op, h.id, h.a, h.b,
		   CASE WHEN h.tbl = 'accounts' AND h.op = 'U' AND c.doc_changed IS NOT TRUE THEN NULL
				ELSE h.doc_md5 END
	  FROM history h
	  -- an account update that kept a TOASTed document does not carry it
	  LEFT JOIN LATERAL (
		SELECT h.doc_len <= 2000 OR h.doc_md5 IS DISTINCT FROM
			   (SELECT p.doc_md5 FROM history p
				 WHERE p.tbl = 'accounts' AND p.id = h.id AND p.seq < h.seq AND p.op IN ('I', 'U')
				 ORDER BY p.seq DESC LIMIT 1) AS doc_changed) c ON true)
SELECT (SELECT count(*) FROM (SELECT * FROM topic EXCEPT ALL SELECT * FROM oracle) x) || ' ' ||
	   (SELECT count(*) FROM (SELECT * FROM oracle EXCEPT ALL SELECT * FROM topic) y)
});
is($diff, '0 0', 'the topics hold every change exactly once (topic minus history, history minus topic)');

is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (
	SELECT id FROM app_accounts GROUP BY id HAVING count(DISTINCT part) > 1
	UNION ALL
	SELECT id FROM app_transfers GROUP BY id HAVING count(DISTINCT part) > 1) k}),
	'0', 'all changes of a row are in one partition');

# commit order within a partition: positions follow commit LSNs
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (
	SELECT commit_lsn < lag(commit_lsn) OVER (PARTITION BY part ORDER BY pos) AS back
	  FROM app_accounts) x WHERE back}),
	'0', 'positions follow commit order');

# replaying the changes per key gives the tables (an unchanged document is
# the one the key's newest change that carried it had)
is( $node->safe_psql('postgres', q{
WITH newest AS (
	SELECT DISTINCT ON (id) id, change_op, owner, balance
	  FROM app_accounts ORDER BY id, commit_lsn DESC, pos DESC),
doc AS (
	SELECT DISTINCT ON (id) id, doc FROM app_accounts
	 WHERE change_op IN ('I', 'U') AND NOT ('doc' = ANY (coalesce(unchanged_columns, '{}')))
	 ORDER BY id, commit_lsn DESC, pos DESC),
replayed AS (
	SELECT n.id, n.owner, n.balance, md5(d.doc) FROM newest n JOIN doc d USING (id)
	 WHERE n.change_op IN ('I', 'U'))
SELECT (SELECT count(*) FROM (SELECT * FROM replayed EXCEPT
		SELECT id, owner, balance, md5(doc) FROM accounts) x) +
	   (SELECT count(*) FROM (SELECT id, owner, balance, md5(doc) FROM accounts EXCEPT
		SELECT * FROM replayed) y)}),
	'0', 'replaying the accounts topic gives the accounts table');
is( $node->safe_psql('postgres', q{
WITH newest AS (
	SELECT DISTINCT ON (id) id, change_op, account, amount, note
	  FROM app_transfers ORDER BY id, commit_lsn DESC, pos DESC)
SELECT (SELECT count(*) FROM (SELECT id, account, amount, note FROM newest
		 WHERE change_op IN ('I', 'U') EXCEPT SELECT id, account, amount, note FROM transfers) x) +
	   (SELECT count(*) FROM (SELECT id, account, amount, note FROM transfers EXCEPT
		SELECT id, account, amount, note FROM newest WHERE change_op IN ('I', 'U')) y)}),
	'0', 'replaying the transfers topic gives the transfers table');

cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM app_accounts WHERE 'doc' = ANY (unchanged_columns)"),
	'>', 0, 'some updates left a TOASTed document unchanged');
cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM app_transfers WHERE change_op = 'B'"),
	'>', 0, 'updates under REPLICA IDENTITY FULL carry their old row');

# the pipelines over the topics: everything captured goes through them
wait_pipelines_running($node, 2);
$node->safe_psql('postgres', 'SELECT count(*) FROM weir.checkpoint()');
$node->safe_psql('postgres', qq{
CREATE TABLE oracle_acc_now AS SELECT id, owner, balance, doc FROM accounts;
CREATE TABLE oracle_xfer_windows AS
	SELECT account, date_bin('10 seconds', ts, timestamptz '2000-01-01 00:00:00+00') AS window_start,
		   date_bin('10 seconds', ts, timestamptz '2000-01-01 00:00:00+00') + interval '10 seconds'
		   AS window_end, count(*) AS n, sum(amount) AS total
	  FROM transfers GROUP BY 1, 2;
});
compare_with_oracle($node, pipeline => 'acc_now', cols => 'id, owner, balance, md5(doc)',
	order => '1');
compare_with_oracle($node, pipeline => 'xfer_windows',
	cols => 'account, window_start, window_end, n, total', order => '1, 2');
is($node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM acc_now_late) + (SELECT count(*) FROM xfer_windows_late)'),
	'0', 'no record was late');
is($node->safe_psql('postgres', 'SELECT count(*) FROM weir.dead_letters'), '0',
	'no record was a dead letter');

# the slot holds no more WAL than a round's worth once caught up
ok( $node->poll_query_until('postgres',
		"SELECT wal_retained_bytes < 64 * 1024 * 1024 FROM weir.captures WHERE name = 'app'"),
	'the caught-up capture holds little WAL');

$node->stop;
done_testing();
