-- Each owner's vector generation: a counter that moves, in the same transaction, with
-- every change of the owner's stored vectors, by any path (a write, a reindex, a model
-- change, a rebuilt projection, an erasure). A process that keeps a copy of an owner's
-- vectors (`storage.postgres.copies`) searches it only while the counter still reads as
-- it did when the copy was loaded, so no copy serves a vector another process has
-- changed or erased. Triggers, not the writing code, move it: no path can forget to.
-- An owner without a row is at generation 0.
CREATE TABLE vector_generations (
    owner text PRIMARY KEY,
    gen bigint NOT NULL
);

CREATE FUNCTION troth_move_vector_generation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_generations AS g (owner, gen)
    VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.owner ELSE NEW.owner END, 1)
    ON CONFLICT (owner) DO UPDATE SET gen = g.gen + 1;
    IF TG_OP = 'UPDATE' AND OLD.owner IS DISTINCT FROM NEW.owner THEN
        INSERT INTO vector_generations AS g (owner, gen) VALUES (OLD.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET gen = g.gen + 1;
    END IF;
    RETURN NULL;
END
$$;

-- Row triggers whose WHEN is read in C: a row whose vector did not change calls nothing.
CREATE TRIGGER memories_vector_inserted AFTER INSERT ON memories FOR EACH ROW
    WHEN (NEW.embedding IS NOT NULL)
    EXECUTE FUNCTION troth_move_vector_generation();
CREATE TRIGGER memories_vector_updated AFTER UPDATE ON memories FOR EACH ROW
    WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding OR (OLD.embedding IS NOT NULL
          AND (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.id IS DISTINCT FROM NEW.id)))
    EXECUTE FUNCTION troth_move_vector_generation();
CREATE TRIGGER memories_vector_deleted AFTER DELETE ON memories FOR EACH ROW
    WHEN (OLD.embedding IS NOT NULL)
    EXECUTE FUNCTION troth_move_vector_generation();
