"""A saved fold keeps at most ``HELD_MAX`` served memories packed (it grew without bound)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import StepClock, facade
from troth.service import folds
from troth.service.folds import SavedFold, digest
from troth.storage.base import Tip
from troth.storage.sqlite import SQLiteStore


def test_the_packed_memories_a_saved_fold_keeps_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with facade(SQLiteStore(tmp_path / "t.db"), clock=StepClock()) as mind:
        memories = [mind.remember(f"memory number {i}").memory for i in range(6)]
    fold = SavedFold.build(Tip(6, ""), [6], [(m.id, digest(m), 1) for m in memories])
    assert fold is not None
    monkeypatch.setattr(folds, "HELD_MAX", 3)
    for memory in memories:
        assert fold.holds(memory)
    assert list(fold._held) == [m.id for m in memories[3:]]  # the oldest went first
    for memory in memories:  # served again, each still holds; the bound still holds
        assert fold.holds(memory)
        assert len(fold._held) <= 3
    assert not fold.holds(replace(memories[0], content="not what the chain made"))
