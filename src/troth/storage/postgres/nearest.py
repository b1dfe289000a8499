"""A recall's searches on PostgreSQL: the vector one pipelined, beside the lexical one.

A recall asks for both its full-text and its nearest-neighbour candidates. At 100k
memories each costs the server several milliseconds of work (the HNSW graph walk for
500 neighbours is most of it, docs/benchmarks.md), and one backend runs its statements
one after the other. ``RecallSearches.candidates`` sends the vector search on a second
connection (lent for the recall, then given back), in a pipeline that needs no answer
yet, then runs the lexical search on the thread's own connection while the other backend
walks the graph: the two run at once on two cores, and the recall waits for the longer,
not the sum. Each search is its own statement, as when they ran one after the other, so
the hits are the same. Inside a write or a snapshot (the thread's connection holds a
transaction) both run on that connection, in its view.

A failed vector search is a ``StorageError`` saying what to do (:func:`vector_error`); a
failed lexical search, run inside the same block, is labelled as the full-text search's
(tests/storage/test_postgres_search_errors.py);
a lent connection the server ended while it sat idle is replaced and the search sent
once more, since a search changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TypeVar

import psycopg
from psycopg import sql as pgsql

from troth.core.errors import StorageError
from troth.core.query import CandidateLimits, Term
from troth.storage.base import Candidates, Hit, MemoryFilter
from troth.storage.postgres import search
from troth.storage.postgres.copies import VectorCopies
from troth.storage.postgres.transaction import idle, roll_back, vector_literal

_T = TypeVar("_T")


def _hits(rows: Sequence[Any]) -> list[Hit]:
    return [
        Hit(str(row[0]), rank, float(row[1]), int(row[2])) for rank, row in enumerate(rows, start=1)
    ]


@contextmanager
def _pipelined(
    db: psycopg.Connection[Any],
    statement: str | pgsql.Composed,
    arguments: Sequence[Any],
    limit: int,
) -> Iterator[psycopg.Cursor[Any]]:
    """The vector search as its own transaction in one pipeline (BEGIN, the settings for
    ``limit`` neighbours, the query, COMMIT): sent as the block opens, its answer awaited
    as the block closes, so what the block runs meanwhile overlaps the server's work. The
    cursor yielded holds the hits once the block is left; on a failure the transaction
    the pipeline left open is rolled back."""
    try:
        with db.pipeline():
            db.execute("BEGIN")
            db.execute(search.SEARCH_SETTINGS, (ef_search(limit),))
            found = db.execute(statement, arguments)
            db.execute("COMMIT")
            yield found
    except BaseException:
        roll_back(db)
        raise


def vector_error(exc: psycopg.Error, db: psycopg.Connection[Any]) -> StorageError:
    """The error a failed vector search raises: the project's own, with what to do.

    A lost connection (the server restarted, an administrator ended the backend, the
    network dropped it) is closed by psycopg; the next search opens a new one, so
    retrying is what a caller can do. A search changes nothing, so nothing is undone.
    """
    if db.closed:
        return StorageError(
            f"the vector search lost its connection to the database ({exc}); nothing was"
            " changed, and the next search connects again: retry it (if it fails again,"
            " check that the database server is running and reachable)"
        )
    return StorageError(f"the vector search failed: {exc}")


def ef_search(limit: int) -> str:
    """``hnsw.ef_search`` for ``limit`` neighbours: the index returns as many as asked in
    one pass (a lower value with the iterative scan was slower and missed more of the
    exact top 50 at 100k memories: docs/retrieval.md)."""
    return str(min(max(limit, 40), 1000))


class RecallSearches:
    """The vector search of one ``PostgresStore``, alone or beside its lexical search.

    ``connect`` opens a connection like the store's own; a recall that runs both searches
    borrows a second one (:meth:`lent`): an idle one, or one opened now, given back after.
    So there are as many as recalls ran at once (the recall gate's
    ``max_concurrent_recalls``), not one for every thread that ever recalled (a server's
    40 workers would hold 40 more backends of PostgreSQL's default 100). All are closed
    with the store.
    """

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        copies: VectorCopies | None = None,
    ) -> None:
        self._connect = connect
        self._opened: list[psycopg.Connection[Any]] = []  # every side connection open
        self._idle: list[psycopg.Connection[Any]] = []  # those no recall holds
        self._lock = threading.Lock()
        self.iterative_scan: bool | None = None  # known after the first vector query
        #: Owners' vectors in memory, searched instead of the index while current
        #: (``postgres.copies``); None: always the index.
        self.copies = copies

    @contextmanager
    def lent(self, *, fresh: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A side connection for one recall: the one given back last (unless ``fresh``),
        else a new one. It is given back if it is left open and idle, else closed (as it
        is if :meth:`close` ran meanwhile)."""
        with self._lock:
            db = self._idle.pop() if self._idle and not fresh else None
        if db is None:
            db = self._connect()
            with self._lock:
                self._opened.append(db)
        try:
            yield db
        finally:
            with self._lock:
                kept = not db.closed and idle(db) and any(db is open_ for open_ in self._opened)
                if kept:
                    self._idle.append(db)
                else:
                    self._opened = [open_ for open_ in self._opened if open_ is not db]
            if not kept:
                with suppress(psycopg.Error):
                    db.close()

    def vector(
        self,
        db: psycopg.Connection[Any],
        owner: str,
        embedding: Sequence[float],
        limit: int,
        query: MemoryFilter,
        *,
        nested: Callable[[], AbstractContextManager[None]] | None,
    ) -> list[Hit]:
        """The nearest memories on ``db``; ``nested`` is the open write's savepoint (None
        outside a write).

        ``hnsw.ef_search`` and ``iterative_scan`` are set for this transaction only; once
        the server is known to take both, the transaction (BEGIN, settings, query,
        COMMIT) travels as one pipeline: one round trip.
        """
        if self.copies is not None and nested is None and idle(db):
            at = self.copies.usable(owner)
            if at is not None:
                found = self._from_copy(db, owner, at, embedding, limit, query)
                if found is not None:
                    return found
        statement, arguments = search.nearest_statement(
            owner, len(embedding), vector_literal(embedding), limit, query
        )
        try:
            return self._vector(db, statement, arguments, limit, nested)
        except psycopg.Error as exc:
            raise vector_error(exc, db) from exc

    def _from_copy(
        self,
        db: psycopg.Connection[Any],
        owner: str,
        at: int,
        embedding: Sequence[float],
        limit: int,
        query: MemoryFilter,
    ) -> list[Hit] | None:
        """The copy's hits, their rows filtered on ``db``; None if the copy went meanwhile."""
        assert self.copies is not None
        try:
            return self.copies.hits(db, owner, at, embedding, limit, query)
        except psycopg.Error as exc:
            raise vector_error(exc, db) from exc

    def _beside(
        self, owner: str, at: int, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit] | None:
        """The copy's hits with their rows filtered on a lent side connection."""
        copies = self.copies
        assert copies is not None
        return self._on_side(lambda side: copies.hits(side, owner, at, embedding, limit, query))

    def _on_side(self, work: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """``work`` on a lent side connection. An idle connection may have been ended while
        it waited (a server restart, an idle timeout): it is replaced and ``work`` run once
        more (a search changes nothing), which fails only if the server is really gone."""
        fresh = False
        while True:
            with self.lent(fresh=fresh) as side:
                try:
                    return work(side)
                except psycopg.Error as exc:
                    if fresh or not side.closed:
                        raise vector_error(exc, side) from exc
                    fresh = True

    def _vector(
        self,
        db: psycopg.Connection[Any],
        statement: pgsql.Composed,
        arguments: Sequence[Any],
        limit: int,
        nested: Callable[[], AbstractContextManager[None]] | None,
    ) -> list[Hit]:
        ef = ef_search(limit)
        if nested is None and self.together(db):
            with _pipelined(db, statement, arguments, limit) as found:
                pass
            return _hits(found.fetchall())
        # Inside a write (the write's savepoint: in a pipelined write psycopg counts the
        # connection idle, and its own transaction() would commit half the write), inside
        # a snapshot (psycopg's savepoint: a BEGIN and COMMIT of its own would end the
        # snapshot), or while the settings are not known yet.
        scope = nested if nested is not None else db.transaction
        with scope():
            if self.iterative_scan:
                db.execute(search.SEARCH_SETTINGS, (ef,))
            else:
                db.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef,))
                if self.iterative_scan is None:
                    try:
                        with scope():
                            db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                        self.iterative_scan = True
                    except psycopg.Error:
                        self.iterative_scan = False
            return _hits(db.execute(statement, arguments).fetchall())

    def side_by_side(self, db: psycopg.Connection[Any]) -> bool:
        """Whether a recall's two searches may run at once: ``db`` holds no transaction (no
        write, no snapshot, whose view both must share) and libpq has pipelines.
        :meth:`candidates` then runs them side by side as far as it can."""
        return psycopg.Pipeline.is_supported() and idle(db)

    def together(self, db: psycopg.Connection[Any]) -> bool:
        """Whether the vector search may travel as its own pipelined transaction, and so
        on the side connection beside a lexical search on ``db``: ``db`` holds no
        transaction (no write, no snapshot, whose view the search must share) and the
        server is known to take both settings."""
        return bool(self.iterative_scan) and self.side_by_side(db)

    def candidates(
        self,
        db: psycopg.Connection[Any],
        owner: str,
        terms: Sequence[Term],
        embedding: Sequence[float],
        limits: CandidateLimits,
        query: MemoryFilter,
    ) -> Candidates:
        """Both searches at once: the vector one sent on the side connection, the lexical
        one run on ``db`` meanwhile (call only when :meth:`side_by_side` allows). With a current
        copy of the owner's vectors, the lexical statement is sent on ``db`` in a pipeline
        and, while the server answers it, this thread searches the copy and filters its
        neighbours on the side connection."""
        words: list[Hit] | None = None
        at = None if self.copies is None else self.copies.usable(owner)
        if at is not None:
            # The lexical statement is sent first; while the server answers it, this thread
            # searches the copy and filters its neighbours on the side connection.
            with search.sent_lexical(db, owner, terms, limits.lexical, query) as answer:
                copied = self._beside(owner, at, embedding, limits.vector, query)
            words = answer.hits()
            if copied is not None:
                return Candidates(words, copied)
        if not self.together(db):
            # The index's settings are not known yet: the searches in turn (which learn them).
            if words is None:
                words = search.lexical(db, owner, terms, limits.lexical, query)
            return Candidates(
                words, self.vector(db, owner, embedding, limits.vector, query, nested=None)
            )
        statement, arguments = search.nearest_statement(
            owner, len(embedding), vector_literal(embedding), limits.vector, query
        )
        known = words

        def index_beside(side: psycopg.Connection[Any]) -> Candidates:
            nonlocal known
            # Sent now; the side backend works on it while this thread waits for the
            # lexical answer. Leaving the block syncs the pipeline: its one wait.
            with _pipelined(side, statement, arguments, limits.vector) as found:
                if known is None:
                    # Its failure is its own: ``search.lexical`` (or, for a lost connection,
                    # the store's cursor) raises a StorageError naming the full-text search,
                    # which ``_on_side`` never takes.
                    known = search.lexical(db, owner, terms, limits.lexical, query)
            return Candidates(known, _hits(found.fetchall()))

        return self._on_side(index_beside)

    def close(self) -> None:
        """Close every side connection, lent or idle (a later recall opens a new one), and
        drop the vector copies."""
        if self.copies is not None:
            self.copies.close()
        with self._lock:
            opened, self._opened, self._idle = self._opened, [], []
        for db in opened:
            with suppress(psycopg.Error):
                db.close()
