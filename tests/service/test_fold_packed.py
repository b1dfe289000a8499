"""The read check's fold kept packed (docs/ledger.md, "The fold in memory").

A fold keeps each memory as one ``bytes`` (``folds.Fold``): nothing the garbage collector
walks, however many memories a process has read; each record it gives back equals the
one put, and a served record is held against it exactly as against the record itself.
"""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

from tests.conftest import StepClock, facade
from troth.core.records import AuditItem, MemoryRecord, Relation, Scope
from troth.service.folds import Fold, digest, pack, unpack
from troth.storage.base import MemoryFilter
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"


def _record(number: int) -> MemoryRecord:
    return MemoryRecord(
        id=f"m_{number:021x}",
        owner=ALICE,
        content=f"alice fact number {number}",
        status="active",
        approval_mode="auto",
        channel="api",
        actor=ALICE,
        reason="",
        created_at="2026-12-01T00:00:00Z",
        updated_at="2026-12-01T00:00:00Z",
        scope=Scope("project", "alpha"),
        audit=(AuditItem("2026-12-01T00:00:00Z", "proposed", ALICE, "a note"),),
        relations=(Relation("about", "m_other", 0.5),),
        tags=("drinks", "tea"),
        confidence=0.75,
        retrievable=True,
        extra={"b": [1, {"z": None, "a": (2, 3)}], "a": "x"},
        stamps={"seen": 3},
        entry_hash="ab" * 32,
        seq=number,
    )


def test_a_packed_record_unpacks_equal_and_digests_as_its_equals() -> None:
    memory = _record(7)
    again = unpack(pack(memory))
    assert again == memory
    assert type(again.scope) is Scope
    assert type(again.audit[0]) is AuditItem
    # The same record whose mappings were written in another key order packs alike.
    reordered = dataclasses.replace(memory, extra={"a": "x", "b": [1, {"a": (2, 3), "z": None}]})
    assert pack(reordered) == pack(memory)
    assert digest(reordered) == digest(memory)
    assert digest(dataclasses.replace(memory, content="changed")) != digest(memory)


def test_a_fold_holds_what_was_put_and_nothing_else() -> None:
    fold = Fold()
    memory = _record(1)
    fold.put(memory, 0b101)
    assert fold.holds(memory) is True
    assert fold.holds(dataclasses.replace(memory, content="alice fact number 2")) is False
    assert fold.holds(dataclasses.replace(memory, audit=())) is False
    assert fold.holds(_record(2)) is None  # not in the fold at all
    # Equal, though it packs apart (1 == 1.0): the unpacked record decides.
    as_int = dataclasses.replace(memory, stamps={"seen": 3.0})
    assert pack(as_int) != pack(memory)
    assert fold.holds(as_int) is True
    assert fold.get(memory.id) == memory
    assert fold.marks(memory.id) == 0b101
    assert memory.id in fold
    assert len(fold) == 1


def test_a_fold_of_many_memories_leaves_nothing_for_the_collector() -> None:
    gc.collect()
    before = len(gc.get_objects())
    fold = Fold()
    for number in range(5_000):
        fold.put(_record(number), 1)
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert len(fold) == 5_000
    assert grown < 50  # records kept as such were ~8 tracked objects a memory: 40,000


def test_a_first_read_keeps_no_record_of_what_it_folded(tmp_path: Path, clock: StepClock) -> None:
    writer = facade(SQLiteStore(tmp_path / "troth.db"), clock=clock)
    writer.remember_many([f"alice fact number {i}" for i in range(2_000)], owner=ALICE)
    some = writer.memories(ALICE, MemoryFilter(limit=1))[0].id
    writer.close()
    reader = facade(SQLiteStore(tmp_path / "troth.db"), clock=clock)
    first = reader.get(some, owner=ALICE)  # a new process's first read: folds all 2,000
    gc.collect()
    before = len(gc.get_objects())
    assert reader.get(first.id, owner=ALICE) == first
    gc.collect()
    tracked = len(gc.get_objects())
    assert abs(tracked - before) < 200
    records = sum(1 for o in gc.get_objects() if type(o) is MemoryRecord)
    assert records < 100  # a fold of records would hold all 2,000
    reader.close()
