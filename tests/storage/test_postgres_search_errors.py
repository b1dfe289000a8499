"""On PostgreSQL each of a recall's two searches names itself when it fails.

The vector search runs pipelined on a side connection while the lexical one runs on the
thread's own (``postgres.nearest.RecallSearches.candidates``). A failure of the lexical
search inside that block is the full-text search's (``search.lexical``'s sentence, or the
lost connection's, ``connection.lost``), never "the vector search failed"; a failure of
the vector search is the vector search's. Either way the next recall works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

from tests.conftest import vector_facade
from tests.pg import green_tea_candidates
from troth.core.errors import StorageError
from troth.embedding import HashingEmbedder
from troth.service.recall import Query
from troth.storage.postgres import PostgresStore, search

_TEXTS = ["green tea in the morning", "black tea with milk", "the train to Lisbon"]


def _store(pg_url: str) -> tuple[PostgresStore, Any]:
    store = PostgresStore(pg_url)
    mind = vector_facade(store)
    for text in _TEXTS:
        mind.remember(text)
    mind.recall(Query(text="green tea", min_relevance=None))  # the settings are known now
    assert store._searches.together(store._connection())  # the pipelined block is taken
    return store, mind


def _recall(mind: Any) -> list[str]:
    return [h.memory.id for h in mind.recall(Query(text="green tea", min_relevance=None))]


def _fails_naming(
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    patch: Callable[[PostgresStore], None],
    starts: str,
    *,
    direct: bool = False,
) -> None:
    """Break a search with ``patch``: the recall (or, ``direct``, the two searches called
    on their own) fails with a sentence starting ``starts``; unpatched, the next recall
    finds what it found before."""
    store, mind = _store(pg_url)
    before = _recall(mind)
    vector = HashingEmbedder().embed(["green tea"])[0]

    def search_now() -> object:
        if direct:
            return green_tea_candidates(store._searches, store._connection(), "human:alice", vector)
        return _recall(mind)

    patch(store)
    with pytest.raises(StorageError) as failed:
        search_now()
    assert str(failed.value).startswith(starts)
    if "vector" not in starts:
        assert "vector" not in str(failed.value)
    monkeypatch.undo()
    assert _recall(mind) == before
    store.close()


def test_a_lexical_failure_in_the_pipelined_block_is_the_full_text_searchs(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def patch(store: PostgresStore) -> None:
        monkeypatch.setattr(search, "TEXT_SEARCH_CONFIG", "no_such_configuration")

    _fails_naming(pg_url, monkeypatch, patch, "full-text query failed")


def test_a_lost_main_connection_in_the_pipelined_block_is_not_the_vector_searchs(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = search.lexical

    def patch(store: PostgresStore) -> None:
        def ended_first(db: psycopg.Connection[Any], *args: Any) -> Any:
            with psycopg.connect(store.url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (db.info.backend_pid,))
            return real(db, *args)

        monkeypatch.setattr(search, "lexical", ended_first)

    starts = "the connection to the database was lost"
    _fails_naming(pg_url, monkeypatch, patch, starts, direct=True)


def test_a_vector_failure_in_the_pipelined_block_is_the_vector_searchs(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = search.nearest_statement

    def broken(*args: Any) -> tuple[pgsql.Composed, list[Any]]:
        statement, arguments = real(*args)
        return pgsql.Composed([statement, pgsql.SQL(" OFFSET 'x'")]), arguments

    def patch(store: PostgresStore) -> None:
        monkeypatch.setattr(search, "nearest_statement", broken)

    _fails_naming(pg_url, monkeypatch, patch, "the vector search failed")
