-- The read check's census (service/readcheck.py) counts an owner's rows in all, by status,
-- retrievable and not sensitive, in one statement. The owner index did not hold the last
-- two columns, so their counts read the whole table, documents included (the nine counts:
-- 1.3-1.5 s of CPU at 976k memories); as trailing columns the index covers the census, and
-- the listings it serves (owner, status, newest seq first) use it as before.
DROP INDEX IF EXISTS memories_owner;
CREATE INDEX memories_owner ON memories (owner, status, seq, retrievable, sensitivity);
