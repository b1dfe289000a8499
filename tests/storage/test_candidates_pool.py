"""SQLite's pool for a recall's vector search (``SQLiteStore.candidates``) where one
connection per thread is not one database, and across a close.

An in-memory database is private to the connection that opened it: a pool thread's
connection would search an empty database of its own, so there both searches run on the
calling thread. A closed store opens new connections on its next read (``Connections``);
its pool is made again the same way, so a recall after a close is answered as before it.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import vector_facade
from troth.core.query import candidate_limits, lexical_terms
from troth.service.memory import Memory
from troth.storage.base import MemoryFilter, searched_in_turn
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"
LIMITS = candidate_limits(5)
LIVE = MemoryFilter(retrievable_only=True)
TEXTS = ["green tea at dawn", "black tea with milk", "a walk in the rain"]


def _embedding(mind: Memory, text: str) -> list[float]:
    assert mind.embedder is not None
    return list(mind.embedder.embed([text])[0])


def test_an_in_memory_store_answers_both_searches_on_its_one_database() -> None:
    store = SQLiteStore(":memory:")
    with vector_facade(store, principal=ALICE) as mind:
        mind.remember_many(TEXTS)
        embedding = _embedding(mind, "green tea")
        found = store.candidates(ALICE, lexical_terms("green tea"), embedding, LIMITS, LIVE)
        assert found.vector
        assert found.lexical
        assert found == searched_in_turn(
            store, ALICE, lexical_terms("green tea"), embedding, LIMITS, LIVE
        )


def test_a_closed_store_answers_a_recall_as_it_did_before_the_close(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "pool.db")
    with vector_facade(store, principal=ALICE) as mind:
        mind.remember_many(TEXTS)
        embedding = _embedding(mind, "green tea")
        before = store.candidates(ALICE, lexical_terms("green tea"), embedding, LIMITS, LIVE)
    # The facade closed the store (its connections and its pool); the store reopens both.
    try:
        after = store.candidates(ALICE, lexical_terms("green tea"), embedding, LIMITS, LIVE)
        assert after == before
        assert after.vector
    finally:
        store.close()
