-- The read check's census (service/readcheck.py) counts an owner's rows in all, by status,
-- retrievable and not sensitive, in one statement. The owner index did not hold the last
-- two columns; included, they let the census be answered from the index (an index-only
-- scan where the visibility map allows), and the listings it serves use it as before.
DROP INDEX IF EXISTS memories_owner;
CREATE INDEX memories_owner ON memories (owner, status, seq) INCLUDE (retrievable, sensitivity);
