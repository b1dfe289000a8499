-- Memory ids are unique across owners, as on SQLite: an id is what an agent keeps and
-- hands back (`approve ID`, `forget ID`), so it must name one memory in the whole store.
-- The plain index `memories_id` (for locate) becomes a unique one. A database holding one
-- id under two owners fails this migration with PostgreSQL's "could not create unique
-- index" naming the id; docs/operations.md says how to resolve it, and what Citus needs.
DROP INDEX IF EXISTS memories_id;
CREATE UNIQUE INDEX memories_id ON memories (id);
