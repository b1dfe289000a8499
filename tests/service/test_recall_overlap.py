"""Recall's lexical and vector searches run side by side: the same hits as one after the other.

``service.recall._searched`` runs the vector search on a pool thread (its own connection)
while the recall's thread runs the lexical one (docs/retrieval.md, "A recall at 100k,
branch hlat"). These tests hold that the overlap changes nothing a caller sees, on both
backends, and that a failing lexical search leaves no vector search running behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.conftest import StepClock, vector_facade
from troth.core.errors import StorageError
from troth.service.memory import Memory
from troth.service.recall import Query, RecallHit, recall
from troth.storage.base import Store

ALICE = "human:alice"
# One time for every recall compared (recency depends on it; the test clock steps).
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WORDS = [
    "tea",
    "coffee",
    "garden",
    "chess",
    "jazz",
    "trains",
    "novels",
    "running",
    "cycling",
    "rain",
]


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        m.remember_many(
            [
                {
                    "text": f"{WORDS[i % 10]} and {WORDS[(i * 3) % 10]}, note {i}",
                    "session": f"s{i // 8}",
                }
                for i in range(120)
            ]
        )
        yield m


def _run(
    mind: Memory, text: str, pool: ThreadPoolExecutor | None, **options: Any
) -> list[RecallHit]:
    reads = mind.parts.reads
    return recall(
        reads.store,
        reads.vectors.for_recall(),
        ALICE,
        Query(text=text, **options),
        text=text,
        now=NOW,
        pool=pool,
    )


def _seen(hits: Sequence[RecallHit]) -> list[tuple[str, float, Any]]:
    return [(h.memory.id, h.score, h.why) for h in hits]


@pytest.mark.parametrize(
    "question",
    ["tea and chess", "what about note 17", "garden rain", "jazz", "nothing matches zebra"],
)
def test_side_by_side_searches_give_the_same_hits_as_one_after_the_other(
    mind: Memory, question: str
) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        beside = _run(mind, question, pool, limit=10, min_relevance=None)
    alone = _run(mind, question, None, limit=10, min_relevance=None)
    assert _seen(beside) == _seen(alone)
    # The facade (whose pool is its own) answers the same.
    asked = Query(text=question, limit=10, min_relevance=None, now="2026-12-01T12:00:00Z")
    assert _seen(mind.recall(asked)) == _seen(alone)
    if question != "nothing matches zebra":
        assert alone  # the comparison is not between two empty lists


def test_the_vector_search_runs_on_the_pool_thread(
    mind: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = mind.parts.reads.store
    threads: list[str] = []
    original = store.vector

    def vector(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(store, "vector", vector)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside") as pool:
        assert _run(mind, "tea and chess", pool, limit=5)
    assert len(threads) == 1
    assert threads[0].startswith("beside")


def test_a_failed_lexical_search_waits_for_the_vector_search_and_raises(
    mind: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = mind.parts.reads.store
    finished = threading.Event()
    original = store.vector

    def vector(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            finished.set()

    def lexical(*_args: Any, **_kwargs: Any) -> Any:
        raise StorageError("full-text query failed: disk I/O error")

    monkeypatch.setattr(store, "vector", vector)
    monkeypatch.setattr(store, "lexical", lexical)
    with ThreadPoolExecutor(max_workers=1) as pool, pytest.raises(StorageError, match="full-text"):
        _run(mind, "tea and chess", pool)
    assert finished.is_set()  # not left running behind the error
