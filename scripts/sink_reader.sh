#!/usr/bin/env bash
# scripts/sink_reader.sh — follow a weir sink by checkpoint into a table of
# another database (or the same one), each change applied exactly once.
#
#   scripts/sink_reader.sh --source 'dbname=app' --pipeline orders_hourly \
#       --target 'host=replica dbname=reports' --table public.orders_hourly \
#       --key grp,window_start [--batch 10000] [--interval 1] [--once]
#
# The pipeline must have a checkpoint_column (README, "Reading a sink by
# checkpoint").  Each round:
#   1. reads the reader's position (the last checkpoint it applied) from
#      the position table on the target (--position-table, default
#      weir_reader_position: pipeline text primary key, checkpoint_id
#      bigint; created if missing);
#   2. reads weir.sink_changes(pipeline, position, batch) on the source into
#      a temporary file (read-only there: nothing to undo if it stops);
#   3. in ONE transaction on the target: moves the position from the one it
#      read to the greatest checkpoint_id received (refusing if another
#      reader moved it meanwhile), deletes every key the changes name, and
#      inserts the last row of each key whose last change is an upsert.
# A crash of the reader at any moment loses nothing and applies nothing
# twice: before step 3 commits, the target has neither the rows nor the
# new position; after, it has both.  Step 3 gives what applying the changes
# one by one would (per key, only its last change counts; a checkpoint's
# deletes come before its rows).
#
# --key: the columns that identify a row, comma-separated (the sink's key
# columns).  Empty (--key ''): the sink is insert-only (a projection, a
# dedup or an insert-only window sink): rows are inserted, and a delete is
# an error.  The target table needs the sink's columns (by name; it may
# leave some out or have more, with defaults) and a unique key on --key.
#
# Exit status: 0 after --once has caught up; non-zero on any error (the
# failed round changed nothing; run it again).
set -euo pipefail

SOURCE=""
PIPELINE=""
TARGET=""
TABLE=""
KEY=""
KEY_SET=0
BATCH=10000
INTERVAL=1
ONCE=0
POSITION_TABLE="weir_reader_position"
PSQL="${PSQL:-psql}"

usage() {
	sed -n '2,9p' "$0" >&2
	exit 2
}

while [ "$#" -gt 0 ]; do
	case "$1" in
	--source) SOURCE="$2"; shift 2 ;;
	--pipeline) PIPELINE="$2"; shift 2 ;;
	--target) TARGET="$2"; shift 2 ;;
	--table) TABLE="$2"; shift 2 ;;
	--key) KEY="$2"; KEY_SET=1; shift 2 ;;
	--batch) BATCH="$2"; shift 2 ;;
	--interval) INTERVAL="$2"; shift 2 ;;
	--position-table) POSITION_TABLE="$2"; shift 2 ;;
	--once) ONCE=1; shift ;;
	*) usage ;;
	esac
done
if [ -z "$PIPELINE" ] || [ -z "$TABLE" ] || [ "$KEY_SET" = 0 ]; then
	usage
fi
case "$BATCH" in '' | *[!0-9]*) usage ;; esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sink_reader.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# psql on the source or target: no psqlrc, stop at the first error, values
# passed as psql variables (quoted by psql with :'name', never spliced)
on() {
	local conninfo="$1"
	shift
	"$PSQL" -X -q -At -v ON_ERROR_STOP=1 -d "$conninfo" \
		-v pipeline="$PIPELINE" -v target_table="$TABLE" -v key="$KEY" \
		-v position_table="$POSITION_TABLE" -v batch="$BATCH" "$@"
}

# (readers of other pipelines may create it at the same moment: one at a time)
on "$TARGET" <<'SQL'
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('weir sink_reader ' || :'position_table'));
SELECT format('CREATE TABLE IF NOT EXISTS %I (pipeline text PRIMARY KEY, checkpoint_id bigint NOT NULL)',
              :'position_table') \gexec
SELECT format('INSERT INTO %I VALUES (%L, 0) ON CONFLICT (pipeline) DO NOTHING',
              :'position_table', :'pipeline') \gexec
COMMIT;
SQL

# The transaction that applies a batch: part one, then the batch's rows as
# COPY data, then part two (a quoted here-document each: nothing of the
# shell is expanded in the SQL).
apply_head() {
	cat <<'SQL'
BEGIN;
SELECT set_config('weir_reader.keyless', CASE WHEN :'key' = '' THEN 'on' ELSE 'off' END, true);
CREATE TEMP TABLE weir_changes (checkpoint_id bigint, change text, record jsonb) ON COMMIT DROP;
COPY weir_changes FROM STDIN;
SQL
}

apply_tail() {
	cat <<'SQL'
\.
-- the position moves from the one this batch was read after, or nothing
-- happens: another reader got there first
CREATE TEMP TABLE weir_moved (n bigint) ON COMMIT DROP;
SELECT format('WITH u AS (UPDATE %I SET checkpoint_id = (SELECT max(checkpoint_id) FROM weir_changes) '
              'WHERE pipeline = %L AND checkpoint_id = %s RETURNING 1) '
              'INSERT INTO weir_moved SELECT count(*) FROM u',
              :'position_table', :'pipeline', :'position') \gexec
DO $$
BEGIN
	IF (SELECT n FROM weir_moved) IS DISTINCT FROM 1 THEN
		RAISE EXCEPTION 'the reader position moved while this batch was read'
			USING HINT = 'Run one reader per pipeline and target.';
	END IF;
END $$;
-- per key, only its last change counts: delete every key named, then
-- insert each key's row if its last change wrote one
SELECT format('DELETE FROM %s t USING weir_changes c, '
              'jsonb_populate_record(NULL::%s, c.record) k WHERE %s',
              :'target_table'::regclass, :'target_table'::regclass,
              string_agg(format('t.%1$I = k.%1$I', k), ' AND '))
  FROM unnest(string_to_array(:'key', ',')) k
HAVING count(*) > 0 \gexec
DO $$
BEGIN
	IF current_setting('weir_reader.keyless') = 'on' AND
	   EXISTS (SELECT FROM weir_changes WHERE change = 'delete') THEN
		RAISE EXCEPTION 'the changes hold a delete, and the reader has no --key';
	END IF;
END $$;
SELECT format('INSERT INTO %1$s SELECT (jsonb_populate_record(NULL::%1$s, l.record)).* FROM '
              '(SELECT DISTINCT ON (%2$s) change, record FROM weir_changes c '
              'ORDER BY %2$s, checkpoint_id DESC, change = ''upsert'' DESC) l '
              'WHERE l.change = ''upsert''',
              :'target_table'::regclass,
              coalesce(string_agg(format('c.record -> %L', k), ', '), 'c.ctid'))
  FROM unnest(string_to_array(nullif(:'key', ''), ',')) k \gexec
COMMIT;
SQL
}

while true; do
	position="$(on "$TARGET" <<'SQL'
SELECT format('SELECT checkpoint_id FROM %I WHERE pipeline = %L', :'position_table', :'pipeline') \gexec
SQL
)"
	on "$SOURCE" -v position="$position" >"$WORK/changes" <<'SQL'
COPY (SELECT checkpoint_id, change, record
        FROM weir.sink_changes(:'pipeline', :position, :batch)) TO STDOUT;
SQL
	if [ ! -s "$WORK/changes" ]; then
		[ "$ONCE" = 1 ] && exit 0
		sleep "$INTERVAL"
		continue
	fi
	{
		apply_head
		cat "$WORK/changes"
		apply_tail
	} | on "$TARGET" -v position="$position" >/dev/null
done
