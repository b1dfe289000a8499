"""An in-process copy of owners' vectors on PostgreSQL, searched only while it is current.

pgvector's HNSW walk for a recall's 500 neighbours is the longest part of a recall at 100k
memories (13.0 ms of a 25.5 ms p50, against 6.5 ms for the lexical search;
docs/benchmarks.md, "Issue 19, 2026-12-07"). The SQLite store keeps each owner's vectors in
memory and scans them with numpy (``storage.vectors``: 4.3 ms for the same search); this
module does the same for PostgreSQL, where other processes (a second server, a ``troth
redact`` beside ``troth serve``) write to the same database.

So a copy is never trusted blindly. Migration 0013's triggers move the owner's vector
generation (``vector_generations``) in the transaction of every change of its vectors, by
any path. A search reads the generation (one primary-key read) and uses the copy only when
it was loaded at exactly that number. At any other number the copy is dropped at once (an
erased memory's vector goes with it), the search walks HNSW as before, and a thread loads
a new copy in one REPEATABLE READ snapshot, so the generation it records is that of the
vectors it read. Loads of one owner run one at a time, and after each the next waits
``COOLDOWN`` times as long as it took (at least ``MIN_COOLDOWN_S``): an owner written to
all the time is searched through HNSW, as before, with at most a fifth of a core spent
loading.

An owner with fewer than ``COPY_FROM`` vectors keeps the index: its walk is short, and a
copy would cost a load and memory for little. A load counts the owner's vectors first (one
statement, no snapshot held) and, for such an owner, looks again only after
``SIZE_RECHECK_S``; meanwhile its searches read no generation and run as before.

The copy holds vectors, not texts, and the filter is applied to the neighbours it finds
against the table as it is now: a memory forgotten, hidden or made sensitive since the
copy's generation is never returned (its row fails the filter, or moved the generation).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg

from troth.storage.base import Hit, MemoryFilter
from troth.storage.postgres.search import FILTERS
from troth.storage.vectors import CachedVectors, VectorCache, as_vector

__all__ = ["COOLDOWN", "COPY_FROM", "MIN_COOLDOWN_S", "SIZE_RECHECK_S", "VectorCopies"]

_log = logging.getLogger(__name__)

COOLDOWN = 4.0
"""After a load of d seconds, the owner's next load waits ``COOLDOWN * d`` seconds."""
MIN_COOLDOWN_S = 1.0
"""...and at least this long."""
COPY_FROM = 5_000
"""Owners with fewer vectors are searched through the HNSW index alone."""
SIZE_RECHECK_S = 30.0
"""How long an owner found too small for a copy is not counted again."""
_FETCH_ROWS = 20_000  # rows a load reads at a time from its server-side cursor

_GENERATION = "SELECT gen FROM vector_generations WHERE owner = %s"
_COUNT = "SELECT count(*) FROM memories WHERE owner = %s AND embedding IS NOT NULL"
# The vectors as pgvector sends them: a 2-byte dimension, 2 unused bytes, then the floats,
# big-endian (vector_send). Bytes rather than text: no float is printed or parsed.
_VECTORS = (
    "SELECT id, vector_send(embedding) FROM memories WHERE owner = %s AND embedding IS NOT NULL"
)


def generation(db: psycopg.Connection[Any], owner: str) -> int:
    """The owner's vector generation as committed (0 before its first vector)."""
    row = db.execute(_GENERATION, (owner,)).fetchone()
    return 0 if row is None else int(row[0])


