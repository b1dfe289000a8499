-- Context expansion (docs/retrieval.md): each memory's full-text row holds, in a second
-- column, the words of its neighbours in the same conversation, weighted 0.2 by the search.
-- FTS5 cannot add a column, so the table is made anew; the store's migration fills it
-- (`storage.sqlite.context.backfill`) in this same transaction. Dropping the old table
-- frees its pages, which secure_delete zeroes.
DROP TABLE IF EXISTS memory_fts;
CREATE VIRTUAL TABLE memory_fts USING fts5(
    body, context, tokenize = 'porter unicode61 remove_diacritics 2',
    content = '', contentless_delete = 1
);
INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1);
-- A memory's neighbours are found by session and seq within its owner.
CREATE INDEX IF NOT EXISTS memories_session ON memories (owner, json_extract(recall, '$[7]'), seq)
