"""The PostgreSQL schema: its numbered migrations, its advisory locks and the vector index.

Migrations are the files in ``storage/migrations/postgres``, applied on start under an
advisory lock (one migrator at a time) and recorded in ``schema_version``. Every table is
keyed by owner first, so the schema distributes by owner on Citus. Vectors are pgvector
with an HNSW index per dimension, made once the embedder's dimension is known.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from troth.core.errors import StorageError
from troth.storage.postgres import context
from troth.storage.sql import migrations

TEXT_SEARCH_CONFIG = "english"
"""The text search configuration of the full-text column and of every query."""
ERASABLE_TABLES = ("ledger", "memories", "checkpoint_replies")
"""Tables that hold erasable text: the erasure scrub (``scrub``) and ``compact()`` work on them."""
MIGRATION_LOCK = 0x6C6D5F6D6967  # "lm_mig": one migrator at a time
# "lm_bulk": bulk loads hold it shared; whoever builds the vector index holds it alone, so
# an index is never built while a load runs, nor twice at once.
BULK_LOCK = 0x6C6D5F62756C6B


def schema_version(db: psycopg.Connection[Any]) -> int:
    """The highest migration applied to the database (0 for a fresh one)."""
    found = db.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not (found and found[0]):
        return 0
    row = db.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


# What a migration runs after its file, in the same transaction: a statement kept beside
# the code that writes the same rows (the full-text context of every row).
_AFTER: dict[int, str] = {10: context.ALL}


def migrate(db: psycopg.Connection[Any]) -> list[int]:
    """Apply every shipped migration the database lacks; returns the versions applied."""
    applied: list[int] = []
    try:
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r[0] for r in db.execute("SELECT version FROM schema_version")}
            for version, name, text in migrations("postgres"):
                if version in done:
                    continue
                db.execute(text.encode("utf-8"))
                after = _AFTER.get(version)
                if after is not None:
                    db.execute(after)
                db.execute(
                    "INSERT INTO schema_version (version, name) VALUES (%s, %s)", (version, name)
                )
                applied.append(version)
    except psycopg.errors.UniqueViolation as exc:
        raise StorageError(
            f"the database schema could not be migrated: {exc}; memory ids must be unique"
            " across owners, so keep one of the two (docs/operations.md, 'Memory ids')"
        ) from exc
    except psycopg.Error as exc:
        raise StorageError(f"the database schema could not be migrated: {exc}") from exc
    return applied


def vector_index_name(dimension: int) -> str:
    """The HNSW index of one dimension's vectors."""
    return f"memories_embedding_{dimension}"


def ensure_vector_index(db: psycopg.Connection[Any], dimension: int) -> None:
    """Make the HNSW index of ``dimension`` unless it is there."""
    db.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON memories USING hnsw"
            " ((embedding::vector({})) vector_cosine_ops) WHERE embedding IS NOT NULL"
        ).format(sql.Identifier(vector_index_name(dimension)), sql.Literal(dimension))
    )


def has_vector_index(db: psycopg.Connection[Any], dimension: int) -> bool:
    """Whether the HNSW index of ``dimension`` exists."""
    row = db.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (vector_index_name(dimension),)
    ).fetchone()
    return bool(row and row[0])


def build_vector_index(
    db: psycopg.Connection[Any], dimension: int, *, wait: bool, build_memory: str | None = None
) -> bool:
    """Make the index under the bulk lock held alone; False when a load holds it (and
    ``wait`` is off). ``build_memory`` is the session's ``maintenance_work_mem``."""
    try:
        if wait:
            db.execute("SELECT pg_advisory_lock(%s)", (BULK_LOCK,))
        else:
            got = db.execute("SELECT pg_try_advisory_lock(%s)", (BULK_LOCK,)).fetchone()
            if not (got and got[0]):
                return False
        try:
            if build_memory is not None:
                db.execute("SELECT set_config('maintenance_work_mem', %s, false)", (build_memory,))
            ensure_vector_index(db, dimension)
        finally:
            if build_memory is not None:
                db.execute("RESET maintenance_work_mem")
            db.execute("SELECT pg_advisory_unlock(%s)", (BULK_LOCK,))
    except psycopg.Error as exc:
        raise StorageError(f"the vector index could not be built: {exc}") from exc
    return True
