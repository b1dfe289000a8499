"""Golden files made by the real tools (tests/formats/golden/, and how they were made):
mem0 2.2.1's get_all, search and history output, and a basic-memory 0.24.1 project made by
its CLI with basic-memory's own index of it (index.json). Each mapping of docs/formats.md is
asserted against what the tool itself wrote or read."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from troth.core.records import MAX_CONTENT_CHARS
from troth.formats import basic_memory, mem0, registry
from troth.formats.registry import Item

GOLDEN = Path(__file__).resolve().parent / "golden"
PROJECT = GOLDEN / "basic-memory"
INDEX: dict[str, Any] = json.loads((PROJECT / "index.json").read_text(encoding="utf-8"))


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def mem0_items(name: str) -> list[Item]:
    items, refused = mem0.decode(golden(name), name=name)
    assert refused == []
    return items


def x_fields(item: Item) -> Mapping[str, Any]:
    assert item.x_import is not None
    found: Mapping[str, Any] = item.x_import.get("fields", {})
    return found


# -- mem0 -----------------------------------------------------------------------------------


def test_mem0_files_are_recognised_from_their_bytes() -> None:
    for name in ("mem0_get_all.json", "mem0_search.json", "mem0_history.json"):
        assert registry.detect(golden(name), name).name == "mem0"


def test_mem0_get_all_maps_every_record_and_its_categories_to_topics() -> None:
    items = {i.content: i for i in mem0_items("mem0_get_all.json")}
    assert len(items) == 6
    health = items["I was diagnosed with diabetes in May"]
    assert health.fields["topic"] == "health"  # metadata.category: health
    tea = items["I prefer green tea in the afternoon"]
    assert "topic" not in tea.fields  # "preference" names no troth topic
    assert x_fields(tea)["metadata"] == {"category": "preference", "mood": "calm"}
    marathon = items["Alice finished the Berlin marathon in 4h05"]
    assert marathon.fields["session"] == "run-42"
    assert marathon.x_import is not None
    assert marathon.x_import["source"]["agent_id"] == "coach"
    assert items["Ünïcode café — naïve résumé ✓"].fields["expires"] == "2032-01-01T00:00:00Z"
    assert all(i.channel == "tool" for i in items.values())  # proposed for the person


def test_mem0_search_output_has_the_keys_of_get_all() -> None:
    everything = {i.key for i in mem0_items("mem0_get_all.json")}
    found = mem0_items("mem0_search.json")
    assert len(found) == 3
    assert {i.key for i in found} <= everything  # search()'s score is not part of the key


def test_mem0_history_becomes_versions_that_supersede_and_a_forget() -> None:
    history: dict[str, list[dict[str, Any]]] = json.loads(golden("mem0_history.json"))
    items = mem0_items("mem0_history.json")
    by_id: dict[str, list[Item]] = {}
    for item in items:
        by_id.setdefault(item.key[0], []).append(item)
    for memory_id, events in history.items():
        versions = by_id[memory_id]
        texts = [e["new_memory"] for e in events if e["event"] != "DELETE"]
        assert [v.content for v in versions] == texts  # ADD first, then each UPDATE
        assert versions[0].supersedes is None
        for before, after in itertools.pairwise(versions):
            assert after.supersedes == before.key
        deleted = events[-1]["event"] == "DELETE"
        assert (versions[-1].forget is not None) == deleted
        assert all(v.forget is None for v in versions[:-1])
    marathon = next(v for v in by_id.values() if len(v) == 3)
    assert [v.content for v in marathon][-1] == "Alice finished the Berlin marathon in 4h05"
    events = {e["event"] for es in history.values() for e in es}
    assert events == {"ADD", "UPDATE", "DELETE"}


def test_mem0_current_versions_share_the_key_of_get_all() -> None:
    current = {i.key[0]: i.key for i in mem0_items("mem0_get_all.json")}
    last: dict[str, tuple[str, str]] = {}
    for item in mem0_items("mem0_history.json"):
        last[item.key[0]] = item.key
    for memory_id, key in current.items():
        assert last[memory_id] == key


def test_mem0_history_out_of_order_is_refused_with_its_reason() -> None:
    events = [
        {"memory_id": "m1", "event": "UPDATE", "old_memory": "a", "new_memory": "b"},
        {"memory_id": "m2", "event": "ADD", "new_memory": "kept"},
        {"memory_id": "m2", "event": "DELETE", "old_memory": "kept"},
        {"memory_id": "m2", "event": "UPDATE", "old_memory": "kept", "new_memory": "late"},
    ]
    items, refused = mem0.decode(json.dumps(events).encode(), name="h.json")
    assert [i.content for i in items] == ["kept"]
    assert [r.reason for r in refused] == [
        "UPDATE of mem0 memory m1 before its ADD",
        "mem0 memory m2 was already deleted",
    ]


# -- basic-memory -----------------------------------------------------------------------------


def project_items() -> list[Item]:
    """The golden project read as `troth import demo/` reads it (names from its parent)."""
    found: list[Item] = []
    for path in sorted((PROJECT / "demo").rglob("*.md")):
        items, refused = basic_memory.decode(path.read_bytes(), name=str(path.relative_to(PROJECT)))
        assert refused == []
        found += items
    return basic_memory.link(found)


def notes() -> dict[str, Item]:
    """Each note's first (or only) memory, by basic-memory's file path."""
    out = {}
    for item in project_items():
        own = x_fields(item)[basic_memory.OWN]
        if own.get("part", {}).get("number", 1) == 1:
            out[own["file_path"]] = item
    return out


def test_every_note_has_basic_memorys_permalink_and_file_path() -> None:
    found = notes()
    assert sorted(found) == sorted(e["file_path"] for e in INDEX["entities"])
    for entity in INDEX["entities"]:
        item = found[entity["file_path"]]
        assert item.fields["path"] == entity["permalink"]  # project prefix included
        assert item.fields["title"].startswith(entity["title"])
        assert item.x_import is not None
        assert item.x_import["path"] == entity["permalink"]
        assert x_fields(item)[basic_memory.OWN]["project"] == "demo"
        if entity["type"] != "note":
            assert x_fields(item)["type"] == entity["type"]


def test_every_observation_basic_memory_read_gives_its_category_and_tags() -> None:
    found = notes()
    for observation in INDEX["observations"]:
        tags = set(found[observation["file_path"]].fields["tags"])
        assert set(observation["tags"] or ()) <= tags
        if observation["category"] != "note":  # basic-memory's name for "no category"
            assert observation["category"] in tags
    # Nothing basic-memory did not read as an observation adds a tag: not a task box, a
    # quote, a code block, a clock time.
    forms = found["notes/Link Forms.md"].fields["tags"]
    assert sorted(forms) == ["idea", "time"]


def test_every_relation_basic_memory_read_is_kept_and_resolved_as_it_resolved_it() -> None:
    found = notes()
    for path, item in found.items():
        expected = [r for r in INDEX["relations"] if r["file_path"] == path]
        kept = x_fields(item)[basic_memory.OWN].get("relations", [])
        written = {(r["type"], r["target"], r.get("context")) for r in kept}
        wanted = {(r["type"], r["to_name"], r["context"]) for r in expected}
        assert written == wanted, path
        relations = {(r["rel"], r["target"]) for r in item.fields.get("relations", ())}
        for relation in expected:
            resolved = next(
                k
                for k in kept
                if (k["type"], k["target"]) == (relation["type"], relation["to_name"])
            )["resolved"]
            assert resolved == (relation["to_permalink"] is not None)
            if relation["to_permalink"] is not None:
                rel = "basic-memory:" + relation["type"].replace(" ", "_")
                assert (rel, relation["to_permalink"]) in relations


def test_quoted_bare_and_prose_links_are_relations() -> None:
    found = notes()
    origins = {
        (r["rel"], r["target"])
        for r in found["food/origins/Coffee Bean Origins.md"].fields["relations"]
    }
    assert ("basic-memory:pairs_well_with", "demo/food/coffee-brewing-methods") in origins
    assert ("basic-memory:links_to", "demo/places/africa/ethiopia") in origins  # bare and prose
    brewing = {
        (r["rel"], r["target"]) for r in found["food/Coffee Brewing Methods.md"].fields["relations"]
    }
    assert ("basic-memory:links_to", "demo/journal/2026/brewing-journal") in brewing  # prose
    assert ("basic-memory:requires", "proper-grinding-technique") in brewing  # not imported
    assert not any(r.startswith("basic-memory:most") for r, _ in brewing)  # no fake type


def test_a_note_over_the_size_limit_is_kept_whole_as_linked_parts() -> None:
    parts = [
        i
        for i in project_items()
        if x_fields(i)[basic_memory.OWN]["file_path"] == "journal/2026/Brewing Journal.md"
    ]
    raw = (PROJECT / "demo" / "journal" / "2026" / "Brewing Journal.md").read_text("utf-8")
    body = raw.split("---\n", 2)[2].strip("\n")
    assert len(body) > MAX_CONTENT_CHARS
    assert len(parts) == 2
    assert all(len(p.content) <= MAX_CONTENT_CHARS for p in parts)
    own = [x_fields(p)[basic_memory.OWN]["part"] for p in parts]
    assert [(o["number"], o["of"]) for o in own] == [(1, 2), (2, 2)]
    assert (
        basic_memory.reassemble([(o["joiner"], p.content) for o, p in zip(own, parts, strict=True)])
        == body
    )
    first, second = parts
    assert second.fields["path"] == f"{first.fields['path']}/part-2"
    assert second.fields["relations"] == [
        {"rel": "troth:part_of", "target": first.fields["path"]},
        {"rel": "troth:continues", "target": first.fields["path"]},
    ]
    assert ("basic-memory:follows", "demo/food/coffee-brewing-methods") in {
        (r["rel"], r["target"]) for r in first.fields["relations"]
    }
    assert len({p.key for p in parts}) == 2


def test_a_text_is_cut_at_lines_then_spaces_then_anywhere_and_put_back_exactly() -> None:
    for text in ("a\n" * 1500, "word " * 900, "x" * 4500, "x" * 10 + "\n" + "y" * 3000):
        pieces = basic_memory.split_text(text, MAX_CONTENT_CHARS)
        assert all(len(p) <= MAX_CONTENT_CHARS for _, p in pieces)
        assert basic_memory.reassemble(pieces) == text
