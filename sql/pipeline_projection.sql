-- A projection is a stateless stage: every record that passes the filter,
-- as the given columns, into a table or another topic, exactly once.
SET timezone = 'UTC';
SELECT weir.create_topic('pj_events', 'kind text, user_id int, cents bigint, ts timestamptz',
                         partitions => 2, key => 'user_id');
SELECT weir.create_topic('pj_purchases', 'user_id int, euros numeric, ts timestamptz',
                         partitions => 2, key => 'user_id');

-- errors
SELECT weir.create_projection('bad', 'pj_events', columns => 'user_id, random() AS r');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_projection('bad', 'pj_events', filter => 'kind = ''buy'' AND cost > 0');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_projection('bad', 'pj_events', sink => 'pj_events');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_projection('bad', 'pj_events', columns => 'user_id, cents AS euros, ts',
                              sink => 'pj_purchases');
\echo :LAST_ERROR_SQLSTATE

-- purchases only, in euros, into a topic; and everything, as is, into a table
SELECT weir.create_projection('purchases', 'pj_events',
                              columns => 'user_id, cents / 100.0 AS euros, ts',
                              filter => 'kind = ''buy''', sink => 'pj_purchases') > 0 AS created;
SELECT weir.create_projection('copy', 'pj_events') > 0 AS created;
\d copy
INSERT INTO pj_events (kind, user_id, cents, ts)
SELECT CASE WHEN g % 3 = 0 THEN 'buy' ELSE 'view' END, g % 17, g * 10,
       '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 3000) g;
SELECT weir.checkpoint('purchases') > 0 AS checkpointed;
SELECT weir.checkpoint('copy') > 0 AS checkpointed;
SELECT (SELECT count(*) FROM pj_purchases) AS purchases,
       (SELECT count(*) FROM (SELECT user_id, cents / 100.0, ts FROM pj_events WHERE kind = 'buy'
                              EXCEPT ALL SELECT user_id, euros, ts FROM pj_purchases) x) AS missing,
       (SELECT count(*) FROM (SELECT user_id, euros, ts FROM pj_purchases EXCEPT ALL
                              SELECT user_id, cents / 100.0, ts FROM pj_events WHERE kind = 'buy') x) AS extra,
       (SELECT count(*) FROM (SELECT kind, user_id, cents, ts FROM pj_events
                              EXCEPT ALL SELECT * FROM copy) x) AS copy_missing,
       (SELECT count(*) FROM copy) AS copied;
SELECT name, operator, records_in, records_out, retention, state_warning, windows
  FROM weir.pipelines WHERE name IN ('purchases', 'copy') ORDER BY name;

SELECT weir.drop_pipeline('purchases');
SELECT weir.drop_pipeline('copy');
DROP TABLE copy;
SELECT weir.drop_topic('pj_purchases');
SELECT weir.drop_topic('pj_events');
