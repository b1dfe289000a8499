"""PostgreSQL's bulk load: the HNSW index is gone while the load runs and back after it."""

from __future__ import annotations

from ledgermind.config import load_policy
from ledgermind.embedding import HashingEmbedder
from ledgermind.service.memory import Memory
from ledgermind.storage.postgres import PostgresStore
from tests.conftest import StepClock

INDEX = "memories_embedding_64"


def _indexes(store: PostgresStore) -> set[str]:
    rows = store._connection().execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"
    )
    return {str(r[0]) for r in rows}


def test_the_vector_index_is_dropped_for_the_load_and_built_once_after(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = Memory(
        store,
        policy=load_policy(None),
        principal="human:alice",
        clock=StepClock(),
        embedder=HashingEmbedder(),
    )
    try:
        with memory.bulk_load():
            assert INDEX not in _indexes(store)
            memory.remember_many([f"note {i}" for i in range(20)])
        assert INDEX in _indexes(store)
    finally:
        memory.close()


def test_opening_the_store_rebuilds_an_index_a_stopped_load_left_out(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = Memory(
        store,
        policy=load_policy(None),
        principal="human:alice",
        clock=StepClock(),
        embedder=HashingEmbedder(),
    )
    memory.remember("first")
    store._connection().execute(f"DROP INDEX {INDEX}")  # as a load killed mid-way leaves it
    memory.close()
    reopened = PostgresStore(pg_url)
    try:
        assert INDEX in _indexes(reopened)
    finally:
        reopened.close()
