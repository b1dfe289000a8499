"""Group commit: creations that arrive together on one owner's chain share one transaction.

A durable SQLite transaction waits for an fsync (``synchronous=FULL``), and a
PostgreSQL one for the server's WAL flush; that wait, not the CPU, bounds how many writes
per second one chain takes when every write is its own transaction. Here the first
write to arrive for an owner *leads*: it takes every creation queued for that owner and
appends them, in arrival order, in one transaction; the writes that arrive while it
commits queue for the next group, which the first of them leads. Nobody waits for a
group to fill: a write that arrives alone commits alone, exactly as before.

The guarantees stay those of one write (docs/api.md, "Concurrency"):

- each caller's answer comes after the commit that holds its entry, so an acknowledged
  write is durable and in the chain;
- a group is one transaction on one chain, appended in one order, so the chain stays one
  sequence;
- when anything in a group fails, the group's transaction rolls back whole and each of its
  writes runs again in a transaction of its own: the failing one fails alone (its caller
  gets its error) and the others land, so a failed write leaves the ledger as if it had
  never been asked.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from troth.core.errors import StorageError
from troth.service.extending import since
from troth.service.ledger import Ledger
from troth.storage.base import Tip, Transaction

_T = TypeVar("_T")

Work = Callable[[Transaction], _T]


@dataclass(eq=False, slots=True)
class _Waiting(Generic[_T]):
    """One queued write: what it does, then its result or error, then whether it leads."""

    work: Work[_T]
    done: threading.Event = field(default_factory=threading.Event)
    result: _T | None = None
    error: BaseException | None = None
    lead: bool = False
    finished: bool = False
    #: Its group reached its commit: if the group then stopped, the write may be stored.
    committing: bool = False


class GroupCommit:
    """Per-owner queues of creations, each committed by the write at its head."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._lock = threading.Lock()
        self._queues: dict[str, list[_Waiting[object]]] = {}
        #: How many groups of each size were committed (bounded by the number of threads),
        #: for tests and benchmarks to read.
        self.sizes: Counter[int] = Counter()

    def waiting(self, owner: str) -> int:
        """How many writes wait behind the group being committed for ``owner``."""
        with self._lock:
            return len(self._queues.get(owner, ()))

    def append(self, owner: str, work: Work[_T]) -> _T:
        """Run ``work`` in a transaction on the owner's chain, with any that arrive with it.

        ``work`` must be safe to run twice (the second time in a fresh transaction after its
        group rolled back): the creations of ``Writes`` are, as ``Ledger.append`` also
        reruns them when the chain moved.
        """
        if self.ledger.in_write():
            # Inside another write on this thread: its transaction is the group.
            return self.ledger.append(owner, work)
        waiting: _Waiting[_T] = _Waiting(work)
        with self._lock:
            queue = self._queues.get(owner)
            if queue is None:
                # Nobody leads this owner: this write does, with whatever queues meanwhile.
                self._queues[owner] = []
                waiting.lead = True
            else:
                queue.append(waiting)  # type: ignore[arg-type]
        if not waiting.lead:
            waiting.done.wait()
        if waiting.lead:
            self._lead(owner, waiting)
        if waiting.error is not None:
            raise waiting.error
        return waiting.result  # type: ignore[return-value]

    def _lead(self, owner: str, first: _Waiting[_T]) -> None:
        """Commit ``first`` and what queued behind it; hand the queue to the next arrival."""
        with self._lock:
            group: list[_Waiting[object]] = [first, *self._queues[owner]]  # type: ignore[list-item]
            self._queues[owner] = []
            self.sizes[len(group)] += 1
        try:
            self._commit(owner, group)
        finally:
            with self._lock:
                queue = self._queues[owner]
                if queue:
                    # The next group is led by its first write, in its own thread, so this
                    # caller's answer does not wait for writes that came after it.
                    following = queue.pop(0)
                    self._queues[owner] = queue
                    following.lead = True
                    following.done.set()
                else:
                    del self._queues[owner]
            for waiting in group:
                if not waiting.finished and waiting.error is None:
                    waiting.error = StorageError(
                        "the write may have been stored: the transaction it shared stopped"
                        " while committing; list the ledger's newest memories before sending"
                        " it again"
                        if waiting.committing
                        else "the write was not stored: the transaction it shared stopped"
                        " before committing; nothing of it was written, so it can be sent again"
                    )
                if waiting is not first:
                    waiting.done.set()

    def _commit(self, owner: str, group: Sequence[_Waiting[object]]) -> None:
        """One transaction for the group; on any failure, each write in its own."""
        if len(group) == 1:
            self._alone(owner, group[0])
            return
        landed: Tip | None = None
        try:
            # Held from the start: a group is never the one-statement write of a lone append.
            with self.ledger.writing(owner) as tx:
                results = [waiting.work(tx) for waiting in group]
                landed = tx.tip()
                for waiting in group:  # from here on the commit may happen
                    waiting.committing = True
        except Exception:  # the group failed: each write now answers for itself, unless
            if landed is None or not self._holds(owner, landed):
                for waiting in group:
                    self._alone(owner, waiting)
                return
            # ... the commit happened and something after it failed: running the writes
            # again would append them twice; each caller gets its memory, as written.
        for waiting, result in zip(group, results, strict=True):
            waiting.result, waiting.finished = result, True

    def _holds(self, owner: str, landed: Tip) -> bool:
        """Whether the owner's chain holds the entry a group ended at (it committed)."""
        return bool(landed.length) and since(self.ledger.store, owner, landed, 0) is not None

    def _alone(self, owner: str, waiting: _Waiting[object]) -> None:
        try:
            waiting.result = self.ledger.append(owner, waiting.work)
        except Exception as exc:  # handed to the write's own caller, raised in its thread
            waiting.error = exc
        waiting.finished = True
