"""A long-running server's checkpoints: seal what the policy says is due, on a timer.

``troth serve`` and ``troth mcp`` write through the facade from many requests; rather than
sign inside each request, a thread of its own looks once a second (or every ``seconds`` of
the policy, if shorter) at each owner's chain and seals those grown past their last
checkpoint as far, or as long ago, as :class:`~troth.service.sealing.CheckpointPolicy`
says; when the server stops, everything grown is sealed (docs/ledger.md, section 12).
"""

from __future__ import annotations

import sys
import threading

from troth.core.errors import TrothError
from troth.service.sealing import Sealer

__all__ = ["SealingSchedule"]


class SealingSchedule:
    """Seal due chains every ``tick`` seconds in a daemon thread, until :meth:`stop`."""

    def __init__(self, sealer: Sealer, tick: float = 1.0) -> None:
        seconds = sealer.policy.seconds
        self.sealer = sealer
        self.tick = min(tick, seconds) if seconds else tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self, *, all_grown: bool = False) -> None:
        """One look at every owner; a failure is reported and the server goes on."""
        try:
            for sealed in self.sealer.seal_due(all_grown=all_grown):
                for missed in sealed.missed:
                    print(f"warning: a witness missed a checkpoint: {missed}", file=sys.stderr)
        except TrothError as error:
            print(f"warning: no checkpoint was signed: {error.message}", file=sys.stderr)

    def start(self) -> None:
        """Begin the schedule."""
        self._thread = threading.Thread(target=self._run, name="troth-seal", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the schedule, then seal every chain that grew since its last checkpoint."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.run_once(all_grown=True)
        self.sealer.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            self.run_once()
