"""An in-process copy of each owner's vectors, for cosine search with numpy.

sqlite-vec's ``vec0`` is the vector index of the SQLite store: it holds every vector,
partitioned by owner, and its rows go with the memories (erasure deletes them). Its KNN is
an exact scan in C; on the 2-core machine of docs/benchmarks.md it reads 100k vectors of
128 dimensions in ~50 ms. A float32 matrix product in numpy does the same in ~5 ms, so
the store keeps owners' vectors in memory, within :attr:`VectorCache.max_bytes` for all
owners together (the least recently searched owner's copy is dropped first), and scans
them with numpy. An owner too large for the budget alone is searched by vec0.

The copy is never trusted blindly: every owner has a generation counter in the database
that moves in the same transaction as any change of its vectors. A copy whose generation
differs from the database's is rebuilt; this process's own writes are applied to it in
place (so a remember between two recalls costs no reload). An owner's first vectors
(generation 1: nothing was there before) start the copy at the write, so the first
search after a bulk load reads it at once; a copy loaded from the database (a restart)
reads vec0's chunks into one preallocated matrix (~1.2 s of CPU at a million vectors of
128 dimensions, docs/benchmarks.md).

The scan is exact below :data:`~troth.storage.signcodes.APPROXIMATE_FROM` live vectors.
From there the copy also keeps each vector's sign code (``storage.signcodes``), whose
nearest rows are a shortlist scored exactly from the floats: the cost no longer grows
like the float scan, and the top 500 found keeps ~90% of the exact one (docs/retrieval.md,
"The vector stage at scale"). The codes change with the rows they describe, so a deleted
vector leaves them as it leaves the matrix.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from troth.core.errors import InvalidInputError
from troth.storage.signcodes import APPROXIMATE_FROM, SignCodes, encode, shortlist_size

__all__ = ["CachedVectors", "VectorCache", "as_vector"]

Vector = npt.NDArray[np.float32]


def as_vector(embedding: Sequence[float] | Vector, dimension: int) -> Vector:
    """A float32 vector of unit length (a zero vector stays zero), checked for dimension."""
    vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
    if vector.shape[0] != dimension:
        raise InvalidInputError(
            f"an embedding of {vector.shape[0]} dimensions was given, the store holds"
            f" {dimension}; run `troth reindex` after changing the model",
            dimension=vector.shape[0],
        )
    # ``np.linalg.norm`` of a vector is this square root of its dot product, less the
    # checks a vector from the embedder never needs (a few µs of every stored memory).
    norm = float(np.sqrt(vector.dot(vector)))
    if norm > 0 and abs(norm - 1.0) > 1e-4:
        vector = (vector / norm).astype(np.float32)
    return vector


@dataclass(slots=True)
class CachedVectors:
    """One owner's vectors: rows of a growable matrix, with their rids.

    ``live`` counts the live rows; the rid-to-row map is built on the first change (a
    dict of a million entries costs ~0.3 s, which a copy loaded only to be searched
    never pays). ``codes`` are the rows' sign codes, built when a copy kept by writes
    crosses the threshold, or on a thread from the first search that wants them, and
    changed with the rows.
    """

    generation: int
    dimension: int
    matrix: Vector
    rids: npt.NDArray[np.int64]
    alive: npt.NDArray[np.bool_]
    size: int = 0
    live: int = 0
    codes: SignCodes | None = None
    changed: set[int] | None = None  # rows written while codes are built (None: no build)
    _position: dict[int, int] | None = None

    @property
    def count(self) -> int:
        """How many live vectors the copy holds."""
        return self.live

    @property
    def nbytes(self) -> int:
        """The bytes of the matrix and the codes."""
        return int(self.matrix.nbytes) + (0 if self.codes is None else self.codes.nbytes)

    @property
    def position(self) -> dict[int, int]:
        """Each live rid's row."""
        if self._position is None:
            rows = np.flatnonzero(self.alive[: self.size])
            self._position = dict(zip(self.rids[rows].tolist(), rows.tolist(), strict=True))
        return self._position

    def put(self, rid: int, vector: Vector, code: npt.NDArray[np.uint64] | None = None) -> None:
        """Insert or replace the vector of ``rid`` (``code``: its sign code, if known)."""
        position = self.position
        at = position.get(rid)
        if at is None:
            if self.size == self.matrix.shape[0]:
                grown = max(1024, self.size + self.size // 2)  # 1.5x: big copies stay near size
                self.matrix = np.resize(self.matrix, (grown, self.dimension))
                self.rids = np.resize(self.rids, grown)
                self.alive = np.resize(self.alive, grown)
                if self.codes is not None:
                    self.codes.resize(grown)
            at = self.size
            self.size += 1
            self.live += 1
            position[rid] = at
            self.rids[at] = rid
        self.matrix[at] = vector
        self.alive[at] = True
        if self.codes is not None:
            self.codes.set(at, vector, code)
        elif self.changed is not None:
            self.changed.add(at)

    def delete(self, rid: int) -> None:
        """Drop the vector of ``rid`` (its row is zeroed and skipped)."""
        at = self.position.pop(rid, None)
        if at is not None:
            self.live -= 1
            self.matrix[at] = 0.0
            self.alive[at] = False
            if self.codes is not None:
                self.codes.clear(at)
            elif self.changed is not None:
                self.changed.add(at)

    def nearest(
        self, query: Vector, k: int, approximate_from: int = APPROXIMATE_FROM
    ) -> list[tuple[int, float]]:
        """The ``k`` live rows most similar to ``query``: (rid, cosine), best first.

        Exact below ``approximate_from`` live rows; from there, the exact cosines of the
        rows whose sign codes are nearest the query's (a shortlist of
        :func:`~troth.storage.signcodes.shortlist_size` rows).
        """
        if not self.live or k < 1:
            return []
        k = min(k, self.count)
        alive = self.alive[: self.size]
        dead = self.live < self.size
        rows: npt.NDArray[np.intp] | None = None  # the scored rows (None: all of them)
        if self.live < approximate_from:
            scores = _scores(self.matrix, self.size, query)
            if dead:
                scores[~alive] = -np.inf
        else:
            if self.codes is None:
                self.codes = SignCodes.of(self.matrix, self.size, self.matrix.shape[0])
            rows = self.codes.shortlist(
                query, self.size, alive if dead else None, shortlist_size(k, self.live)
            )
            scores = _scores(np.take(self.matrix, rows, axis=0), rows.shape[0], query)
        n = scores.shape[0]
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        at = top if rows is None else rows[top]
        # Ties break by rid so that results do not depend on insertion order.
        order = np.lexsort((self.rids[at], -scores[top]))
        order = order[alive[at[order]]]
        return list(zip(self.rids[at[order]].tolist(), scores[top[order]].tolist(), strict=True))


# Floats per matrix-vector product of the scan: under the size at which OpenBLAS spreads
# one product over threads (m * n < 9,216), so every block runs on the calling thread
# (64 rows of 128 dimensions).
_BLOCK_FLOATS = 8192


def _scores(matrix: Vector, size: int, query: Vector) -> Vector:
    """``matrix[:size] @ query``, on the calling thread.

    One product over the whole matrix would be spread by BLAS over every core, and a
    server's concurrent searches then wait on each other's threads (2x slower on the
    2-core machine under load, docs/benchmarks.md); numpy's own loop (einsum) stays on
    the thread but reads the matrix at about half BLAS's speed. A stack of small blocks
    is one numpy call that runs BLAS's single-threaded kernel once per block: ~4 ms for
    100k x 128 where einsum took ~6.7 (docs/benchmarks.md, "Issue 19, speed at 100k").
    """
    out = np.empty(size, dtype=np.float32)
    dimension = matrix.shape[1]
    block = max(1, _BLOCK_FLOATS // max(dimension, 1))
    whole = size - size % block
    if whole:
        np.matmul(
            matrix[:whole].reshape(-1, block, dimension),
            query,
            out=out[:whole].reshape(-1, block),
        )
    if whole < size:
        np.matmul(matrix[whole:size], query, out=out[whole:])
    return out


# Rows a thread building a loaded copy's codes reads at a time (4 MB of floats at 128
# dimensions: copied in ~1 ms under the lock).
_BUILD_ROWS = 8192


class VectorCache:
    """Per-owner :class:`CachedVectors`, checked against the database's generation.

    ``max_bytes`` bounds the matrices (and sign codes) of all owners together (1 GiB by
    default: nearly two million 128-dimension vectors); loading a copy drops the least
    recently used others until the total fits. ``approximate_from``: the live vectors
    from which an owner's search scores a sign-code shortlist rather than every row.
    """

    def __init__(self, max_bytes: int = 1 << 30, approximate_from: int = APPROXIMATE_FROM) -> None:
        self.max_bytes = max_bytes
        self.approximate_from = approximate_from
        self._builds: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._owners: OrderedDict[str, CachedVectors] = OrderedDict()

    def wants(self, rows: int, dimension: int) -> bool:
        """Whether an owner with this many vectors fits the budget on its own."""
        return rows > 0 and rows * dimension * 4 <= self.max_bytes

    def get(self, owner: str, generation: int) -> CachedVectors | None:
        """The owner's copy if it is at ``generation``."""
        with self._lock:
            cached = self._owners.get(owner)
            if cached is None or cached.generation != generation:
                return None
            self._owners.move_to_end(owner)
            return cached

    def held(self, owner: str) -> CachedVectors | None:
        """The owner's copy at whatever generation, without counting it as used."""
        with self._lock:
            return self._owners.get(owner)

    def nearest(
        self, cached: CachedVectors, query: Vector, k: int
    ) -> tuple[list[tuple[int, float]], int]:
        """``cached.nearest`` and its count, read while no write of this process changes it.

        A copy that wants sign codes and has none (one loaded from the database) is
        searched exactly while a thread builds them: ~2 s of CPU at a million vectors,
        which the first search after a restart would otherwise wait for.
        """
        with self._lock:
            threshold = self.approximate_from
            if cached.live >= threshold and cached.codes is None:
                if cached.changed is None:
                    self._build_codes(cached)
                threshold = cached.live + 1  # exact until the codes are there
            return cached.nearest(query, k, threshold), cached.count

    def _build_codes(self, cached: CachedVectors) -> None:
        # Under the lock. The rows written while the codes are computed are noted in
        # ``changed`` and encoded again before the codes are attached. The thread reads
        # the matrix a block at a time, copied under the lock, and keeps no reference to
        # it: a vector deleted meanwhile lives on in no array but a block being encoded.
        cached.changed = set()
        size = cached.size

        def build() -> None:
            codes = None
            try:
                built = SignCodes.of(cached.matrix[:0], 0, size)
                for at in range(0, size, _BUILD_ROWS):
                    with self._lock:
                        if not self._holds(cached):
                            # Dropped (evicted, reloaded, or a generation gap): deletes no
                            # longer reach it, so reading on would keep an erased row alive.
                            return
                        block = cached.matrix[at : min(at + _BUILD_ROWS, size)].copy()
                    built.codes[at : at + block.shape[0]] = encode(block)
                    del block
                codes = built
            finally:
                with self._lock:
                    changed, cached.changed = cached.changed or set(), None
                    if codes is not None and self._holds(cached):
                        codes.resize(cached.matrix.shape[0])
                        for row in sorted(changed | set(range(size, cached.size))):
                            if cached.alive[row]:
                                codes.set(row, cached.matrix[row])
                            else:
                                codes.clear(row)
                        cached.codes = codes

        self._builds = [t for t in self._builds if t.is_alive()]
        thread = threading.Thread(target=build, name="troth-sign-codes", daemon=True)
        self._builds.append(thread)
        thread.start()

    def _holds(self, cached: CachedVectors) -> bool:
        # Under the lock: whether ``cached`` is still the copy of one of the owners.
        return any(held is cached for held in self._owners.values())

    def join_builds(self, timeout: float | None = None) -> None:
        """Wait for the sign codes being built (benchmarks and tests compare after them)."""
        for thread in list(self._builds):
            thread.join(timeout)
        self._builds = [t for t in self._builds if t.is_alive()]

    def load(
        self, owner: str, generation: int, rows: Sequence[tuple[Any, bytes]], dimension: int
    ) -> CachedVectors:
        """Build the owner's copy from (rid, float32 bytes) rows."""
        count = len(rows)
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return self.load_arrays(
            owner,
            generation,
            np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=count),
            vectors.reshape(count, dimension),
        )

    def load_arrays(
        self, owner: str, generation: int, rids: npt.NDArray[np.int64], vectors: Vector
    ) -> CachedVectors:
        """Build the owner's copy from its rids and their vectors (one row each), which it
        takes as they are (no copy) when they are a float32 matrix of its own."""
        count, dimension = vectors.shape
        if count == 0:
            vectors, rids = np.zeros((1, dimension), dtype=np.float32), np.zeros(1, np.int64)
        alive = np.ones(max(count, 1), dtype=np.bool_)
        alive[count:] = False
        cached = CachedVectors(
            generation=generation,
            dimension=int(dimension),
            matrix=np.require(vectors, dtype=np.float32, requirements=("C", "W", "O")),
            rids=np.require(rids, dtype=np.int64, requirements=("C", "W", "O")),
            alive=alive,
            size=count,
            live=count,
        )
        self._keep(owner, cached)
        return cached

    def _keep(self, owner: str, cached: CachedVectors) -> None:
        with self._lock:
            self._owners[owner] = cached
            self._owners.move_to_end(owner)
            self._fit(keep=owner)

    def _fit(self, keep: str) -> None:
        # Oldest first; the copy just loaded or grown stays (``wants`` admitted it alone).
        total = sum(c.nbytes for c in self._owners.values())
        for name in list(self._owners):
            if total <= self.max_bytes:
                break
            if name != keep:
                total -= self._owners.pop(name).nbytes

    def apply(self, owner: str, generation: int, changes: Sequence[tuple[int, Any]]) -> None:
        """Apply this process's committed changes, if the copy was at the generation before."""
        with self._lock:
            cached = self._owners.get(owner)
            if cached is None and generation == 1:
                # The owner's first vectors: the copy is exactly these changes, so it is
                # started here rather than loaded by the first search (seconds at 1M).
                cached = self._first_copy(changes)
                if cached is None:
                    return
                self._owners[owner] = cached
            if cached is None:
                return
            if cached.generation != generation - 1:
                del self._owners[owner]
                return
            # The new vectors' codes in one product rather than one per row.
            written = [vector for _rid, vector in changes if vector is not None]
            codes = None if cached.codes is None or not written else encode(np.stack(written))
            at = 0
            for rid, vector in changes:
                if vector is None:
                    cached.delete(rid)
                else:
                    cached.put(rid, vector, None if codes is None else codes[at])
                    at += 1
            cached.generation = generation
            crossed = self.approximate_from <= cached.live < 2 * self.approximate_from
            if crossed and cached.codes is None and cached.changed is None:
                # A copy kept by writes just crossed the threshold: its codes cost ~1 us of
                # CPU a row here, once (~60 ms at 50k), then one product per write, so no
                # search of the process that wrote them waits. (A larger copy without
                # codes was loaded: its first search builds them on a thread.)
                cached.codes = SignCodes.of(cached.matrix, cached.size, cached.matrix.shape[0])
            if not self.wants(cached.count, cached.dimension):
                del self._owners[owner]
            else:
                self._fit(keep=owner)

    @staticmethod
    def _first_copy(changes: Sequence[tuple[int, Any]]) -> CachedVectors | None:
        dimensions = {len(vector) for _rid, vector in changes if vector is not None}
        if len(dimensions) != 1:
            return None
        [dimension] = dimensions
        return CachedVectors(
            generation=0,
            dimension=dimension,
            matrix=np.zeros((max(1024, len(changes)), dimension), dtype=np.float32),
            rids=np.zeros(max(1024, len(changes)), dtype=np.int64),
            alive=np.zeros(max(1024, len(changes)), dtype=np.bool_),
            _position={},
        )

    def forget(self, owner: str) -> None:
        """Drop one owner's copy."""
        with self._lock:
            self._owners.pop(owner, None)

    def clear(self) -> None:
        """Drop every copy."""
        with self._lock:
            self._owners.clear()


def live_count(validities: Sequence[bytes], sizes: Sequence[int]) -> int:
    """How many slots are live in vec0 chunks, from their validity bitmaps."""
    return sum(
        int(np.unpackbits(np.frombuffer(v, dtype=np.uint8), bitorder="little")[:n].sum())
        for v, n in zip(validities, sizes, strict=True)
    )


def unpack_chunks(
    chunks: Sequence[tuple[int, bytes, bytes, bytes]], dimension: int
) -> tuple[npt.NDArray[np.int64], Vector]:
    """The live (rids, vectors) of sqlite-vec chunks given as (size, validity, rowids, vectors).

    A vec0 table keeps its vectors in chunks of ``size`` slots: a validity bitmap (bit i of
    byte i // 8, least significant first), the slots' rowids as int64 and their vectors as
    float32, back to back. Reading a chunk at a time is ~20x faster than a row at a time.
    """
    masks = [
        np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(
            np.bool_
        )
        for size, validity, _rowids, _data in chunks
    ]
    total = sum(int(mask.sum()) for mask in masks)
    # Filled in place, chunk by chunk: one copy of the vectors, not three (1M x 128 is 512 MB).
    rids = np.empty(total, dtype=np.int64)
    vectors = np.empty((total, dimension), dtype=np.float32)
    at = 0
    for (size, _validity, rowids, data), mask in zip(chunks, masks, strict=True):
        live = int(mask.sum())
        if not live:
            continue
        rids[at : at + live] = np.frombuffer(rowids, dtype=np.int64)[:size][mask]
        block = np.frombuffer(data, dtype=np.float32).reshape(-1, dimension)[:size]
        vectors[at : at + live] = block if live == size else block[mask]
        at += live
    return rids, vectors
