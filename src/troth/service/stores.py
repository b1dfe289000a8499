"""Opening a store by its location: a PostgreSQL URL, ``sqlite:///PATH`` or a file path.

The service opens stores by location for ``Memory.migrate``; ``troth.config`` re-exports
:func:`open_store` for the entry points that open the installation's own store.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from troth.core.errors import InvalidInputError
from troth.storage.base import Store


def open_store(location: str | Path, *, compacting: bool = False) -> Store:
    """A store for a database URL or path.

    ``postgresql://…`` (or ``postgres://…``) opens PostgreSQL — the optional extra
    ``troth[postgres]``; ``sqlite:///path`` or a plain file path opens SQLite.
    ``compacting``: the store is opened to compact, so PostgreSQL does not scrub the
    erasures left pending as it opens (the rewrite finishes them; on SQLite finishing them
    is compact's own first step either way).
    """
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from troth.storage.postgres import PostgresStore
        except ImportError as exc:
            raise InvalidInputError(
                "the PostgreSQL backend needs its extra: pip install 'troth[postgres]'"
            ) from exc
        return PostgresStore(text, finish_at_open=not compacting)
    if "://" in text and not text.startswith("sqlite:///"):
        raise InvalidInputError(
            f"unsupported database URL {text.split('://')[0]}://…;"
            " use postgresql://…, sqlite:///PATH or a file path"
        )
    from troth.storage.sqlite import SQLiteStore

    return SQLiteStore(Path(text.removeprefix("sqlite:///")).expanduser())


def identity(location: str | Path) -> str:
    """What names one database whatever the spelling of its location: PostgreSQL's
    ``postgresql://host:port/dbname`` (no user, password or options; a socket directory
    given as ``?host=`` counts as the host), or ``sqlite:`` and the file's resolved path."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        url = urllib.parse.urlsplit(text)
        query = urllib.parse.parse_qs(url.query)
        host = url.hostname or (query.get("host") or ["localhost"])[0]
        port = url.port or int((query.get("port") or ["5432"])[0])
        return f"postgresql://{host}:{port}{url.path or '/'}"
    return "sqlite:" + str(Path(text.removeprefix("sqlite:///")).expanduser().resolve())


def location_of(store: Store) -> str | None:
    """The location an open store was opened at, when the backend says (both SQL ones do)."""
    url = getattr(store, "url", None)
    if isinstance(url, str):
        return url
    path = getattr(store, "path", None)
    return str(path) if isinstance(path, Path) else None
