"""Fixtures of the security tests: one ledger that every surface opens, on each backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from troth.config import Settings, build_memory
from troth.service.memory import Memory


@pytest.fixture
def library(
    backend: str, home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Memory]:
    """Alice's facade over a fresh store of each backend, built by the composition root from
    the settings the CLI reads too (TROTH_DATABASE_URL selects PostgreSQL), so the library,
    the CLI, the HTTP app and the MCP server all answer from the same ledger."""
    if backend == "postgres":
        monkeypatch.setenv("TROTH_DATABASE_URL", request.getfixturevalue("pg_url"))
    else:
        monkeypatch.delenv("TROTH_DATABASE_URL", raising=False)
    memory = build_memory(Settings.load(home=home, principal="human:alice"))
    try:
        yield memory
    finally:
        memory.close()
