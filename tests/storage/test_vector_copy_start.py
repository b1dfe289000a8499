"""The vector copy of an owner's first vectors starts with the write, not the first search.

Loading a copy from vec0 takes seconds at a million vectors; an owner whose first vectors
this process writes has a copy that is exactly those, so it is kept from the start and the
first search reads it. It must be the copy a load from the database would make.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import vector_facade
from troth.service.recall import Query
from troth.storage.sqlite import SQLiteStore


def test_a_first_write_starts_the_copy_and_it_equals_a_fresh_load(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "l.db")
    memory = vector_facade(store)
    try:
        made = memory.remember_many([f"note {i} about item {i % 13}" for i in range(1500)])
        memory.forget(made[3].id)
        memory.remember("one more note about item 4")
        db = store._connection()
        generation = store.search.generation(db, "human:alice")
        started = store.search.vectors.get("human:alice", generation)
        assert started is not None  # no search has run: the writes made it
        loaded = store.search.load_vectors(db, "human:alice", generation)
        assert started.count == loaded.count == len(store.vector_ids("human:alice"))
        assert sorted(started.position) == sorted(loaded.position)
        rng = np.random.default_rng(7)
        for _ in range(5):
            query = rng.normal(size=started.dimension).astype(np.float32)
            query /= np.linalg.norm(query)
            assert started.nearest(query, 20) == loaded.nearest(query, 20)
        hits = memory.recall(Query(text="one more note about item 4"))
        assert hits
        assert hits[0].memory.content == "one more note about item 4"
    finally:
        memory.close()


def test_a_copy_is_not_started_for_an_owner_with_older_vectors(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    first = vector_facade(SQLiteStore(path))
    first.remember_many([f"old note {i}" for i in range(50)])
    first.close()
    store = SQLiteStore(path)  # another process: its writes do not know the older vectors
    memory = vector_facade(store)
    try:
        memory.remember("a new note")
        db = store._connection()
        generation = store.search.generation(db, "human:alice")
        assert generation == 2
        assert store.search.vectors.get("human:alice", generation) is None
        hits = memory.recall(Query(text="old note 7", min_relevance=None))
        assert any(hit.memory.content == "old note 7" for hit in hits)
    finally:
        memory.close()
