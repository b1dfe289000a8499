"""An import cannot carry a memory past the policy's content rules (both backends)."""

from __future__ import annotations

import json
from pathlib import Path

from troth.service.memory import Memory

ALICE = "human:alice"


def mem0_file(tmp_path: Path, records: list[dict[str, object]], name: str = "mem0.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"results": records}), encoding="utf-8")
    return path


def record(memory_id: str, text: str, **extra: object) -> dict[str, object]:
    return {"id": memory_id, "memory": text, "user_id": "alice", "role": "user", **extra}


def test_a_fact_about_a_child_is_not_stored_whatever_the_topic(
    any_memory: Memory, tmp_path: Path
) -> None:
    path = mem0_file(tmp_path, [record("a", "My daughter Lena starts school in September")])
    any_memory.import_path(path)
    assert any_memory.recall("Lena school September") == []
    assert all("Lena" not in m.content for m in any_memory.memories())


def test_a_mem0_health_category_makes_the_memory_sensitive(
    any_memory: Memory, tmp_path: Path
) -> None:
    path = mem0_file(
        tmp_path, [record("h", "I see a physio on Tuesdays", metadata={"category": "health"})]
    )
    report = any_memory.import_path(path)
    (made,) = [any_memory.get(i) for i in report.created]
    assert (made.topic, made.sensitivity, made.status) == ("health", "sensitive", "proposed")


def test_a_health_fact_without_a_category_is_read_as_health(
    any_memory: Memory, tmp_path: Path
) -> None:
    path = mem0_file(tmp_path, [record("d", "I was diagnosed with diabetes in May")])
    report = any_memory.import_path(path)
    (made,) = [any_memory.get(i) for i in report.created]
    assert (made.topic, made.sensitivity) == ("health", "sensitive")


def test_search_output_after_get_all_adds_no_duplicate(any_memory: Memory, tmp_path: Path) -> None:
    base = record("s1", "I prefer green tea", created_at="2026-11-29T23:26:36+00:00")
    any_memory.import_path(mem0_file(tmp_path, [base], "get_all.json"))
    searched = mem0_file(tmp_path, [{**base, "score": 0.83}], "search.json")
    again = any_memory.import_path(searched)
    assert (len(again.created), again.unchanged) == (0, 1)
    assert len([m for m in any_memory.memories() if m.content == "I prefer green tea"]) == 1
