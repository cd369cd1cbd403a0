/* weir--0.1.sql: the weir schema, its catalog tables, functions and views */

\echo Use "CREATE EXTENSION weir" to load this file. \quit

-- Refuse to install into a server that did not preload the library: topics
-- need the shared memory that only shared_preload_libraries can reserve.
CREATE FUNCTION weir._check_preloaded() RETURNS void
	LANGUAGE C STRICT AS 'MODULE_PATHNAME', 'weir_check_preloaded';
SELECT weir._check_preloaded();

------------------------------------------------------------------------------
-- Catalog.  Readable by everyone (it holds names and positions, no data);
-- written only by weir's functions, which check the caller's privileges on
-- the topic table itself.
------------------------------------------------------------------------------

CREATE TABLE weir.topic (
	id			integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	relid		oid NOT NULL UNIQUE,		-- the topic table
	partitions	integer NOT NULL CHECK (partitions >= 1),
	key_column	name,						-- NULL: producers pick the partition
	retention	interval,					-- NULL: keep rows forever
	created_at	timestamptz NOT NULL DEFAULT now()
);

-- A consumer's committed position per partition: rows with pos <= position
-- have been consumed.  Written by weir.poll() in the caller's transaction.
CREATE TABLE weir.consumer_position (
	topic_id	integer NOT NULL REFERENCES weir.topic ON DELETE CASCADE,
	consumer	text NOT NULL,
	part		integer NOT NULL,
	pos			bigint NOT NULL CHECK (pos >= 0),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (topic_id, consumer, part)
);

-- The time index used by retention: "every row of this partition with
-- pos <= this sample's pos was produced before sampled_at".  The launcher samples
-- head positions; retention deletes below the newest sample older than the
-- topic's retention.
CREATE TABLE weir.topic_time_index (
	topic_id	integer NOT NULL REFERENCES weir.topic ON DELETE CASCADE,
	part		integer NOT NULL,
	pos			bigint NOT NULL,
	sampled_at	timestamptz NOT NULL,
	PRIMARY KEY (topic_id, part, sampled_at)
);

GRANT USAGE ON SCHEMA weir TO PUBLIC;
GRANT SELECT ON weir.topic, weir.consumer_position, weir.topic_time_index TO PUBLIC;

------------------------------------------------------------------------------
-- Topics
------------------------------------------------------------------------------

CREATE FUNCTION weir.create_topic(
	name text,
	columns text,
	partitions integer DEFAULT 1,
	key text DEFAULT NULL,
	retention interval DEFAULT NULL)
RETURNS regclass
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_topic';
COMMENT ON FUNCTION weir.create_topic(text, text, integer, text, interval) IS
	'create a topic: a table with columns part, pos and the given columns';

CREATE FUNCTION weir.drop_topic(topic regclass)
RETURNS void
	LANGUAGE C VOLATILE
	AS 'MODULE_PATHNAME', 'weir_drop_topic';
COMMENT ON FUNCTION weir.drop_topic(regclass) IS
	'drop a topic, its table, its consumers and its time index';

CREATE FUNCTION weir.alter_topic_retention(topic regclass, retention interval)
RETURNS void
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_alter_topic_retention';
COMMENT ON FUNCTION weir.alter_topic_retention(regclass, interval) IS
	'set (or with NULL remove) the retention of a topic';

-- Row trigger on every topic table: assigns partition and position.
CREATE FUNCTION weir._produce() RETURNS trigger
	LANGUAGE C AS 'MODULE_PATHNAME', 'weir_produce';

-- Statement trigger on every topic table: topics are append-only.
CREATE FUNCTION weir._append_only() RETURNS trigger
	LANGUAGE C AS 'MODULE_PATHNAME', 'weir_append_only';

CREATE FUNCTION weir.read(
	topic anyelement,
	partition integer,
	after_position bigint DEFAULT 0,
	max_rows integer DEFAULT 1000)
RETURNS SETOF anyelement
	LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 1000
	AS 'MODULE_PATHNAME', 'weir_read';
COMMENT ON FUNCTION weir.read(anyelement, integer, bigint, integer) IS
	'rows of one partition after a position that are safe to consume (call as weir.read(NULL::topic, ...))';

CREATE FUNCTION weir.stable_position(topic regclass, partition integer)
RETURNS bigint
	LANGUAGE C VOLATILE
	AS 'MODULE_PATHNAME', 'weir_stable_position';
COMMENT ON FUNCTION weir.stable_position(regclass, integer) IS
	'last position of a partition that is safe to read; statements that start later see every committed row up to it';

CREATE FUNCTION weir.poll(
	topic anyelement,
	consumer text,
	max_rows integer DEFAULT 1000)
RETURNS SETOF anyelement
	LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 1000
	AS 'MODULE_PATHNAME', 'weir_poll';
COMMENT ON FUNCTION weir.poll(anyelement, text, integer) IS
	'next rows for a consumer; advances its positions in the calling transaction';

CREATE FUNCTION weir.seek(
	topic regclass,
	consumer text,
	partition integer,
	committed_position bigint)
RETURNS void
	LANGUAGE C STRICT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_seek';
COMMENT ON FUNCTION weir.seek(regclass, text, integer, bigint) IS
	'set a consumer''s committed position in one partition';

CREATE FUNCTION weir.drop_consumer(topic regclass, consumer text)
RETURNS boolean
	LANGUAGE C VOLATILE
	AS 'MODULE_PATHNAME', 'weir_drop_consumer';
COMMENT ON FUNCTION weir.drop_consumer(regclass, text) IS
	'forget a consumer and its positions; true if it existed';

CREATE FUNCTION weir.run_retention(topic regclass DEFAULT NULL)
RETURNS bigint
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_run_retention';
COMMENT ON FUNCTION weir.run_retention(regclass) IS
	'apply retention now (normally the launcher does it); returns rows deleted';

------------------------------------------------------------------------------
-- Views
------------------------------------------------------------------------------

-- Live per-partition state from shared memory and the topic table.
CREATE FUNCTION weir._topic_partition_state(
	OUT topic_id integer,
	OUT topic regclass,
	OUT partition integer,
	OUT head_position bigint,
	OUT stable_position bigint,
	OUT open_producers integer,
	OUT oldest_producer_pid integer,
	OUT oldest_producer_position bigint,
	OUT oldest_producer_since timestamptz,
	OUT rows bigint,
	with_rows boolean DEFAULT true)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_topic_partition_state';

CREATE VIEW weir.topic_partitions AS
	SELECT topic, partition, rows, head_position, stable_position,
		   open_producers, oldest_producer_pid, oldest_producer_position,
		   oldest_producer_since
	  FROM weir._topic_partition_state();
COMMENT ON VIEW weir.topic_partitions IS
	'one row per topic partition: rows, last assigned position, last stable position, open producers';

CREATE VIEW weir.topic_consumers AS
	SELECT t.relid::regclass AS topic, c.consumer, c.part AS partition,
		   c.pos AS committed_position,
		   greatest(s.head_position - c.pos, 0) AS lag,
		   c.updated_at
	  FROM weir.consumer_position c
	  JOIN weir.topic t ON t.id = c.topic_id
	  LEFT JOIN weir._topic_partition_state(with_rows => false) s
		ON s.topic_id = c.topic_id AND s.partition = c.part;
COMMENT ON VIEW weir.topic_consumers IS
	'one row per consumer and partition: committed position and lag in positions';

CREATE VIEW weir.topics AS
	WITH s AS (SELECT * FROM weir._topic_partition_state())
	SELECT t.relid::regclass AS topic,
		   t.partitions,
		   t.key_column,
		   t.retention,
		   (SELECT sum(s.rows) FROM s WHERE s.topic_id = t.id)::bigint AS rows,
		   ARRAY(SELECT s.head_position FROM s
				  WHERE s.topic_id = t.id ORDER BY s.partition) AS head_positions,
		   ARRAY(SELECT s.stable_position FROM s
				  WHERE s.topic_id = t.id ORDER BY s.partition) AS stable_positions,
		   (SELECT coalesce(jsonb_object_agg(c.consumer, c.positions), '{}')
			  FROM (SELECT consumer, jsonb_agg(pos ORDER BY part) AS positions
					  FROM weir.consumer_position
					 WHERE topic_id = t.id GROUP BY consumer) c) AS consumers,
		   t.created_at
	  FROM weir.topic t;
COMMENT ON VIEW weir.topics IS
	'one row per topic: partitions, rows, head and stable positions per partition, consumers and their committed positions, retention';

GRANT SELECT ON weir.topics, weir.topic_partitions, weir.topic_consumers TO PUBLIC;

------------------------------------------------------------------------------
-- Dropping a topic table by any route (weir.drop_topic, DROP TABLE, DROP
-- SCHEMA ... CASCADE) forgets the topic.  A pipeline's definition (a view in
-- weir_pipelines) depends on the tables it reads and writes, so those cannot
-- be dropped while it exists, except with CASCADE, which drops the pipeline;
-- DROP OWNED drops a role's pipelines the same way.  The trigger fires
-- ALWAYS: also under session_replication_role = replica.
------------------------------------------------------------------------------

