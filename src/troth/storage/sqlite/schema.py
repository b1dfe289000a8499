"""The SQLite file: its driver, its connections' settings, and its numbered migrations.

Migrations are the files in ``storage/migrations/sqlite`` (``0001_initial.sql`` is the
schema every store made before they were numbered). The version applied is kept in the
``meta`` table (``schema_version``); opening a store applies what the file lacks, in one
write transaction, so two processes opening an old file at once migrate it once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlite_vec

from troth.core.errors import StorageError
from troth.storage.sql import migrations
from troth.storage.sqlite.context import backfill

try:  # The standard library's sqlite3 here may lack extension loading and a recent FTS5.
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover - platforms without the wheel
    import sqlite3

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "connect", "migrate", "schema_version", "sqlite3"]

SCHEMA_VERSION = max(version for version, _, _ in migrations("sqlite"))
"""The version the shipped migrations bring a file to."""


BUSY_TIMEOUT_MS = 60000
"""How long a statement waits for a lock another connection holds before failing."""


MMAP_BYTES = 1 << 36
"""How much of the database file each connection reads through a memory map (SQLite
lowers it to its own build's limit; the rest of a larger file is read as before): 64 GiB
of address space, so a million-memory file (4.3 GB) is mapped whole. With 2 GiB its
upper half was read with a system call and a copy a page: `bench.scale` at 1M gave a p50
of 31.2 to 33.4 ms, 22.7 to 23.4 mapped whole (docs/benchmarks.md, "Issue 19, 2026-12-03")."""


def connect(path: Path) -> Any:
    """A connection to the file at ``path`` with the store's settings and sqlite-vec.

    Durability: ``journal_mode=WAL`` with ``synchronous=FULL``, so an acknowledged append
    survives power loss; ``secure_delete`` zeroes freed bytes (erasure).
    """
    try:
        db = sqlite3.connect(str(path), isolation_level=None, timeout=60, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open the database at {path}: {exc}") from exc
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA secure_delete = ON")
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA foreign_keys = ON")
    # Reads through a memory map instead of a read() and a copy per page: a recall looks
    # up ~1,500 rows at random (the candidates' filters, their ranking fields), each on
    # its own page, and at 100k memories the copies cost ~1.5 ms of CPU a recall
    # (docs/benchmarks.md, "Issue 19, speed at 100k"). Writes are unchanged (SQLite
    # writes through the file, and secure_delete zeroes freed bytes as before).
    db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    try:
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.enable_load_extension(False)
    except (AttributeError, sqlite3.Error) as exc:
        raise StorageError(
            f"sqlite-vec cannot be loaded ({exc}); install troth with its"
            " pinned requirements (pysqlite3 and sqlite-vec)"
        ) from exc
    return db


# What a migration needs beyond its SQL, run after it in the same transaction: the rows
# it fills need Python (the full-text rows with their neighbours' words).
_AFTER: dict[int, Callable[[Any], object]] = {7: backfill}


def schema_version(db: Any) -> int:
    """The schema version the file holds (0 for a new, empty file)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return 0 if row is None else int(row[0])


def migrate(db: Any, path: Path) -> list[int]:
    """Apply the migrations the file lacks, inside the caller's write transaction; the
    versions applied. A file made by a newer troth is refused, not opened half-understood."""
    found = schema_version(db)
    if found > SCHEMA_VERSION:
        raise StorageError(
            f"the database at {path} has schema version {found}, newer than this troth's"
            f" {SCHEMA_VERSION}; upgrade troth to open it",
            path=str(path),
        )
    applied = []
    for version, _name, text in migrations("sqlite"):
        if version <= found:
            continue
        for statement in text.split(";\n"):
            if statement.strip():
                db.execute(statement)
        after = _AFTER.get(version)
        if after is not None:
            after(db)
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(version),),
        )
        applied.append(version)
    return applied
