"""An in-process copy of owners' vectors on PostgreSQL, searched only while it is current.

pgvector's HNSW walk for a recall's 500 neighbours is the longest part of a recall at 100k
memories (13.0 ms of a 25.5 ms p50, against 6.5 ms for the lexical search;
docs/benchmarks.md, "Issue 19, 2026-12-07"). The SQLite store keeps each owner's vectors in
memory and scans them with numpy (``storage.vectors``: 4.3 ms for the same search); this
module does the same for PostgreSQL, where other processes (a second server, a ``troth
redact`` beside ``troth serve``) write to the same database.

So a copy is never trusted blindly. Migration 0013's triggers move the owner's vector
generation (``vector_generations``) in the transaction of every change of its vectors, by
any path. A copy is loaded in one REPEATABLE READ snapshot with the generation, and the
table's identity (its oid: a table dropped and restored from a dump is another table,
whose counter may have gone back); the statement that filters a search's neighbours reads
both again, and at any other value the hits are thrown away, the copy is dropped (an
erased memory's vector goes with it), the search walks HNSW as before, and a thread loads
a new copy. One load runs at a time in a store, and after each the owner's next waits
``COOLDOWN`` times as long as it took (at least ``MIN_COOLDOWN_S``; ``FAILED_COOLDOWN_S``
after a failure): an owner written to all the time is searched through HNSW, as before,
with at most a fifth of a core spent loading. A load that read its snapshot before this
process forgot or erased a memory of the owner keeps nothing.

An owner with fewer than ``COPY_FROM`` vectors keeps the index: its walk is short, and a
copy would cost a load and memory for little. A load counts the owner's vectors first, in
its snapshot, and for such an owner reads none and looks again only after
``SIZE_RECHECK_S``; meanwhile its searches run as before. So does an owner whose vectors do
not fit the cache's budget (counted before any vector is read), and a search whose filter
leaves too few of the copy's neighbours (the index's iterative scan reads on for it).

The copy holds vectors, not texts, and the filter is applied to the neighbours it finds
against the table as it is now: a memory forgotten, hidden or made sensitive since the
copy's generation is never returned (its row fails the filter, or moved the generation).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from troth.storage.base import Hit, MemoryFilter
from troth.storage.packed import id_list, parse
from troth.storage.postgres.search import FILTERS, IDS_IN
from troth.storage.vectors import CachedVectors, VectorCache, as_vector

__all__ = [
    "COOLDOWN",
    "COPY_FROM",
    "FAILED_COOLDOWN_S",
    "MIN_COOLDOWN_S",
    "SIZE_RECHECK_S",
    "VectorCopies",
]

_log = logging.getLogger(__name__)

COOLDOWN = 4.0
"""After a load of d seconds, the owner's next load waits ``COOLDOWN * d`` seconds."""
MIN_COOLDOWN_S = 1.0
"""...and at least this long."""
FAILED_COOLDOWN_S = 30.0
"""After a load that failed (the server unreachable, say), the owner's next waits this."""
COPY_FROM = 5_000
"""Owners with fewer vectors are searched through the HNSW index alone."""
SIZE_RECHECK_S = 30.0
"""How long an owner found too small (or too large) for a copy is not counted again."""
_FETCH_ROWS = 20_000  # rows a load reads at a time from its server-side cursor
_READS = 2  # passes of the copy a search makes before leaving a narrow filter to the index

# What a copy is a copy of: the owner's generation and the table's identity.
_STATE = (
    "SELECT coalesce((SELECT gen FROM vector_generations WHERE owner = %s), 0),"
    " 'memories'::regclass::oid::bigint"
)
_SHAPE = (
    "SELECT count(*), max(vector_dims(embedding)), min(vector_dims(embedding)) FROM memories"
    " WHERE owner = %s AND embedding IS NOT NULL"
)
# The vectors as pgvector sends them: a 2-byte dimension, 2 unused bytes, then the floats,
# big-endian (vector_send). Bytes rather than text: no float is printed or parsed.
_VECTORS = (
    "SELECT id, vector_send(embedding) FROM memories WHERE owner = %s AND embedding IS NOT NULL"
)


def unpack_into(matrix: np.ndarray, at: int, chunks: Sequence[bytes]) -> int:
    """Write the vectors of ``chunks`` (``vector_send`` bytes, of ``matrix``'s dimension)
    into ``matrix`` from row ``at``, as float32; the next free row."""
    dimension = matrix.shape[1]
    width = 4 + 4 * dimension
    raw = np.frombuffer(b"".join(chunks), dtype=np.uint8).reshape(len(chunks), width)
    matrix[at : at + len(chunks)] = raw[:, 4:].view(">f4")
    return at + len(chunks)


