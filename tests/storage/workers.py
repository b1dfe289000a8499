"""Process entry points for the multi-process tests (importable by ``spawn`` children)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.postgres import PostgresStore


def remember_many(url: str, owner: str, worker: int, count: int) -> list[str]:
    """Open a store of its own and remember ``count`` items; returns the acknowledged ids."""
    start = datetime(2026, 11, 29, tzinfo=UTC) + timedelta(hours=worker)
    step = iter(range(10**9))

    def clock() -> datetime:
        return start + timedelta(milliseconds=next(step))

    acknowledged = []
    with Memory(PostgresStore(url), policy=load_policy(None), principal=owner, clock=clock) as m:
        for i in range(count):
            acknowledged.append(m.remember(f"worker {worker} note {i}").id)
    return acknowledged