def unpack_vectors(chunks: Sequence[bytes], count: int) -> np.ndarray | None:
    """``count`` vectors from their ``vector_send`` bytes, as float32 rows of unit length;
    None when they do not share one dimension (a model change part way: not loaded)."""
    if count == 0:
        return None
    data = b"".join(chunks)
    dimension = int.from_bytes(data[:2], "big")
    width = 4 + 4 * dimension
    if dimension < 1 or len(data) != count * width:
        return None
    raw = np.frombuffer(data, dtype=np.uint8).reshape(count, width)
    if not (raw[:, :4] == raw[0, :4]).all():
        return None
    matrix = raw[:, 4:].copy().view(">f4").astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    norms[norms == 0] = 1.0
    matrix /= norms[:, None]
    return matrix


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
        self._ids: dict[str, tuple[CachedVectors, list[str]]] = {}
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Thread] = {}
        self._not_before: dict[str, float] = {}
        self._small_until: dict[str, float] = {}
        self._closed = False
        #: How many loads finished (tests and benchmarks wait on it).
        self.loads = 0
        #: How long the last load that kept a copy took, in seconds (benchmarks).
        self.last_load_s: float | None = None

    def usable(self, owner: str) -> int | None:
        """The generation of the owner's copy, to search it at (:meth:`hits` checks it
        against the database's in the statement that filters); None when there is no copy
        (the caller walks the index), and a load is started (or run here, without
        ``background``) unless the owner is known to be too small."""
        with self._lock:
            small = self._small_until.get(owner, 0.0) > time.monotonic()
            found = self._ids.get(owner)
        if small:
            return None
        if found is not None and self.cache.held(owner) is found[0]:
            return found[0].generation
        self._refresh(owner)
        if self._background:
            return None
        found = self._ids.get(owner)
        return None if found is None else found[0].generation

    def nearest(
        self, owner: str, at: int, embedding: Sequence[float], k: int
    ) -> tuple[list[tuple[str, float]], int] | None:
        """The ``k`` nearest (memory id, cosine) of the owner's copy at generation ``at``,
        and how many vectors it holds; None without such a copy or for a query of another
        dimension (the caller then searches the index, which says what is wrong)."""
        found = self._copy(owner, at)
        if found is None:
            return None
        cached, ids = found
        if len(embedding) != cached.dimension:
            return None
        query = as_vector(embedding, cached.dimension)
        rows, count = self.cache.nearest(cached, query, k)
        return [(ids[row], score) for row, score in rows], count

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
        when the owner's vectors are no longer at generation ``at`` (the copy is then
        dropped and a load started) or there is no copy at it. While too few pass, more
        neighbours are read.

        The generation is read in the statement that filters the neighbours, so both are
        of one snapshot: a copy whose vectors changed since it was loaded is never used."""
        where, params = FILTERS.where(owner, query, alias="m")
        want = limit + 32
        while True:
            found = self.nearest(owner, at, embedding, want)
            if found is None:
                return None
            nearest, total = found
            # The ids go as one JSON text and the rows that pass come back as one (a list
            # of 532 ids adapted element by element, and as many rows, cost ~1.9 ms more of
            # a recall's 100k p50 in a scratch run); the neighbours' order is put back here.
            place = {memory_id: position for position, (memory_id, _) in enumerate(nearest)}
            row = db.execute(
                "SELECT coalesce((SELECT gen FROM vector_generations WHERE owner = %s), 0),"
                " (SELECT coalesce(json_agg(json_build_array(m.id, m.seq)), '[]')::text"
                " FROM memories m WHERE m.id = ANY(ARRAY(SELECT json_array_elements_text"
                f"(%s::json))) AND m.embedding IS NOT NULL AND {where})",
                [owner, json.dumps(list(place)), *params],
            ).fetchone()
            if row is None or int(row[0]) != at:
                self._refresh(owner)
                return None
            passed = sorted((place[str(i)], str(i), int(q)) for i, q in json.loads(row[1]))
            kept = [(memory_id, seq, nearest[position][1]) for position, memory_id, seq in passed]
            if len(kept) >= limit or want >= total:
                break
            want *= 4
        return [
            Hit(memory_id, rank, score, seq)
            for rank, (memory_id, seq, score) in enumerate(kept[:limit], start=1)
        ]

    def _refresh(self, owner: str) -> None:
        """Drop the owner's copy (it is stale, or there is none) and load it again: in the
        background (when no load of it runs and its cooldown is over), or here."""
        self.forget(owner)
        if self._background:
            self._start_load(owner)
        else:
            self._load(owner)

    def _copy(self, owner: str, at: int) -> tuple[CachedVectors, list[str]] | None:
        cached = self.cache.get(owner, at)
        if cached is None:
            return None
        with self._lock:
            entry = self._ids.get(owner)
        return entry if entry is not None and entry[0] is cached else None

    def _start_load(self, owner: str) -> None:
        with self._lock:
            if self._closed or owner in self._loading:
                return
            if time.monotonic() < self._not_before.get(owner, 0.0):
                return
            thread = threading.Thread(
                target=self._load, args=(owner,), name="troth-vector-copy", daemon=True
            )
            self._loading[owner] = thread
        thread.start()

    def _load(self, owner: str) -> None:
        started = time.monotonic()
        try:
            self._read(owner)
        except (psycopg.Error, OSError) as exc:
            # The searches go on through the index; the next load is tried after the
            # cooldown. Nothing was installed, so nothing stale can be served.
            _log.warning("the vector copy of %s could not be loaded: %s", owner, exc)
        finally:
            with self._lock:
                self._loading.pop(owner, None)
                took = time.monotonic() - started
                self._not_before[owner] = time.monotonic() + max(MIN_COOLDOWN_S, COOLDOWN * took)
                self.loads += 1

    def _read(self, owner: str) -> None:
        """Read the owner's vectors and their generation in one snapshot, and keep them."""
        started = time.monotonic()
        db = self._connect()
        try:
            count = db.execute(_COUNT, (owner,)).fetchone()
            if count is None or int(count[0]) < self._copy_from:
                with self._lock:
                    self._small_until[owner] = time.monotonic() + SIZE_RECHECK_S
                return
            with db.transaction():
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                at = generation(db, owner)
                ids: list[str] = []
                chunks: list[bytes] = []
                with db.cursor(name="troth_vector_copy") as cursor:
                    cursor.execute(_VECTORS, (owner,))
                    while rows := cursor.fetchmany(_FETCH_ROWS):
                        ids.extend(str(row[0]) for row in rows)
                        chunks.extend(bytes(row[1]) for row in rows)
        finally:
            db.close()
        matrix = unpack_vectors(chunks, len(ids))
        if matrix is None or not self.cache.wants(len(ids), matrix.shape[1]):
            return
        with self._lock:
            if self._closed:
                return
        cached = self.cache.load_arrays(owner, at, np.arange(len(ids), dtype=np.int64), matrix)
        self.last_load_s = time.monotonic() - started
        with self._lock:
            self._ids[owner] = (cached, ids)
            # Copies the cache let go of (its budget) take their ids with them.
            for other in [o for o in self._ids if self.cache.held(o) is not self._ids[o][0]]:
                del self._ids[other]

    def forget(self, owner: str) -> None:
        """Drop the owner's copy now (a load started later reads it afresh)."""
        self.cache.forget(owner)
        with self._lock:
            self._ids.pop(owner, None)

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
            self._ids.clear()
