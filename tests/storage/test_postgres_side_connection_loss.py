"""A recall whose side connection (``postgres.nearest``) is lost, on the real server.

The vector search of a recall runs on a connection lent from the store's idle ones. One
that was ended while it waited (a server restart, an administrator's
``pg_terminate_backend``, an idle timeout) is replaced and the search tried once more; one
lost for good surfaces as the project's own ``StorageError`` with a sentence saying what
to do, not as psycopg's exception, and the next recall works.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from tests.conftest import vector_facade
from tests.pg import green_tea_candidates
from troth.core.errors import StorageError
from troth.core.query import candidate_limits
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.nearest import RecallSearches

_TEXTS = [
    "green tea in the morning before the walk",
    "the train to Lisbon leaves at nine",
    "Alice plays the piano on Sundays",
    "black tea with milk, never green",
]


def _terminate(admin: psycopg.Connection[Any], pid: int) -> None:
    """End the backend ``pid`` and wait until the server no longer lists it."""
    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    for _ in range(200):
        gone = admin.execute(
            "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s)", (pid,)
        )
        if gone.fetchone() == (True,):
            return
        time.sleep(0.01)
    raise AssertionError(f"backend {pid} did not end")


def _ids(memory: Memory, text: str) -> list[str]:
    return [hit.memory.id for hit in memory.recall(Query(text=text, min_relevance=None))]


def _side_pid(store: PostgresStore) -> int:
    """The backend of the side connection the next recall is lent (idle now)."""
    with store._searches.lent() as side:
        return int(side.info.backend_pid)


def test_a_recall_after_its_idle_side_connection_was_ended_finds_the_same(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    try:
        memory.remember_many(_TEXTS)
        before = _ids(memory, "green tea")  # the first recall learns the settings
        assert _ids(memory, "green tea") == before  # this one ran side by side
        with psycopg.connect(pg_url, autocommit=True) as admin:
            pid = _side_pid(store)
            _terminate(admin, pid)
            assert _ids(memory, "green tea") == before
            assert _side_pid(store) != pid  # the ended one was replaced, not given back
            assert _ids(memory, "piano lessons")[0] == _ids(memory, "piano on Sundays")[0]
    finally:
        memory.close()


def test_a_side_connection_lost_for_good_is_a_storage_error_saying_what_to_do(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    assert memory.embedder is not None
    embedding = memory.embedder.embed(["green tea"])[0]
    dead = True

    with psycopg.connect(pg_url, autocommit=True) as admin:

        def connect() -> psycopg.Connection[Any]:
            db = psycopg.connect(pg_url, autocommit=True)
            if dead:  # as a server that ends every backend it starts (going down)
                _terminate(admin, db.info.backend_pid)
            return db

        searches = RecallSearches(connect)
        searches.iterative_scan = True  # as a first recall learns (the test's server takes it)
        try:
            memory.remember_many(_TEXTS)
            with psycopg.connect(pg_url, autocommit=True) as db:

                def candidates() -> Any:
                    return green_tea_candidates(searches, db, memory.principal, embedding)

                with pytest.raises(StorageError) as raised:
                    candidates()
                assert not isinstance(raised.value, psycopg.Error)
                assert isinstance(raised.value.__cause__, psycopg.OperationalError)
                message = str(raised.value)
                assert message.startswith("the vector search lost its connection to the database")
                assert "retry it" in message
                dead = False  # the server is back: the next search works
                found = candidates()
                assert found.lexical
                assert found.vector == store.vector(
                    memory.principal,
                    embedding,
                    candidate_limits(5).vector,
                    MemoryFilter(retrievable_only=True),
                )
        finally:
            searches.close()
            memory.close()


def test_a_failed_vector_search_on_a_live_connection_is_a_storage_error(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    try:
        memory.remember_many(_TEXTS)
        assert memory.embedder is not None
        wrong = [0.5] * 3  # the store holds 64 dimensions: the server refuses the cast
        with pytest.raises(StorageError, match=r"^the vector search failed: "):
            store.vector(memory.principal, wrong, 5, MemoryFilter(retrievable_only=True))
        assert store.vector(
            memory.principal,
            memory.embedder.embed(["green tea"])[0],
            5,
            MemoryFilter(retrievable_only=True),
        )
    finally:
        memory.close()
