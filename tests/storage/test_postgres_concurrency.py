"""Many server processes writing at once: one owner's chain stays linear and complete."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from multiprocessing.pool import Pool

import pytest

from tests.storage.workers import remember_many
from troth.core.events import verify_records
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore

PROCESSES = 16
PER_PROCESS = 12


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    """Sixteen worker processes (spawned, so no connection is inherited)."""
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as workers:
        yield workers


def test_sixteen_processes_appending_to_one_owner_keep_one_verified_chain(
    pool: Pool, pg_url: str
) -> None:
    owner = "human:alice"
    results = pool.starmap(
        remember_many, [(pg_url, owner, n, PER_PROCESS) for n in range(PROCESSES)], chunksize=1
    )
    acknowledged = {memory_id for ids in results for memory_id in ids}
    assert len(acknowledged) == PROCESSES * PER_PROCESS
    store = PostgresStore(pg_url)
    try:
        rows = list(store.records(owner))
        result = verify_records(rows)
        assert result.ok, result
        assert result.length == PROCESSES * PER_PROCESS
        assert [r.seq for r in rows] == list(range(result.length))  # no gap, no fork
        assert store.tip(owner).head == result.head
        stored = {m.id for m in store.memories(owner, MemoryFilter())}
        assert stored == acknowledged  # no acknowledged write was lost
    finally:
        store.close()


def test_sixteen_processes_on_sixteen_owners_each_get_their_own_chain(
    pool: Pool, pg_url: str
) -> None:
    owners = [f"human:user{n:02d}" for n in range(PROCESSES)]
    pool.starmap(remember_many, [(pg_url, owners[n], n, 4) for n in range(PROCESSES)], chunksize=1)
    store = PostgresStore(pg_url)
    try:
        assert store.owners() == owners
        for owner in owners:
            assert verify_records(store.records(owner)).length == 4
    finally:
        store.close()
