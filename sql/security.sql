-- Hardening (issue 15): untrusted roles with CREATE on a schema of their
-- own, owning their own topics, sinks and functions.  Each case asserts the
-- SQLSTATE of a refusal and that nothing else changed (the attacker is no
-- superuser, the pipeline still runs what it was defined with, its sink
-- equals the plain-SQL answer).
SET timezone = 'UTC';
SET DateStyle = 'ISO, YMD';
CREATE ROLE sec_mallory;
CREATE ROLE sec_alice;
CREATE SCHEMA sec_mallory AUTHORIZATION sec_mallory;
CREATE SCHEMA sec_alice AUTHORIZATION sec_alice;
GRANT CREATE ON SCHEMA public TO sec_mallory, sec_alice;
-- what any of mallory's functions saw when it ran
CREATE TABLE public.ran_as (what text, role name);
GRANT INSERT, SELECT ON public.ran_as TO PUBLIC;

------------------------------------------------------------------------------
-- 1. Retention acts as the topic's owner, restricted: a trigger, a rule or a
-- policy of the owner's runs with the owner's rights, never the launcher's.
------------------------------------------------------------------------------
SET ROLE sec_mallory;
SELECT weir.create_topic('trap', 'v text', retention => '1 hour');
CREATE FUNCTION sec_mallory.on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ran_as VALUES ('trigger', current_user);
	EXECUTE 'ALTER ROLE sec_mallory SUPERUSER';
	RETURN OLD;
END $$;
CREATE TRIGGER escalate BEFORE DELETE ON trap FOR EACH ROW EXECUTE FUNCTION sec_mallory.on_delete();
INSERT INTO trap (v) VALUES ('a'), ('b'), ('c');
RESET ROLE;
-- the superuser's retention (as the launcher's): samples now, deletes 2h later
SELECT weir.run_retention('sec_mallory.trap');
SET weir.clock_offset = '2h';
SELECT sqlstate_of($$SELECT weir.run_retention('sec_mallory.trap')$$);
RESET weir.clock_offset;
SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_mallory';
SELECT count(*) AS rows_kept FROM sec_mallory.trap;
-- a trigger that only records who runs it: the owner, and retention goes on
SET ROLE sec_mallory;
CREATE OR REPLACE FUNCTION sec_mallory.on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ran_as VALUES ('trigger', current_user);
	RETURN OLD;
END $$;
RESET ROLE;
SET weir.clock_offset = '2h';
SELECT weir.run_retention('sec_mallory.trap') AS deleted;
RESET weir.clock_offset;
SELECT DISTINCT what, role FROM public.ran_as;
TRUNCATE public.ran_as;
-- a rule: also the owner's
SET ROLE sec_mallory;
DROP TRIGGER escalate ON trap;
CREATE FUNCTION sec_mallory.grab() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ran_as VALUES ('rule', current_user);
	EXECUTE 'ALTER ROLE sec_mallory SUPERUSER';
	RETURN true;
END $$;
CREATE RULE escalate AS ON DELETE TO trap DO ALSO SELECT sec_mallory.grab();
INSERT INTO trap (v) VALUES ('d'), ('e');
RESET ROLE;
SELECT weir.run_retention('sec_mallory.trap');
SET weir.clock_offset = '2h';
SELECT sqlstate_of($$SELECT weir.run_retention('sec_mallory.trap')$$);
RESET weir.clock_offset;
SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_mallory';
-- a policy function, forced on the owner: the owner's again (refused, and
-- rolled back with the rest: nothing recorded)
SET ROLE sec_mallory;
DROP RULE escalate ON trap;
ALTER TABLE trap ENABLE ROW LEVEL SECURITY;
ALTER TABLE trap FORCE ROW LEVEL SECURITY;
CREATE POLICY everything ON trap USING (sec_mallory.grab());
RESET ROLE;
SET weir.clock_offset = '2h';
SELECT sqlstate_of($$SELECT weir.run_retention('sec_mallory.trap')$$);
RESET weir.clock_offset;
SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_mallory';
SELECT DISTINCT what, role FROM public.ran_as ORDER BY 1;
TRUNCATE public.ran_as;
-- weir.topic_partitions counts rows as the caller: the policy runs as the
-- superuser's session would not (superusers bypass it), nothing escalates
SELECT rows FROM weir.topic_partitions WHERE topic = 'sec_mallory.trap'::regclass;
SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_mallory';

