"""Raw SQL on a store's own connection, for tests that tamper behind the ledger's back.

Statements are written with ``?`` placeholders; on PostgreSQL they become ``%s``.
"""

from __future__ import annotations

from typing import Any

from troth.storage.base import Store
from troth.storage.postgres import PostgresStore


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
