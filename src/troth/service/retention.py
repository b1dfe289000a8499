"""Retention: the sweep that expires what ``ttl`` or PCP ``expires`` says is over, and erases it."""

from __future__ import annotations

from datetime import datetime, timedelta

from troth.core.chain import format_ts
from troth.core.records import SYSTEM_PRINCIPAL, MemoryRecord
from troth.service.base import Clock, Parties, parse_time
from troth.service.ledger import Ledger
from troth.storage.base import MemoryFilter

_LIVE = ("proposed", "active")


class Retention:
    """The retention sweep."""

    def __init__(self, parties: Parties, ledger: Ledger, clock: Clock) -> None:
        self.parties = parties
        self.ledger = ledger
        self.clock = clock

    def sweep(self, *, now: datetime | None = None, owner: str | None = None) -> list[MemoryRecord]:
        """Expire what retention says is over (ttl, PCP expires) and erase its text.

        Sweeps every owner, or only ``owner``. Each due memory gets an ``expire`` event and
        then a ``redact`` event by ``service:troth``: expired text is erased at once.
        """
        moment = now or self.clock()
        format_ts(moment)  # refuses a naive time before it meets the stored UTC ones
        expired: list[MemoryRecord] = []
        for whose in self.parties.owners(owner):
            for memory in self.parties.store.memories(whose, MemoryFilter(statuses=_LIVE)):
                if not is_due(memory, moment):
                    continue
                with self.ledger.writing(whose) as tx:
                    current = self.parties.load(tx, memory.id)
                    if current.status not in _LIVE:
                        continue
                    self.ledger.append_change(
                        tx,
                        current,
                        "expire",
                        actor=SYSTEM_PRINCIPAL,
                        texts={"note": "retention"},
                        channel="internal",
                    )
                    changed = self.ledger.append_change(
                        tx,
                        current,
                        "redact",
                        actor=SYSTEM_PRINCIPAL,
                        texts={"note": "redacted: retention expired"},
                        channel="internal",
                    )
                expired.extend(changed)
        return expired


def is_due(memory: MemoryRecord, moment: datetime) -> bool:
    """Whether retention has run out for a memory at ``moment``."""
    if memory.expires is not None and parse_time(memory.expires) <= moment:
        return True
    if memory.ttl.policy == "expires_at" and memory.ttl.expires_at is not None:
        return parse_time(memory.ttl.expires_at) <= moment
    if memory.ttl.policy == "decay" and memory.ttl.decay_days is not None:
        return parse_time(memory.updated_at) + timedelta(days=memory.ttl.decay_days) <= moment
    return False
