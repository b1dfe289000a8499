-- Listing one principal's tokens reads an index, as on PostgreSQL (its 0003_tokens).
CREATE INDEX IF NOT EXISTS tokens_principal ON tokens (principal);
