"""The store's own connections to PostgreSQL, whose lost connection is a ``StorageError``.

A statement on a connection the server ended (a restart, an administrator's
``pg_terminate_backend``, an idle timeout, the network) fails in psycopg with an
``OperationalError`` and leaves the connection closed. Every statement of the store's
per-thread connections runs through :class:`StoreCursor` (``Connection.execute`` makes
one too), so such a loss surfaces once, here, as the project's own error with what to
do, whichever read or write sent it; the store's next call opens a new connection
(``sql.Connections`` replaces a closed one). Any other failure is left to the caller
(a write names it as its own: ``transaction.write_error``). The side connections of a
recall's vector search have their own sentence (``nearest.vector_error``) and retry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import TupleRow

from troth.core.errors import StorageError

__all__ = ["StoreCursor", "lost"]


def lost(exc: psycopg.Error) -> StorageError:
    """The error a statement raises when the server ended its connection."""
    return StorageError(
        f"the connection to the database was lost ({exc}); a write under way was not"
        " committed unless its commit had reached the server, and the next call connects"
        " again: retry it (if it fails again, check that the database server is running"
        " and reachable)"
    )


class StoreCursor(psycopg.Cursor[TupleRow]):
    """A cursor whose statements raise :func:`lost` when the connection is lost."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> StoreCursor:
        with self._losing():
            super().execute(query, params, **kwargs)
        return self

    def executemany(self, query: Any, params_seq: Iterable[Any], **kwargs: Any) -> None:
        with self._losing():
            super().executemany(query, params_seq, **kwargs)

    @contextmanager
    def _losing(self) -> Iterator[None]:
        try:
            yield
        except psycopg.OperationalError as exc:
            if self.connection.closed:
                raise lost(exc) from exc
            raise