------------------------------------------------------------------------------
-- 2. Definitions bind like views: an operator created later on a
-- search_path does not change what a pipeline runs.
------------------------------------------------------------------------------
SELECT weir.create_topic('visits', 'page varchar, at timestamptz, n bigint', partitions => 2);
SELECT weir.create_pipeline('x_visits', 'visits', key => 'page', event_time => 'at',
                            windowing => weir.tumbling('1 minute'),
                            aggregates => 'count(*) AS hits, sum(n) AS total',
                            filter => 'page = ''x''::text', checkpoint_interval => '1 hour') > 0 AS created;
SELECT pg_get_viewdef('weir_pipelines.x_visits'::regclass);
SET ROLE sec_mallory;
CREATE FUNCTION public.evil_eq(varchar, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ran_as VALUES ('operator', current_user);
	EXECUTE 'ALTER ROLE sec_mallory SUPERUSER';
	RETURN true;
END $$;
CREATE OPERATOR public.= (LEFTARG = varchar, RIGHTARG = text, FUNCTION = public.evil_eq);
RESET ROLE;
-- restart the worker: it loads the bound definition
SELECT weir.stop('x_visits');
SELECT weir.start('x_visits');
INSERT INTO visits (page, at, n)
SELECT CASE WHEN g % 3 = 0 THEN 'x' ELSE 'y' END, '2026-01-01 00:00:00+00'::timestamptz + g * interval '7 s', g
  FROM generate_series(1, 100) g;
INSERT INTO visits (part, page, at, n) VALUES (0, 'x', '2026-01-01 05:00:00+00', 0), (1, 'x', '2026-01-01 05:00:00+00', 0);
SELECT weir.checkpoint('x_visits') > 0 AS checkpointed;
SELECT count(*) AS ran FROM public.ran_as;
SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_mallory';
SET ROLE sec_mallory;
DROP OPERATOR public.= (varchar, text);
DROP FUNCTION public.evil_eq(varchar, text);
RESET ROLE;
-- the sink is the GROUP BY of the rows the bound filter keeps
WITH o AS (SELECT page::text AS page, date_trunc('minute', at) AS window_start, count(*) AS hits, sum(n) AS total
             FROM visits WHERE page = 'x' AND at < '2026-01-01 01:00:00+00' GROUP BY 1, 2),
     s AS (SELECT page::text, window_start, hits, total FROM x_visits)
SELECT (SELECT count(*) FROM o) AS oracle_rows, (SELECT count(*) FROM s) AS sink_rows,
       (SELECT count(*) FROM (SELECT * FROM o EXCEPT SELECT * FROM s) d) +
       (SELECT count(*) FROM (SELECT * FROM s EXCEPT SELECT * FROM o) d) AS differing;

------------------------------------------------------------------------------
-- 3. pg_depend: what a pipeline reads and writes keeps its shape.
------------------------------------------------------------------------------
-- the reproductions: a sink's column type, a topic's column type, a summed column
SELECT sqlstate_of($$ALTER TABLE x_visits ALTER COLUMN total TYPE text$$);
SELECT sqlstate_of($$ALTER TABLE visits ALTER COLUMN page TYPE bigint USING length(page)$$);
SELECT sqlstate_of($$ALTER TABLE visits ALTER COLUMN n TYPE text$$);
-- a topic's positions and its key on them
SELECT sqlstate_of($$ALTER TABLE visits ALTER COLUMN pos TYPE numeric$$);
SELECT sqlstate_of($$ALTER TABLE visits ALTER COLUMN part TYPE bigint$$);
SELECT sqlstate_of($$ALTER TABLE visits DROP CONSTRAINT visits_pkey$$);
SELECT sqlstate_of($$ALTER TABLE visits DROP COLUMN n$$);
SELECT sqlstate_of($$ALTER TABLE x_visits DROP COLUMN hits$$);
SELECT sqlstate_of($$DROP TABLE x_visits$$);
SELECT sqlstate_of($$DROP TABLE visits$$);
-- nothing changed: the pipeline runs, its columns are as they were
SELECT name, status, enabled FROM weir.pipeline WHERE name = 'x_visits';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'x_visits'::regclass AND attnum > 0 ORDER BY attnum;
-- a sink column weir does not write may change; a NOT NULL one without a
-- default is noticed by the worker: the pipeline stops, disabled, and says why
ALTER TABLE x_visits ADD COLUMN note text;
ALTER TABLE x_visits ALTER COLUMN note TYPE varchar;
ALTER TABLE x_visits DROP COLUMN note;
ALTER TABLE x_visits ADD COLUMN note text NOT NULL DEFAULT 'n';
ALTER TABLE x_visits ALTER COLUMN note DROP DEFAULT;
SELECT wait_for_status('x_visits', 'failed');
SELECT status, enabled, last_error FROM weir.pipeline WHERE name = 'x_visits';
-- weir.start says so at once, until the table is fixed
SELECT sqlstate_of($$SELECT weir.start('x_visits')$$);
ALTER TABLE x_visits DROP COLUMN note;
SELECT weir.start('x_visits');
SELECT wait_for_status('x_visits', 'running');
-- CASCADE drops the pipeline with the table
DROP TABLE x_visits CASCADE;
SELECT count(*) AS pipelines FROM weir.pipelines WHERE name = 'x_visits';
SELECT count(*) AS definitions FROM pg_class WHERE relnamespace = 'weir_pipelines'::regnamespace;

------------------------------------------------------------------------------
-- 4. Owners are recorded in pg_shdepend: DROP ROLE, REASSIGN OWNED, DROP OWNED.
------------------------------------------------------------------------------
SET ROLE sec_mallory;
SELECT weir.create_topic('events', 'k int, at timestamptz');
SELECT weir.create_last_value('m_last', 'events', key => 'k', event_time => 'at', start => false) > 0 AS created;
-- the definition is weir's: the owner cannot replace it
SELECT sqlstate_of($$CREATE OR REPLACE VIEW weir_pipelines.m_last AS SELECT 1 AS k$$);
SELECT sqlstate_of($$CREATE VIEW weir_pipelines.other AS SELECT 1 AS k$$);
RESET ROLE;
-- the owner is the definition's, in pg_shdepend
SELECT count(*) AS shdepend FROM pg_shdepend
 WHERE classid = 'pg_class'::regclass AND objid = 'weir_pipelines.m_last'::regclass
   AND refobjid = 'sec_mallory'::regrole AND deptype = 'o';
SELECT sqlstate_of($$DROP ROLE sec_mallory$$);
SELECT name, owner FROM weir.pipelines WHERE name = 'm_last';
CREATE ROLE sec_heir;
REASSIGN OWNED BY sec_mallory TO sec_heir;
SELECT name, owner FROM weir.pipelines WHERE name = 'm_last';
DROP OWNED BY sec_heir;
SELECT count(*) AS pipelines FROM weir.pipelines WHERE name = 'm_last';
DROP ROLE sec_heir;
-- mallory's schema went with DROP OWNED BY sec_heir (it had been reassigned)
CREATE SCHEMA sec_mallory AUTHORIZATION sec_mallory;

------------------------------------------------------------------------------
-- 5. Row-level security: a pipeline over a topic whose policies apply to
-- its owner is refused, at creation and at each start.
------------------------------------------------------------------------------
SET ROLE sec_alice;
SELECT weir.create_topic('private', 'k int, at timestamptz, secret text');
INSERT INTO private (k, at, secret) VALUES (1, '2026-01-01', 'alice only'), (2, '2026-01-01', 'shared');
GRANT SELECT ON private TO sec_mallory;
GRANT USAGE ON SCHEMA sec_alice TO sec_mallory;
ALTER TABLE private ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_shared ON private FOR SELECT USING (secret = 'shared');
RESET ROLE;
SET ROLE sec_mallory;
SELECT count(*) AS visible_to_mallory FROM sec_alice.private;
SELECT sqlstate_of($$SELECT weir.create_projection('m_copy', 'sec_alice.private')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_dedup', 'sec_alice.private', key => 'k', event_time => 'at')$$);
RESET ROLE;
-- enabled while the pipeline runs: the worker notices (the relation
-- changed) and stops, disabled; weir.start refuses it then, at once
SET ROLE sec_alice;
ALTER TABLE private DISABLE ROW LEVEL SECURITY;
RESET ROLE;
SET ROLE sec_mallory;
SELECT weir.create_projection('m_copy', 'sec_alice.private', sink => 'sec_mallory.m_copy') > 0 AS created;
SELECT weir.checkpoint('m_copy') > 0 AS checkpointed;
SELECT count(*) AS copied_while_allowed FROM sec_mallory.m_copy;
RESET ROLE;
SET ROLE sec_alice;
ALTER TABLE private ENABLE ROW LEVEL SECURITY;
RESET ROLE;
SELECT wait_for_status('m_copy', 'failed');
SELECT status, enabled, last_error FROM weir.pipeline WHERE name = 'm_copy';
SET ROLE sec_mallory;
SELECT sqlstate_of($$SELECT weir.start('m_copy')$$);
RESET ROLE;
SELECT weir.drop_pipeline('m_copy');

------------------------------------------------------------------------------
-- 6. Every table weir writes for a user is checked as a sink is.
------------------------------------------------------------------------------
SET ROLE sec_mallory;
SELECT weir.create_topic('clicks', 'user_id int, at timestamptz');
-- weir's catalog, the system catalog
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'weir.pipeline_position')$$);
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'pg_catalog.pg_class')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'weir.pipeline_position')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'pg_catalog.pg_class')$$);
-- its own source, as sink and as late records
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'clicks')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'clicks')$$);
-- late records into the sink
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              sink => 'm_sink', late_records => 'm_sink')$$);
-- a temporary table
CREATE TEMP TABLE tmp_sink (user_id int, at timestamptz);
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'pg_temp.tmp_sink')$$);
-- a view
CREATE VIEW v_sink AS SELECT 1 AS user_id, now() AS at;
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'v_sink')$$);
-- a column weir would not fill, NOT NULL without a default
CREATE TABLE strict_sink (user_id int, at timestamptz, must text NOT NULL);
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', sink => 'strict_sink')$$);
-- with a default it is fine
ALTER TABLE strict_sink ALTER COLUMN must SET DEFAULT 'filled';
SELECT weir.create_projection('m_ok', 'clicks', sink => 'strict_sink', start => false) > 0 AS created;
SELECT weir.drop_pipeline('m_ok');
-- a unique index over one column twice is not the key (user_id, window_start)
CREATE TABLE dup_key_sink (user_id int, window_start timestamptz, window_end timestamptz, n bigint);
CREATE UNIQUE INDEX ON dup_key_sink (window_start, window_start);
SELECT sqlstate_of($$SELECT weir.create_pipeline('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                                 windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                                                 sink => 'dup_key_sink')$$);
-- late records of the wrong shape
CREATE TABLE late_wrong (user_id text, at timestamptz, watermark timestamptz, received_at timestamptz, part int, pos bigint);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'late_wrong')$$);
CREATE TABLE late_short (part int, pos bigint, user_id int, at timestamptz);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'late_short')$$);
RESET ROLE;
-- someone else's table, without the privileges
SET ROLE sec_alice;
CREATE TABLE sec_alice.target (part int, pos bigint, user_id int, at timestamptz,
                               watermark timestamptz, received_at timestamptz);
