"""Sign codes of an owner's vectors: a shortlist for the nearest-neighbour search at scale.

The exact scan of :class:`troth.storage.vectors.CachedVectors` reads every float of the
owner's matrix, which grows with the owner (~46 ms at a million 128-dimension vectors,
docs/benchmarks.md). Above :data:`APPROXIMATE_FROM` live vectors the copy keeps, beside
the floats, ``PLANES`` bits per vector: on which side of each of ``PLANES`` fixed random
hyperplanes the vector lies (SimHash). The Hamming distance between two codes estimates
the angle between the vectors, so the rows whose codes are nearest the query's are a
shortlist that holds nearly all of the exact nearest; the floats of the shortlist alone
are then scored exactly. The codes are 32 bytes per vector (1/16 of the floats) and
their scan is one XOR and one popcount per 64 bits, on the calling thread.

Everything here is a function of the vectors alone: the hyperplanes come from a fixed
seed and a tie at the shortlist's edge takes the whole tied distance, so a copy kept up
to date by writes and a copy reloaded from the database give the same shortlist.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt

__all__ = [
    "APPROXIMATE_FROM",
    "PLANES",
    "SHORTLIST_FACTOR",
    "SHORTLIST_FROM_SIZE",
    "SignCodes",
    "encode",
    "shortlist_size",
]

PLANES = 256
"""Bits per vector. 256 random hyperplanes keep ~92% of the exact top 500 in a shortlist of
16 times the limit at 100k (128 bits of a random rotation: ~85%; docs/retrieval.md, "The
vector stage at scale")."""

SHORTLIST_FACTOR = 16
"""The shortlist holds at least this many times the neighbours asked for: at 100k vectors
and 532 asked for (a recall's 500 and a margin), 8,512 rows. The same number of rows is
a smaller part of a larger owner, and keeps less of the exact top, so the factor grows with
the square root of the owner's size past :data:`SHORTLIST_FROM_SIZE` (x50 at a million:
~27k rows, ~0.9 of the exact top 500; docs/retrieval.md)."""

SHORTLIST_FROM_SIZE = 100_000

APPROXIMATE_FROM = 50_000
"""Owners with fewer live vectors are scanned exactly: under ~50k the exact scan costs no
more than the shortlist (measured crossover 40 to 60k: the shortlist's reading and scoring
of ~9k scattered rows is a fixed ~1 ms), and results stay exact (a LoCoMo conversation is
~600 memories). docs/retrieval.md, "The vector stage at scale"."""

_WORDS = PLANES // 64  # four: the distance below sums four bytes
_SEED = 19  # any fixed seed: the hyperplanes must be the same in every process

Codes = npt.NDArray[np.uint64]


@cache
def _hyperplanes(dimension: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(_SEED)
    return rng.standard_normal((dimension, PLANES)).astype(np.float32)


def encode(vectors: npt.NDArray[np.float32]) -> Codes:
    """The codes of a matrix of vectors (one row each), ``PLANES // 64`` words a row."""
    rows = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
    count, dimension = rows.shape
    sides = np.empty((count, PLANES), dtype=np.bool_)
    planes = _hyperplanes(dimension)
    # One product over many rows would be spread by BLAS over every core, and under load
    # its threads wait on each other (1,000 rows: 32 ms of wall for 1.7 ms of CPU on the
    # shared machine); a stack of products of a few rows each runs BLAS's single-threaded
    # kernel (0.5 ms). Chunks of 16,384 rows: a million rows' projections at once would
    # be a GB of floats.
    block = max(1, 131072 // (dimension * PLANES))
    projected = np.empty((min(count, 16384), PLANES), dtype=np.float32)
    for at in range(0, count, 16384):
        chunk = rows[at : at + 16384]
        out = projected[: chunk.shape[0]]
        whole = chunk.shape[0] - chunk.shape[0] % block
        if whole:
            np.matmul(
                chunk[:whole].reshape(-1, block, dimension),
                planes,
                out=out[:whole].reshape(-1, block, PLANES),
            )
        if whole < chunk.shape[0]:
            np.matmul(chunk[whole:], planes, out=out[whole:])
        np.greater(out, 0.0, out=sides[at : at + chunk.shape[0]])
    return np.packbits(sides, axis=1).view(np.uint64)


def shortlist_size(k: int, live: int) -> int:
    """How many rows the shortlist keeps for a search of ``k`` neighbours among ``live``."""
    growth = max(1.0, (live / SHORTLIST_FROM_SIZE) ** 0.5)
    return int(k * SHORTLIST_FACTOR * growth)


# Rows per block of the distance scan: its temporaries (8 bytes a word) stay in cache.
_BLOCK_ROWS = 16384


class SignCodes:
    """The codes of a copy's rows, grown and changed with them (row i is row i's code)."""

    def __init__(self, codes: Codes) -> None:
        self.codes = np.require(codes, dtype=np.uint64, requirements=("C", "W", "O"))

    @classmethod
    def of(cls, matrix: npt.NDArray[np.float32], size: int, capacity: int) -> SignCodes:
        """The codes of ``matrix[:size]``, with room for ``capacity`` rows."""
        codes = np.zeros((max(capacity, 1), _WORDS), dtype=np.uint64)
        if size:
            codes[:size] = encode(matrix[:size])
        return cls(codes)

    @property
    def nbytes(self) -> int:
        """The bytes the codes hold."""
        return int(self.codes.nbytes)

    def resize(self, capacity: int) -> None:
        """Room for ``capacity`` rows (the new rows zero)."""
        grown = np.zeros((capacity, self.codes.shape[1]), dtype=np.uint64)
        kept = min(capacity, self.codes.shape[0])
        grown[:kept] = self.codes[:kept]
        self.codes = grown

    def set(self, row: int, vector: npt.NDArray[np.float32], code: Codes | None = None) -> None:
        """Row ``row`` now holds ``vector`` (whose code, if given, is ``code``)."""
        self.codes[row] = encode(vector)[0] if code is None else code

    def clear(self, row: int) -> None:
        """Row ``row`` holds nothing (its code says nothing of the vector it held)."""
        self.codes[row] = 0

    def shortlist(
        self,
        query: npt.NDArray[np.float32],
        size: int,
        alive: npt.NDArray[np.bool_] | None,
        want: int,
    ) -> npt.NDArray[np.intp]:
        """The rows among ``[:size]`` whose codes are nearest the query's: every row nearer
        than the ``want``-th nearest live row's distance, and every row at it (so ties never
        depend on row order). ``alive`` (None: every row is) masks the dead rows out."""
        mine = encode(query)[0]
        flat = self.codes.reshape(-1)
        distance = np.empty(size, dtype=np.uint32)
        rows = min(size, _BLOCK_ROWS)
        # The query's code repeated for a block: XOR then runs along one long row (against
        # a broadcast of four words, numpy's inner loop is four long: ~2x slower).
        theirs = np.tile(mine, rows)
        block = np.empty(rows * _WORDS, dtype=np.uint64)
        counts = np.empty(rows * _WORDS, dtype=np.uint8)
        for at in range(0, size, _BLOCK_ROWS):
            rows = min(_BLOCK_ROWS, size - at)
            words = rows * _WORDS
            np.bitwise_xor(
                flat[at * _WORDS : at * _WORDS + words], theirs[:words], out=block[:words]
            )
            np.bitwise_count(block[:words], out=counts[:words])
            # The four words' counts (each at most 64) summed as bytes of one uint32, two
            # lanes at a time: ~15x faster than numpy's sum along a row of four.
            lanes = counts[:words].view(np.uint32)
            pairs = (lanes & 0x00FF00FF) + ((lanes >> 8) & 0x00FF00FF)
            np.add(pairs & 0xFFFF, pairs >> 16, out=distance[at : at + rows])
        if alive is not None:
            distance[~alive[:size]] = PLANES + 1
        live = size if alive is None else int(np.count_nonzero(alive[:size]))
        return np.flatnonzero(distance <= _edge(distance, min(want, live)))


def _edge(distance: npt.NDArray[np.uint32], want: int) -> int:
    """The smallest distance that ``want`` rows are at or under (``want`` at most the rows
    under ``PLANES + 1``).

    The answer depends on the distances only; a sample guesses it and counts over every
    row check it (each ~0.4 ms at a million rows; a histogram of them all takes ~2.5 ms).
    """
    if want < 1:
        return -1
    step = max(1, distance.shape[0] // 8192)
    sample = np.sort(distance[::step])
    edge = int(sample[min(sample.shape[0] - 1, (want - 1) // step)])
    if np.count_nonzero(distance <= edge) >= want:
        while edge > 0 and np.count_nonzero(distance <= edge - 1) >= want:
            edge -= 1
    else:
        edge += 1
        while np.count_nonzero(distance <= edge) < want:
            edge += 1
    return edge
