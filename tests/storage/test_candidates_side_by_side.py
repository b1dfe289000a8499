"""A recall's two searches (``Store.candidates``) give the hits of the two calls in turn.

SQLite runs the vector search on a thread of the store's own pool while the calling thread
runs the lexical one; PostgreSQL on a second connection (its own test,
``test_postgres_recall_searches.py``, counts the round trips). These tests hold, on both
backends, that running them together changes nothing a caller sees, and on SQLite where
the vector search runs and that a failing lexical search leaves none running behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StepClock, vector_facade
from troth.core.errors import StorageError
from troth.core.query import candidate_limits, lexical_terms
from troth.service.memory import Memory
from troth.storage.base import Candidates, MemoryFilter, Store, searched_in_turn
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"
WORDS = ["tea", "coffee", "garden", "chess", "jazz", "trains", "novels", "running", "rain"]
QUESTIONS = ["tea and chess", "what about note 17", "garden rain", "jazz", "nothing zebra"]
LIMITS = candidate_limits(10)
EVERYTHING = MemoryFilter(retrievable_only=True)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "side.db")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        m.remember_many(
            [{"text": f"{WORDS[i % 9]} and {WORDS[(i * 4) % 9]}, note {i}"} for i in range(120)]
        )
        yield m


def _embedding(mind: Memory, text: str) -> Any:
    assert mind.embedder is not None
    return mind.embedder.embed([text])[0]


def _both(store: Store, mind: Memory, text: str) -> tuple[Candidates, Candidates]:
    terms, embedding = lexical_terms(text), _embedding(mind, text)
    together = store.candidates(ALICE, terms, embedding, LIMITS, EVERYTHING)
    in_turn = searched_in_turn(store, ALICE, terms, embedding, LIMITS, EVERYTHING)
    return together, in_turn


@pytest.mark.parametrize("question", QUESTIONS)
def test_both_searches_together_give_the_hits_of_the_two_in_turn(
    any_store: Store, mind: Memory, question: str
) -> None:
    together, in_turn = _both(any_store, mind, question)
    assert together == in_turn
    assert together.vector  # every memory has a vector: the comparison is never empty
    if question != "nothing zebra":
        assert together.lexical


def test_sqlite_runs_the_vector_search_on_a_thread_of_its_own(
    sqlite_store: SQLiteStore, clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mind = vector_facade(sqlite_store, principal=ALICE, clock=clock)
    mind.remember_many(["green tea at dawn", "black tea with milk", "a walk in the rain"])
    threads: list[str] = []
    original = sqlite_store.vector

    def vector(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlite_store, "vector", vector)
    text = "green tea"
    found = sqlite_store.candidates(
        ALICE, lexical_terms(text), _embedding(mind, text), LIMITS, EVERYTHING
    )
    assert found.lexical
    assert found.vector
    assert len(threads) == 1
    assert threads[0].startswith("troth-vector")
    # Inside a snapshot both run on the calling thread, in the snapshot's view.
    with sqlite_store.snapshot():
        sqlite_store.candidates(
            ALICE, lexical_terms(text), _embedding(mind, text), LIMITS, EVERYTHING
        )
    assert threads[1] == threading.current_thread().name


def test_a_failed_lexical_search_waits_for_the_vector_search_and_raises(
    sqlite_store: SQLiteStore, clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mind = vector_facade(sqlite_store, principal=ALICE, clock=clock)
    mind.remember_many(["green tea at dawn", "black tea with milk"])
    finished = threading.Event()
    original = sqlite_store.vector

    def vector(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            finished.set()

    def lexical(*_args: Any, **_kwargs: Any) -> Any:
        raise StorageError("full-text query failed: disk I/O error")

    monkeypatch.setattr(sqlite_store, "vector", vector)
    monkeypatch.setattr(sqlite_store, "lexical", lexical)
    with pytest.raises(StorageError, match="full-text"):
        sqlite_store.candidates(
            ALICE, lexical_terms("tea"), _embedding(mind, "tea"), LIMITS, EVERYTHING
        )
    assert finished.is_set()  # not left running behind the error
