"""A recall's two searches on PostgreSQL: the vector one on a second connection, at once.

The round trips are counted in libpq's own protocol trace of each connection; the hits
are held against the two searches run one after the other (``searched_in_turn``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import vector_facade
from tests.pg import frontend_messages
from troth.core.errors import StorageError
from troth.core.query import candidate_limits, lexical_terms
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Candidates, MemoryFilter, searched_in_turn
from troth.storage.postgres import PostgresStore

_TEXTS = [
    "green tea in the morning before the walk",
    "the train to Lisbon leaves at nine",
    "Alice plays the piano on Sundays",
    "black tea with milk, never green",
    "the night train from Lisbon to Madrid",
    "piano lessons moved to Thursday",
    "a walk along the river after the rain",
    "Bob hates early trains and loves tea",
]
_QUESTIONS = ["which tea in the morning", "train to Lisbon", "piano lessons", "a walk by the river"]


def _syncs(db: psycopg.Connection[Any], trace: Path, work: Callable[[], object]) -> int:
    """How many times ``db`` waited for the server (libpq Sync messages) while ``work`` ran."""
    return frontend_messages(db, trace, work).count("Sync")


def _side(store: PostgresStore) -> psycopg.Connection[Any]:
    """The side connection the next recall is lent (lent and given back idle now)."""
    with store._searches.lent() as side:
        return side


def _loaded(pg_url: str) -> tuple[PostgresStore, Memory]:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    memory.remember_many(_TEXTS)
    for question in _QUESTIONS * 2:  # learns the vector settings, passes the prepare threshold
        memory.recall(Query(text=question, min_relevance=None))
    return store, memory


def _in_turn(store: PostgresStore, text: str, memory: Memory) -> Candidates:
    assert memory.embedder is not None
    return searched_in_turn(
        store,
        memory.principal,
        lexical_terms(text),
        memory.embedder.embed([text])[0],
        candidate_limits(10),
        MemoryFilter(retrievable_only=True),
    )


def test_the_searches_together_find_what_they_find_one_after_the_other(pg_url: str) -> None:
    store, memory = _loaded(pg_url)
    try:
        assert memory.embedder is not None
        for text in _QUESTIONS:
            together = store.candidates(
                memory.principal,
                lexical_terms(text),
                memory.embedder.embed([text])[0],
                candidate_limits(10),
                MemoryFilter(retrievable_only=True),
            )
            assert together == _in_turn(store, text, memory)
            assert together.lexical
            assert together.vector
    finally:
        memory.close()


def test_a_recall_waits_once_for_both_searches(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory = _loaded(pg_url)
    try:
        main = store._connection()
        query = Query(text="the train to Lisbon", min_relevance=None)
        side: list[int] = []

        def recall() -> None:
            side.append(_syncs(_side(store), tmp_path / "side", run))

        found: list[list[str]] = []

        def run() -> None:
            found.append([hit.memory.id for hit in memory.recall(query)])

        together = _syncs(main, tmp_path / "main", recall)
        assert side == [1]  # BEGIN, settings, nearest neighbours, COMMIT: one trip
        # The same recall with the searches one after the other, on the one connection.
        monkeypatch.setattr(
            store,
            "candidates",
            lambda owner, terms, embedding, limits, flt: searched_in_turn(
                store, owner, terms, embedding, limits, flt
            ),
        )
        in_turn = _syncs(main, tmp_path / "turn", run)
        assert together == in_turn - 1, (together, in_turn)
        assert found[0] == found[1]
        assert found[0]
    finally:
        memory.close()


def test_inside_a_snapshot_both_searches_read_its_view(pg_url: str, tmp_path: Path) -> None:
    store, memory = _loaded(pg_url)
    try:
        assert memory.embedder is not None
        text = "piano lessons"
        expected = _in_turn(store, text, memory)
        side = _side(store)
        got: list[Candidates] = []

        def search() -> None:
            with store.snapshot():
                main = store._connection()
                got.append(
                    store.candidates(
                        memory.principal,
                        lexical_terms(text),
                        memory.embedder.embed([text])[0],  # type: ignore[union-attr]
                        candidate_limits(10),
                        MemoryFilter(retrievable_only=True),
                    )
                )
                # still inside the snapshot's transaction: no search of it committed it
                assert main.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS

        assert _syncs(side, tmp_path / "side", search) == 0  # the side connection is idle
        assert got == [expected]
    finally:
        memory.close()


def test_a_failed_vector_search_beside_the_lexical_one_leaves_both_usable(pg_url: str) -> None:
    store, memory = _loaded(pg_url)
    try:
        assert memory.embedder is not None
        terms = lexical_terms("green tea")
        flt = MemoryFilter(retrievable_only=True)
        before = _side(store)
        # a vector of another dimension than the index's: the project's error, not psycopg's
        with pytest.raises(StorageError, match=r"^the vector search failed: "):
            store.candidates(memory.principal, terms, [0.5, 0.5, 0.5], candidate_limits(10), flt)
        idle = psycopg.pq.TransactionStatus.IDLE
        assert store._connection().info.transaction_status == idle
        assert _side(store) is before  # given back idle, so lent again
        assert before.info.transaction_status == idle
        assert memory.recall(Query(text="green tea", min_relevance=None))
    finally:
        memory.close()


def test_closing_the_store_closes_the_side_connection(pg_url: str) -> None:
    store, memory = _loaded(pg_url)
    side = _side(store)
    memory.close()
    assert side.closed
