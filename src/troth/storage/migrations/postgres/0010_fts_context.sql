-- Context expansion (docs/retrieval.md): the full-text vector holds a memory's own words at
-- weight A and its conversation neighbours' words at weight C (ts_rank_cd: 1.0 and 0.2).
-- Existing vectors take weight A here; the store's migration then fills every row's
-- context in this same transaction (`storage.postgres.context.ALL`).
CREATE INDEX IF NOT EXISTS memories_session ON memories (owner, (recall::jsonb ->> 7), seq);
UPDATE memories SET body = setweight(body, 'A');
