"""The write path (service/ledger.py): a process's first write to a long chain verifies it
before holding it, so the chain (on SQLite the whole file's write lock) is held only for
the rows appended since. Both backends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.backends import connection, execute
from tests.conftest import StepClock, facade, open_backend
from troth.core.errors import IntegrityError
from troth.storage.base import Tip, Transaction

ALICE = "human:alice"


@pytest.fixture
def url(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if backend == "postgres" else None


def _spy_on_reads_while_held(store: object, starts: list[int]) -> None:
    """Record the first position of every ledger read made while the chain is held."""
    write = store.write  # type: ignore[attr-defined]

    @contextmanager
    def held(owner: str, expect: Tip | None = None) -> Iterator[Transaction]:
        with write(owner, expect) as tx:
            records = tx.records

            def counted(start: int = 0) -> Iterator[object]:
                starts.append(start)
                return records(start)

            tx.records = counted  # type: ignore[method-assign]
            yield tx

    store.write = held  # type: ignore[attr-defined]


def test_a_first_write_verifies_the_chain_before_holding_it(
    backend: str, home: Path, url: str | None, clock: StepClock
) -> None:
    first = facade(open_backend(backend, home, url), clock=clock)
    for n in range(20):
        first.remember(f"note {n}")
    first.close()
    store = open_backend(backend, home, url)
    starts: list[int] = []
    _spy_on_reads_while_held(store, starts)
    later = facade(store, clock=clock)  # a new process
    try:
        later.remember("one more")
        assert 0 not in starts, starts  # nothing re-read from the first entry while held
        assert later.verify(ALICE)[0].ok
        assert later.verify(ALICE)[0].chain.length == 21
    finally:
        later.close()


def test_a_chain_broken_behind_the_programs_back_is_still_refused_by_the_write(
    backend: str, home: Path, url: str | None, clock: StepClock
) -> None:
    first = facade(open_backend(backend, home, url), clock=clock)
    for n in range(5):
        first.remember(f"note {n}")
    first.close()
    raw = open_backend(backend, home, url)
    execute(raw, "UPDATE ledger SET content = ? WHERE owner = ? AND seq = 2", ("forged", ALICE))
    connection(raw).commit()
    raw.close()
    store = open_backend(backend, home, url)
    later = facade(store, clock=clock)
    try:
        before = store.tip(ALICE)
        with pytest.raises(IntegrityError, match="broken at entry #2"):
            later.remember("one more")
        assert store.tip(ALICE) == before
    finally:
        later.close()
