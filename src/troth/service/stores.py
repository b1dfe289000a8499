"""Opening a store by its location: a PostgreSQL URL, ``sqlite:///PATH`` or a file path.

The service opens stores by location for ``Memory.migrate``; ``troth.config`` re-exports
:func:`open_store` for the entry points that open the installation's own store.
"""

from __future__ import annotations

from pathlib import Path

from troth.core.errors import InvalidInputError
from troth.storage.base import Store


def open_store(location: str | Path) -> Store:
    """A store for a database URL or path.

    ``postgresql://…`` (or ``postgres://…``) opens PostgreSQL — the optional extra
    ``troth[postgres]``; ``sqlite:///path`` or a plain file path opens SQLite.
    """
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from troth.storage.postgres import PostgresStore
        except ImportError as exc:
            raise InvalidInputError(
                "the PostgreSQL backend needs its extra: pip install 'troth[postgres]'"
            ) from exc
        return PostgresStore(text)
    if "://" in text and not text.startswith("sqlite:///"):
        raise InvalidInputError(
            f"unsupported database URL {text.split('://')[0]}://…;"
            " use postgresql://…, sqlite:///PATH or a file path"
        )
    from troth.storage.sqlite import SQLiteStore

    return SQLiteStore(Path(text.removeprefix("sqlite:///")).expanduser())
