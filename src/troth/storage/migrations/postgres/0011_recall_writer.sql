-- The per-writer cap of recall counts who wrote a memory's text at its origin
-- (`MemoryRecord.writer`: the `origin` its creating entry commits, or that entry's `actor`
-- when it names none), not the actor of the memory's own entry: an owner's edit of an
-- agent's memory is a new memory whose entry the owner wrote, and its text is still the
-- agent's. The `recall` array gains it as its last value (`storage.rows.memory_docs`);
-- rows of an older database get it here from their documents, the projection of the ledger.
UPDATE memories SET recall = (SELECT left(recall, -1) || ',' || to_json(coalesce(nullif(d ->> 'origin', ''), d ->> 'actor'))::text || ']' FROM (SELECT doc::jsonb AS d) AS parsed);