CREATE FUNCTION weir._forget_topic(topic_relid oid) RETURNS void
	LANGUAGE C STRICT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_forget_topic';

CREATE FUNCTION weir._forget_definition(definition oid) RETURNS void
	LANGUAGE C STRICT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_forget_definition';

CREATE FUNCTION weir._on_sql_drop() RETURNS event_trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	dropped oid;
BEGIN
	-- pipelines first: a table they used may be among the dropped objects
	FOR dropped IN
		SELECT d.objid FROM pg_event_trigger_dropped_objects() d
		 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
		   AND d.object_type = 'view' AND d.schema_name = 'weir_pipelines'
	LOOP
		PERFORM weir._forget_definition(dropped);
	END LOOP;
	FOR dropped IN
		SELECT d.objid FROM pg_event_trigger_dropped_objects() d
		 WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
		   AND d.object_type = 'table'
	LOOP
		PERFORM weir._forget_topic(dropped);
		PERFORM weir._forget_captured_table(dropped);
	END LOOP;
END
$$;

CREATE EVENT TRIGGER weir_forget_dropped_topics ON sql_drop
	EXECUTE FUNCTION weir._on_sql_drop();
ALTER EVENT TRIGGER weir_forget_dropped_topics ENABLE ALWAYS;

REVOKE ALL ON FUNCTION weir._forget_definition(oid) FROM PUBLIC;
REVOKE ALL ON FUNCTION weir._forget_topic(oid) FROM PUBLIC;
REVOKE ALL ON FUNCTION weir._check_preloaded() FROM PUBLIC;

------------------------------------------------------------------------------
-- Pipelines
------------------------------------------------------------------------------

-- Each pipeline's definition, bound at creation, is a view here, named
-- after the pipeline and owned by its owner (definition_store.c).  Only
-- weir creates objects in this schema.
CREATE SCHEMA weir_pipelines;
GRANT USAGE ON SCHEMA weir_pipelines TO PUBLIC;
COMMENT ON SCHEMA weir_pipelines IS
	'the definitions of weir''s pipelines, one view each, owned by the pipeline''s owner';

-- merge_touching: sessions only; NULL means false (and is what a value
-- stored before the attribute was added reads as)
CREATE TYPE weir.windowing AS (kind text, size interval, slide interval, gap interval,
							   merge_touching boolean);
COMMENT ON TYPE weir.windowing IS
	'a window specification; build it with weir.tumbling(), weir.hopping() or weir.session()';

CREATE FUNCTION weir.tumbling(size interval) RETURNS weir.windowing
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'weir_tumbling';
COMMENT ON FUNCTION weir.tumbling(interval) IS
	'windows of a fixed size, one after the other, aligned to 1970-01-01';

CREATE FUNCTION weir.hopping(size interval, slide interval) RETURNS weir.windowing
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'weir_hopping';
COMMENT ON FUNCTION weir.hopping(interval, interval) IS
	'windows of a fixed size starting every slide, aligned to 1970-01-01';

CREATE FUNCTION weir.session(gap interval, merge_touching boolean DEFAULT false)
RETURNS weir.windowing
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'weir_session';
COMMENT ON FUNCTION weir.session(interval, boolean) IS
	'windows per key that close after a gap without records; with merge_touching, a record exactly one gap after the last also joins the session';

CREATE TABLE weir.pipeline (
	id					integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name				text NOT NULL UNIQUE,
	-- the bound definition: view weir_pipelines.<name>, whose owner is the
	-- pipeline's owner; its items' sink-facing names, and how many are keys
	definition			oid NOT NULL UNIQUE,
	names				text[] NOT NULL,
	nkeys				integer NOT NULL CHECK (nkeys >= 0),
	source				oid NOT NULL,			-- topic relid
	operator			text NOT NULL DEFAULT 'window'
						CHECK (operator IN ('window', 'dedup', 'last_value', 'projection', 'join')),
	-- the definition's text as given at creation, for display only: the
	-- pipeline runs its bound definition
	key					text,					-- join: the left's; NULL: projection, keyless window
	event_time			text,					-- projection: none
	windowing			weir.windowing,			-- window
	aggregates			text,					-- window
	horizon				interval,				-- dedup; NULL: keys kept forever
	-- dedup: whether a dropped copy extends its key's life (false: a key
	-- leaves at its first sighting + horizon); NULL for the other kinds
	refresh_horizon		boolean,
	ttl					interval,				-- last_value; NULL: keys kept forever
	right_source		oid,					-- join: the right topic (source: the left)
	right_key			text,					-- join (key: the left's)
	right_event_time	text,					-- join (event_time: the left's)
	right_before		interval,				-- join: r.t BETWEEN l.t - right_before
	right_after			interval,				--		AND l.t + right_after
	join_kind			text CHECK (join_kind IN ('inner', 'left')),
	-- the sink's bigint column that holds the id of the checkpoint that
	-- wrote each row (for readers, weir.sink_changes); NULL: none
	checkpoint_column	text,
	-- window over a change topic: declared to receive inserts only (its
	-- other rows are dead letters; aggregates need not take rows back)
	insert_only			boolean NOT NULL DEFAULT false,
	columns				text,					-- dedup, last_value; NULL: the source's
	filter				text,					-- join: the left's
	right_filter		text,					-- join (filter: the left's)
	out_of_orderness	interval NOT NULL,
	allowed_lateness	interval NOT NULL,
	idle_timeout		interval,
	emit				text NOT NULL CHECK (emit IN ('final', 'updates')),	-- window
	sink				oid,					-- NULL: a remote sink (weir.pipeline_remote_sink)
	late_records		oid,
	checkpoint_interval	interval NOT NULL,
	max_state_memory	bigint NOT NULL,		-- bytes
	recovery_target		interval,				-- a restore should take at most this; NULL: none
	enabled				boolean NOT NULL,
	status				text NOT NULL DEFAULT 'stopped',
	last_error			text,
	created_at			timestamptz NOT NULL DEFAULT now(),
	CHECK (operator <> 'window' OR (NOT windowing IS NULL AND aggregates IS NOT NULL)),
	-- a window without key aggregates all records of a window in one group
	CHECK (operator IN ('window', 'projection') OR key IS NOT NULL),
	CHECK (operator = 'projection' OR event_time IS NOT NULL),
	CHECK (operator <> 'join' OR (right_source IS NOT NULL AND right_key IS NOT NULL AND
								  right_event_time IS NOT NULL AND join_kind IS NOT NULL)),
	CHECK (operator = 'join' OR right_filter IS NULL),
	CHECK (operator = 'window' OR NOT insert_only)
);

-- Source positions and per-partition maximum event times of the last
-- checkpoint: rows with pos <= this have been processed.
CREATE TABLE weir.pipeline_position (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	part			integer NOT NULL,
	pos				bigint NOT NULL,
	max_event_time	timestamptz,
	PRIMARY KEY (pipeline_id, part)
);

-- Watermarks that travel with the data (src/topic/topic_watermark.c): a
-- pipeline writing a topic promises, with each checkpoint, that no row it
-- writes later has an event time below `watermark`; a pipeline that has
-- processed partition `part` of the topic up to `pos` takes that watermark
-- for it (the least over the topic's writers).  Rows every reader has
-- passed are deleted as newer ones come.
CREATE TABLE weir.topic_watermark (
	topic_id		integer NOT NULL REFERENCES weir.topic ON DELETE CASCADE,
	part			integer NOT NULL,
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	pos				bigint NOT NULL,
	watermark		timestamptz NOT NULL,
	PRIMARY KEY (topic_id, part, pipeline_id, pos)
);
CREATE INDEX ON weir.topic_watermark (pipeline_id);

-- The state of the last checkpoint, as chunks: each checkpoint appends one
-- chunk holding the entries that changed since the one before (windows: key
-- image, start, end, fired, states; keyed operators: key image, state).  An
-- entry's latest version is in the newest chunk that holds it.  A chunk goes
-- when the watermark has passed expires_at (every entry in it has expired,
-- or closed); when the chunks hold much more than the live state, a
-- checkpoint writes the whole state as new chunks and deletes the older
-- ones (compaction).
CREATE TABLE weir.pipeline_chunk (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	space			smallint NOT NULL,		-- 0 (keeps states of one pipeline apart)
	chunk			bigint NOT NULL,
	expires_at		timestamptz,			-- NULL: never (no horizon)
	entries			integer NOT NULL,
	data			bytea NOT NULL,
	format			smallint NOT NULL,		-- layout of data (WEIR_STATE_FORMAT)
	PRIMARY KEY (pipeline_id, space, chunk)
);
ALTER TABLE weir.pipeline_chunk ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE weir.checkpoints (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	id				bigint NOT NULL,
	started_at		timestamptz NOT NULL,	-- when it was due
	committed_at	timestamptz NOT NULL,
	watermark		timestamptz,
	start_delay_ms	float8 NOT NULL,		-- due -> worker at a batch boundary
	sync_ms			float8 NOT NULL,		-- collecting what changed
	async_ms		float8 NOT NULL,		-- writing it and committing
	bytes			bigint NOT NULL,		-- state bytes written
	sink_rows		bigint NOT NULL,
	state_rows		bigint NOT NULL,		-- windows written
	state_deletes	bigint NOT NULL,		-- windows deleted
	records_in		bigint NOT NULL,		-- since the previous checkpoint
	-- waiting for the barriers of every input process: 0 while a pipeline
	-- has one (where barrier alignment will show)
	alignment_ms	float8 NOT NULL DEFAULT 0,
	PRIMARY KEY (pipeline_id, id)
);

-- Where the last hour's checkpoints spent their time, per pipeline: each
-- phase's median, 95th percentile and maximum (weir.checkpoints keeps the
-- phases of each).  total_ms: from due to committed.
CREATE VIEW weir.checkpoint_summary AS
	SELECT p.name AS pipeline,
		   count(*) AS checkpoints,
		   min(c.committed_at) AS since,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.start_delay_ms) AS start_delay_p50_ms,
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY c.start_delay_ms) AS start_delay_p95_ms,
		   max(c.start_delay_ms) AS start_delay_max_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.alignment_ms) AS alignment_p50_ms,
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY c.alignment_ms) AS alignment_p95_ms,
		   max(c.alignment_ms) AS alignment_max_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.sync_ms) AS sync_p50_ms,
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY c.sync_ms) AS sync_p95_ms,
		   max(c.sync_ms) AS sync_max_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.async_ms) AS async_p50_ms,
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY c.async_ms) AS async_p95_ms,
		   max(c.async_ms) AS async_max_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY t.total_ms) AS total_p50_ms,
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY t.total_ms) AS total_p95_ms,
		   max(t.total_ms) AS total_max_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY c.bytes) AS bytes_p50,
		   max(c.bytes) AS bytes_max,
		   sum(c.sink_rows) AS sink_rows,
		   sum(c.records_in) AS records_in
	  FROM weir.checkpoints c
	  JOIN weir.pipeline p ON p.id = c.pipeline_id,
		   LATERAL (SELECT extract(epoch FROM c.committed_at - c.started_at) * 1000 AS total_ms) t
	 WHERE c.committed_at > now() - interval '1 hour'
	 GROUP BY p.name;
