"""Eight real processes appending to one owner's chain in one SQLite file at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from tests.conftest import facade
from tests.storage.sqlite_workers import append
from troth.storage.sqlite import SQLiteStore

PROCESSES = 8
OWNER = "human:alice"


@pytest.mark.parametrize(("count", "batch"), [(25, 1), (60, 20)])
def test_eight_processes_appending_to_one_chain_lose_nothing_and_never_fork(
    tmp_path: Path, count: int, batch: int
) -> None:
    path = tmp_path / "troth.db"
    SQLiteStore(path).close()  # create the schema once, before the race
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(PROCESSES) as pool:
        start = manager.Barrier(PROCESSES)  # every writer is up before the first writes
        jobs = [(str(path), OWNER, worker, count, start, batch) for worker in range(PROCESSES)]
        outcomes = pool.starmap(append, jobs)
    acknowledged = [i for ids, _began, _ended in outcomes for i in ids]
    # The writers really overlapped: the last to begin began before the first to end ended.
    assert max(began for _, began, _ in outcomes) < min(ended for _, _, ended in outcomes)
    assert len(acknowledged) == PROCESSES * count

    with facade(SQLiteStore(path), principal=OWNER) as memory:
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
