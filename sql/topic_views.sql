-- weir.topics, weir.topic_partitions, weir.topic_consumers, and retention
SELECT weir.create_topic('v', 'x int', partitions => 2, retention => '1 hour');
INSERT INTO v (part, x) SELECT g % 2, g FROM generate_series(1, 40) g;
SELECT weir.seek('v', 'slow', 0, 5);
SELECT weir.seek('v', 'slow', 1, 12);
SELECT weir.seek('v', 'fast', 0, 20);
SELECT weir.seek('v', 'fast', 1, 20);

SELECT topic, partitions, key_column, retention, rows, head_positions,
       stable_positions, consumers
  FROM weir.topics WHERE topic = 'v'::regclass;
SELECT topic, partition, rows, head_position, stable_position, open_producers,
       oldest_producer_pid, oldest_producer_position, oldest_producer_since
  FROM weir.topic_partitions WHERE topic = 'v'::regclass ORDER BY partition;
SELECT topic, consumer, partition, committed_position, lag
  FROM weir.topic_consumers ORDER BY consumer, partition;

-- retention: nothing is old enough yet (this call records a time sample)
SELECT weir.run_retention('v');
-- two hours later (weir's clock, moved for the test), rows that every
-- consumer has passed are deleted, and nothing else
SET weir.clock_offset = '2h';
SELECT weir.run_retention('v');
SELECT part, min(pos), max(pos), count(*) FROM v GROUP BY part ORDER BY part;
-- once every consumer is done, only the newest row of each partition stays
SELECT weir.drop_consumer('v', 'slow');
SELECT weir.run_retention('v');
SELECT part, min(pos), max(pos), count(*) FROM v GROUP BY part ORDER BY part;
SELECT weir.drop_consumer('v', 'fast');
SELECT weir.run_retention();
SELECT part, pos, x FROM v ORDER BY part, pos;
RESET weir.clock_offset;
-- positions continue above the retained rows
INSERT INTO v (part, x) VALUES (0, 100), (1, 101) RETURNING part, pos, x;

-- retention errors and privileges
SELECT weir.create_topic('forever', 'x int');
SELECT weir.run_retention('forever');
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE weir_stranger;
SET ROLE weir_stranger;
SELECT weir.run_retention('v');
\echo :LAST_ERROR_SQLSTATE
SELECT weir.run_retention();
SET weir.clock_offset = '1h';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE weir_stranger;
SELECT weir.drop_topic('forever');
SELECT weir.drop_topic('v');
SELECT count(*) FROM weir.topic_time_index;
