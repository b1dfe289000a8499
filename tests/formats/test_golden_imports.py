"""The golden files of the real tools imported into a ledger: mem0's history as superseded
versions and a forget, idempotency by mem0 id across get_all, search and history, and a
basic-memory project whose relations point at the imported memories (both backends where
the version chain is written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from troth.core.records import MemoryRecord
from troth.service.memory import Memory

GOLDEN = Path(__file__).resolve().parent / "golden"
OWNER = "human:alice"


def everything(memory: Memory) -> list[MemoryRecord]:
    return sorted(memory.store.projection(OWNER).values(), key=lambda m: m.seq)


def live(memory: Memory) -> list[MemoryRecord]:
    return [m for m in everything(memory) if m.status in ("proposed", "active")]


def copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(GOLDEN / name, target)
    return target


def test_mem0_history_is_imported_as_superseded_versions_and_a_forget(
    any_memory: Memory, tmp_path: Path
) -> None:
    report = any_memory.import_path(copy(tmp_path, "mem0_history.json"))
    assert report.refused == []
    memories = everything(any_memory)
    by_text = {m.content: m for m in memories if m.content}
    # Live: each memory's last version, proposed for the person; the deleted one is not.
    assert sorted(m.content for m in live(any_memory)) == sorted(
        [
            "I prefer green tea in the afternoon",
            "My sister moved from Lyon to Grenoble",
            "Alice finished the Berlin marathon in 4h05",
            "Ünïcode café — naïve résumé ✓",
            "I was diagnosed with diabetes in May",
            "Bob likes chess",
        ]
    )
    final = by_text["Alice finished the Berlin marathon in 4h05"]
    middle = next(m for m in memories if m.id == final.supersedes)
    first = next(m for m in memories if m.id == middle.supersedes)
    assert first.supersedes is None
    assert (first.status, middle.status, final.status) == ("forgotten", "forgotten", "proposed")
    assert first.audit[-1].note == f"superseded by {middle.id} in the imported history"
    assert middle.audit[-1].note == f"superseded by {final.id} in the imported history"
    desk = next(m for m in memories if m.stamps["key"][0] == "66943995-78c0-4206-b9a7-9e82bfa1eac4")
    assert desk.status == "forgotten"
    assert (desk.audit[-1].note or "").startswith("deleted in mem0 at 2026-12-01T08:24:07")
    # The person approves the current version: it stays, the history stays history.
    any_memory.approve(final.id)
    assert any_memory.store.projection(OWNER)[final.id].status == "active"


def test_mem0_get_all_then_search_then_history_creates_no_duplicate(
    memory: Memory, tmp_path: Path
) -> None:
    first = memory.import_path(copy(tmp_path, "mem0_get_all.json"))
    assert (len(first.created), first.refused) == (6, [])
    health = next(m for m in everything(memory) if "diabetes" in m.content)
    assert (health.topic, health.sensitivity) == ("health", "sensitive")
    searched = memory.import_path(copy(tmp_path, "mem0_search.json"))
    assert (searched.created, searched.unchanged) == ([], 3)
    history = memory.import_path(copy(tmp_path, "mem0_history.json"))
    # Only the versions get_all did not have: Lyon, Paris, Berlin-training, and the desk.
    assert len(history.created) == 4
    assert history.unchanged == 6
    texts = [m.content for m in live(memory)]
    assert len(texts) == len(set(texts)) == 6
    forgotten = [m for m in everything(memory) if m.status == "forgotten"]
    assert sorted(m.audit[-1].action for m in forgotten) == ["forgotten"] * 4
    head = memory.store.tip(OWNER).head
    for name in ("mem0_get_all.json", "mem0_search.json", "mem0_history.json"):
        memory.import_path(copy(tmp_path, name))
    assert memory.store.tip(OWNER).head == head  # nothing more, in any order


def test_mem0_history_then_get_all_creates_nothing_more(memory: Memory, tmp_path: Path) -> None:
    memory.import_path(copy(tmp_path, "mem0_history.json"))
    head = memory.store.tip(OWNER).head
    again = memory.import_path(copy(tmp_path, "mem0_get_all.json"))
    assert (again.created, again.unchanged) == ([], 6)
    assert memory.store.tip(OWNER).head == head


def test_a_basic_memory_project_comes_in_with_its_graph(memory: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    shutil.copytree(GOLDEN / "basic-memory" / "demo", folder)
    report = memory.import_path(folder, fmt="basic-memory")
    assert report.refused == []
    assert len(report.created) == 6  # five notes, the long one in two parts
    memories = everything(memory)
    paths = {m.path: m for m in memories}
    index = json.loads((GOLDEN / "basic-memory" / "index.json").read_text("utf-8"))
    for entity in index["entities"]:
        assert paths[entity["permalink"]].extra["x_import"]["path"] == entity["permalink"]
    resolved = {r["to_permalink"] for r in index["relations"] if r["to_permalink"]}
    targets = {r.target for m in memories for r in m.relations}
    assert resolved <= targets
    # Every target basic-memory resolved is a memory of this ledger.
    assert all(t in paths for t in targets if t in resolved)
    journal = [
        m for m in memories if (m.path or "").startswith("demo/journal/2026/brewing-journal")
    ]
    assert sorted(len(m.content) for m in journal) == sorted(
        [1918, 1148]
    )  # the whole 3,067 characters
    head = memory.store.tip(OWNER).head
    assert memory.import_path(folder, fmt="basic-memory").unchanged == 6
    assert memory.store.tip(OWNER).head == head
