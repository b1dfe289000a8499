-- Erasures committed but not yet compacted out of every file: a redaction records one in
-- its own transaction, with its transaction id; the row goes once no snapshot older than
-- that transaction remains and the erasable tables are rewritten (VACUUM FULL, taken only
-- when its lock is free at once: retried while a reader holds one, and on each open).
CREATE TABLE IF NOT EXISTS pending_erasures (
    id bigserial PRIMARY KEY,
    owner text NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
