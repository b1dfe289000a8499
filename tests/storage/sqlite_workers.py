"""Process entry points for the SQLite multi-process tests (importable by ``spawn`` children)."""

from __future__ import annotations

import time
from pathlib import Path

from ledgermind.config import load_policy
from ledgermind.service.memory import Memory
from ledgermind.storage.sqlite import SQLiteStore


def append(
    path: str, owner: str, worker: int, count: int, start_at: float, batch: int
) -> list[str]:
    """Wait for the common start, then remember ``count`` items; returns the acknowledged ids."""
    acknowledged: list[str] = []
    store = SQLiteStore(Path(path))
    with Memory(store, policy=load_policy(None), principal=owner) as memory:
        time.sleep(max(0.0, start_at - time.time()))
        done = 0
        while done < count:
            size = min(batch, count - done)
            texts = [f"worker {worker} note {done + i}" for i in range(size)]
            if batch == 1:
                acknowledged.append(memory.remember(texts[0]).id)
            else:
                acknowledged.extend(r.id for r in memory.remember_many(texts))
            done += size
    return acknowledged
