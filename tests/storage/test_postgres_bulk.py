"""PostgreSQL's bulk load: the HNSW index is gone while the load runs and back after it."""

from __future__ import annotations

import pytest

from tests.conftest import vector_facade
from troth.storage.postgres import PostgresStore

INDEX = "memories_embedding_64"


def _indexes(store: PostgresStore) -> set[str]:
    rows = store._connection().execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"
    )
    return {str(r[0]) for r in rows}


def test_the_vector_index_is_dropped_for_the_load_and_built_once_after(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    try:
        with memory.bulk_load():
            assert INDEX not in _indexes(store)
            memory.remember_many([f"note {i}" for i in range(20)])
        assert INDEX in _indexes(store)
    finally:
        memory.close()


def test_opening_the_store_rebuilds_an_index_a_stopped_load_left_out(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    memory.remember("first")
    store._connection().execute(f"DROP INDEX {INDEX}")  # as a load killed mid-way leaves it
    memory.close()
    reopened = PostgresStore(pg_url)
    try:
        assert INDEX in _indexes(reopened)
    finally:
        reopened.close()


def test_the_index_is_rebuilt_when_the_loads_body_fails(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    try:
        memory.remember("first")
        # The body's error comes out, not one of the rebuild's.
        seen: list[set[str]] = []

        def load() -> None:
            with memory.bulk_load():
                seen.append(_indexes(store))
                raise RuntimeError("the loader failed")

        with pytest.raises(RuntimeError, match="the loader failed"):
            load()
        assert INDEX not in seen[0]
        assert INDEX in _indexes(store)
    finally:
        memory.close()


def test_a_model_recorded_inside_the_span_gets_its_own_index(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    try:
        store.set_vector_model("hashing-64", 64)
        with store.bulk_load():
            store.set_vector_model("other-32", 32)
        assert "memories_embedding_32" in _indexes(store)
        assert INDEX not in _indexes(store)  # a stale dimension's index would break inserts
    finally:
        store.close()


def test_a_store_opened_during_a_load_does_not_build_the_index(pg_url: str) -> None:
    loader = PostgresStore(pg_url)
    loader.set_vector_model("hashing-64", 64)
    try:
        with loader.bulk_load():
            other = PostgresStore(pg_url)  # e.g. a server starting meanwhile
            try:
                assert INDEX not in _indexes(other)
            finally:
                other.close()
        assert INDEX in _indexes(loader)
    finally:
        loader.close()
