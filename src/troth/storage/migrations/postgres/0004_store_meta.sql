-- Store-wide settings: the embedding model (name and dimension) the vectors were made with.
-- A reference table on Citus, like tokens (docs/operations.md).
CREATE TABLE store_meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
