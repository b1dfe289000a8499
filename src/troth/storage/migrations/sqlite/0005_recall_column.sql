-- Recall reads the ranking fields of ~1,000 candidates per query. Extracting fifteen paths
-- from each full document cost ~16 ms of CPU at 100k memories; one short JSON array per row
-- (`storage.rows.memory_docs`, written with the document) costs ~4. Rows of an older file
-- are filled here from their documents, with the same JSON values.
ALTER TABLE memories ADD COLUMN recall TEXT;
UPDATE memories SET recall = json_array(id, seq, updated_at, doc -> '$.title', doc -> '$.content', doc -> '$.created_at', doc -> '$.recorded_at', doc -> '$.session', doc -> '$.extra.x_speaker', doc -> '$.importance', doc -> '$.confidence', doc -> '$.lifecycle', doc -> '$.valid_from', doc -> '$.valid_until', doc -> '$.expires', doc -> '$.ttl.policy', doc -> '$.ttl.expires_at', doc -> '$.ttl.decay_days', doc -> '$.actor', doc -> '$.channel');
