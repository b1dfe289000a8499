"""The first read of an owner in a process, bounded both ways (docs/ledger.md, section 13).

A process's own writes feed its read check, so the first read after them reads no row
the process wrote; the write path takes the read check's verified tip instead of
verifying the chain again; and a new process resumes from the fold a previous one saved
(MACed, outside the data directory), reading only the rows appended since — or, when the
saved fold was tampered or does not match the chain, does not trust it and folds the
chain whole. Rows read are counted on the store itself; both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.backends import connection, execute
from tests.conftest import StepClock, facade
from tests.processes import Processes
from troth.core.errors import IntegrityError, InvalidInputError
from troth.core.events import Record
from troth.service.folds import FoldFiles
from troth.service.memory import Memory
from troth.storage.base import Store

ALICE = "human:alice"


@dataclass
class Counted:
    """A store whose ``records`` counts the rows it yields, and from where it was asked."""

    store: Store
    rows: int = 0
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        raw = self.store.records

        def records(owner: str, start: int = 0) -> Iterator[Record]:
            self.starts.append(start)
            for record in raw(owner, start):
                self.rows += 1
                yield record

        self.store.records = records  # type: ignore[method-assign]

    def reset(self) -> None:
        self.rows = 0
        self.starts.clear()


@dataclass
class Home:
    """The processes of one backend on one home (``tests.processes.Processes``), each of
    whose stores counts the rows it reads; closing them closes only their stores."""

    processes: Processes

    @property
    def clock(self) -> StepClock:
        return self.processes.clock

    def store(self) -> Store:
        """A new store on the data, as a new process opens one (the caller closes it)."""
        return self.processes.store()

    def open(self, folds: FoldFiles | None = None) -> tuple[Memory, Counted]:
        """A new facade (as a new process opens one), its store counting rows read."""
        counted = Counted(self.store())
        memory = self.processes.open(counted.store)
        memory.parts.check.folds = folds
        return memory, counted

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        store = self.store()
        try:
            execute(store, statement, params)
            connection(store).commit()
        finally:
            store.close()

    def close(self) -> None:
        """Close the stores of the facades opened here (only the stores: ``Memory.close``
        would also save their folds)."""
        for memory in self.processes.opened:
            memory.store.close()


@contextmanager
def opened_home(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    """A :class:`Home` on ``backend`` under ``tmp_path``, closed when the block ends."""
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    h = Home(Processes(backend, tmp_path / "home", url, StepClock()))
    try:
        yield h
    finally:
        h.close()


@pytest.fixture
def home(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    with opened_home(backend, tmp_path, request) as h:
        yield h


def folds_in(path: Path, key: bytes = b"k" * 32) -> FoldFiles:
    return FoldFiles(path, lambda: key, lambda owner: f"ledger.test/{owner}")


def write(memory: Memory, count: int, start: int = 0) -> None:
    memory.remember_many([{"text": f"alice fact number {start + i}"} for i in range(count)])


# -- a process's own writes feed its read check ---------------------------------------------


def test_the_first_read_after_this_process_wrote_reads_no_row(home: Home) -> None:
    memory, counted = home.open()
    anchored: list[str] = []
    memory.anchor(lambda owner: anchored.append(owner) or None)
    write(memory, 40)
    memory.remember("alice likes green tea")
    counted.reset()
    assert memory.recall("green tea", owner=ALICE)[0].memory.content == "alice likes green tea"
    assert len(memory.memories(ALICE)) == 41
    assert counted.rows == 0
    assert anchored == [ALICE]  # the witness is still asked, once


def test_a_projection_row_forged_before_the_first_read_is_still_counted(home: Home) -> None:
    memory, counted = home.open()
    write(memory, 5)
    bob = facade(memory.store, principal="human:bob", clock=home.clock)
    stolen = bob.remember("bob's secret").id
    home.sql("UPDATE memories SET owner = ? WHERE id = ?", (ALICE, stolen))
    with pytest.raises(IntegrityError, match=f"memory {stolen} is stored for {ALICE}"):
        memory.memories(ALICE)
    assert counted.rows == 0  # found by the census, not by reading the chain


def test_a_row_forged_for_an_owner_with_an_empty_chain_is_refused_by_the_first_write(
    home: Home,
) -> None:
    # Bob's memory moved to Alice, whose chain is empty: a write that reads it first (no
    # checked read before it) must not take it into the fold its first read then trusts.
    memory, _ = home.open()
    bob = facade(memory.store, principal="human:bob", clock=home.clock)
    stolen = bob.remember("alice owes mallory 1000 EUR").id
    home.sql("UPDATE memories SET owner = ? WHERE id = ?", (ALICE, stolen))
    reader, _ = home.open()
    with pytest.raises(IntegrityError, match=f"memory {stolen} as stored for {ALICE}"):
        reader.parts.changes.change(stolen, "hide", ALICE, ALICE, {})
    with pytest.raises(IntegrityError):
        reader.get(stolen)
    assert reader.store.tip(ALICE).length == 0  # the refused write appended nothing


def test_a_write_after_a_first_read_does_not_verify_the_chain_again(home: Home) -> None:
    writer, _ = home.open()
    write(writer, 30)
    memory, counted = home.open()
    assert len(memory.memories(ALICE)) == 30  # the read check verifies and folds: 30 rows
    assert counted.rows == 30
    counted.reset()
    memory.remember("alice walks at noon")
    assert counted.rows == 0  # the write path took the read check's verified tip
    assert len(memory.memories(ALICE)) == 31
    assert counted.rows == 0  # and the read check took the write


def test_another_writer_between_is_followed_from_the_rows(home: Home) -> None:
    memory, counted = home.open()
    write(memory, 10)
    other, _ = home.open()
    other.remember("alice plays chess")
    counted.reset()
    # Our write follows the other's row first (in the write, from its transaction), then
    # takes its own; a read after it reads nothing more from the store.
    write(memory, 1, start=10)
    contents = {m.content for m in memory.memories(ALICE)}
    assert {"alice plays chess", "alice fact number 10"} <= contents
    assert len(contents) == 12
    assert counted.rows == 0


# -- the saved fold -------------------------------------------------------------------------


def saved(home: Home, path: Path, count: int) -> FoldFiles:
    """A process that writes ``count`` memories, reads them and closes (saving its fold)."""
    folds = folds_in(path / "folds")
    first, _ = home.open(folds)
    write(first, count)
    assert len(first.memories(ALICE)) == count
    first.close()
    return folds


def test_a_new_process_resumes_from_the_saved_fold(home: Home, tmp_path: Path) -> None:
    folds = saved(home, tmp_path, 30)
    writer, _ = home.open()  # another process writes on, saving nothing
    write(writer, 3, start=30)
    memory, counted = home.open(folds)
    assert len(memory.memories(ALICE)) == 33
    assert counted.rows == 4  # the entry at the saved size, then the 3 appended since
    assert memory.recall("fact number 7", owner=ALICE)
    assert memory.get(memory.memories(ALICE)[0].id, owner=ALICE)
    assert counted.rows == 4  # every memory served was held against its saved digest


def test_a_tampered_saved_fold_is_not_trusted(home: Home, tmp_path: Path) -> None:
    folds = saved(home, tmp_path, 20)
    path = folds.file_for(ALICE)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    memory, counted = home.open(folds)
    assert len(memory.memories(ALICE)) == 20
    assert counted.rows == 20  # folded whole, as without a saved fold
    # Under another key (a file made elsewhere) it is not trusted either.
    other, counted = home.open(folds_in(tmp_path / "folds", key=b"x" * 32))
    other.memories(ALICE)
    assert counted.rows == 20


def test_a_saved_fold_the_chain_does_not_extend_is_not_trusted(home: Home, tmp_path: Path) -> None:
    folds = saved(home, tmp_path, 10)
    # The chain rewritten from entry #9 with hashes of its own: the entry at the saved size
    # no longer carries the saved head, so the fold is not taken; the chain is verified
    # whole, and the rewrite refused (here by the head; with a witness, by the witness).
    home.sql("UPDATE ledger SET hash = ? WHERE owner = ? AND seq = 9", ("0" * 64, ALICE))
    home.sql("UPDATE heads SET head = ? WHERE owner = ?", ("0" * 64, ALICE))
    memory, counted = home.open(folds)
    with pytest.raises(IntegrityError, match="broken at entry #9"):
        memory.memories(ALICE)
    assert counted.starts == [9, 0]  # the entry at the saved size, then the whole chain
    assert counted.rows == 11
    assert not folds.file_for(ALICE).exists()  # a finding drops the saved fold


def test_a_store_behind_its_saved_fold_is_folded_whole(home: Home, tmp_path: Path) -> None:
    folds = saved(home, tmp_path, 8)
    home.sql("DELETE FROM ledger WHERE owner = ? AND seq = 7", (ALICE,))
    home.sql("DELETE FROM memories WHERE owner = ? AND seq = 7", (ALICE,))
    home.sql(
        "UPDATE heads SET length = 7, head = (SELECT hash FROM ledger WHERE owner = ?"
        " AND seq = 6) WHERE owner = ?",
        (ALICE, ALICE),
    )
    memory, counted = home.open(folds)
    assert len(memory.memories(ALICE)) == 7  # no witness here: the cut is the witness's
    assert counted.rows == 7


def _doc(home: Home, memory_id: str) -> dict[str, Any]:
    store = home.store()
    try:
        [(doc,)] = execute(store, "SELECT doc FROM memories WHERE id = ?", (memory_id,)).fetchall()
        return dict(doc if isinstance(doc, dict) else json.loads(doc))
    finally:
        store.close()


def test_over_a_saved_fold_a_projection_edit_is_refused_when_served(
    home: Home, tmp_path: Path
) -> None:
    folds = saved(home, tmp_path, 5)
    tea = next(m.id for m in home.open()[0].memories(ALICE) if m.content.endswith("number 3"))
    doc = _doc(home, tea)
    doc["content"] = "alice fact number 333"
    home.sql("UPDATE memories SET doc = ? WHERE id = ?", (json.dumps(doc), tea))
    memory, _ = home.open(folds)
    with pytest.raises(IntegrityError, match=f"memory {tea}"):
        memory.get(tea, owner=ALICE)


def edited_over_a_saved_fold(
    home: Home, tmp_path: Path, count: int, seq: int
) -> tuple[FoldFiles, Memory, Counted]:
    """A saved fold of ``count`` memories, then chain row ``seq``'s content edited, and a
    new process that reads the owner: the memories served are the ones the fold vouches
    for (the projection is untouched; docs/ledger.md, section 13)."""
    folds = saved(home, tmp_path, count)
    home.sql("UPDATE ledger SET content = ? WHERE owner = ? AND seq = ?", ("forged", ALICE, seq))
    memory, counted = home.open(folds)
    assert len(memory.memories(ALICE)) == count
    return folds, memory, counted


def test_over_a_saved_fold_a_chain_edit_is_refused_when_the_rows_are_served(
    home: Home, tmp_path: Path
) -> None:
    _, memory, _ = edited_over_a_saved_fold(home, tmp_path, 5, 2)
    # The rows themselves are verified before they are served.
    with pytest.raises(IntegrityError, match="broken at entry #2"):
        memory.export("personaxis", owner=ALICE)
    assert not any(r.ok for r in memory.verify() if r.owner == ALICE)


def test_memory_open_saves_its_folds_outside_the_data_directory(tmp_path: Path) -> None:
    from troth.config import Settings, build_memory, build_sealer

    settings = Settings.load(
        home=str(tmp_path / "home"), principal=ALICE, environ={"TROTH_SAVED_FOLDS": "1"}
    )
    with build_memory(settings) as memory:
        write(memory, 12)
        build_sealer(memory, settings).seal()  # the signing key the folds are MACed under
        assert len(memory.memories(ALICE)) == 12
    [saved_file] = tmp_path.rglob("*.fold")  # the tests' configuration directory
    assert saved_file.parent.name == "folds"
    assert tmp_path / "home" not in saved_file.parents
    with build_memory(settings) as memory:
        counted = Counted(memory.parts.check.store)
        assert len(memory.memories(ALICE)) == 12
        # The entry at the saved size, read by the read check and by the witness's holding
        # (from its sealed tip): none of the 11 before it.
        assert counted.starts == [11, 11]
        assert counted.rows == 2


def test_a_write_over_a_saved_fold_still_verifies_the_older_rows(
    home: Home, tmp_path: Path
) -> None:
    folds, memory, counted = edited_over_a_saved_fold(home, tmp_path, 6, 0)
    with pytest.raises(IntegrityError, match="broken at entry #0"):
        memory.remember("alice writes on")
    assert 0 in counted.starts  # the write path read the chain from its start
    # From then on the reads are refused too, and the saved fold is gone: the next
    # process folds the chain whole and refuses at its first read.
    with pytest.raises(IntegrityError, match="broken at entry #0"):
        memory.memories(ALICE)
    assert not folds.file_for(ALICE).exists()
    with pytest.raises(IntegrityError, match="broken at entry #0"):
        home.open(folds)[0].memories(ALICE)


def test_saved_folds_are_off_unless_asked_for(tmp_path: Path) -> None:
    from troth.config import Settings, build_memory, build_sealer

    settings = Settings.load(home=str(tmp_path / "home"), principal=ALICE, environ={})
    assert not settings.saved_folds
    with build_memory(settings) as memory:
        write(memory, 5)
        build_sealer(memory, settings).seal()
        assert len(memory.memories(ALICE)) == 5
    assert list(tmp_path.rglob("*.fold")) == []
    with build_memory(settings) as memory:
        counted = Counted(memory.parts.check.store)
        assert len(memory.memories(ALICE)) == 5
        assert 0 in counted.starts  # the first read folds the chain from its first entry


def test_a_saved_folds_switch_that_is_neither_on_nor_off_is_refused(tmp_path: Path) -> None:
    from troth.config import Settings

    with pytest.raises(InvalidInputError, match="TROTH_SAVED_FOLDS must be 1"):
        Settings.load(home=str(tmp_path), principal=ALICE, environ={"TROTH_SAVED_FOLDS": "maybe"})