@dataclass(frozen=True, slots=True)
class _Copy:
    """A copy in the cache, the memory id of each of its rows, and the table it was read
    from."""

    cached: CachedVectors
    ids: list[str]
    table: int


class VectorCopies:
    """Owners' vector copies of one store, each with the memory ids of its rows.

    ``connect`` opens a connection like the store's (autocommit) for a load. With
    ``background`` False a load runs in the search that wants it (tests, which compare the
    two ways of searching); ``copy_from`` is the fewest vectors an owner is copied with.
    """

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        *,
        background: bool = True,
        cache: VectorCache | None = None,
        copy_from: int = COPY_FROM,
    ) -> None:
        self._connect = connect
        self._background = background
        self._copy_from = copy_from
        self.cache = cache if cache is not None else VectorCache()
        self._copies: dict[str, _Copy] = {}
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Thread] = {}
        self._not_before: dict[str, float] = {}
        self._skip_until: dict[str, float] = {}
        # Moved by :meth:`forget`: a load that began before keeps nothing.
        self._forgets: dict[str, int] = {}
        self._last_written: str | None = None  # the owner this process wrote last
        self._closed = False
        #: How many loads finished (tests and benchmarks wait on it).
        self.loads = 0
        #: How long the last load that kept a copy took, in seconds (benchmarks).
        self.last_load_s: float | None = None

    def usable(self, owner: str) -> int | None:
        """The generation of the owner's copy, to search it at (:meth:`hits` checks it
        against the database's in the statement that filters); None when there is no copy
        (the caller walks the index), and a load is started (or run here, without
        ``background``) unless the owner was found too small or too large lately."""
        with self._lock:
            skipped = self._skip_until.get(owner, 0.0) > time.monotonic()
            found = self._copies.get(owner)
        if skipped:
            return None
        if found is not None and self.cache.held(owner) is found.cached:
            return found.cached.generation
        self._refresh(owner)
        if self._background:
            return None
        with self._lock:
            found = self._copies.get(owner)
        return None if found is None else found.cached.generation

    def hits(
        self,
        db: psycopg.Connection[Any],
        owner: str,
        at: int,
        embedding: Sequence[float],
        limit: int,
        query: MemoryFilter,
    ) -> list[Hit] | None:
        """The nearest memories that pass ``query`` now, best first, read on ``db``; None
        when the owner's vectors are no longer those of the copy at generation ``at`` (the
        copy is then dropped and a load started), when there is no such copy, or when the
        filter leaves too few of its neighbours after ``_READS`` passes.

        The generation and the table's identity are read in the statement that filters the
        neighbours, so all three are of one snapshot: a copy whose vectors changed since it
        was loaded is never used."""
        where, params = FILTERS.where(owner, query, alias="m")
        want = limit + 32
        for _ in range(_READS):
            found = self._found(owner, at)
            if found is None:
                return None
            if len(embedding) != found.cached.dimension:
                # Another model's query: a copy of the old model's vectors is stale (the
                # model change moved the generation); else the index says what is wrong.
                self._refresh(owner)
                return None
            query_vector = as_vector(embedding, found.cached.dimension)
            rows, total = self.cache.nearest(found.cached, query_vector, want)
            nearest = [(found.ids[row], score) for row, score in rows]
            # The ids go as one JSON text and the rows that pass come back as one (a list
            # of 532 ids adapted element by element, and as many rows, cost ~1.9 ms more of
            # a recall's 100k p50 in a scratch run); the neighbours' order is put back here.
            place = {memory_id: position for position, (memory_id, _) in enumerate(nearest)}
            row = db.execute(
                f"{_STATE}, (SELECT coalesce(json_agg(json_build_array(m.id, m.seq)), '[]')"
                f" ::text FROM memories m WHERE m.id = {IDS_IN}"
                f" AND m.embedding IS NOT NULL AND {where})",
                [owner, id_list(place), *params],
            ).fetchone()
            if row is None or (int(row[0]), int(row[1])) != (at, found.table):
                self._refresh(owner)
                return None
            passed = sorted((place[str(i)], str(i), int(q)) for i, q in parse(row[2]))
            kept = [(memory_id, seq, nearest[position][1]) for position, memory_id, seq in passed]
            if len(kept) >= limit or want >= total:
                return [
                    Hit(memory_id, rank, score, seq)
                    for rank, (memory_id, seq, score) in enumerate(kept[:limit], start=1)
                ]
            want *= 4
        return None

    def _found(self, owner: str, at: int) -> _Copy | None:
        """The owner's copy if the cache holds it at generation ``at``."""
        cached = self.cache.get(owner, at)
        if cached is None:
            return None
        with self._lock:
            found = self._copies.get(owner)
        return found if found is not None and found.cached is cached else None

    def _refresh(self, owner: str) -> None:
        """Drop the owner's copy (it is stale, or there is none) and load it again: in the
        background (when no load runs and the owner's cooldown is over), or here."""
        self._drop(owner)
        if not self._background:
            self._load(owner)
            return
        with self._lock:
            if self._closed or self._loading:
                return  # one load at a time: a later search asks again
            if time.monotonic() < self._not_before.get(owner, 0.0):
                return
            thread = threading.Thread(
                target=self._load, args=(owner,), name="troth-vector-copy", daemon=True
            )
            self._loading[owner] = thread
            thread.start()  # under the lock: close() never finds a thread not yet started

    def _load(self, owner: str) -> None:
        started = time.monotonic()
        wait = MIN_COOLDOWN_S
        try:
            self._read(owner)
            wait = max(MIN_COOLDOWN_S, COOLDOWN * (time.monotonic() - started))
        except (psycopg.Error, OSError) as exc:
            # The searches go on through the index. Nothing was installed, so nothing
            # stale can be served.
            _log.warning("the vector copy of %s could not be loaded: %s", owner, exc)
            wait = FAILED_COOLDOWN_S
        finally:
            with self._lock:
                self._loading.pop(owner, None)
                self._not_before[owner] = time.monotonic() + wait
                self.loads += 1

    def _read(self, owner: str) -> None:
        """Read the owner's vectors with their generation in one snapshot, and keep them
        unless this process forgot or erased one of the owner's memories meanwhile."""
        started = time.monotonic()
        with self._lock:
            forgets = self._forgets.get(owner, 0)
        db = self._connect()
        try:
            with db.transaction():
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                state = db.execute(_STATE, (owner,)).fetchone()
                shape = db.execute(_SHAPE, (owner,)).fetchone()
                assert state is not None  # aggregates: one row each
                assert shape is not None
                rows, dimension = int(shape[0]), shape[1]
                # Checked before a vector is read: an owner too small for a copy, or one
                # that does not fit, is not read at all.
                if rows < max(self._copy_from, 1) or dimension != shape[2]:
                    self._skip(owner)
                    return
                if not self.cache.wants(rows, dimension):
                    self._skip(owner)
                    return
                matrix = np.empty((rows, dimension), dtype=np.float32)
                ids: list[str] = []
                filled = 0
                with db.cursor(name="troth_vector_copy") as cursor:
                    cursor.execute(_VECTORS, (owner,))
                    while batch := cursor.fetchmany(_FETCH_ROWS):
                        ids.extend(str(row[0]) for row in batch)
                        filled = unpack_into(matrix, filled, [bytes(r[1]) for r in batch])
        finally:
            db.close()
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        norms[norms == 0] = 1.0
        matrix /= norms[:, None]
        with self._lock:
            if self._closed or self._forgets.get(owner, 0) != forgets:
                return
            # Installed with its ids in one step, under the lock every reader takes.
            at = int(state[0])
            rids = np.arange(rows, dtype=np.int64)
            cached = self.cache.load_arrays(owner, at, rids, matrix)
            self._copies[owner] = _Copy(cached, ids, int(state[1]))
            # Copies the cache let go of (its budget) take their ids with them.
            for other in [o for o, c in self._copies.items() if self.cache.held(o) is not c.cached]:
                del self._copies[other]
            self.last_load_s = time.monotonic() - started

    def _skip(self, owner: str) -> None:
        with self._lock:
            self._skip_until[owner] = time.monotonic() + SIZE_RECHECK_S

    def _drop(self, owner: str) -> None:
        self.cache.forget(owner)
        with self._lock:
            self._copies.pop(owner, None)

    def written(self, owner: str, *, erased: bool) -> None:
        """This process committed a write of the owner's: ``erased`` when it forgot or
        erased a memory, whose vector then leaves this process at once (other processes
        drop theirs at their next search: the generation moved)."""
        if erased:
            self.forget(owner)
        with self._lock:
            self._last_written = owner

    def warm(self) -> None:
        """Start loading the copy of the owner written last (after a bulk load: its first
        searches then read the copy rather than the index)."""
        with self._lock:
            owner, self._last_written = self._last_written, None
        if owner is not None:
            self._refresh(owner)

    def forget(self, owner: str) -> None:
        """Drop the owner's copy now, and whatever a load running now would keep: this
        process forgot or erased one of the owner's memories."""
        with self._lock:
            self._forgets[owner] = self._forgets.get(owner, 0) + 1
        self._drop(owner)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the loads running now (tests and benchmarks)."""
        with self._lock:
            threads = list(self._loading.values())
        for thread in threads:
            thread.join(timeout)

    def close(self) -> None:
        """Start no more loads, wait for those running, and drop every copy."""
        with self._lock:
            self._closed = True
        self.join()
        self.cache.clear()
        with self._lock:
            self._copies.clear()
