-- troth on SQLite, schema version 1: the schema every store made before migrations were
-- numbered (its `meta` table says schema_version 1). IF NOT EXISTS: such a file opens as
-- version 1 without this file being run again.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    owner TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    content TEXT NOT NULL,
    source TEXT NOT NULL,
    tags TEXT NOT NULL,
    content_hash TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    redacted INTEGER NOT NULL DEFAULT 0,
    meta TEXT,
    texts TEXT,
    PRIMARY KEY (owner, seq)
);
CREATE TABLE IF NOT EXISTS heads (
    owner TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    principal TEXT NOT NULL,
    on_behalf_of TEXT,
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    label TEXT
);
CREATE TABLE IF NOT EXISTS memories (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    retrievable INTEGER NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    partition TEXT NOT NULL,
    sensitivity TEXT NOT NULL,
    seq INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_owner ON memories (owner, status, seq);
CREATE TABLE IF NOT EXISTS vector_generations (owner TEXT PRIMARY KEY, gen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_replies (
    owner TEXT NOT NULL,
    message_id TEXT NOT NULL,
    request_checksum TEXT NOT NULL,
    response BLOB NOT NULL,
    PRIMARY KEY (owner, message_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    body, tokenize = 'porter unicode61 remove_diacritics 2',
    content = '', contentless_delete = 1
);
