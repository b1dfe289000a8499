"""The service tests run on both backends: the facade they get (``memory``) is built over
``any_store``, which is parametrised over SQLite and PostgreSQL (a PostgreSQL database is
cloned from a migrated template per test). A test that is about one backend's files says
so with ``@pytest.mark.parametrize("backend", ["sqlite"])`` and a comment why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StepClock
from tests.processes import Processes
from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.base import Store


@pytest.fixture
def memory(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    """Alice's facade over a fresh store of each backend, with the default policy."""
    with Memory(any_store, policy=load_policy(None), principal="human:alice", clock=clock) as m:
        yield m


@pytest.fixture
def processes(
    backend: str, home: Path, clock: StepClock, request: pytest.FixtureRequest
) -> Iterator[Processes]:
    """Processes on each backend's data (see tests/processes.py), closed after the test."""
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    opened = Processes(backend, home, url, clock)
    try:
        yield opened
    finally:
        opened.close()
