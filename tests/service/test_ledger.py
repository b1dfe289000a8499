"""The write path (service/ledger.py): a process's first write to a long chain verifies it
before holding it, so the chain (on SQLite the whole file's write lock) is held only for
the rows appended since. Both backends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.backends import connection, execute
from tests.processes import Processes
from troth.core.errors import IntegrityError
from troth.storage.base import Tip, Transaction

ALICE = "human:alice"


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


def test_a_first_write_verifies_the_chain_before_holding_it(processes: Processes) -> None:
    processes.end(processes.wrote(20))
    store = processes.store()
    starts: list[int] = []
    _spy_on_reads_while_held(store, starts)
    later = processes.open(store)  # a new process
    later.remember("one more")
    assert 0 not in starts, starts  # nothing re-read from the first entry while held
    assert later.verify(ALICE)[0].ok
    assert later.verify(ALICE)[0].chain.length == 21


def test_a_chain_broken_behind_the_programs_back_is_still_refused_by_the_write(
    processes: Processes,
) -> None:
    processes.end(processes.wrote(5))
    raw = processes.store()
    execute(raw, "UPDATE ledger SET content = ? WHERE owner = ? AND seq = 2", ("forged", ALICE))
    connection(raw).commit()
    raw.close()
    store = processes.store()
    later = processes.open(store)
    before = store.tip(ALICE)
    with pytest.raises(IntegrityError, match="broken at entry #2"):
        later.remember("one more")
    assert store.tip(ALICE) == before
