"""The in-process vector copy: exact nearest neighbours and a byte budget over all owners."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import vector_facade
from troth.storage.sqlite import SQLiteStore
from troth.storage.vectors import VectorCache


def _rows(count: int, dimension: int, seed: int) -> list[tuple[int, bytes]]:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(count, dimension)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [(i + 1, matrix[i].tobytes()) for i in range(count)]


def test_nearest_is_the_exact_top_k_by_cosine() -> None:
    cache = VectorCache()
    rows = _rows(500, 16, seed=1)
    cached = cache.load("human:a", 1, rows, 16)
    query = np.frombuffer(rows[42][1], dtype=np.float32)
    found, count = cache.nearest(cached, query, 5)
    matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    expected = [int(i) + 1 for i in np.argsort(-(matrix @ query))[:5]]
    assert count == 500
    assert [rid for rid, _ in found] == expected
    assert found[0][0] == 43
    assert abs(found[0][1] - 1.0) < 1e-5


def test_an_owner_larger_than_the_budget_is_not_wanted() -> None:
    cache = VectorCache(max_bytes=100 * 16 * 4)
    assert cache.wants(100, 16)
    assert not cache.wants(101, 16)
    assert not cache.wants(0, 16)


def test_loading_past_the_budget_drops_the_least_recently_used_owner() -> None:
    cache = VectorCache(max_bytes=2 * 100 * 16 * 4)  # room for two owners of 100
    cache.load("human:a", 1, _rows(100, 16, 1), 16)
    cache.load("human:b", 1, _rows(100, 16, 2), 16)
    assert cache.get("human:a", 1) is not None  # a is now the most recently used
    cache.load("human:c", 1, _rows(100, 16, 3), 16)
    assert cache.get("human:b", 1) is None
    assert cache.get("human:a", 1) is not None
    assert cache.get("human:c", 1) is not None


def test_a_copy_that_outgrows_the_budget_is_dropped_and_others_make_room() -> None:
    cache = VectorCache(max_bytes=1024 * 16 * 4)
    cache.load("human:a", 1, _rows(10, 16, 1), 16)
    cache.load("human:b", 1, _rows(500, 16, 2), 16)
    vector = np.zeros(16, dtype=np.float32)
    vector[0] = 1.0
    # b's matrix grows from 500 to 1024 rows, the whole budget: a must give way.
    cache.apply("human:b", 2, [(5000 + i, vector) for i in range(20)])
    assert cache.get("human:b", 2) is not None
    assert cache.get("human:a", 1) is None
    # Growing past the whole budget drops b itself (searches then use the database).
    cache.apply("human:b", 3, [(9000 + i, vector) for i in range(505)])
    assert cache.get("human:b", 3) is None


def test_an_owner_over_half_the_budget_stays_cached_after_a_write() -> None:
    # Growing the matrix must not push a copy that still fits out of the cache (it would be
    # reloaded from the database on every search after every write).
    cache = VectorCache(max_bytes=1000 * 16 * 4)
    cache.load("human:big", 1, _rows(600, 16, 1), 16)
    vector = np.zeros(16, dtype=np.float32)
    vector[1] = 1.0
    for generation in range(2, 12):
        cache.apply("human:big", generation, [(10_000 + generation, vector)])
        assert cache.get("human:big", generation) is not None


def test_vec0_chunks_read_directly_hold_the_same_vectors_as_its_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "l.db")
    memory = vector_facade(store)
    try:
        made = memory.remember_many([f"note {i} about item {i % 17}" for i in range(2500)])
        memory.remember_many([f"bob {i}" for i in range(700)], owner="human:bob", actor="human:bob")
        for result in made[::7]:
            memory.forget(result.id)  # vec0 clears these slots' validity bits
        memory.redact(made[1].id, reason="erase")
        db = store._connection()
        assert store.search.chunk_layout(db)  # the pinned sqlite-vec keeps the known layout
        for owner in ("human:alice", "human:bob"):
            fast = store.search.load_vectors(db, owner, generation=1)
            store.search.chunk_layout(db, known=False)
            slow = store.search.load_vectors(db, owner, generation=1)
            store.search.chunk_layout(db, known=True)
            order_fast = np.argsort(fast.rids[: fast.size])
            order_slow = np.argsort(slow.rids[: slow.size])
            assert fast.size == slow.size == len(store.vector_ids(owner))
            assert store.search.vector_count(db, owner) == fast.size
            assert np.array_equal(
                fast.rids[: fast.size][order_fast], slow.rids[: slow.size][order_slow]
            )
            assert np.array_equal(
                fast.matrix[: fast.size][order_fast], slow.matrix[: slow.size][order_slow]
            )
    finally:
        memory.close()
