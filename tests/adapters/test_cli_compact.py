"""`troth compact`: the operator's by-construction finish of erasure.

On PostgreSQL a redaction finishes with a scrub that holds no table (docs/operations.md),
which may leave a few bytes a page unwritten; `compact` rewrites every file. The CLI runs
on the embedded store here; `Memory.compact` runs on both backends.
"""

from __future__ import annotations

from pathlib import Path

from tests.adapters.conftest import as_json, invoke
from tests.backends import stored_files
from tests.conftest import StepClock, facade
from troth.storage.base import Store

CANARY = "compact-canary-7f3a9b2e"


def test_compact_after_a_redaction_leaves_the_canary_in_no_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    kept = as_json(invoke(home, "remember", f"my locker code is {CANARY}", "--json"))
    memory_id = kept["memory"]["id"] if "memory" in kept else kept["id"]
    assert invoke(home, "redact", memory_id, "--reason", "erase", "--yes").exit_code == 0
    done = as_json(invoke(home, "compact", "--json"))
    assert done == {"compacted": True, "pending_erasures": 0}
    assert not [p for p in home.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert "compacted" in invoke(home, "compact").output


def test_the_library_verb_compacts_either_backend(any_store: Store, clock: StepClock) -> None:
    memory = facade(any_store, clock=clock)
    made = memory.remember(f"my locker code is {CANARY}").memory
    assert made is not None
    memory.redact(made.id, reason="erase")
    assert memory.compact() == 0
    assert not [p for p in stored_files(any_store) if CANARY.encode() in p.read_bytes()]
    assert memory.get(made.id).redacted
