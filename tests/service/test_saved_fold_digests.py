"""Over a saved fold, a served memory is hashed once: its record, once its digest matched,
is kept in the fold and a later read compares with it (as a whole fold's memories are
compared), so a change of the stored row after that is still refused (docs/ledger.md,
section 13). Both backends, as tests/service/test_first_read.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import execute
from tests.conftest import StepClock, open_backend
from tests.service.test_first_read import ALICE, Home, saved
from troth.core.errors import IntegrityError
from troth.core.records import MemoryRecord
from troth.service import folds


@pytest.fixture
def place(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    opened = Home(backend, tmp_path / "home", url, StepClock())
    yield opened
    for memory in opened.opened:
        memory.store.close()


def stored_doc(place: Home, memory_id: str) -> dict[str, object]:
    store = open_backend(place.backend, place.path, place.url)
    try:
        [(doc,)] = execute(store, "SELECT doc FROM memories WHERE id = ?", (memory_id,)).fetchall()
        return dict(doc if isinstance(doc, dict) else json.loads(doc))
    finally:
        store.close()


@pytest.fixture
def digests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The id of each memory the saved fold's digest is computed for."""
    seen: list[str] = []
    real = folds.digest

    def counted(memory: MemoryRecord) -> bytes:
        seen.append(memory.id)
        return real(memory)

    monkeypatch.setattr(folds, "digest", counted)
    return seen


def test_a_served_memory_is_hashed_once(place: Home, tmp_path: Path, digests: list[str]) -> None:
    kept = saved(place, tmp_path, 12)
    memory, _ = place.open(kept)
    digests.clear()
    first = memory.memories(ALICE)
    assert len(first) == 12
    assert sorted(digests) == sorted(m.id for m in first)  # each once, on the first read
    digests.clear()
    assert len(memory.memories(ALICE)) == 12
    assert memory.get(first[0].id, owner=ALICE).content == first[0].content
    assert memory.recall("fact number 7", owner=ALICE)
    assert digests == []  # served again: compared with the record, not hashed


def test_a_row_changed_after_it_was_served_is_still_refused(
    place: Home, tmp_path: Path, digests: list[str]
) -> None:
    kept = saved(place, tmp_path, 5)
    memory, _ = place.open(kept)
    tea = next(m.id for m in memory.memories(ALICE) if m.content.endswith("number 3"))
    doc = stored_doc(place, tea)
    doc["content"] = "alice fact number 333"
    place.sql("UPDATE memories SET doc = ? WHERE id = ?", (json.dumps(doc), tea))
    with pytest.raises(IntegrityError, match=f"memory {tea}"):
        memory.get(tea, owner=ALICE)
