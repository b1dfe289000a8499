-- troth on PostgreSQL, schema version 1.
-- Every table carries the owner and every primary key starts with it, so the schema
-- can be distributed by owner on Citus (see docs/operations.md).
CREATE EXTENSION IF NOT EXISTS vector;

-- One row per owner: the chain's length and head. Appends lock this row (FOR UPDATE).
CREATE TABLE heads (
    owner text NOT NULL,
    length bigint NOT NULL,
    head text NOT NULL,
    PRIMARY KEY (owner)
);

-- The ledger: personaxis entries verbatim, with their metadata and erasable texts.
CREATE TABLE ledger (
    owner text NOT NULL,
    seq bigint NOT NULL,
    ts text NOT NULL,
    content text NOT NULL,
    source text NOT NULL,
    tags jsonb NOT NULL,
    content_hash text,
    prev_hash text NOT NULL,
    hash text NOT NULL,
    redacted boolean NOT NULL DEFAULT false,
    meta text,
    texts text,
    PRIMARY KEY (owner, seq)
);

-- The projection: each memory's current state, its full-text vector and its embedding.
CREATE TABLE memories (
    owner text NOT NULL,
    id text NOT NULL,
    status text NOT NULL,
    retrievable boolean NOT NULL,
    kind text NOT NULL,
    scope text NOT NULL,
    partition text NOT NULL,
    sensitivity text NOT NULL,
    tags text[] NOT NULL,
    seq bigint NOT NULL,
    updated_at text NOT NULL,
    digest text NOT NULL,
    doc text NOT NULL,
    body tsvector NOT NULL,
    embedding vector,
    PRIMARY KEY (owner, id)
);
CREATE INDEX memories_owner ON memories (owner, status, seq);
-- locate(id) is the one query that crosses owners: a cold path, see docs/operations.md.
CREATE INDEX memories_id ON memories (id);
-- fastupdate off: no pending list, so a deleted lexeme never lingers outside the tree.
CREATE INDEX memories_body ON memories USING gin (body) WITH (fastupdate = off);
