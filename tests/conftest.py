"""Shared fixtures: a fresh ledger in a temporary home, a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ledgermind.config import load_policy
from ledgermind.service.memory import Memory
from ledgermind.storage.sqlite import SQLiteStore

SHARED = Path(__file__).resolve().parents[2] / "shared"


class StepClock:
    """A clock that advances one millisecond per reading (deterministic timestamps)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 7, 3, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def memory(home: Path, clock: StepClock) -> Iterator[Memory]:
    store = SQLiteStore(home / "ledgermind.db")
    with Memory(store, policy=load_policy(None), principal="human:alice", clock=clock) as m:
        yield m