COMMENT ON VIEW weir.checkpoint_summary IS
	'per pipeline, the last hour of checkpoints: median, 95th percentile and maximum of each phase (start delay, alignment, synchronous, asynchronous, total), bytes, sink rows and records read';
GRANT SELECT ON weir.checkpoint_summary TO PUBLIC;

-- A pipeline's counters as of its last checkpoint, written in the
-- checkpoint's own transaction (src/catalog_sql/catalog_counters.c), so
-- they commit or roll back with it: each counts exactly the records whose
-- effects that checkpoint holds.  A worker that starts (after a stop, an
-- error or a crash) takes them up, and counts from there what it reads
-- after the checkpoint's positions: records read again after a crash are
-- counted once.  weir.pipelines shows the live counters of a running
-- pipeline, these of a stopped one.
CREATE TABLE weir.pipeline_counters (
	pipeline_id		integer PRIMARY KEY REFERENCES weir.pipeline ON DELETE CASCADE,
	checkpoint_id	bigint NOT NULL,		-- the checkpoint they are as of
	records_in		bigint NOT NULL,		-- records read
	records_out		bigint NOT NULL,		-- sink rows written (inserted or upserted)
	records_late	bigint NOT NULL,		-- records too late for state
	records_dead	bigint NOT NULL,		-- dead letters, both kinds below
	dead_at_write	bigint NOT NULL,		-- of those: rows a sink or the late-records
											-- table refused when the checkpoint wrote them
	records_dropped	bigint NOT NULL,		-- duplicates (dedup)
	updated_at		timestamptz NOT NULL
);

-- Every restore of a checkpoint by a starting worker ('restore') and every
-- weir.restore_drill ('drill').  A worker fills first_record_ms and
-- back_to_rate_ms in later, once it knows them (restore_follow.c); they stay
-- NULL while unknown, and for drills.
CREATE TABLE weir.restores (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	checkpoint_id	bigint NOT NULL,
	restored_at		timestamptz NOT NULL,	-- when it ended
	duration_ms		float8 NOT NULL,
	bytes			bigint NOT NULL,		-- checkpoint chunks read
	windows			bigint NOT NULL,		-- entries restored (the older name of rows)
	rows			bigint NOT NULL,		-- entries restored: windows, keys or join rows
	kind			text NOT NULL DEFAULT 'restore' CHECK (kind IN ('restore', 'drill')),
	-- records/s over the checkpoints of the minute before the restored one
	-- (NULL: fewer than two of them)
	rate_before		float8,
	first_record_ms	float8,					-- restore's end -> first record processed
	back_to_rate_ms	float8,					-- restore's end -> rate_before again, or caught up
	id				bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY
);

CREATE TABLE weir.dead_letters (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	-- a record that could not be processed: its topic, partition and
	-- position, and the record as JSON; a row that could not be written:
	-- the table (the sink), no partition or position, and the row as JSON;
	-- a late record that could not be written: its topic, partition and
	-- position (read it there)
	source			regclass NOT NULL,
	partition		integer,
	position		bigint,
	error			text NOT NULL,
	record			jsonb,
	at				timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT ON weir.pipeline, weir.pipeline_position, weir.checkpoints,
	weir.restores, weir.topic_watermark, weir.pipeline_counters TO PUBLIC;

-- Records a pipeline moves past, each a dead letter when the pipeline reads
-- it: asked by the owner (weir.skip), or found by the worker (a generic
-- aggregate's transition function raised on it: requested_by 'weir', with
-- the error).
CREATE TABLE weir.pipeline_skip (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	source			regclass NOT NULL,
	partition		integer NOT NULL,
	position		bigint NOT NULL,
	requested_by	name NOT NULL,
	error			text,					-- NULL: asked by the owner
	requested_at	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (pipeline_id, source, partition, position)
);
GRANT SELECT ON weir.pipeline_skip TO PUBLIC;

-- Sink rows deleted by the checkpoint that deleted them, for pipelines with
-- a checkpoint_column: weir.sink_changes returns them to readers, who
-- cannot find a deleted row in the sink.  A row goes when it is older
-- than weir.sink_deletes_retention (trimmed at checkpoints); the greatest
-- checkpoint whose deletes may be gone is kept in sink_deletes_trimmed, so
-- a reader behind it gets an error, never a silent gap.  Not readable by
-- PUBLIC: a delete shows the key of a row (weir.sink_changes checks that
-- the caller may read the sink).
CREATE TABLE weir.sink_deletes (
	pipeline_id		integer NOT NULL REFERENCES weir.pipeline ON DELETE CASCADE,
	checkpoint_id	bigint NOT NULL,
	recorded_at		timestamptz NOT NULL,	-- weir's clock, at the checkpoint
	key				jsonb NOT NULL			-- the sink's key columns
);
CREATE INDEX ON weir.sink_deletes (pipeline_id, checkpoint_id);
CREATE INDEX ON weir.sink_deletes (pipeline_id, recorded_at);
REVOKE ALL ON weir.sink_deletes FROM PUBLIC;
CREATE TABLE weir.sink_deletes_trimmed (
	pipeline_id		integer PRIMARY KEY REFERENCES weir.pipeline ON DELETE CASCADE,
	through			bigint NOT NULL		-- deletes of checkpoints <= this may be gone
);
GRANT SELECT ON weir.sink_deletes_trimmed TO PUBLIC;

-- A pipeline whose sink is a table of another PostgreSQL server
-- (sink => weir.remote_table(...)); its weir.pipeline.sink is NULL.  Not
-- granted to anyone: the connection string may hold a password
-- (weir.remote_sinks shows the rest).
CREATE TABLE weir.pipeline_remote_sink (
	pipeline_id			integer PRIMARY KEY REFERENCES weir.pipeline ON DELETE CASCADE,
	conninfo			text NOT NULL,
	remote_schema		name NOT NULL,
	remote_table		name NOT NULL,
	commit_mode			text NOT NULL CHECK (commit_mode IN ('two_phase', 'idempotent')),
	-- what upserts and deletes match on: the pipeline's key columns, or (a
	-- projection) the remote table's unique key; empty: rows are inserted
	key_columns			name[] NOT NULL,
	-- two_phase: the prepared transaction of checkpoint N is named
	-- prefix || N; idempotent: the key of the pipeline's fence row
	transaction_prefix	text NOT NULL UNIQUE,
	-- the operator gave up on the remote (weir.abandon_remote_sink): the
	-- pipeline may be dropped without resolving its transactions there
	abandoned			boolean NOT NULL DEFAULT false,
	owner				oid NOT NULL			-- the pipeline's, as it was created
);
REVOKE ALL ON weir.pipeline_remote_sink FROM PUBLIC;