GRANT SELECT ON sec_alice.target TO sec_mallory;
RESET ROLE;
SET ROLE sec_mallory;
SELECT sqlstate_of($$SELECT weir.create_projection('m_bad', 'clicks', columns => 'user_id, at',
                                                   sink => 'sec_alice.target')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'clicks', key => 'user_id', event_time => 'at',
                                              late_records => 'sec_alice.target')$$);
-- a sink weir would create where the owner may not: the error is
-- PostgreSQL's, without weir's internal statement in its context
SELECT weir.create_projection('m_bad', 'clicks', sink => 'sec_alice.new_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS mallorys_pipelines FROM weir.pipelines WHERE owner::text = 'sec_mallory';
-- a late-records table that changes shape after creation: allowed (it
-- mirrors the topic, whose unused columns may change too), and the pipeline
-- does not start until they match again; the table cannot be dropped
SELECT weir.create_dedup('m_late', 'clicks', key => 'user_id', event_time => 'at',
                         late_records => 'm_late_records', start => false) > 0 AS created;
ALTER TABLE m_late_records ALTER COLUMN user_id TYPE text;
SELECT sqlstate_of($$SELECT weir.start('m_late')$$);
ALTER TABLE m_late_records ALTER COLUMN user_id TYPE int USING user_id::int;
ALTER TABLE m_late_records DROP COLUMN watermark;
SELECT sqlstate_of($$SELECT weir.start('m_late')$$);
ALTER TABLE m_late_records ADD COLUMN watermark timestamptz;
SELECT sqlstate_of($$SELECT weir.start('m_late')$$);
SELECT sqlstate_of($$DROP TABLE m_late_records$$);
SELECT weir.drop_pipeline('m_late');
RESET ROLE;

------------------------------------------------------------------------------
-- 7. A topic that no longer has a topic's shape is refused, not misread.
------------------------------------------------------------------------------
SET ROLE sec_mallory;
SELECT weir.create_topic('bent', 'v int');
INSERT INTO bent (v) VALUES (1), (2);
ALTER TABLE bent DROP CONSTRAINT bent_pkey;
SELECT sqlstate_of($$SELECT * FROM weir.read(NULL::bent, 0, 0, 10)$$);
SELECT sqlstate_of($$SELECT weir.create_projection('m_bent', 'bent')$$);
ALTER TABLE bent ADD PRIMARY KEY (pos, part);
SELECT sqlstate_of($$SELECT * FROM weir.read(NULL::bent, 0, 0, 10)$$);
ALTER TABLE bent DROP CONSTRAINT bent_pkey;
ALTER TABLE bent ALTER COLUMN pos TYPE numeric;
ALTER TABLE bent ADD PRIMARY KEY (part, pos);
SELECT sqlstate_of($$SELECT * FROM weir.read(NULL::bent, 0, 0, 10)$$);
SELECT sqlstate_of($$INSERT INTO bent (v) VALUES (3)$$);
RESET ROLE;

------------------------------------------------------------------------------
-- 8. Required arguments: NULL is an error (22004), not a silent NULL.
------------------------------------------------------------------------------
SELECT sqlstate_of($$SELECT weir.tumbling(NULL)$$);
SELECT sqlstate_of($$SELECT weir.hopping(NULL, '1 minute')$$);
SELECT sqlstate_of($$SELECT weir.hopping('1 minute', NULL)$$);
SELECT sqlstate_of($$SELECT weir.session(NULL)$$);
SELECT sqlstate_of($$SELECT weir.start(NULL)$$);
SELECT sqlstate_of($$SELECT weir.stop(NULL)$$);
SELECT sqlstate_of($$SELECT weir.drop_pipeline(NULL)$$);
SELECT sqlstate_of($$SELECT weir.checkpoint(NULL)$$);
SELECT sqlstate_of($$SELECT weir.checkpoint('x', NULL)$$);
SELECT sqlstate_of($$SELECT weir.drop_topic(NULL)$$);
SELECT sqlstate_of($$SELECT weir.stable_position(NULL, 0)$$);
SELECT sqlstate_of($$SELECT weir.stable_position('sec_mallory.clicks', NULL)$$);
SELECT sqlstate_of($$SELECT weir.drop_consumer(NULL, 'c')$$);
SELECT sqlstate_of($$SELECT * FROM weir.live_state(NULL)$$);
SELECT sqlstate_of($$SELECT * FROM weir.committed_state(NULL)$$);
SELECT weir.tumbling(NULL);
-- names: PostgreSQL's limit is 63 bytes, and the message says bytes
SELECT weir.create_last_value(repeat('é', 32), 'sec_mallory.clicks', key => 'user_id', event_time => 'at');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_last_value(repeat('é', 31), 'sec_mallory.clicks', key => 'user_id', event_time => 'at',
                              sink => 'public.long_name_sink', start => false) > 0 AS created;
SELECT length(name) AS characters, octet_length(name) AS bytes FROM weir.pipeline WHERE name LIKE 'é%';
SELECT weir.drop_pipeline(repeat('é', 31));
DROP TABLE public.long_name_sink;

------------------------------------------------------------------------------
-- 9. Durations at the edge of their types are refused (22023).
------------------------------------------------------------------------------
SELECT sqlstate_of($$SELECT weir.tumbling('2000 years')$$);
SELECT sqlstate_of($$SELECT weir.hopping('2000 years', '1000 years')$$);
SELECT sqlstate_of($$SELECT weir.session('-1 second')$$);
SELECT sqlstate_of($$SELECT weir.create_pipeline('m_bad', 'sec_mallory.clicks', key => 'user_id', event_time => 'at',
                                                 windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                                                 out_of_orderness => '2000 years')$$);
SELECT sqlstate_of($$SELECT weir.create_pipeline('m_bad', 'sec_mallory.clicks', key => 'user_id', event_time => 'at',
                                                 windowing => weir.tumbling('1 minute'), aggregates => 'count(*) AS n',
                                                 allowed_lateness => '-2000 years')$$);
SELECT sqlstate_of($$SELECT weir.create_dedup('m_bad', 'sec_mallory.clicks', key => 'user_id', event_time => 'at',
                                              horizon => '1000000 years')$$);

------------------------------------------------------------------------------
-- 10. Event triggers fire ALWAYS, also under session_replication_role = replica.
------------------------------------------------------------------------------
SELECT evtname, evtenabled FROM pg_event_trigger WHERE evtname LIKE 'weir%' ORDER BY 1;
SET session_replication_role = replica;
DROP TABLE sec_mallory.bent;
RESET session_replication_role;
SELECT count(*) AS dangling_topics FROM weir.topic WHERE relid NOT IN (SELECT oid FROM pg_class);

------------------------------------------------------------------------------
-- 11. Pipelines run only in weir.database.
------------------------------------------------------------------------------
CREATE DATABASE weir_elsewhere;
\c weir_elsewhere
CREATE EXTENSION weir;
SELECT weir.create_topic('t', 'k int, at timestamptz');
SELECT weir.create_last_value('lv', 't', key => 'k', event_time => 'at');
\echo :LAST_ERROR_SQLSTATE
\c contrib_regression
DROP DATABASE weir_elsewhere;

-- clean up: the roles' objects go with DROP OWNED, topics forgotten
SELECT weir.drop_topic('visits');
DROP OWNED BY sec_mallory, sec_alice;
DROP ROLE sec_mallory, sec_alice;
DROP TABLE public.ran_as;
SELECT count(*) AS pipelines, (SELECT count(*) FROM weir.topic WHERE relid NOT IN (SELECT oid FROM pg_class)) AS dangling_topics
  FROM weir.pipeline;
