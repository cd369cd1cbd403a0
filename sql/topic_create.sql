-- creating topics: the table weir builds, and every documented error
SELECT weir.create_topic('orders', 'customer int, amount numeric NOT NULL, note text DEFAULT ''none''',
                         partitions => 4, key => 'customer');
\d orders
SELECT topic, partitions, key_column, retention, rows, head_positions, stable_positions, consumers
  FROM weir.topics;

-- schema-qualified and quoted names, no key, retention, CHECK constraints
CREATE SCHEMA streams;
SELECT weir.create_topic('streams."Clicks"', 'url text CHECK (url <> ''''), at timestamptz',
                         retention => '7 days');
SELECT weir.create_topic(name => 'events', columns => 'id bigint, body jsonb',
                         partitions => 2, key => 'id', retention => '1 hour');
SELECT topic, partitions, key_column, retention FROM weir.topics ORDER BY topic::text;

-- producing: partitions from the key hash, positions dense per partition
INSERT INTO orders (customer, amount) SELECT g % 7, g FROM generate_series(1, 100) g;
SELECT part, count(*), min(pos), max(pos), count(DISTINCT customer) AS customers
  FROM orders GROUP BY part ORDER BY part;
-- one key always lands in one partition
SELECT customer, count(DISTINCT part) AS partitions FROM orders GROUP BY customer ORDER BY customer;
-- an explicit partition wins over the key; a given pos is replaced
INSERT INTO orders (part, pos, customer, amount) VALUES (3, 999, 1, 1) RETURNING part, pos <> 999 AS pos_assigned;
-- COPY works like INSERT
COPY orders (customer, amount, note) FROM stdin;
1	10	copied
2	20	copied
\.
SELECT count(*) FROM orders WHERE note = 'copied';
-- a topic without key: the producing session sticks to one partition
INSERT INTO streams."Clicks" (url) SELECT 'u' || g FROM generate_series(1, 10) g;
SELECT count(DISTINCT part) AS partitions_used, count(*) FROM streams."Clicks";

-- errors: each with its SQLSTATE
SELECT weir.create_topic('bad', 'a int', partitions => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int', partitions => 100000);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a nosuchtype');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int', key => 'b');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int', key => 'A');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int, b int[]', key => 'b');
SELECT weir.drop_topic('bad');
SELECT weir.create_topic('bad', 'a int, p point', key => 'p');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int); DROP TABLE orders; --');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int) INHERITS (orders');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', '');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'pos int');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int PRIMARY KEY');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int, UNIQUE (a)');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('bad', 'a int', retention => '-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic(NULL, 'a int');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('orders', 'a int');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.create_topic('nosuchschema.t', 'a int');
\echo :LAST_ERROR_SQLSTATE

-- producer errors
INSERT INTO orders (part, customer, amount) VALUES (4, 1, 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO orders (customer, amount) VALUES (NULL, 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO orders (part, customer, amount) VALUES (0, NULL, 1);
-- topics are append-only
UPDATE orders SET amount = 0;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM orders;
\echo :LAST_ERROR_SQLSTATE
TRUNCATE orders;
\echo :LAST_ERROR_SQLSTATE
-- session_replication_role does not bypass the triggers
SET session_replication_role = replica;
INSERT INTO orders (customer, amount) VALUES (1, 1) RETURNING part >= 0 AS routed, pos > 0 AS positioned;
DELETE FROM orders;
RESET session_replication_role;
-- a transaction that produced cannot be prepared
BEGIN;
INSERT INTO orders (customer, amount) VALUES (1, 1);
PREPARE TRANSACTION 'weir_test';
\echo :LAST_ERROR_SQLSTATE
-- one that did not produce can
BEGIN;
SELECT count(*) > 0 FROM orders;
PREPARE TRANSACTION 'weir_test';
ROLLBACK PREPARED 'weir_test';

-- altering retention
SELECT weir.alter_topic_retention('orders', '2 days');
SELECT weir.alter_topic_retention('orders', '0 days');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_topic_retention('orders', NULL);
SELECT retention FROM weir.topics WHERE topic = 'orders'::regclass;

-- dropping: by weir.drop_topic or by plain DROP TABLE, both forget it
CREATE TABLE plain (a int);
SELECT weir.drop_topic('plain');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.drop_topic('streams."Clicks"');
DROP TABLE events;
SELECT topic FROM weir.topics ORDER BY 1;
SELECT count(*) FROM weir.topic WHERE relid NOT IN (SELECT oid FROM pg_class);

-- only the owner drops or alters a topic
CREATE ROLE weir_other;
SET ROLE weir_other;
SELECT weir.drop_topic('orders');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.alter_topic_retention('orders', '1 day');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- a rolled-back create_topic leaves nothing behind
BEGIN;
SELECT weir.create_topic('ephemeral', 'a int');
ROLLBACK;
SELECT to_regclass('ephemeral') IS NULL AS no_table,
       NOT EXISTS (SELECT FROM weir.topic t WHERE t.relid NOT IN (SELECT oid FROM pg_class)) AS no_catalog_row;
DROP TABLE plain;
DROP ROLE weir_other;
