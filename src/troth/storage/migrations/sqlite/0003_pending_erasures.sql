-- Erasures committed but not yet compacted out of every file: a redaction records one in
-- its own transaction, and the row goes once the WAL is checkpointed and truncated (which
-- waits for no reader: it is retried while one holds an older snapshot, and on each open).
CREATE TABLE IF NOT EXISTS pending_erasures (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
