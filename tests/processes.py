"""Processes sharing one store, as the tests that race them or reopen a ledger make them.

A second process is a second store object on the same SQLite file or PostgreSQL database,
with a facade of its own; another process's write comes from another thread (its own
connection). :class:`Processes` opens them on one backend and closes what it opened; the
service tests get one as the ``processes`` fixture (tests/service/conftest.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import StepClock, facade, open_backend
from troth.service.memory import Memory
from troth.storage.base import Store


def in_another_thread(work: Callable[[], Any]) -> None:
    """Run ``work`` to completion on a thread of its own (its own connection)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # surfaced below
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert not failed, failed


@dataclass
class Processes:
    """Stores and facades of one backend on one home (or database), each as a process of
    its own would open it; every facade still open is closed by :meth:`close`."""

    backend: str
    home: Path
    url: str | None
    clock: StepClock
    opened: list[Memory] = field(default_factory=list)

    def store(self) -> Store:
        """A new store on the data (the caller closes it, or a facade over it does)."""
        return open_backend(self.backend, self.home, self.url)

    def open(self, store: Store | None = None) -> Memory:
        """Alice's facade over ``store``, or over a store of its own."""
        memory = facade(store or self.store(), clock=self.clock)
        self.opened.append(memory)
        return memory

    def wrote(self, notes: int, text: str = "note {n}") -> Memory:
        """A process that wrote ``notes`` memories to Alice's ledger (``text`` formatted
        with each ``n``); it stays open."""
        memory = self.open()
        for n in range(notes):
            memory.remember(text.format(n=n))
        return memory

    def end(self, memory: Memory) -> None:
        """The process of ``memory`` ends: its store is closed."""
        self.opened.remove(memory)
        memory.close()

    def close(self) -> None:
        """End every process still open, the last opened first."""
        while self.opened:
            self.end(self.opened[-1])
