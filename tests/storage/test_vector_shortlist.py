"""The sign-code shortlist of the vector copy: exact below its threshold, close above it.

Above ``approximate_from`` live vectors, a search scores only the rows whose sign codes
are nearest the query's (``storage.signcodes``). Below it, and whenever the shortlist holds
every row, the search is the exact one; above it, the neighbours found overlap the exact
ones as docs/retrieval.md ("The vector stage at scale") says, their scores are exact, and
a deleted vector is never among them.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from troth.storage import signcodes, vectors
from troth.storage.vectors import CachedVectors, VectorCache


def _clustered(count: int, dimension: int, seed: int) -> np.ndarray:
    # Unit vectors around a few hundred centres, with a shared offset: like a text
    # embedder's vectors, neighbours are close and the rest is not uniform noise.
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(300, dimension)) + 1.5
    rows = centres[rng.integers(0, 300, count)] + rng.normal(size=(count, dimension)) * 0.8
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _exact(matrix: np.ndarray, rids: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix.astype(np.float64) @ query.astype(np.float64)
    order = np.lexsort((rids, -scores))
    return [int(r) for r in rids[order[:k]]]


def _copy(cache: VectorCache, matrix: np.ndarray) -> CachedVectors:
    rids = np.arange(1, matrix.shape[0] + 1, dtype=np.int64) * 3  # rids are not rows
    cached = cache.load_arrays("human:a", 1, rids, matrix.copy())
    # A loaded copy's first search starts a thread building its codes (if it wants them),
    # and is exact meanwhile; the tests compare the searches after it.
    cache.nearest(cached, matrix[0], 1)
    cache.join_builds()
    return cached


def test_below_the_threshold_the_search_is_the_exact_one() -> None:
    matrix = _clustered(3000, 64, seed=1)
    cache = VectorCache()
    assert cache.approximate_from == signcodes.APPROXIMATE_FROM > 3000
    cached = _copy(cache, matrix)
    rng = np.random.default_rng(2)
    for row in rng.integers(0, 3000, 10):
        found, _ = cache.nearest(cached, matrix[row], 200)
        assert [rid for rid, _ in found] == _exact(matrix, cached.rids[:3000], matrix[row], 200)
    assert cached.codes is None  # an exact owner never pays for codes


def test_a_shortlist_holding_every_row_gives_the_exact_search() -> None:
    matrix = _clustered(2000, 64, seed=3)
    exact, shortlisted = VectorCache(), VectorCache(approximate_from=1)
    plain, coded = _copy(exact, matrix), _copy(shortlisted, matrix)
    query = matrix[17]
    # 16 x 200 neighbours is more than the 2,000 rows: the shortlist is all of them.
    assert coded.nearest(query, 200, approximate_from=1) == plain.nearest(query, 200)
    assert coded.codes is not None


@pytest.fixture(scope="module")
def corpus_vectors() -> tuple[np.ndarray, np.ndarray]:
    """20,000 memories and 40 questions of the ``bench.scale`` corpus (seeded), embedded
    by the packaged model: the vectors docs/retrieval.md measures the shortlist on."""
    from bench.scale import Corpus

    from troth.embedding import StaticEmbedder

    corpus = Corpus()
    texts = [item["text"] for item in corpus.items(20_000)]
    embedder = StaticEmbedder.default()
    rows = np.concatenate([embedder.embed(texts[i : i + 5000]) for i in range(0, 20_000, 5000)])
    asked = np.random.default_rng(11).integers(0, 20_000, 40)
    questions = embedder.embed([corpus.question(texts[i]) for i in asked])
    return rows.astype(np.float32), questions.astype(np.float32)


def test_above_the_threshold_the_neighbours_overlap_the_exact_ones(
    corpus_vectors: tuple[np.ndarray, np.ndarray],
) -> None:
    matrix, questions = corpus_vectors
    count, k = matrix.shape[0], 100
    cache = VectorCache(approximate_from=1000)
    cached = _copy(cache, matrix)
    assert cached.codes is not None
    assert signcodes.shortlist_size(k, count) == 1600  # 8% of the rows, as 8,512 of 100k
    overlaps, tops = [], []
    by_rid = {int(r): i for i, r in enumerate(cached.rids[:count])}
    for query in questions:
        found, _ = cache.nearest(cached, query, k)
        exact = _exact(matrix, cached.rids[:count], query, k)
        got = [rid for rid, _ in found]
        assert len(got) == k
        overlaps.append(len(set(got) & set(exact)) / k)
        tops.append(len(set(got[:10]) & set(exact[:10])) / 10)
        # The scores are the exact cosines of the rows found, best first.
        cosines = [float(matrix[by_rid[rid]] @ query) for rid in got]
        assert np.allclose([s for _, s in found], cosines, atol=1e-5)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    # docs/retrieval.md: ~0.93 of the exact top 500 at 100k, 0.99 of the top 10; here
    # (a fifth of the rows, the same share shortlisted) 0.905 and 0.98.
    assert float(np.mean(overlaps)) >= 0.88, np.mean(overlaps)  # 0.905 measured
    assert float(np.mean(tops)) >= 0.95, np.mean(tops)  # 0.98 measured


def test_a_deleted_vector_is_never_returned_by_the_shortlist() -> None:
    matrix = _clustered(20_000, 64, seed=6)
    cache = VectorCache(approximate_from=1000)
    cached = _copy(cache, matrix)
    query = matrix[100]
    before = [rid for rid, _ in cache.nearest(cached, query, 50)[0]]
    gone = before[:10]
    for rid in gone:
        cached.delete(rid)
    after = [rid for rid, _ in cache.nearest(cached, query, 50)[0]]
    assert not set(gone) & set(after)
    assert len(after) == 50
    assert after[:40] == before[10:]  # the rest keep their order
    # A vector written again under a deleted rid is found again, with its new code.
    cached.put(gone[0], matrix[100])
    assert cache.nearest(cached, query, 1)[0][0][0] == gone[0]


def test_the_codes_follow_puts_and_growth_as_a_fresh_build_would() -> None:
    matrix = _clustered(3000, 64, seed=7)
    cache = VectorCache(approximate_from=100)
    cached = _copy(cache, matrix[:1000])
    cache.nearest(cached, matrix[0], 10)  # builds the codes
    for i in range(1000, 3000):  # grows the matrix (and the codes) past its first size
        cached.put(3 * (i + 1), matrix[i])
    cached.put(3, matrix[2999])  # replaces a vector
    cached.delete(6)
    assert cached.codes is not None
    rebuilt = signcodes.SignCodes.of(cached.matrix, cached.size, cached.size)
    live = cached.alive[: cached.size]
    assert np.array_equal(cached.codes.codes[: cached.size][live], rebuilt.codes[live])
    assert not cached.codes.codes[: cached.size][~live].any()


@pytest.mark.parametrize("size", [1, 5, 16384, 16385, 40000])
def test_the_distance_scan_counts_every_differing_bit(size: int) -> None:
    matrix = _clustered(size, 32, seed=size)
    codes = signcodes.SignCodes.of(matrix, size, size)
    query = matrix[size // 2]
    mine = signcodes.encode(query)[0]
    distance = np.bitwise_count(codes.codes[:size] ^ mine).sum(axis=1)
    for want in (1, 7, size):
        rows = codes.shortlist(query, size, None, want)
        edge = np.sort(distance)[min(want, size) - 1]
        assert sorted(rows.tolist()) == np.flatnonzero(distance <= edge).tolist()


def test_a_loaded_copy_is_searched_exactly_while_its_codes_are_built() -> None:
    matrix = _clustered(30_000, 64, seed=8)
    cache = VectorCache(approximate_from=1000)
    rids = np.arange(1, 30_001, dtype=np.int64)
    cached = cache.load_arrays("human:a", 1, rids, matrix.copy())
    query = matrix[3]
    first, _ = cache.nearest(cached, query, 100)  # starts the build, answers exactly
    assert [rid for rid, _ in first] == _exact(matrix, rids, query, 100)
    # Writes while the codes are built reach them: a vector replaced, one deleted, one new.
    cached.put(10, matrix[3])
    cached.delete(4)
    cached.put(30_001, matrix[3])
    cache.join_builds()
    assert cached.codes is not None
    assert cached.changed is None
    rebuilt = signcodes.SignCodes.of(cached.matrix, cached.size, cached.size)
    assert np.array_equal(cached.codes.codes[: cached.size], rebuilt.codes[: cached.size])
    found = [rid for rid, _ in cache.nearest(cached, query, 100)[0]]
    # The same vector under two rids (their cosines may differ in the last bit: the two
    # rows fall at different places of the blocked product).
    assert set(found[:2]) == {10, 30_001}
    assert 4 not in found


def test_a_copy_kept_by_writes_gets_its_codes_when_it_crosses_the_threshold() -> None:
    matrix = _clustered(3000, 64, seed=9)
    cache = VectorCache(approximate_from=2000)
    cache.apply("human:a", 1, [(i + 1, matrix[i]) for i in range(1500)])
    cached = cache.get("human:a", 1)
    assert cached is not None
    assert cached.codes is None  # under the threshold: no codes to keep
    cache.apply("human:a", 2, [(i + 1, matrix[i]) for i in range(1500, 3000)])
    assert cached.codes is not None  # built at the write, not by a search
    assert cached.changed is None
    rebuilt = signcodes.SignCodes.of(cached.matrix, cached.size, cached.size)
    assert np.array_equal(cached.codes.codes[: cached.size], rebuilt.codes[: cached.size])
    cache.apply("human:a", 3, [(1, None), (3001, matrix[0])])
    found = [rid for rid, _ in cache.nearest(cached, matrix[0], 5)[0]]
    assert found[0] == 3001
    assert 1 not in found


def test_a_copy_dropped_while_its_codes_are_built_is_read_no_further(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Once the copy leaves the cache (forgotten, evicted, reloaded), deletes no longer
    # reach it: the build must stop reading its rows, and attach nothing.
    matrix = _clustered(30_000, 64, seed=9)  # four blocks of 8,192 rows
    cache = VectorCache(approximate_from=1000)
    cached = cache.load_arrays("human:a", 1, np.arange(1, 30_001, dtype=np.int64), matrix)
    first_block, go_on = threading.Event(), threading.Event()
    blocks: list[int] = []

    def encode(block: np.ndarray) -> np.ndarray:
        blocks.append(block.shape[0])
        first_block.set()
        go_on.wait(10)
        return signcodes.encode(block)

    monkeypatch.setattr(vectors, "encode", encode)
    cache.nearest(cached, matrix[0], 1)  # starts the build
    assert first_block.wait(10)
    cache.forget("human:a")
    go_on.set()
    cache.join_builds()
    assert len(blocks) == 1
    assert cached.codes is None
