"""Shared fixtures: a fresh ledger in a temporary home, a fixed clock."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.pg import TestServer
from troth.config import load_policy
from troth.core.policy import Policy
from troth.embedding import Embedder, HashingEmbedder
from troth.service.memory import Clock, Memory, utc_now
from troth.storage.base import Store
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

SHARED = Path(__file__).resolve().parents[2] / "shared"


class StepClock:
    """A clock that advances one millisecond per reading (deterministic timestamps)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 7, 3, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def facade(
    store: Store,
    *,
    principal: str = "human:alice",
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    policy: Policy | None = None,
) -> Memory:
    """The one facade factory of the tests: ``store`` under the default policy (or
    ``policy``), acting as ``principal``, on ``clock`` (default: the wall clock)."""
    return Memory(
        store,
        policy=policy or load_policy(None),
        principal=principal,
        clock=clock or utc_now,
        embedder=embedder,
    )


def vector_facade(
    store: Store, *, principal: str = "human:alice", clock: StepClock | None = None
) -> Memory:
    """The facade over ``store`` with the default policy, a step clock and the hashing
    embedder (64 dimensions, no model files): what the vector tests build."""
    return facade(
        store, principal=principal, clock=clock or StepClock(), embedder=HashingEmbedder()
    )


def counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (each call appends 1 to the list returned)."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.fixture(autouse=True)
def sealing_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's signing key and witness in its own folder, never the user's real ones."""
    config = tmp_path / "config"
    monkeypatch.setenv("TROTH_SIGNING_KEY", str(config / "signing.key"))
    monkeypatch.setenv("TROTH_WITNESS", str(config / "witness"))
    monkeypatch.setenv("TROTH_SEALING", str(config / "sealing.toml"))
    monkeypatch.setenv("TROTH_WITNESS_HOME", str(config / "witness-server"))
    monkeypatch.delenv("TROTH_LEDGER", raising=False)
    monkeypatch.delenv("TROTH_CHECKPOINT_EVERY", raising=False)
    return config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def memory(home: Path, clock: StepClock) -> Iterator[Memory]:
    store = SQLiteStore(home / "troth.db")
    with facade(store, clock=clock) as m:
        yield m


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestServer]:
    """One PostgreSQL with pgvector for the session, on a unix socket; stopped at the end.

    Its data directory is outside pytest's temporary root, whose permissions a concurrent
    pytest run resets to 0700 (the server runs as another user when the tests run as root).
    """
    parent = Path(tempfile.mkdtemp(prefix="troth-pg-"))
    server = TestServer(parent / "data")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: TestServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test."""
    url = pg_server.create()
    try:
        yield url
    finally:
        pg_server.drop(url)


def open_backend(backend: str, home: Path, pg_url: str | None) -> Store:
    """A store of the named backend: SQLite under ``home`` or the given PostgreSQL database."""
    if backend == "sqlite":
        return SQLiteStore(home / "troth.db")
    assert pg_url is not None
    return PostgresStore(pg_url)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend a test runs on; every such test runs on both."""
    return str(request.param)


@pytest.fixture
def any_store(backend: str, home: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh store of each backend."""
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    store = open_backend(backend, home, url)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def any_memory(any_store: Store, clock: StepClock) -> Memory:
    """The facade over a fresh store of each backend."""
    return facade(any_store, clock=clock)
