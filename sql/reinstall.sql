-- DROP EXTENSION then CREATE EXTENSION: weir's catalog starts again, and a
-- topic that gets the id of a topic of the dropped catalog starts from
-- position 1, not where the old one stopped (its shared-memory slots are
-- stale).  Runs last: it drops everything weir made in this database.
-- (the objects it cascades to depend on the suites before: not shown)
SET client_min_messages = warning;
DROP EXTENSION weir CASCADE;
CREATE EXTENSION weir;
SELECT weir.create_topic('first_life', 'x int', partitions => 2);
SELECT id FROM weir.topic;
INSERT INTO first_life (part, x) SELECT 1, g FROM generate_series(1, 10) g;
SELECT part, max(pos) FROM first_life GROUP BY part ORDER BY part;
DROP EXTENSION weir CASCADE;
CREATE EXTENSION weir;
SELECT weir.create_topic('second_life', 'x int', partitions => 2);
SELECT id FROM weir.topic;
INSERT INTO second_life (part, x) SELECT 1, g FROM generate_series(1, 4) g;
SELECT part, pos, x FROM second_life ORDER BY part, pos;
SELECT weir.drop_topic('second_life');
