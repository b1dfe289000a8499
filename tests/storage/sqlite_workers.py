"""Process entry points for the SQLite multi-process tests (importable by ``spawn`` children)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore


def append(
    path: str, owner: str, worker: int, count: int, start: Any, batch: int
) -> tuple[list[str], float, float]:
    """Wait until every worker is ready (``start`` is a shared barrier), then remember items.

    Returns the acknowledged ids, and when the first write began and the last one ended.
    """
    acknowledged: list[str] = []
    store = SQLiteStore(Path(path))
    with Memory(store, policy=load_policy(None), principal=owner) as memory:
        start.wait()
        began = time.time()
        done = 0
        while done < count:
            size = min(batch, count - done)
            texts = [f"worker {worker} note {done + i}" for i in range(size)]
            if batch == 1:
                acknowledged.append(memory.remember(texts[0]).id)
            else:
                acknowledged.extend(r.id for r in memory.remember_many(texts))
            done += size
        ended = time.time()
    return acknowledged, began, ended
