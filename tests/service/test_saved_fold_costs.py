"""What a saved fold spares a process, and what it still checks (docs/ledger.md, section 13).

- A served memory is hashed once: its record, once its digest matched, is kept in the fold
  and a later read compares with it (as a whole fold's memories are compared), so a change
  of the stored row after that is still refused.
- The first write verifies the chain's older rows before it holds the chain, not while it
  does: a read taken over a saved fold has not verified the rows before the fold's size,
  so the first write of the process verifies the whole chain, in a snapshot before taking
  the owner's write lock (``Ledger._verify_ahead``: on SQLite that lock is the whole
  file's, which every other owner's write waits for), and in the lock verifies only what
  was appended since. A chain that does not verify there is refused by the write, in the
  lock (tests/service/test_first_read.py).

Both backends, as tests/service/test_first_read.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.service.test_first_read import ALICE, Home, opened_home, saved
from troth.core.chain import Verification
from troth.core.errors import IntegrityError
from troth.core.events import Record
from troth.core.records import MemoryRecord
from troth.service import folds, ledger
from troth.storage.base import Tip, Transaction
from troth.storage.rows import memory_doc


@pytest.fixture
def place(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    with opened_home(backend, tmp_path, request) as opened:
        yield opened


@pytest.fixture
def digests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The id of each memory the saved fold's digest is computed for."""
    seen: list[str] = []
    real = folds.digest

    def counted(memory: MemoryRecord) -> bytes:
        seen.append(memory.id)
        return real(memory)

    monkeypatch.setattr(folds, "digest", counted)
    return seen


def test_a_served_memory_is_hashed_once(place: Home, tmp_path: Path, digests: list[str]) -> None:
    kept = saved(place, tmp_path, 12)
    memory, _ = place.open(kept)
    digests.clear()
    first = memory.memories(ALICE)
    assert len(first) == 12
    assert sorted(digests) == sorted(m.id for m in first)  # each once, on the first read
    digests.clear()
    assert len(memory.memories(ALICE)) == 12
    assert memory.get(first[0].id, owner=ALICE).content == first[0].content
    assert memory.recall("fact number 7", owner=ALICE)
    assert digests == []  # served again: compared with the record, not hashed


def test_a_row_changed_after_it_was_served_is_still_refused(
    place: Home, tmp_path: Path, digests: list[str]
) -> None:
    kept = saved(place, tmp_path, 5)
    memory, _ = place.open(kept)
    tea = next(m.id for m in memory.memories(ALICE) if m.content.endswith("number 3"))
    edited = dataclasses.replace(memory.get(tea, owner=ALICE), content="alice fact number 333")
    place.sql("UPDATE memories SET doc = ? WHERE id = ?", (memory_doc(edited), tea))
    with pytest.raises(IntegrityError, match=f"memory {tea}"):
        memory.get(tea, owner=ALICE)


def test_the_first_write_verifies_the_older_rows_before_it_holds_the_chain(
    place: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folds = saved(place, tmp_path, 20)
    memory, counted = place.open(folds)
    assert len(memory.memories(ALICE)) == 20
    assert memory.parts.check.verified(ALICE) is None  # taken over the saved fold

    holding: list[bool] = [False]
    verified: list[tuple[int, int, bool]] = []  # (first position, rows, in the lock)
    raw_write = counted.store.write
    real_verify = ledger.verify_records

    @contextmanager
    def write(owner: str, expect: Tip | None = None) -> Iterator[Transaction]:
        with raw_write(owner, expect) as tx:
            holding[0] = True
            try:
                yield tx
            finally:
                holding[0] = False

    def verify(records: Sequence[Record] | Any, **options: Any) -> Verification:
        rows = list(records)
        verified.append((options.get("start_index", 0), len(rows), holding[0]))
        return real_verify(rows, **options)

    monkeypatch.setattr(counted.store, "write", write)
    monkeypatch.setattr(ledger, "verify_records", verify)
    memory.remember("alice writes on")
    assert verified == [(0, 20, False)]  # the whole chain, before the lock; none in it
    memory.remember("alice writes again")
    assert verified == [(0, 20, False)]  # the next write builds on the head it left
