-- A token's channel is fixed when it is made (docs/api.md, "Access"). Tokens made before
-- this column existed get their principal kind's default: a person's user, a service's
-- internal, anyone else's synthesis (an agent never held more than its own account).
ALTER TABLE tokens ADD COLUMN channel text;
UPDATE tokens SET channel = CASE
    WHEN principal LIKE 'human:%' THEN 'user'
    WHEN principal LIKE 'service:%' THEN 'internal'
    ELSE 'synthesis' END
