"""Finishing erasures: the compaction after a redaction, which never waits on a reader while
it holds a lock another owner's write needs.

A redaction's transaction records a pending erasure with the erased rows (both stores'
``pending_erasures`` table), so the record commits or vanishes with the erasure itself.
Finishing it (SQLite: checkpoint and truncate the WAL; PostgreSQL: scrub the erasable
tables' files, ``storage.postgres.scrub``, once no older snapshot remains) is only
*tried*, each try giving up at once when a reader holds an older snapshot.
:class:`Finisher` tries after the redaction commits, for as long as the redaction is
willing to wait, then goes on trying on a background thread while the store is open;
every open tries once more. See docs/ledger.md, "Erasure".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

ERASURE_WAIT: Final = 60.0
"""How long (seconds) a redaction waits for older readers before it returns with its
erasure still pending (it is finished as soon as they go, or on the next open)."""
_POLL: Final = 0.05  # between tries while the redaction waits
_BACKGROUND_POLL: Final = 0.2  # between tries once it has returned

_log = logging.getLogger(__name__)


def wait_until(done: Callable[[], bool], wait: float, stop: threading.Event | None = None) -> bool:
    """Ask ``done`` now and then every 50 ms, holding nothing between, until it says True
    (True) or ``wait`` seconds have passed, or ``stop`` is set (False)."""
    pause = stop if stop is not None else threading.Event()
    deadline = time.monotonic() + wait
    while not pause.is_set():
        if done():
            return True
        if time.monotonic() >= deadline:
            return False
        pause.wait(_POLL)
    return False


class Finisher:
    """Tries a store's ``attempt`` (True once no erasure is pending) until it succeeds."""

    def __init__(self, attempt: Callable[[], bool], name: str) -> None:
        self._attempt = attempt
        self._name = name
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False  # a failing try is logged once, not every 200 ms

    def finish(self, wait: float = 0.0) -> bool:
        """Try now and then every 50 ms for up to ``wait`` seconds; True when nothing is
        pending. If something still is, a background thread goes on trying."""
        if wait_until(self._try, wait, self._stop):
            return True
        self._start()
        return False

    @property
    def running(self) -> bool:
        """Whether a background thread is still trying."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def close(self) -> None:
        """Stop the background thread (what is pending stays recorded for the next open)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def _try(self) -> bool:
        try:
            done = self._attempt()
        except Exception:  # a failed try changes nothing; it is retried
            if not self._failed:
                _log.warning("finishing a pending erasure failed; retrying", exc_info=True)
            self._failed = True
            return False
        self._failed = False
        return done

    def _start(self) -> None:
        with self._lock:
            if self.running or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(_BACKGROUND_POLL):
            if self._try():
                return
