"""The vector copy's scan: a blocked product on the calling thread, equal to the plain one."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from troth.storage.vectors import VectorCache


def _unit_rows(count: int, dimension: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(count, dimension)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize(
    ("count", "dimension"), [(1, 8), (63, 128), (64, 128), (1000, 128), (777, 384)]
)
def test_the_blocked_scan_gives_every_cosine_of_the_plain_product(
    count: int, dimension: int
) -> None:
    matrix = _unit_rows(count, dimension, seed=count)
    cache = VectorCache()
    rids = np.arange(1, count + 1, dtype=np.int64)
    cached = cache.load_arrays("human:a", 1, rids, matrix.copy())
    query = matrix[count // 2].copy()
    found, total = cache.nearest(cached, query, count)
    assert total == count
    plain = matrix.astype(np.float64) @ query.astype(np.float64)
    by_rid = dict(found)
    assert sorted(by_rid) == list(range(1, count + 1))
    assert max(abs(by_rid[i + 1] - plain[i]) for i in range(count)) < 1e-5
    # Best first, ties by rid; the hits are plain Python numbers.
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)
    assert all(type(rid) is int and type(score) is float for rid, score in found)


def test_a_deleted_row_is_never_a_hit_and_the_rest_keep_their_order() -> None:
    matrix = _unit_rows(200, 16, seed=3)
    cache = VectorCache()
    cached = cache.load_arrays("human:a", 1, np.arange(1, 201, dtype=np.int64), matrix.copy())
    query = matrix[10].copy()
    before = [rid for rid, _ in cache.nearest(cached, query, 200)[0]]
    cached.delete(11)
    after = [rid for rid, _ in cache.nearest(cached, query, 200)[0]]
    assert 11 not in after
    assert after == [rid for rid in before if rid != 11]


def test_the_scan_runs_on_the_calling_thread_only() -> None:
    # A BLAS product over the whole copy would wake BLAS's own threads; the blocked scan
    # does not start any thread of the process (threading sees only Python's, so count
    # the OS threads of the process instead).
    import os

    matrix = _unit_rows(20000, 128, seed=5)
    cache = VectorCache()
    cached = cache.load_arrays("human:a", 1, np.arange(1, 20001, dtype=np.int64), matrix)
    query = matrix[0].copy()
    task = f"/proc/{os.getpid()}/task"

    def times() -> dict[str, int]:
        out = {}
        for tid in os.listdir(task):
            try:
                with open(f"{task}/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[tid] = int(fields[11]) + int(fields[12])  # utime + stime, in ticks
        return out

    cpu = times()
    for _ in range(200):
        cache.nearest(cached, query, 10)
    later = times()
    me = str(threading.get_native_id())
    others = sum(later[t] - cpu.get(t, 0) for t in later if t != me)
    assert later[me] - cpu.get(me, 0) > 0
    assert others == 0
