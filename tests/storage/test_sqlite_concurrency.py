"""Eight real processes appending to one owner's chain in one SQLite file at once."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from pathlib import Path

import pytest

from ledgermind.config import load_policy
from ledgermind.service.memory import Memory
from ledgermind.storage.sqlite import SQLiteStore
from tests.storage.sqlite_workers import append

PROCESSES = 8
OWNER = "human:alice"


@pytest.mark.parametrize(("count", "batch"), [(25, 1), (60, 20)])
def test_eight_processes_appending_to_one_chain_lose_nothing_and_never_fork(
    tmp_path: Path, count: int, batch: int
) -> None:
    path = tmp_path / "ledgermind.db"
    SQLiteStore(path).close()  # create the schema once, before the race
    start_at = time.time() + 3.0  # every child is up and waiting by then
    jobs = [(str(path), OWNER, worker, count, start_at, batch) for worker in range(PROCESSES)]
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        acknowledged = [i for ids in pool.starmap(append, jobs) for i in ids]
    assert len(acknowledged) == PROCESSES * count

    with Memory(SQLiteStore(path), policy=load_policy(None), principal=OWNER) as memory:
        rows = list(memory.log(OWNER))
        # No lost write: every acknowledged memory has exactly one entry, and nothing else does.
        created = [r.decode() for r in rows]
        assert sorted(e.memory for e in created if e is not None) == sorted(acknowledged)
        assert len(rows) == len(acknowledged)
        # No fork: each entry has its own predecessor, and the recorded head is the last one.
        prev = [r.entry.prev_hash for r in rows]
        assert len(set(prev)) == len(prev)
        assert memory.store.tip(OWNER).length == len(rows)
        assert memory.store.tip(OWNER).head == rows[-1].entry.hash
        [report] = memory.verify(OWNER)
        assert report.ok, report.to_dict()
        # Writers really interleaved (otherwise the test proves nothing about concurrency).
        workers = [r.entry.content.split()[1] for r in rows]
        switches = sum(1 for a, b in itertools.pairwise(workers) if a != b)
        assert switches >= PROCESSES
