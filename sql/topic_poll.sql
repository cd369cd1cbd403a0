-- weir.poll: a transactional consumer
SELECT weir.create_topic('q', 'k int, v text', partitions => 3, key => 'k');
INSERT INTO q (k, v) SELECT g, 'v' || g FROM generate_series(1, 30) g;
CREATE TABLE done (part int, pos bigint, v text);

-- the first poll creates the consumer; each partition gets its share
BEGIN;
INSERT INTO done SELECT part, pos, v FROM weir.poll(NULL::q, 'c', 6);
SELECT part, count(*) FROM done GROUP BY part ORDER BY part;
COMMIT;
SELECT partition, committed_position, lag FROM weir.topic_consumers
 WHERE consumer = 'c' ORDER BY partition;

-- a rollback gives the rows back
BEGIN;
SELECT count(*) FROM weir.poll(NULL::q, 'c', 5);
ROLLBACK;
SELECT sum(committed_position) FROM weir.topic_consumers WHERE consumer = 'c';

-- consume the rest in small steps; every row exactly once
INSERT INTO done SELECT part, pos, v FROM weir.poll(NULL::q, 'c', 7);
INSERT INTO done SELECT part, pos, v FROM weir.poll(NULL::q, 'c', 7);
INSERT INTO done SELECT part, pos, v FROM weir.poll(NULL::q, 'c', 100);
SELECT count(*) FROM weir.poll(NULL::q, 'c', 100);
SELECT (SELECT count(*) FROM done) AS consumed,
       (SELECT count(*) FROM (SELECT part, pos FROM done GROUP BY 1, 2 HAVING count(*) > 1) d) AS duplicates,
       (SELECT count(*) FROM (SELECT part, pos, v FROM q EXCEPT SELECT * FROM done) m) AS missing;
SELECT partition, committed_position, lag FROM weir.topic_consumers
 WHERE consumer = 'c' ORDER BY partition;

-- new rows arrive after the consumer's positions
INSERT INTO q (k, v) VALUES (1, 'late');
SELECT v FROM weir.poll(NULL::q, 'c', 100);

-- consumers are independent
SELECT count(*) FROM weir.poll(NULL::q, 'other', 1000);
SELECT consumer, sum(committed_position) FROM weir.topic_consumers GROUP BY 1 ORDER BY 1;

-- seek back and read again; seek is bounded by the newest stable row
SELECT weir.seek('q', 'c', 0, 0);
SELECT count(*) = (SELECT count(*) FROM q WHERE part = 0) AS reread_partition_0
  FROM weir.poll(NULL::q, 'c', 1000);
SELECT weir.seek('q', 'c', 0, 1000000);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.seek('q', 'c', 5, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT weir.seek('q', 'c', 0, -1);
\echo :LAST_ERROR_SQLSTATE

-- errors
SELECT * FROM weir.poll(NULL::q, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.poll(NULL::q, '');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.poll(NULL::q, 'c', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM weir.poll('q', 'c');
\echo :LAST_ERROR_SQLSTATE

-- dropping consumers
SELECT weir.drop_consumer('q', 'other');
SELECT weir.drop_consumer('q', 'other');
SELECT DISTINCT consumer FROM weir.topic_consumers ORDER BY 1;

-- dropping the topic drops its consumers
SELECT weir.drop_topic('q');
SELECT count(*) FROM weir.consumer_position;
DROP TABLE done;