-- Two-phase remote sinks of pipelines deleted without their prepared
-- transactions there resolved (their definition dropped with DROP ...
-- CASCADE or DROP OWNED, or weir dropped), until the launcher has
-- resolved them (src/sink/remote_sink_orphans.c).  The last checkpoint is
-- read as the pipeline row goes: a checkpoint can no longer commit after
-- (its row refers to the pipeline's).
CREATE TABLE weir.remote_sink_to_resolve (
	transaction_prefix	text PRIMARY KEY,
	pipeline_id			integer NOT NULL,
	conninfo			text NOT NULL,
	owner				oid NOT NULL,
	last_checkpoint		bigint NOT NULL,
	dropped_at			timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON weir.remote_sink_to_resolve FROM PUBLIC;
CREATE FUNCTION weir._remote_sink_orphaned() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO weir.remote_sink_to_resolve
		(transaction_prefix, pipeline_id, conninfo, owner, last_checkpoint)
	SELECT r.transaction_prefix, OLD.id, r.conninfo, r.owner,
		   coalesce((SELECT max(c.id) FROM weir.checkpoints c WHERE c.pipeline_id = OLD.id), 0)
	  FROM weir.pipeline_remote_sink r
	 WHERE r.pipeline_id = OLD.id AND r.commit_mode = 'two_phase' AND NOT r.abandoned
	ON CONFLICT (transaction_prefix) DO NOTHING;
	RETURN OLD;
END $$;
REVOKE ALL ON FUNCTION weir._remote_sink_orphaned() FROM PUBLIC;
CREATE TRIGGER remote_sink_orphaned BEFORE DELETE ON weir.pipeline
	FOR EACH ROW EXECUTE FUNCTION weir._remote_sink_orphaned();

CREATE FUNCTION weir.remote_table(conninfo text, "table" text, commit text DEFAULT 'two_phase')
RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	RETURN 'weir.remote_table:' || pg_catalog.jsonb_build_object('conninfo', conninfo, 'table', "table", 'commit', commit)::text;
COMMENT ON FUNCTION weir.remote_table(text, text, text) IS
	'a sink on another PostgreSQL server, for the sink argument of the weir.create_* functions: the table (schema.table, or table in the remote''s search path) and how its rows commit: ''two_phase'' (prepared on the remote, committed with each checkpoint) or ''idempotent'' (upserts and a fence row, for results that are a function of the input)';

CREATE FUNCTION weir.create_pipeline(
	name text,
	source regclass,
	key text DEFAULT NULL,
	event_time text DEFAULT NULL,
	windowing weir.windowing DEFAULT NULL,
	aggregates text DEFAULT NULL,
	filter text DEFAULT NULL,
	late_records text DEFAULT NULL,
	out_of_orderness interval DEFAULT '0',
	allowed_lateness interval DEFAULT '0',
	idle_timeout interval DEFAULT NULL,
	emit text DEFAULT 'final',
	sink text DEFAULT NULL,
	checkpoint_interval interval DEFAULT '1 second',
	max_state_memory bigint DEFAULT NULL,
	start boolean DEFAULT true,
	insert_only boolean DEFAULT false,
	-- the sink's bigint column for the id of the checkpoint that wrote each row
	checkpoint_column text DEFAULT NULL)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_pipeline';
COMMENT ON FUNCTION weir.create_pipeline(text, regclass, text, text, weir.windowing, text, text, text, interval, interval, interval, text, text, interval, bigint, boolean, boolean, text) IS
	'define a windowed aggregation over a topic, per key or (key NULL) over all its records; over a change topic, updates and deletes take their rows back unless insert_only declares it has inserts only; returns the pipeline id';

CREATE FUNCTION weir.create_dedup(
	name text,
	source regclass,
	key text DEFAULT NULL,
	event_time text DEFAULT NULL,
	horizon interval DEFAULT NULL,
	refresh_horizon boolean DEFAULT true,
	columns text DEFAULT NULL,
	filter text DEFAULT NULL,
	late_records text DEFAULT NULL,
	out_of_orderness interval DEFAULT '0',
	idle_timeout interval DEFAULT NULL,
	sink text DEFAULT NULL,
	checkpoint_interval interval DEFAULT '1 second',
	max_state_memory bigint DEFAULT NULL,
	start boolean DEFAULT true,
	-- renamed: fails with a hint
	id text DEFAULT NULL,
	-- the sink's bigint column for the id of the checkpoint that wrote each row
	checkpoint_column text DEFAULT NULL)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_dedup';
COMMENT ON FUNCTION weir.create_dedup(text, regclass, text, text, interval, boolean, text, text, text, interval, interval, text, interval, bigint, boolean, text, text) IS
	'define a deduplication of a topic: records whose key was seen within the horizon (of event time) are dropped, the others go to the sink; with refresh_horizon false only kept records count as sightings, so a key expires at its first sighting + horizon; returns the pipeline id (id: renamed to key, fails with a hint)';

CREATE FUNCTION weir.create_last_value(
	name text,
	source regclass,
	key text DEFAULT NULL,
	event_time text DEFAULT NULL,
	ttl interval DEFAULT NULL,
	columns text DEFAULT NULL,
	filter text DEFAULT NULL,
	late_records text DEFAULT NULL,
	out_of_orderness interval DEFAULT '0',
	idle_timeout interval DEFAULT NULL,
	sink text DEFAULT NULL,
	checkpoint_interval interval DEFAULT '1 second',
	max_state_memory bigint DEFAULT NULL,
	start boolean DEFAULT true,
	-- the sink's bigint column for the id of the checkpoint that wrote each row
	checkpoint_column text DEFAULT NULL)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_last_value';
COMMENT ON FUNCTION weir.create_last_value(text, regclass, text, text, interval, text, text, text, interval, interval, text, interval, bigint, boolean, text) IS
	'keep the newest row per key of a topic (by event time, ties by partition and position) in a table, upserted at each checkpoint; with a ttl, keys older than it leave; returns the pipeline id';

CREATE FUNCTION weir.create_projection(
	name text,
	source regclass,
	columns text DEFAULT NULL,
	filter text DEFAULT NULL,
	sink text DEFAULT NULL,
	checkpoint_interval interval DEFAULT '1 second',
	start boolean DEFAULT true,
	-- the sink's bigint column for the id of the checkpoint that wrote each row
	checkpoint_column text DEFAULT NULL)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_projection';
COMMENT ON FUNCTION weir.create_projection(text, regclass, text, text, text, interval, boolean, text) IS
	'a stateless stage: every record of a topic that passes the filter, as the given columns, into a table or another topic; returns the pipeline id';

CREATE FUNCTION weir.create_join(
	name text,
	left_source regclass,
	right_source regclass,
	left_key text DEFAULT NULL,
	right_key text DEFAULT NULL,
	left_event_time text DEFAULT NULL,
	right_event_time text DEFAULT NULL,
	right_before interval DEFAULT '0',
	right_after interval DEFAULT '0',
	kind text DEFAULT 'inner',
	columns text DEFAULT NULL,
	left_filter text DEFAULT NULL,
	right_filter text DEFAULT NULL,
	late_records text DEFAULT NULL,
	out_of_orderness interval DEFAULT '0',
	idle_timeout interval DEFAULT NULL,
	sink text DEFAULT NULL,
	checkpoint_interval interval DEFAULT '1 second',
	max_state_memory bigint DEFAULT NULL,
	start boolean DEFAULT true,
	-- renamed: fail with a hint
	left_time text DEFAULT NULL,
	right_time text DEFAULT NULL,
	lower interval DEFAULT NULL,
	upper interval DEFAULT NULL,
	-- the sink's bigint column for the id of the checkpoint that wrote each row
	checkpoint_column text DEFAULT NULL)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_join';
COMMENT ON FUNCTION weir.create_join(text, regclass, regclass, text, text, text, text, interval, interval, text, text, text, text, text, interval, interval, text, interval, bigint, boolean, text, text, interval, interval, text) IS
	'define an interval join of two topics: a right row r matches a left row l when their keys are equal and r.t BETWEEN l.t - right_before AND l.t + right_after, inner or left outer; left_filter and right_filter skip a side''s records before they are buffered; late rows go to late_records (source, part, pos, record jsonb, watermark, received_at); returns the pipeline id (left_time, right_time, lower, upper: renamed, fail with a hint)';

CREATE FUNCTION weir.start(pipeline text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_start';
CREATE FUNCTION weir.skip(pipeline text, topic regclass, "partition" integer, "position" bigint)
RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_skip';
COMMENT ON FUNCTION weir.skip(text, regclass, integer, bigint) IS
	'the last resort for a record that stops a pipeline: move past it (it becomes a dead letter); then weir.start()';
CREATE FUNCTION weir.stop(pipeline text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_stop';
CREATE FUNCTION weir.drop_pipeline(pipeline text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_drop_pipeline';
CREATE FUNCTION weir.checkpoint(pipeline text, timeout interval DEFAULT '60 s') RETURNS bigint
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_checkpoint';
COMMENT ON FUNCTION weir.checkpoint(text, interval) IS
	'have a running pipeline take a checkpoint now and wait for it; returns its id';
CREATE FUNCTION weir.checkpoint(pipelines text[] DEFAULT NULL, timeout interval DEFAULT '60 s')
RETURNS TABLE (pipeline text, checkpoint_id bigint)
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_checkpoint_chain';
COMMENT ON FUNCTION weir.checkpoint(text[], interval) IS
	'wait until everything committed before the call has gone through every running pipeline (or the ones named and the chains that feed them) to its sinks: a checkpoint of each, upstream first; returns them in that order';

CREATE FUNCTION weir._pipeline_state(
	OUT pipeline_id integer,
	OUT worker_pid integer,
	OUT watermark timestamptz,
	OUT checkpoint_id bigint,
	OUT checkpoint_at timestamptz,
	OUT windows bigint,
	OUT state_bytes bigint,
	OUT lag_rows bigint,
	OUT records_in bigint,
	OUT records_out bigint,
	OUT records_late bigint,
	OUT records_dead bigint,
	OUT records_dropped bigint,
	OUT watermark_note text,
	OUT writer_pid integer,
	OUT reader_pid integer)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_pipeline_state';

-- Running pipelines whose remote sink has trouble: a COMMIT PREPARED that
-- failed and is being retried (pending_checkpoint), with the last error.
CREATE FUNCTION weir._remote_sink_state(
	OUT pipeline_id integer,
	OUT pending_checkpoint bigint,
	OUT attempts integer,
	OUT retry_at timestamptz,
	OUT error text)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_remote_sink_state';

CREATE VIEW weir.remote_sinks AS
	SELECT p.name AS pipeline, d.relowner::regrole AS owner,
		   pg_catalog.quote_ident(r.remote_schema) || '.' || pg_catalog.quote_ident(r.remote_table) AS remote_table,
		   r.commit_mode, r.key_columns, r.transaction_prefix, r.abandoned,
		   (SELECT max(c.id) FROM weir.checkpoints c WHERE c.pipeline_id = p.id) AS last_checkpoint,
		   s.pending_checkpoint, s.attempts, s.retry_at, s.error
	  FROM weir.pipeline_remote_sink r
	  JOIN weir.pipeline p ON p.id = r.pipeline_id
	  JOIN pg_catalog.pg_class d ON d.oid = p.definition
	  LEFT JOIN weir._remote_sink_state() s ON s.pipeline_id = p.id;
COMMENT ON VIEW weir.remote_sinks IS
	'one row per pipeline with a remote sink: the remote table, how its rows commit, what upserts match on, the prefix of its prepared transactions (or its fence row''s key), the last local checkpoint, and a commit being retried there with its error (never the connection string)';
GRANT SELECT ON weir.remote_sinks TO PUBLIC;

CREATE FUNCTION weir.abandon_remote_sink(pipeline text) RETURNS text
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_abandon_remote_sink';
COMMENT ON FUNCTION weir.abandon_remote_sink(text) IS
	'give up on the remote server of a stopped pipeline''s sink, gone for good, so that weir.drop_pipeline need not resolve its prepared transactions there; returns what to commit and roll back there should it come back';

-- Recovery target (its part of weir.pipelines; the rest is at the end).
-- recovery_warning: the latest restore or drill took longer than the
-- target.  recovery_projection: the latest one's speed (bytes/ms) applied
-- to the state's size now, which is the latest one's bytes plus the growth
-- since at the rate seen over the restores and drills of the last day; and
-- when that growth makes a restore miss the target.
CREATE FUNCTION weir._recovery_status(pipeline_id integer, target interval, at timestamptz,
									  OUT recovery_warning text, OUT recovery_projection text)
	LANGUAGE sql STABLE AS $$
	WITH latest AS (
		SELECT r.* FROM weir.restores r WHERE r.pipeline_id = $1
		 ORDER BY r.restored_at DESC, r.id DESC LIMIT 1),
	growth AS (
		-- bytes per second between the oldest and the latest of the last day
		SELECT (max(l.bytes) - (array_agg(r.bytes ORDER BY r.restored_at, r.id))[1])::float8 /
			   nullif(extract(epoch FROM max(l.restored_at) - min(r.restored_at)), 0) AS bytes_per_s
		  FROM weir.restores r, latest l
		 WHERE r.pipeline_id = $1 AND r.restored_at >= l.restored_at - interval '1 day'),
	figures AS (
		SELECT l.*, g.bytes_per_s,
			   extract(epoch FROM $2) * 1000 AS target_ms,
			   l.bytes + greatest(coalesce(g.bytes_per_s, 0), 0) *
						 extract(epoch FROM $3 - l.restored_at) AS bytes_now,
			   l.bytes / l.duration_ms AS bytes_per_ms
		  FROM latest l, growth g
		 WHERE l.duration_ms > 0 AND l.bytes > 0)
	SELECT (SELECT l.kind || ' of checkpoint ' || l.checkpoint_id || ' at ' || l.restored_at ||
				   ' took ' || round(l.duration_ms::numeric, 1) || ' ms, over the recovery target of ' || $2
			  FROM latest l WHERE l.duration_ms > extract(epoch FROM $2) * 1000),
		   (SELECT 'restore would take ' || round((f.bytes_now / f.bytes_per_ms / 1000)::numeric, 2) ||
				   ' s at ' || round((f.bytes_now / 1e6)::numeric, 1) || ' MB; ' ||
				   CASE WHEN f.bytes_now / f.bytes_per_ms > f.target_ms
						THEN 'the target of ' || $2 || ' is missed now'
						WHEN f.bytes_per_s IS NULL
						THEN 'growth not known yet: it needs two restores or drills at different times'
						WHEN f.bytes_per_s <= 0
						THEN 'the state is not growing: the target of ' || $2 || ' holds'
						ELSE 'at +' || round((f.bytes_per_s * 60 / 1e6)::numeric, 3) ||
							 ' MB/min the target of ' || $2 || ' is missed in about ' ||
							 justify_interval(make_interval(secs =>
								 round((f.target_ms * f.bytes_per_ms - f.bytes_now) / f.bytes_per_s)))
				   END
			  FROM figures f WHERE $2 IS NOT NULL)
$$;

CREATE VIEW weir.pipelines AS
	SELECT p.name, d.relowner::regrole AS owner, p.source::regclass AS source,
		   p.sink::regclass AS sink, p.right_source::regclass AS right_source,
		   CASE WHEN s.worker_pid IS NOT NULL THEN 'running'
				WHEN p.enabled AND p.status IN ('failed', 'out_of_memory') THEN p.status
				WHEN p.enabled THEN 'starting'
				ELSE p.status END AS status,
		   s.worker_pid,
		   s.writer_pid,
		   s.reader_pid,
		   (SELECT jsonb_object_agg(pp.part, pp.pos ORDER BY pp.part)
			  FROM weir.pipeline_position pp WHERE pp.pipeline_id = p.id) AS positions,
		   s.lag_rows,
		   s.watermark,
		   -- cumulative: live while a worker runs, as of the last checkpoint when none does
		   coalesce(s.records_in, pc.records_in) AS records_in,
		   coalesce(s.records_out, pc.records_out) AS records_out,
		   coalesce(s.records_late, pc.records_late) AS records_late,
		   coalesce(s.records_dead, pc.records_dead) AS records_dead,
		   s.windows, s.state_bytes,
		   p.operator,
		   coalesce(s.records_dropped, pc.records_dropped) AS records_dropped,
		   CASE p.operator
				WHEN 'dedup' THEN
					CASE WHEN p.horizon IS NULL THEN 'none: every key is kept forever'
						 WHEN NOT p.refresh_horizon
						 THEN 'a key leaves when the watermark passes its first sighting + ' || p.horizon ||
							  ' (copies dropped meanwhile do not extend it; the next copy after is kept)'
						 ELSE 'a key leaves when the watermark passes its last sighting + ' || p.horizon END
				WHEN 'projection' THEN 'none needed: a projection keeps no state'
				WHEN 'join' THEN 'a left row leaves when the watermark passes its time + ' || p.right_after ||
								 ' (right_after), a right row when it passes its time + ' || p.right_before ||
								 ' (right_before)'
				WHEN 'last_value' THEN
					CASE WHEN p.ttl IS NULL THEN 'none: every key is kept forever'
						 ELSE 'a key leaves, and its sink row is deleted, when the watermark passes its newest row + ' || p.ttl END
					-- over a change topic, deleted keys (tombstones) leave too
					|| CASE WHEN p.ttl IS NULL AND EXISTS (
								SELECT FROM pg_catalog.pg_attribute a
								 WHERE a.attrelid = p.source AND a.attname = 'change_op'
								   AND a.atttypid = '"char"'::pg_catalog.regtype AND NOT a.attisdropped)
							THEN ' but a deleted one, which leaves when the watermark passes its deletion'
							ELSE '' END
				ELSE 'a window leaves when the watermark passes its end + ' || p.allowed_lateness
		   END AS retention,
		   nullif(concat_ws('; ',
				CASE WHEN p.operator = 'dedup' AND p.horizon IS NULL
					 THEN 'unbounded: deduplication without a horizon keeps every key it has seen'
					 WHEN p.operator = 'last_value' AND p.ttl IS NULL
					 THEN 'unbounded: last value without a ttl keeps every key it has seen' END,
				s.watermark_note), '') AS state_warning,
		   coalesce(s.checkpoint_id,
					(SELECT max(c.id) FROM weir.checkpoints c WHERE c.pipeline_id = p.id)) AS last_checkpoint,
		   coalesce(s.checkpoint_at,
					(SELECT max(c.committed_at) FROM weir.checkpoints c WHERE c.pipeline_id = p.id)) AS last_checkpoint_at,
		   p.last_error,
		   p.definition::regclass AS definition,
		   (SELECT r.commit_mode || ' to ' || r.remote_table ||
				   CASE WHEN r.pending_checkpoint IS NOT NULL
						THEN ': COMMIT PREPARED of checkpoint ' || r.pending_checkpoint || ' failed ' ||
							 r.attempts || ' times, next attempt at ' || r.retry_at || ': ' || r.error
						WHEN r.error IS NOT NULL THEN ': ' || r.error
						ELSE '' END
			  FROM weir.remote_sinks r WHERE r.pipeline = p.name) AS remote_sink,
		   p.checkpoint_column,
		   p.recovery_target, rs.recovery_warning, rs.recovery_projection
	  FROM weir.pipeline p
	  JOIN pg_catalog.pg_class d ON d.oid = p.definition
	  LEFT JOIN weir._pipeline_state() s ON s.pipeline_id = p.id
	  LEFT JOIN weir.pipeline_counters pc ON pc.pipeline_id = p.id
	  LEFT JOIN LATERAL weir._recovery_status(p.id, p.recovery_target, now()) rs ON true;
COMMENT ON VIEW weir.pipelines IS
	'one row per pipeline: status, worker, positions, lag, watermark, record counts, state size, last checkpoint, last error, and (a remote sink) where it writes and a commit there being retried';
GRANT SELECT ON weir.pipelines TO PUBLIC;

CREATE FUNCTION weir.alter_pipeline(
	pipeline text,
	max_state_memory bigint DEFAULT NULL,
	checkpoint_interval interval DEFAULT NULL,
	recovery_target interval DEFAULT NULL)
RETURNS void
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_alter_pipeline';
COMMENT ON FUNCTION weir.alter_pipeline(text, bigint, interval, interval) IS
	'change a pipeline''s state memory limit or checkpoint interval (NULL: unchanged; they take effect when it (re)starts), or its recovery target (NULL: unchanged, 0: none; at once)';

CREATE FUNCTION weir.sink_changes(pipeline text, after_checkpoint bigint,
								  max_rows integer DEFAULT 10000)
RETURNS TABLE (checkpoint_id bigint, change text, record jsonb)
	LANGUAGE C STRICT STABLE AS 'MODULE_PATHNAME', 'weir_sink_changes';
COMMENT ON FUNCTION weir.sink_changes(text, bigint, integer) IS
	'what the checkpoints after after_checkpoint did to the sink of a pipeline created with a checkpoint_column, in the caller''s snapshot: per checkpoint in order, its deletes (change ''delete'', record: the key) then the rows it wrote that are still there (change ''upsert'', record: the row); whole checkpoints until max_rows is reached; a reader that stores the greatest checkpoint_id it applied gets each change once';

-- For bench/: the read limit, through the primary key with the low-level
-- scan API: row by row in position order (as weir.read), or (heap_order) a
-- page at a time, as pipeline workers read.
CREATE FUNCTION weir._scan_count(topic regclass, partition integer, after bigint, upto bigint,
								 heap_order boolean DEFAULT false)
RETURNS bigint
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_scan_count';

-- Internal, for bench/: the rows with after < pos <= upto of every partition
-- of a topic, read in one pass over their heap pages (as a pipeline worker
-- reads a round), counted.
CREATE FUNCTION weir._scan_count_partitions(topic regclass, after bigint, upto bigint)
RETURNS bigint
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_scan_count_partitions';

-- Internal, for tests of weir's logical decoding output plugin
-- (src/capture/output_plugin.c, plugin name 'weir'): one message of a slot
-- decoded through it, shown.  Superusers only: a message holds raw value
-- images, which only this server's plugin writes.
CREATE FUNCTION weir._capture_change(data bytea,
	OUT kind text, OUT relid regclass, OUT relids regclass[], OUT lsn pg_lsn,
	OUT end_lsn pg_lsn, OUT commit_ts timestamptz, OUT xid xid,
	OUT new_row text, OUT old_row text, OUT unchanged text[])
RETURNS record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_capture_change';
REVOKE ALL ON FUNCTION weir._capture_change(bytea) FROM PUBLIC;

-- The state of a pipeline, one row per window, kept id, key or buffered
-- row, every operator in one shape (columns an operator has no such thing
-- for are NULL; a projection keeps no state).  Readable by those who may
-- read every row of its sink, and by members of its owner; what is
-- evaluated to show it runs as the owner (src/pipeline/state_view.c).
CREATE FUNCTION weir.live_state(
	pipeline text,
	OUT operator text,
	OUT key text,
	OUT window_start timestamptz,
	OUT window_end timestamptz,
	OUT fired boolean,
	OUT event_time timestamptz,
	OUT expires_at timestamptz,
	OUT value jsonb)
RETURNS SETOF record
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_live_state';
COMMENT ON FUNCTION weir.live_state(text) IS
	'the state of a running pipeline, read from its worker''s shared memory (may be ahead of the last checkpoint; no rows when it is not running): windows, kept ids, last values, buffered join rows';

CREATE FUNCTION weir.committed_state(
	pipeline text,
	OUT operator text,
	OUT key text,
	OUT window_start timestamptz,
	OUT window_end timestamptz,
	OUT fired boolean,
	OUT event_time timestamptz,
	OUT expires_at timestamptz,
	OUT value jsonb)
RETURNS SETOF record
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_committed_state';
COMMENT ON FUNCTION weir.committed_state(text) IS
	'the state of a pipeline as of its last checkpoint (the one its sink rows and positions are of), restored from its chunks; as weir.live_state';

-- Owners of a pipeline (and their members) read its dead letters and its
-- raw state chunks; nobody else does (dead letters hold topic rows).
-- Readers of the sink see the state decoded, through weir.committed_state,
-- which reads the chunks as weir's owner.
ALTER TABLE weir.dead_letters ENABLE ROW LEVEL SECURITY;
ALTER TABLE weir.pipeline_chunk ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON weir.pipeline_chunk FOR SELECT
	USING (pg_has_role((SELECT d.relowner FROM weir.pipeline p
						  JOIN pg_catalog.pg_class d ON d.oid = p.definition
						 WHERE p.id = pipeline_id), 'USAGE'));
CREATE POLICY owner_reads ON weir.dead_letters FOR SELECT
	USING (pg_has_role((SELECT d.relowner FROM weir.pipeline p
						  JOIN pg_catalog.pg_class d ON d.oid = p.definition
						 WHERE p.id = pipeline_id), 'USAGE'));
GRANT SELECT ON weir.dead_letters, weir.pipeline_chunk TO PUBLIC;

------------------------------------------------------------------------------
-- Captures: changes of ordinary tables, decoded from the WAL through one
-- logical replication slot per capture (weir's own output plugin, or
-- pgoutput on a remote server), appended to one topic per captured table.
-- The topic rows and the capture's position commit together
-- (src/capture/).
------------------------------------------------------------------------------

CREATE TABLE weir.capture (
	id				integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name			text NOT NULL UNIQUE,
	owner			oid NOT NULL,			-- its topics' owner; acts as it
	slot_name		name NOT NULL UNIQUE,	-- here, or on the remote server
	publication		name,					-- remote: the publication there
	-- the end of the last transaction whose changes are in the topics: a
	-- restart skips transactions that end at or before it
	position		pg_lsn NOT NULL DEFAULT '0/0',
	position_time	timestamptz,			-- that transaction's commit time
	enabled			boolean NOT NULL DEFAULT true,
	status			text NOT NULL DEFAULT 'starting'
					CHECK (status IN ('starting', 'running', 'failed', 'slot_invalidated',
									  'stopped')),
	last_error		text,
	created_at		timestamptz NOT NULL DEFAULT now(),
	CHECK (name <> '')
);

-- A remote capture's connection string: never shown (it may hold a
-- password); read only by weir's functions, as weir's owner.
CREATE TABLE weir.capture_connection (
	capture_id		integer PRIMARY KEY REFERENCES weir.capture ON DELETE CASCADE,
	conninfo		text NOT NULL
);

-- One row per captured table and its topic.  `columns` are the table's
-- columns the topic carries, in the topic's order (after part, pos and the
-- four change columns); `attnums` their numbers in the local table (NULL
-- for a remote table, matched by name).  `key_columns` choose the
-- partition: the replica identity's columns (empty: every change goes to
-- partition 0).
CREATE TABLE weir.capture_table (
	capture_id		integer NOT NULL REFERENCES weir.capture ON DELETE CASCADE,
	relid			oid,					-- local: the captured table
	remote_table	text,					-- remote: its qualified name there
	topic			oid NOT NULL UNIQUE,	-- the topic's relid
	columns			name[] NOT NULL,
	attnums			int2[],
	key_columns		name[] NOT NULL,
	full_identity	boolean NOT NULL,		-- REPLICA IDENTITY FULL at creation
	dropped_at		timestamptz,			-- when the captured table was dropped
	PRIMARY KEY (capture_id, topic),
	CHECK ((relid IS NULL) <> (remote_table IS NULL))
);

-- A dropped remote capture's slot, until the launcher has dropped it on
-- the remote server (src/capture/remote_slot_drop.c); like
-- weir.capture_connection, read only by weir's owner.
CREATE TABLE weir.capture_remote_slot_to_drop (
	slot_name		name PRIMARY KEY,
	conninfo		text NOT NULL,
	capture_id		integer NOT NULL,		-- the dropped capture's id
	dropped_at		timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT ON weir.capture, weir.capture_table TO PUBLIC;

CREATE FUNCTION weir.create_capture(
	name text,
	tables regclass[] DEFAULT NULL,
	publication text DEFAULT NULL,
	topic_schema text DEFAULT NULL,
	partitions integer DEFAULT 4,
	retention interval DEFAULT NULL,
	conninfo text DEFAULT NULL,
	remote_tables text[] DEFAULT NULL,
	start boolean DEFAULT true)
RETURNS integer
	LANGUAGE C CALLED ON NULL INPUT VOLATILE
	AS 'MODULE_PATHNAME', 'weir_create_capture';
COMMENT ON FUNCTION weir.create_capture(text, regclass[], text, text, integer, interval, text, text[], boolean) IS
	'capture the changes of tables (named, or those of a publication) into one topic each, <capture>_<table>, exactly once; conninfo: from another server through a publication there; returns the capture id';

CREATE FUNCTION weir.drop_capture(name text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_drop_capture';
COMMENT ON FUNCTION weir.drop_capture(text) IS
	'drop a capture and its replication slot (its topics stay: drop them with weir.drop_topic)';

CREATE FUNCTION weir.start_capture(name text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_start_capture';
CREATE FUNCTION weir.stop_capture(name text) RETURNS void
	LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'weir_stop_capture';
COMMENT ON FUNCTION weir.stop_capture(text) IS
	'stop a capture''s worker (its slot stays, and holds WAL from its position on)';

CREATE FUNCTION weir._capture_state(
	OUT capture_id integer,
	OUT worker_pid integer,
	OUT received_lsn pg_lsn,
	OUT caught_up boolean,
	OUT caught_up_at timestamptz,
	OUT changes bigint,
	OUT transactions bigint,
	OUT connects bigint,
	OUT next_connect_at timestamptz)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_capture_state';

CREATE VIEW weir.captures AS
	SELECT c.name, c.owner::regrole AS owner,
		   CASE WHEN c.publication IS NULL THEN 'local' ELSE 'remote' END AS kind,
		   -- a worker sets 'running' once it holds its slot; without one
		   -- (between restarts) an enabled capture is starting
		   CASE WHEN s.worker_pid IS NULL AND c.enabled AND c.status = 'running'
				THEN 'starting' ELSE c.status END AS status,
		   s.worker_pid,
		   (SELECT array_agg(coalesce(t.relid::regclass::text, t.remote_table) ORDER BY t.topic)
			  FROM weir.capture_table t WHERE t.capture_id = c.id) AS tables,
		   (SELECT array_agg(t.topic::regclass ORDER BY t.topic)
			  FROM weir.capture_table t WHERE t.capture_id = c.id) AS topics,
		   c.slot_name,
		   c.publication,
		   c.position,
		   c.position_time,
		   s.received_lsn,
		   -- local: behind the WAL written here; remote: behind what the
		   -- remote server has sent
		   CASE WHEN c.publication IS NULL
				THEN pg_wal_lsn_diff(pg_current_wal_lsn(),
									 greatest(c.position, r.confirmed_flush_lsn,
											  CASE WHEN s.caught_up THEN s.received_lsn END))
				ELSE pg_wal_lsn_diff(s.received_lsn, c.position) END::bigint AS lag_bytes,
		   CASE WHEN s.caught_up THEN 0::float8
				WHEN c.position_time IS NULL THEN NULL
				ELSE extract(epoch FROM now() - c.position_time)::float8 END AS lag_seconds,
		   pg_wal_lsn_diff(pg_current_wal_lsn(), r.restart_lsn)::bigint AS wal_retained_bytes,
		   r.wal_status,
		   s.changes, s.transactions,
		   s.connects,
		   s.next_connect_at,
		   nullif(concat_ws('; ',
				(SELECT 'captured table ' || coalesce(t.relid::text, t.remote_table) ||
						' was dropped at ' || t.dropped_at
				   FROM weir.capture_table t
				  WHERE t.capture_id = c.id AND t.dropped_at IS NOT NULL
				  ORDER BY t.dropped_at LIMIT 1)), '') AS warning,
		   c.last_error,
		   c.created_at
	  FROM weir.capture c
	  LEFT JOIN weir._capture_state() s ON s.capture_id = c.id
	  LEFT JOIN pg_catalog.pg_replication_slots r
			 ON r.slot_name = c.slot_name AND c.publication IS NULL;
COMMENT ON VIEW weir.captures IS
	'one row per capture: status, worker, tables and topics, position, lag in bytes and seconds, WAL its slot retains, last error';
GRANT SELECT ON weir.captures TO PUBLIC;

-- The sql_drop trigger notes captured tables that are dropped.
CREATE FUNCTION weir._forget_captured_table(relid oid) RETURNS void
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_forget_captured_table';
REVOKE ALL ON FUNCTION weir._forget_captured_table(oid) FROM PUBLIC;

-- Recovery target and restore drills (issue 20).  weir.pipeline's
-- recovery_target, weir.restores' columns, weir._recovery_status and its
-- columns in weir.pipelines are above, where those objects are defined.
CREATE FUNCTION weir.restore_drill(pipeline text) RETURNS weir.restores
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_restore_drill';
COMMENT ON FUNCTION weir.restore_drill(text) IS
	'restore the latest checkpoint of a pipeline into this backend''s scratch memory (the pipeline keeps running), time it, record it in weir.restores as a drill and return that row; a WARNING when it took longer than the recovery target; for members of the pipeline''s owner';

-- ---------------------------------------------------------------------------
-- Operating state, part "progress and metrics" (issue 20): weir.progress.
-- ---------------------------------------------------------------------------

-- What the pipelines' processes report of their long steps (base/progress.c)
CREATE FUNCTION weir._progress_state(
	OUT pipeline_id integer,
	OUT pid integer,
	OUT command text,
	OUT phase text,
	OUT started_at timestamptz,
	OUT bytes_done bigint,
	OUT bytes_total bigint,
	OUT rows_done bigint,
	OUT rows_total bigint)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_progress_state';

CREATE VIEW weir.progress AS
	SELECT p.name AS pipeline, s.pid, s.command, s.phase, s.started_at,
		   s.bytes_done, s.bytes_total, s.rows_done, s.rows_total
	  FROM weir._progress_state() s
	  JOIN weir.pipeline p ON p.id = s.pipeline_id;
COMMENT ON VIEW weir.progress IS
	'one row per long step a pipeline has in progress (restore, compaction, catch-up), in the style of pg_stat_progress_*: process, phase, bytes and rows done and total';
GRANT SELECT ON weir.progress TO PUBLIC;

------------------------------------------------------------------------------
-- Operating state (issue 20): weir.state_stats and weir.explain_state
------------------------------------------------------------------------------

-- The figures of a running pipeline's state (pipeline/state_stats.c): from
-- its store, walked under its slot's shared lock, and from the samples its
-- worker keeps in the slot; no row when no worker of it runs.
CREATE FUNCTION weir._state_stats(
	pipeline_id integer,
	operator text,
	OUT keys bigint,
	OUT entries bigint,
	OUT entries_per_key_max bigint,
	OUT entries_per_key_mean float8,
	OUT bytes bigint,
	OUT entry_bytes bigint,
	OUT in_worker_bytes bigint,
	OUT value_bytes_max bigint,
	OUT value_bytes_mean float8,
	OUT oldest_event_time timestamptz,
	OUT watermark timestamptz,
	OUT newest_event_time timestamptz,
	OUT arrival_rate float8,
	OUT entry_growth_rate float8,
	OUT byte_growth_rate float8,
	OUT value_growth_rate float8,
	OUT rates_over interval,
	OUT in_worker_bytes_per_entry_then float8,
	OUT measured_at timestamptz,
	OUT event_time_rate float8)
RETURNS SETOF record
	LANGUAGE C STRICT VOLATILE AS 'MODULE_PATHNAME', 'weir_state_stats';

-- Figures only (no key, no value, nothing of the owner's runs): for all, as
-- weir.pipelines.
CREATE VIEW weir.state_stats AS
	SELECT p.name AS pipeline, pl.owner, p.operator,
		   s.keys, s.entries, s.entries_per_key_max, s.entries_per_key_mean,
		   s.bytes, s.entry_bytes, s.in_worker_bytes,
		   s.value_bytes_max, s.value_bytes_mean,
		   s.oldest_event_time,
		   s.watermark - s.oldest_event_time AS oldest_entry_age,
		   CASE p.operator
				WHEN 'window' THEN 'window_end_lateness'
				WHEN 'dedup' THEN CASE WHEN p.horizon IS NULL THEN 'none' ELSE 'horizon' END
				WHEN 'last_value' THEN CASE WHEN p.ttl IS NULL THEN 'none' ELSE 'ttl' END
				WHEN 'join' THEN 'join_bound'
				ELSE 'none' END AS retention_rule,
		   pl.retention,
		   s.arrival_rate, s.event_time_rate, s.entry_growth_rate, s.byte_growth_rate,
		   s.value_growth_rate, s.in_worker_bytes_per_entry_then, s.rates_over,
		   s.watermark, s.newest_event_time,
		   s.newest_event_time - s.watermark AS watermark_behind_events,
		   s.measured_at - s.watermark AS watermark_behind_clock,
		   s.measured_at
	  FROM weir.pipeline p
	  JOIN weir.pipelines pl ON pl.name = p.name
	 CROSS JOIN LATERAL weir._state_stats(p.id, p.operator) s;
COMMENT ON VIEW weir.state_stats IS
	'one row per running pipeline: its operator''s keys, entries and entries per key, bytes held and needed, value sizes, oldest entry''s event time, retention rule, arrival and growth rates over the last samples, and how far the watermark trails the newest event time and the clock';
GRANT SELECT ON weir.state_stats TO PUBLIC;

CREATE FUNCTION weir.explain_state(pipeline text)
RETURNS TABLE (line integer, operator text, question text, answer text, verdict text,
			   expected_entries bigint, expected_bytes bigint)
	LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	p weir.pipeline;
	s weir.state_stats;
	warning text;
	stalled text;
	per_entry float8;
	life interval;
	open_per_key float8;
	v text;
	why text;
	e_entries bigint;
	e_bytes bigint;
	lines text[];
	questions text[] := ARRAY['keys', 'values', 'lifetime', 'watermark', 'growth', 'verdict'];
BEGIN
	IF pipeline IS NULL THEN
		RAISE EXCEPTION 'pipeline must not be null' USING ERRCODE = '22004';
	END IF;
	SELECT * INTO p FROM weir.pipeline wp WHERE wp.name = explain_state.pipeline;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'pipeline "%" does not exist', pipeline USING ERRCODE = '42704',
			HINT = 'See weir.pipelines for the pipelines of this database.';
	END IF;
	SELECT * INTO s FROM weir.state_stats ss WHERE ss.pipeline = explain_state.pipeline;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'pipeline "%" is not running', pipeline USING ERRCODE = '55000',
			DETAIL = 'Its state is measured in its worker''s memory.',
			HINT = 'Start it with weir.start(), and see weir.pipelines for its status.';
	END IF;
	-- the silent partition and its holder, as weir.pipelines detects them
	SELECT pl.state_warning INTO warning FROM weir.pipelines pl WHERE pl.name = p.name;
	stalled := substring(warning FROM 'watermark stalled: .*');
	per_entry := CASE WHEN s.entries > 0 THEN s.bytes::float8 / s.entries END;

	IF p.operator = 'projection' THEN
		v := 'bounded';
		e_entries := 0;
		e_bytes := 0;
		why := 'a projection keeps no state';
	ELSIF s.retention_rule = 'none' THEN
		v := 'growing_new_keys';
		why := format('every new key adds an entry that never leaves (%s): the state grows with the number of distinct keys ever seen, %s now',
					  s.retention, s.keys);
	ELSIF stalled IS NOT NULL THEN
		v := 'growing_watermark_stalled';
		why := 'nothing that waits for the watermark leaves while it does not move: ' ||
			   substring(stalled FROM length('watermark stalled: ') + 1);
	ELSIF s.value_growth_rate > 0 AND s.entries > 0 AND s.in_worker_bytes_per_entry_then IS NOT NULL
		  AND s.in_worker_bytes::float8 / s.entries > 1.25 * s.in_worker_bytes_per_entry_then THEN
		v := 'growing_values';
		why := format('values accumulate: each entry''s aggregate state in the worker grew from %s to %s bytes over the last %s, with no more entries to explain it (an aggregate such as array_agg in a window that does not close keeps every value)',
					  round(s.in_worker_bytes_per_entry_then::numeric), round(s.in_worker_bytes::numeric / s.entries),
					  date_trunc('second', s.rates_over));
	ELSE
		v := 'bounded';
		IF p.operator = 'window' AND (p.windowing).kind = 'session' THEN
			-- a closed session leaves once the watermark passes its end + lateness
			open_per_key := 1 + ceil(extract(epoch FROM p.out_of_orderness + p.allowed_lateness) /
									 extract(epoch FROM (p.windowing).gap));
			e_entries := ceil(greatest(s.keys, 1) * open_per_key);
			why := format('%s keys x %s open sessions each (1 + (out_of_orderness %s + allowed_lateness %s) / gap %s)',
						  s.keys, open_per_key, p.out_of_orderness, p.allowed_lateness, (p.windowing).gap);
		ELSIF p.operator = 'window' THEN
			-- windows whose end + lateness the watermark has not passed,
			-- up to the newest event time (the watermark + out_of_orderness)
			open_per_key := ceil(extract(epoch FROM (p.windowing).size + p.out_of_orderness + p.allowed_lateness) /
								 extract(epoch FROM coalesce((p.windowing).slide, (p.windowing).size)));
			e_entries := ceil(greatest(s.keys, 1) * open_per_key);
			why := format('%s keys x %s open windows each ((size %s + out_of_orderness %s + allowed_lateness %s) / slide %s)',
						  s.keys, open_per_key, (p.windowing).size, p.out_of_orderness, p.allowed_lateness,
						  coalesce((p.windowing).slide, (p.windowing).size));
		ELSE
			life := CASE p.operator WHEN 'dedup' THEN p.horizon WHEN 'last_value' THEN p.ttl
						ELSE p.right_before + p.right_after END + p.out_of_orderness;
			-- records per second of event time: the span above is event time
			IF s.event_time_rate IS NOT NULL THEN
				e_entries := ceil(s.event_time_rate * extract(epoch FROM life));
				why := format('%s records per second of event time x %s (%s + out_of_orderness), as long as the rate holds',
							  round(s.event_time_rate::numeric, 1), life,
							  CASE p.operator WHEN 'dedup' THEN 'horizon' WHEN 'last_value' THEN 'ttl'
								   ELSE 'right_before + right_after' END);
			ELSE
				why := format('records per second of event time x %s, but no rate is measured yet (weir.track_state_stats off, or no sample with an event time yet)', life);
			END IF;
		END IF;
		e_bytes := ceil(e_entries * per_entry);
	END IF;

	lines := ARRAY[
		format('%s keys, %s entries (%s per key on average, at most %s)',
			   s.keys, s.entries, coalesce(round(s.entries_per_key_mean::numeric, 1)::text, 'none'),
			   coalesce(s.entries_per_key_max::text, 'none')),
		format('%s bytes held (%s needed by the entries, %s of aggregate states in the worker); values of %s bytes on average, at most %s in shared memory',
			   s.bytes, s.entry_bytes, s.in_worker_bytes,
			   coalesce(round(s.value_bytes_mean::numeric)::text, 'none'),
			   coalesce(s.value_bytes_max::text, 'none')),
		format('oldest entry at event time %s, %s behind the watermark; retention: %s',
			   coalesce(s.oldest_event_time::text, 'none'), coalesce(s.oldest_entry_age::text, 'unknown'),
			   s.retention),
		CASE WHEN s.watermark IS NULL THEN 'no watermark yet: no partition has shown an event time'
			 ELSE format('watermark %s, %s behind the newest event time and %s behind the clock',
						 s.watermark, coalesce(s.watermark_behind_events::text, 'unknown'),
						 date_trunc('second', s.watermark_behind_clock)) END
			|| coalesce('; ' || stalled, ''),
		CASE WHEN s.rates_over IS NULL THEN 'not measured: weir.track_state_stats is off, or no sample yet'
			 ELSE format('over the last %s: %s records/s arrive, entries change by %s/s, bytes by %s/s',
						 date_trunc('second', s.rates_over), round(s.arrival_rate::numeric, 1),
						 round(s.entry_growth_rate::numeric, 1), round(s.byte_growth_rate::numeric)) END,
		v || ': ' || why
			|| CASE WHEN v = 'bounded' AND e_entries IS NOT NULL
					THEN format('; expected at most about %s entries, %s bytes', e_entries,
								coalesce(e_bytes::text, 'unknown'))
					ELSE '' END];
	FOR i IN 1 .. 6 LOOP
		RETURN QUERY SELECT i, p.operator, questions[i], lines[i], v,
							CASE WHEN v = 'bounded' THEN e_entries END,
							CASE WHEN v = 'bounded' THEN e_bytes END;
	END LOOP;
END
$$;
COMMENT ON FUNCTION weir.explain_state(text) IS
	'why a running pipeline''s state has its size: keys and entries per key, values, how long entries live, the watermark, growth over the last samples, and a verdict (bounded with the size it expects, growing_new_keys, growing_values, growing_watermark_stalled)';
