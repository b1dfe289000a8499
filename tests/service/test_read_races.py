"""Reads that straddle another writer's commit are not findings.

The read path holds what it serves against the owner's chain, read apart from the rows it
serves. A commit by another process between the two reads must not look like tampering:
the first read of an owner (the chain, its fold and the projection's census) is read in
one snapshot, and a row read just before an edit is read again with the chain before
anything is refused. Both backends; the writes come from another thread, on its own
connection, as another process's would.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.backends import connection, execute
from tests.processes import Processes, in_another_thread
from troth.core.errors import IntegrityError
from troth.core.records import MemoryRecord
from troth.service.memory import Memory
from troth.storage.base import MemoryFilter, Store

ALICE = "human:alice"


def _tea_and_a_reader(processes: Processes) -> tuple[Memory, MemoryRecord, Store, Memory]:
    """A writer that kept one memory, and a second process's store and facade that read it."""
    writer = processes.open()
    kept = writer.remember("Alice drinks green tea").memory
    assert kept is not None
    store = processes.store()
    return writer, kept, store, processes.open(store)


def test_a_first_read_while_another_writer_commits_serves_and_then_follows(
    processes: Processes,
) -> None:
    writer = processes.wrote(5, "Alice's note number {n}")
    store = processes.store()  # a second process's store
    counted = store.counts
    calls = 0

    def count_while_another_commits(owner: str, queries: Sequence[MemoryFilter]) -> list[int]:
        # Between the chain read and the census, another writer commits.
        nonlocal calls
        calls += 1
        if calls == 1:
            in_another_thread(lambda: writer.remember("written while the reader folds"))
        return counted(owner, queries)

    store.counts = count_while_another_commits  # type: ignore[method-assign]
    reader = processes.open(store)
    first = reader.memories(ALICE)
    assert calls > 0, "the census did not run, so the race was not made"
    assert len(first) in (5, 6)
    after = [m.content for m in reader.memories(ALICE)]
    assert "written while the reader folds" in after
    assert len(after) == 6
    reader.remember("and the reader still writes")


def test_a_row_read_just_before_an_edit_is_not_a_finding(processes: Processes) -> None:
    writer, kept, store, reader = _tea_and_a_reader(processes)
    assert [m.id for m in reader.memories(ALICE)] == [kept.id]  # the owner is verified
    listed = store.memories
    raced = False

    def rows_then_an_edit(owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        # The rows are read; then, before the read path holds them against the chain,
        # another writer supersedes the memory (its row leaves retrieval).
        nonlocal raced
        rows = listed(owner, query)
        if not raced:
            raced = True
            in_another_thread(lambda: writer.edit(kept.id, "Alice drinks black tea"))
        return rows

    store.memories = rows_then_an_edit  # type: ignore[method-assign]
    served = reader.memories(ALICE)
    assert raced
    assert [m.content for m in served] == ["Alice drinks green tea"]  # as read, a moment old
    now = {m.content: m.status for m in reader.memories(ALICE)}
    assert "Alice drinks black tea" in now
    reader.remember("and the reader still writes")


def test_a_row_changed_behind_the_programs_back_is_still_refused(processes: Processes) -> None:
    """The re-read is no loophole: a row that differs from the chain now is refused."""
    _, kept, _store, reader = _tea_and_a_reader(processes)
    assert len(reader.memories(ALICE)) == 1
    raw = processes.store()
    [(doc,)] = execute(raw, "SELECT doc FROM memories WHERE id = ?", (kept.id,)).fetchall()
    planted = str(doc).replace("green tea", "planted tea")
    execute(raw, "UPDATE memories SET doc = ? WHERE id = ?", (planted, kept.id))
    connection(raw).commit()
    raw.close()
    with pytest.raises(IntegrityError, match=f"memory {kept.id} as stored for {ALICE}"):
        reader.memories(ALICE)
