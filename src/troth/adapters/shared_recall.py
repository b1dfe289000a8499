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

The runs wait in one first-come-first-served queue and are run by recall threads of
their own, as many as the gate admits (``troth-recall``): each thread takes the next
queued run the moment it finished the last, so the gate never stands idle while the event
loop, busy with other requests, gets round to handing the next run to a thread (measured:
~10 ms a run at the median under ``bench.server``, a quarter of a run's time at the gate).
The loop only queues a run and is handed its answer. A thread with nothing queued for a
second ends; the next search starts one again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

_T = TypeVar("_T")

#: Seconds a recall thread waits for another run before it ends.
IDLE_SECONDS = 1.0


@dataclass(eq=False, slots=True)
class _Run(Generic[_T]):
    """One queued recall, the searches waiting for it, and what it answered."""

    key: Hashable
    call: Callable[[], _T]
    #: Each waiting search's loop and future (resolved with (ok, result or error)).
    waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[tuple[bool, Any]]]] = field(
        default_factory=list
    )


class SharedRecalls:
    """Queued recalls of equal keys run once, in turn, on threads as many as ``limiter``'s
    tokens (the recall gate's size)."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self.limiter = limiter
        self._size = max(1, int(limiter.total_tokens))
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queued: dict[Hashable, _Run[Any]] = {}
        self._order: deque[_Run[Any]] = deque()
        self._threads = 0
        self._idle = 0
        #: Searches answered by a run another search started, for tests and benchmarks.
        self.shared = 0
        #: Runs started.
        self.runs = 0

    @property
    def threads(self) -> int:
        """How many recall threads this instance has running (for tests)."""
        return self._threads

    async def run(self, key: Hashable, call: Callable[[], _T]) -> _T:
        """``call()`` on a recall thread in its turn, or the answer of an equal queued run."""
        ok, answer = await self._wait(key, call)
        if ok:
            return answer  # type: ignore[no-any-return]
        if answer is None:  # the run this search joined failed: its error is not ours
            ok, answer = await self._wait(object(), call)  # a key nobody else has
            if ok:
                return answer  # type: ignore[no-any-return]
        raise answer

    async def _wait(self, key: Hashable, call: Callable[[], _T]) -> tuple[bool, Any]:
        """Queue (or join) the run for ``key``; (True, answer), (False, error) for the
        search that queued a failed run, (False, None) for one that joined it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        with self._lock:
            queued = self._queued.get(key)
            joined = queued is not None
            if queued is None:
                queued = self._queued[key] = _Run(key, call)
                self._order.append(queued)
                if self._idle:
                    self._ready.notify()
                # ``_idle`` drops only once a woken thread holds the lock again, so runs
                # queued together may count the same idle thread: start one more thread
                # (up to the gate) whenever more runs wait than threads were idle.
                if len(self._order) > self._idle and self._threads < self._size:
                    self._threads += 1
                    threading.Thread(target=self._serve, name="troth-recall", daemon=True).start()
            queued.waiting.append((loop, future))
        ok, answer = await future
        if joined:
            if ok:
                self.shared += 1
            else:
                answer = None
        return ok, answer

    def _serve(self) -> None:
        """A recall thread: run the queued runs in arrival order until none comes for a while."""
        while True:
            with self._lock:
                while not self._order:
                    self._idle += 1
                    self._ready.wait(IDLE_SECONDS)
                    self._idle -= 1
                    if not self._order:
                        self._threads -= 1
                        return
                run = self._order.popleft()
                # Started: a search arriving from now on may follow a write this run misses.
                del self._queued[run.key]
                self.runs += 1
            try:
                outcome: tuple[bool, Any] = (True, run.call())
            except BaseException as exc:  # raised in the loop, to each search that queued it
                outcome = (False, exc)
            with self._lock:  # no search joins a started run, so the list is complete
                waiting = list(run.waiting)
            for loop, future in waiting:
                # A closed loop (RuntimeError): that search's server stopped; nobody waits.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_resolve, future, outcome)


def _resolve(future: asyncio.Future[tuple[bool, Any]], outcome: tuple[bool, Any]) -> None:
    if not future.done():  # a search whose client went away was cancelled
        future.set_result(outcome)
