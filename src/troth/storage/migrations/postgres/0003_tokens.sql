-- Bearer tokens for the HTTP server: only the secret's sha256 is kept.
-- Not owner data: on Citus this small table is a reference table (docs/operations.md).
CREATE TABLE tokens (
    id text PRIMARY KEY,
    secret_hash text NOT NULL,
    principal text NOT NULL,
    on_behalf_of text,
    scopes text[] NOT NULL,
    created_at text NOT NULL,
    expires_at text,
    revoked_at text,
    label text
);
CREATE INDEX tokens_principal ON tokens (principal);
