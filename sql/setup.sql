-- weir installs into its own schema, with the library preloaded
CREATE EXTENSION weir;
SELECT extname, extversion, extnamespace::regnamespace FROM pg_extension WHERE extname = 'weir';
SHOW weir.database;
SHOW weir.max_partitions;

-- the public SQL surface, as \df would list it
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc p
 WHERE p.pronamespace = 'weir'::regnamespace AND p.proname !~ '^_'
 ORDER BY 1, 2;
SELECT c.relname, c.relkind FROM pg_class c
 WHERE c.relnamespace = 'weir'::regnamespace AND c.relkind IN ('r', 'v')
 ORDER BY 1;

-- the launcher runs in weir.database (this database, see test/weir.conf)
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
						   WHERE backend_type = 'weir launcher'
							 AND datname = current_database());
		PERFORM pg_sleep(0.1);
		PERFORM pg_stat_clear_snapshot();
	END LOOP;
END $$;
SELECT backend_type, datname = current_database() AS in_this_database
  FROM pg_stat_activity WHERE backend_type = 'weir launcher';

-- the GUC prefix is reserved: a misspelt weir setting is an error
SET weir.no_such_setting = 1;
\echo :LAST_ERROR_SQLSTATE

-- helpers the other suites share: the SQLSTATE of a statement ('accepted'
-- if it succeeds, and then it is rolled back), and waiting for a pipeline's
-- status (its worker runs apart)
CREATE FUNCTION public.sqlstate_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RAISE EXCEPTION 'accepted';
EXCEPTION WHEN OTHERS THEN
	RETURN CASE WHEN SQLERRM = 'accepted' THEN 'accepted' ELSE SQLSTATE END;
END $$;
CREATE FUNCTION public.wait_for_status(pipeline text, want text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	got text;
BEGIN
	FOR i IN 1 .. 600 LOOP
		SELECT status INTO got FROM weir.pipelines WHERE name = pipeline;
		EXIT WHEN got = want;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN got;
END $$;
CREATE FUNCTION public.wait_for_pipeline(pipeline text, condition text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	met boolean;
BEGIN
	FOR i IN 1..300 LOOP
		EXECUTE format('SELECT EXISTS (SELECT FROM weir.pipelines WHERE name = %L AND (%s))',
					   pipeline, condition) INTO met;
		IF met THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN false;
END $$;
-- the watermark of a pipeline's last checkpoint: the one its sink reflects
CREATE FUNCTION public.checkpoint_watermark(pipeline text) RETURNS timestamptz
LANGUAGE sql AS $$
	SELECT c.watermark FROM weir.checkpoints c JOIN weir.pipeline p ON p.id = c.pipeline_id
	 WHERE p.name = pipeline ORDER BY c.id DESC LIMIT 1 $$;
-- differences between a sink (a table, or a subquery with an alias) and the
-- plain-SQL answer (the "oracle", a query with the sink's columns): none
-- expected
CREATE FUNCTION public.oracle_diff(sink text, oracle text)
RETURNS TABLE (side text, row_image text) LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT ''only in sink'', s::text FROM (SELECT * FROM %s EXCEPT ALL SELECT * FROM (%s) o) s '
		'UNION ALL '
		'SELECT ''only in oracle'', o::text FROM (SELECT * FROM (%s) o EXCEPT ALL SELECT * FROM %s) o '
		'ORDER BY 1, 2', sink, oracle, oracle, sink);
END $$;
