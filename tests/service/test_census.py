"""The read check's census in one statement (issue 19: the first query at 1M).

``Store.counts`` answers several filters in one statement, each count the one
``Store.count`` gives (both backends); the read check's census of a process's first read
asks it once, not once per filter; on SQLite that statement is answered from the owner
index alone (no pass over the table's documents); and the census still refuses each
column edit it counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import connection, execute
from tests.conftest import StepClock, facade
from tests.processes import Processes
from troth.core.errors import IntegrityError
from troth.core.records import STATUSES
from troth.service.memory import Memory
from troth.storage.base import MemoryFilter, Store
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"

FILTERS = (
    MemoryFilter(),
    *(MemoryFilter(statuses=(status,)) for status in STATUSES),
    MemoryFilter(statuses=("active", "forgotten")),
    MemoryFilter(retrievable_only=True),
    MemoryFilter(include_sensitive=False),
    MemoryFilter(statuses=("active",), include_sensitive=False),
    MemoryFilter(kinds=("preference",)),
    MemoryFilter(scope="project:alpha"),
    MemoryFilter(partition="work"),
    MemoryFilter(tags=("drinks",)),
    MemoryFilter(retrievable_only=True, include_sensitive=False, kinds=("fact", "preference")),
    MemoryFilter(statuses=()),
)


def _varied(store: Store, clock: StepClock) -> Memory:
    memory = facade(store, clock=clock)
    tea = memory.remember("I like green tea", kind="preference", tags=["drinks"])
    memory.remember("Project alpha ships in May", scope="project:alpha", partition="work")
    memory.remember("My blood type is O", topic="health")  # proposed: health asks first
    memory.remember("My therapist is Dr Lee", sensitivity="sensitive")
    memory.remember("I run on Sundays")
    memory.forget(tea.id)
    return memory


def test_counts_gives_each_filter_the_count_count_gives(any_store: Store, clock: StepClock) -> None:
    _varied(any_store, clock)
    one_by_one = [any_store.count(ALICE, query) for query in FILTERS]
    assert any_store.counts(ALICE, FILTERS) == one_by_one
    assert one_by_one[0] == 5
    assert len(set(one_by_one)) >= 4  # the filters tell the memories apart
    assert any_store.counts(ALICE, ()) == []
    assert any_store.counts("human:nobody", FILTERS) == [0] * len(FILTERS)


def test_a_first_read_counts_the_projection_in_one_call(processes: Processes) -> None:
    processes.wrote(5)
    store = processes.store()  # a second process: its first read folds and counts
    calls: list[str] = []
    count, counts = store.count, store.counts

    def count_one(owner: str, query: MemoryFilter) -> int:
        calls.append("count")
        return count(owner, query)

    def count_many(owner: str, queries: tuple[MemoryFilter, ...]) -> list[int]:
        calls.append(f"counts of {len(queries)}")
        return counts(owner, queries)

    store.count = count_one  # type: ignore[method-assign]
    store.counts = count_many  # type: ignore[assignment, method-assign]
    reader = processes.open(store)
    assert len(reader.memories(ALICE)) == 5
    assert calls == ["counts of 9"]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "troth.db")
    try:
        yield store
    finally:
        store.close()


def test_the_census_is_one_statement_over_the_owner_index(
    sqlite_store: SQLiteStore, tmp_path: Path, clock: StepClock
) -> None:
    _varied(sqlite_store, clock).close()
    # A first read of an owner this process wrote from empty: the witness and census only.
    store = SQLiteStore(tmp_path / "troth.db")
    reader = facade(store, clock=clock)
    statements: list[str] = []
    connection(store).set_trace_callback(statements.append)
    try:
        reader.memories(ALICE)
    finally:
        connection(store).set_trace_callback(None)
        reader.close()
    census = [s for s in statements if "count(*)" in s.lower()]
    assert len(census) == 1, census
    again = SQLiteStore(tmp_path / "troth.db")
    try:
        plan = " ".join(
            str(row[-1]) for row in execute(again, f"EXPLAIN QUERY PLAN {census[0]}").fetchall()
        )
    finally:
        again.close()
    assert "COVERING INDEX memories_owner" in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # grouped in the index's order: no sort


@pytest.mark.parametrize(
    ("edit", "value", "finding"),
    [
        ("retrievable", False, "its retrievable differs"),
        ("sensitivity", "sensitive", "its sensitivity differs"),
        ("status", "archived", "its status differs"),
        ("delete", None, "missing from the stored projection"),
    ],
)
def test_the_census_refuses_a_column_edited_behind_the_ledger(
    processes: Processes, edit: str, value: object, finding: str
) -> None:
    [target, *_] = processes.wrote(3).memories(ALICE)
    behind = processes.store()  # another connection, behind troth's back
    if edit == "delete":
        execute(behind, "DELETE FROM memories WHERE id = ?", (target.id,))
    else:
        execute(behind, f"UPDATE memories SET {edit} = ? WHERE id = ?", (value, target.id))
    connection(behind).commit()
    behind.close()
    reader = processes.open()
    with pytest.raises(IntegrityError, match=rf"memory {target.id} .*{finding}"):
        reader.memories(ALICE)
