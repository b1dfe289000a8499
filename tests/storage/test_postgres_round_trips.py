"""How many times a PostgreSQL write waits for the server (libpq's own protocol trace).

Each wait is a round trip and two context switches on each side; with many writers
sharing few cores they decide throughput (docs/benchmarks.md, bench:postgres-writes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from tests.conftest import vector_facade
from tests.pg import frontend_messages
from troth.core.errors import StorageError
from troth.service.memory import Memory
from troth.storage.base import Hit, MemoryFilter
from troth.storage.postgres import PostgresStore


def _messages(store: PostgresStore, trace: Path, work: Callable[[], object]) -> list[str]:
    """The frontend messages libpq sent on the store's connection while ``work`` ran."""
    return frontend_messages(store._connection(), trace, work)


def _facade(pg_url: str) -> tuple[PostgresStore, Memory]:
    store = PostgresStore(pg_url)
    return store, vector_facade(store)


def test_a_remember_on_a_verified_chain_is_one_round_trip(pg_url: str, tmp_path: Path) -> None:
    store, memory = _facade(pg_url)
    try:
        memory.remember("first: makes the head and verifies the chain")
        # Past psycopg's prepare threshold (5 runs; preparing costs one more trip, once).
        memory.remember_many([])
        for n in range(8):
            memory.remember(f"warm {n}")
        for n in range(5):
            sent = _messages(store, tmp_path / "trace", lambda n=n: memory.remember(f"note {n}"))
            assert sent == ["Bind", "Describe", "Execute", "Sync"], sent
        assert store.tip(memory.principal).length == 14
    finally:
        memory.close()


def test_a_remember_after_another_writer_moved_the_chain_holds_it_and_lands(
    pg_url: str, tmp_path: Path
) -> None:
    store, memory = _facade(pg_url)
    _, other = _facade(pg_url)
    try:
        memory.remember("mine")
        other.remember("theirs")  # moves the head this facade last verified
        sent = _messages(store, tmp_path / "trace", lambda: memory.remember("mine again"))
        # the expected-tip statement found the chain moved; then lock, verify, commit
        assert sent.count("Sync") + sent.count("Flush") >= 3, sent
        contents = [r.entry.content for r in store.records(memory.principal)]
        assert contents == ["mine", "theirs", "mine again"]
        # Another process wrote between two of ours: the next write holds the chain at
        # once (the lock's answer, then the commit); finding nobody else wrote, the one
        # after is one statement again.
        sent = _messages(store, tmp_path / "trace", lambda: memory.remember("held"))
        # (a Flush after the Sync, when psycopg leaves the pipeline, waits for nothing)
        assert sent.count("Sync") == 1, sent
        assert sent[: sent.index("Sync")].count("Flush") == 1, sent
        for n in range(8):  # past the new statement's prepare threshold
            memory.remember(f"alone {n}")
        sent = _messages(store, tmp_path / "trace", lambda: memory.remember("alone again"))
        assert sent == ["Bind", "Describe", "Execute", "Sync"], sent
    finally:
        memory.close()
        other.close()


def test_a_vector_search_is_one_round_trip(pg_url: str, tmp_path: Path) -> None:
    store, memory = _facade(pg_url)
    try:
        memory.remember_many(["green tea in the morning", "the train to Lisbon", "piano"])
        assert memory.embedder is not None
        embedding = memory.embedder.embed(["green tea"])[0]
        query = MemoryFilter(retrievable_only=True)

        def search() -> list[Hit]:
            return store.vector(memory.principal, embedding, 5, query)

        # The first search learns that the server takes both settings; the next few pass
        # psycopg's prepare threshold (preparing costs one more trip, once).
        first = search()
        for _ in range(6):
            assert search() == first
        found: list[list[Hit]] = []
        sent = _messages(store, tmp_path / "trace", lambda: found.append(search()))
        assert sent.count("Sync") == 1, sent  # BEGIN, settings, query, COMMIT: one trip
        assert found == [first]
        assert [hit.rank for hit in first] == [1, 2, 3]
        assert store._connection().info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    finally:
        memory.close()


def test_a_failed_vector_search_leaves_the_connection_usable(pg_url: str) -> None:
    store, memory = _facade(pg_url)
    try:
        memory.remember("green tea in the morning")
        assert memory.embedder is not None
        embedding = memory.embedder.embed(["green tea"])[0]
        query = MemoryFilter(retrievable_only=True)
        store.vector(memory.principal, embedding, 5, query)  # learns the settings
        # a vector of another dimension than the index's: the project's error, not psycopg's
        with pytest.raises(StorageError, match=r"^the vector search failed: "):
            store.vector(memory.principal, [0.5, 0.5, 0.5], 5, query)
        assert store._connection().info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert len(store.vector(memory.principal, embedding, 5, query)) == 1
    finally:
        memory.close()
