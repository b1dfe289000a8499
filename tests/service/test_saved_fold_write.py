"""The first write over a saved fold verifies the chain's older rows before it holds the
chain, not while it does (docs/ledger.md, section 13).

A read taken over a saved fold has not verified the rows before the fold's size, so the
first write of the process verifies the whole chain; it does so in a snapshot before
taking the owner's write lock (``Ledger._verify_ahead``: on SQLite that lock is the whole
file's, which every other owner's write waits for), and in the lock verifies only what
was appended since. A chain that does not verify there is refused by the write, in the
lock (tests/service/test_first_read.py). Both backends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StepClock
from tests.service.test_first_read import ALICE, Home, saved
from troth.core.chain import Verification
from troth.core.events import Record
from troth.service import ledger
from troth.storage.base import Tip, Transaction


@pytest.fixture
def place(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    opened = Home(backend, tmp_path / "home", url, StepClock())
    yield opened
    for memory in opened.opened:
        memory.store.close()


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
