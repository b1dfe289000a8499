"""Helpers for tests that run on both backends: raw SQL behind the ledger's back, the files
that hold a store's data, a second store on the same database, a fresh store per example.

Raw statements are written with ``?`` placeholders; on PostgreSQL they become ``%s``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.pg import TestServer
from troth.storage.base import Store
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore


def is_postgres(store: Store) -> bool:
    """Whether the store is the PostgreSQL one (its SQL dialect differs)."""
    return isinstance(store, PostgresStore)


def connection(store: Store) -> Any:
    """The store's connection of this thread (the one its own reads use)."""
    return store._connection()  # type: ignore[attr-defined]


def execute(store: Store, statement: str, params: tuple[Any, ...] = ()) -> Any:
    """Run one statement (``?`` placeholders) on the store's connection; the cursor."""
    if is_postgres(store):
        statement = statement.replace("?", "%s")
    return connection(store).execute(statement, params)


def stored_files(store: Store) -> list[Path]:
    """Every file that holds the store's data: the SQLite file's directory (WAL included),
    or PostgreSQL's relation files of the erasable tables (written out by a checkpoint
    first, so what the server holds in its buffers is in them)."""
    if isinstance(store, PostgresStore):
        db = connection(store)
        db.execute("CHECKPOINT")
        row = db.execute("SHOW data_directory").fetchone()
        assert row is not None
        base = Path(row[0])
        files = []
        for relative in store.relation_files().values():
            files.extend(p for p in base.glob(relative + "*") if p.is_file())
        assert files
        return files
    assert isinstance(store, SQLiteStore)
    return [p for p in store.path.parent.rglob("*") if p.is_file()]


def files_holding(store: Store | Path, needle: str | bytes) -> list[str]:
    """The names of the store's files (or of every file under a home directory) whose bytes
    contain ``needle``."""
    data = needle.encode() if isinstance(needle, str) else needle
    files = (
        [p for p in store.rglob("*") if p.is_file()]
        if isinstance(store, Path)
        else stored_files(store)
    )
    return sorted(p.name for p in files if data in p.read_bytes())


def reopen(store: Store) -> Store:
    """Another store on the same database (another process's view of it)."""
    if isinstance(store, PostgresStore):
        return PostgresStore(store.url)
    assert isinstance(store, SQLiteStore)
    return SQLiteStore(store.path)


@contextmanager
def fresh_store(backend: str, pg_server: TestServer) -> Iterator[Store]:
    """A new, empty store of the backend, e.g. for one hypothesis example (a PostgreSQL
    database is cloned from the migrated template: cheap)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="lm-prop-") as home:
            store = SQLiteStore(Path(home) / "l.db")
            try:
                yield store
            finally:
                store.close()
        return
    url = pg_server.create()
    postgres = PostgresStore(url)
    try:
        yield postgres
    finally:
        postgres.close()
        pg_server.drop(url)
