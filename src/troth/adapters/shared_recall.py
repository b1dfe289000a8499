"""Searches queued together for the same recall share one run of it.

Recalls take turns at the recall gate (docs/api.md, "Concurrency"). While one runs, the
searches behind it wait; when several of them ask the very same recall — the same
ledger, question, limit, filters and sensitivity, which is what
:meth:`~troth.service.scoped.ScopedMemory.search_query` gives after the caller's grant was
checked — one run answers them all. Only searches that arrived *before* the run started
join it: a search that arrives while a recall runs waits for the next one, so every
answer reflects every write acknowledged before its search was asked (read-your-writes
holds exactly as for a recall of one's own). A run that fails shares nothing: each
search that joined it runs its own recall and gets its own answer or error.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

_T = TypeVar("_T")


@dataclass(eq=False, slots=True)
class _Run(Generic[_T]):
    """One recall waiting for (then holding) the gate, and what it answered."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: _T | None = None
    failed: bool = True


class SharedRecalls:
    """Queued recalls of equal keys run once, each behind ``limiter`` (the recall gate)."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter
        # The worker threads a run holding the gate uses: its own, so a run never waits for
        # a thread of anyio's default pool, which the writes use (40 stalled writes would
        # otherwise hold every search behind them). Not the gate itself: a run holds it.
        self._threads = anyio.CapacityLimiter(limiter.total_tokens)
        self._queued: dict[Hashable, _Run[object]] = {}
        #: Searches answered by a run another search started, for tests and benchmarks.
        self.shared = 0
        #: Runs started.
        self.runs = 0

    async def run(self, key: Hashable, call: Callable[[], _T]) -> _T:
        """``call()`` in a worker thread behind the gate, or the answer of an equal queued run."""
        queued = self._queued.get(key)
        if queued is not None:
            await queued.done.wait()
            if not queued.failed:
                self.shared += 1
                return queued.result  # type: ignore[return-value]
            # Its error is its caller's to report; this search asks on its own.
            return await anyio.to_thread.run_sync(call, limiter=self.limiter)
        own: _Run[_T] = _Run()
        self._queued[key] = own  # type: ignore[assignment]
        try:
            async with self.limiter:
                # Started: a search arriving from now on may follow a write this run misses.
                self._leave(key, own)
                self.runs += 1
                own.result = await anyio.to_thread.run_sync(call, limiter=self._threads)
                own.failed = False
        finally:
            self._leave(key, own)
            own.done.set()
        return own.result

    def _leave(self, key: Hashable, run: _Run[_T]) -> None:
        if self._queued.get(key) is run:
            del self._queued[key]
