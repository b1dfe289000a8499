"""Round-trip properties of the import codecs: HUX, mem0, OMP, Remnic and basic-memory.

For each, a generated source record is decoded into the item troth writes. HUX, which
troth also writes, must read back the records it wrote. The import-only formats must lose
nothing: every source value is either mapped to a memory field or kept under
``x_import.fields`` (derived values — hashes, scores, embeddings — excepted). Examples are
bounded so the suite stays fast.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.formats.test_codecs import JSON, UTC_TIMES
from troth.formats import basic_memory, foreign, hux, mem0, omp, remnic, yaml12
from troth.formats.registry import Item

FAST = settings(max_examples=40, deadline=None)
WORD = st.from_regex(r"\A[a-z][a-z0-9]{0,11}\Z")
CONTENT = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=200).filter(
    lambda t: bool(t.strip())
)
IDS = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,30}\Z")
# Keys no codec maps: they must come back under x_import.fields.
EXTRA_KEYS = st.from_regex(r"\Azz_[a-z0-9_]{1,10}\Z")
EXTRAS = st.dictionaries(EXTRA_KEYS, JSON.filter(lambda v: v is not None and v != {}), max_size=3)


def decoded_one(items: list[Item]) -> Item:
    assert len(items) == 1
    return items[0]


def fields_of(item: Item) -> dict[str, Any]:
    assert item.x_import is not None
    found: dict[str, Any] = item.x_import.get("fields", {})
    return found


# -- HUX -----------------------------------------------------------------------------------------


@st.composite
def hux_records(draw: st.DrawFn) -> dict[str, Any]:
    at = draw(UTC_TIMES).replace("Z", ".000Z")
    record: dict[str, Any] = {
        "schema": "hux.memory.v1",
        "id": draw(IDS),
        "owner": "human:alice",
        "scope": draw(
            st.sampled_from([{"level": "global"}, {"level": "project", "scope_id": "p1"}])
        ),
        "kind": draw(st.sampled_from(["preference", "fact", "instruction", "context"])),
        "content": draw(CONTENT),
        "status": draw(st.sampled_from(["proposed", "active", "rejected", "forgotten"])),
        "approval_mode": draw(st.sampled_from(["automatic", "ask"])),
        "sensitivity": draw(st.sampled_from(["normal", "sensitive"])),
        "topic": draw(st.sampled_from(["general", "health", "location"])),
        "ttl": {"policy": "never"},
        "source": {
            "channel": draw(st.sampled_from(["user", "tool", "synthesis"])),
            "principal": "human:alice",
        },
        "provenance": {
            "ledger": "human:alice",
            "entry_hash": "0" * 64,
            "seq": draw(st.integers(0, 99)),
        },
        "created_at": at,
        "updated_at": at,
        "audit": [{"at": at, "action": "proposed", "actor": "human:alice"}],
        "reason": draw(CONTENT),
        "retrievable": draw(st.booleans()),
        "revision": draw(st.integers(1, 5)),
    }
    identity: dict[str, Any] = {}
    if draw(st.booleans()):
        identity["tags"] = draw(st.lists(WORD, min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        identity["path"] = "/".join(draw(st.lists(WORD, min_size=1, max_size=3)))
    if identity:
        record["identity"] = identity
    hux.validate(record)
    return record


@FAST
@given(st.lists(hux_records(), min_size=1, max_size=4))
def test_hux_records_read_back_as_written_in_both_layouts(records: list[dict[str, Any]]) -> None:
    array = (json.dumps(records, ensure_ascii=False, indent=2) + "\n").encode()
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    assert hux.decode(array) == records == hux.decode(lines)
    assert hux.items(array) == hux.items(lines)


@FAST
@given(hux_records())
def test_a_hux_record_maps_every_value_or_keeps_it(record: dict[str, Any]) -> None:
    result = hux.item(record, "m.json: item 0")
    if record["status"] not in ("proposed", "active"):
        assert not isinstance(result, Item)
        assert record["status"] in result.reason
        return
    assert isinstance(result, Item)
    assert result.content == record["content"]
    for key in ("kind", "topic", "sensitivity", "reason", "ttl"):
        assert result.fields[key] == record[key]
    identity = record.get("identity", {})
    assert result.fields.get("path") == identity.get("path")
    assert list(result.fields.get("tags", [])) == identity.get("tags", [])
    assert result.x_import is not None
    assert result.x_import["id"] == record["id"]
    assert result.x_import["recorded_at"] == record["created_at"]
    assert result.x_import["source"] == record["source"]
    kept = fields_of(result)
    for key in ("owner", "status", "approval_mode", "audit", "retrievable", "revision"):
        assert kept[key] == record[key]
    assert result.key == (record["id"], foreign.record_sha256(record))


# -- mem0 ----------------------------------------------------------------------------------------


@st.composite
def mem0_records(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = {"id": draw(IDS), "memory": draw(CONTENT)}
    optional = {
        "created_at": UTC_TIMES,
        "updated_at": UTC_TIMES,
        "user_id": WORD,
        "agent_id": WORD,
        "run_id": WORD,
        "actor_id": WORD,
        "role": st.sampled_from(["user", "assistant"]),
        "categories": st.lists(WORD, max_size=3, unique=True),
        "metadata": st.dictionaries(WORD, JSON, min_size=1, max_size=3),
        "memory_type": st.sampled_from(["procedural_memory", "semantic_memory"]),
        "expiration_date": st.dates().map(str),
        "hash": st.just("d41d8cd98f00b204e9800998ecf8427e"),
        "score": st.floats(0, 1),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            record[key] = draw(strategy)
    record.update(draw(EXTRAS))
    return record


@FAST
@given(st.lists(mem0_records(), min_size=1, max_size=3, unique_by=lambda r: r["id"]))
def test_mem0_keeps_every_source_value(records: list[dict[str, Any]]) -> None:
    items, refused = mem0.decode(json.dumps({"results": records}).encode())
    assert not refused
    for record, item in zip(records, items, strict=True):
        assert item.x_import is not None
        source = item.x_import.get("source", {})
        kept = fields_of(item)
        for key, value in record.items():
            if key in ("hash", "score"):
                assert key not in kept  # derived: dropped
            elif key == "memory":
                assert item.content == value
            elif key == "id":
                assert item.x_import["id"] == value
            elif key in ("user_id", "agent_id", "run_id", "actor_id", "role"):
                assert source[key] == value
            elif key == "created_at":
                assert source["at"] == value
            elif key == "categories":
                assert set(value) <= set(item.fields.get("tags", ()))
            elif key == "expiration_date":
                assert item.fields["expires"] > value  # the end of that day
                assert item.fields["expires"].endswith("T00:00:00Z")
            elif key == "memory_type" and value == "procedural_memory":
                assert item.fields["page_type"] == "procedural"
            else:
                assert kept[key] == value


# -- OMP -----------------------------------------------------------------------------------------


@st.composite
def omp_records(draw: st.DrawFn) -> dict[str, Any]:
    source: dict[str, Any] = {"tool": draw(WORD)}
    if draw(st.booleans()):
        source["session_id"] = draw(WORD)
    if draw(st.booleans()):
        source["timestamp"] = draw(UTC_TIMES)
    record: dict[str, Any] = {
        "id": draw(IDS),
        "content": draw(CONTENT),
        "type": draw(st.sampled_from(["episodic", "semantic", "procedural"])),
        "source": source,
    }
    optional = {
        "tags": st.lists(WORD, min_size=1, max_size=3, unique=True),
        "namespace": WORD,
        "created_at": UTC_TIMES,
        "updated_at": UTC_TIMES,
        "expires_at": UTC_TIMES,
        "embedding": st.lists(st.floats(-1, 1), min_size=1, max_size=4),
        "metadata": st.dictionaries(WORD, JSON, min_size=1, max_size=3),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            record[key] = draw(strategy)
    record.update(draw(EXTRAS))
    return record


@FAST
@given(st.lists(omp_records(), min_size=1, max_size=3))
def test_omp_keeps_every_source_value(records: list[dict[str, Any]]) -> None:
    items, refused = omp.decode(json.dumps(records).encode())
    assert not refused
    for record, item in zip(records, items, strict=True):
        assert item.x_import is not None
        kept = fields_of(item)
        for key, value in record.items():
            if key == "embedding":
                assert key not in kept
            elif key == "content":
                assert item.content == value
            elif key == "id":
                assert item.x_import["id"] == value
            elif key == "type":
                assert item.fields["page_type"] == value
            elif key == "source":
                assert item.x_import["source"] == value
            elif key == "tags":
                assert item.fields["tags"] == value
            elif key == "expires_at":
                assert item.fields["valid_until"] == value
            elif key == "created_at":
                assert item.x_import["recorded_at"] == value
            else:
                assert kept[key] == value


# -- Remnic --------------------------------------------------------------------------------------


@st.composite
def remnic_files(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    fm: dict[str, Any] = {
        "id": draw(WORD),
        "category": draw(st.sampled_from(sorted(remnic.CATEGORY_TYPE))),
    }
    optional = {
        "title": WORD,
        "tags": st.lists(WORD, min_size=1, max_size=3, unique=True),
        "lifecycle_state": st.sampled_from(["active", "validated", "stale", "archived"]),
        "confidence": st.floats(0, 1),
        "validAt": st.dates().map(str),
        "invalidAt": UTC_TIMES,
        "created": UTC_TIMES,
        "updated": UTC_TIMES,
        "relations": st.lists(
            st.fixed_dictionaries({"type": st.sampled_from(["about", "supports"]), "target": WORD}),
            min_size=1,
            max_size=2,
        ),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            fm[key] = draw(strategy)
    fm.update(draw(EXTRAS))
    return fm, draw(CONTENT).replace("\r", "")


@FAST
@given(remnic_files())
def test_remnic_keeps_every_source_value(file: tuple[dict[str, Any], str]) -> None:
    fm, body = file
    data = ("---\n" + yaml12.dump(fm) + "---\n" + body + "\n").encode()
    item = decoded_one(remnic.decode(data, name="m.md")[0])
    assert item.content == body.strip("\n")
    assert item.x_import is not None
    kept = fields_of(item)
    for key, value in fm.items():
        if key == "id":
            assert item.x_import["id"] == value
            assert item.fields["path"] == value
        elif key == "category":
            assert value in item.fields["tags"]
            assert item.fields["page_type"] == remnic.CATEGORY_TYPE[value]
        elif key == "title":
            assert item.fields["title"] == value
        elif key == "tags":
            assert set(value) <= set(item.fields["tags"])
        elif key == "lifecycle_state":
            assert item.fields["lifecycle"] == value
        elif key == "confidence":
            assert item.fields["confidence"] == value
        elif key == "validAt":
            assert item.fields["valid_from"] == value
        elif key == "invalidAt":
            assert item.fields["valid_until"] == value
        elif key == "created":
            assert item.x_import["recorded_at"] == value
        elif key == "relations":
            targets = [r["target"] for r in item.fields["relations"]]
            assert targets == [edge["target"] for edge in value]
        else:
            assert kept[key] == value


# -- basic-memory --------------------------------------------------------------------------------


@st.composite
def notes(draw: st.DrawFn) -> tuple[dict[str, Any], list[str], list[tuple[str, str]], str]:
    fm: dict[str, Any] = {"title": draw(WORD)}
    if draw(st.booleans()):
        fm["type"] = draw(st.sampled_from(["note", "person", "project"]))
    if draw(st.booleans()):
        fm["tags"] = draw(st.lists(WORD, min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        fm["permalink"] = draw(WORD)
    fm.update(draw(EXTRAS))
    # "[x]" is a task box, not an observation, for basic-memory as for troth
    categories = draw(st.lists(WORD.filter(lambda w: w != "x"), max_size=3, unique=True))
    links = draw(st.lists(st.tuples(WORD, WORD), max_size=3, unique_by=lambda x: x))
    return fm, categories, links, draw(WORD)


@FAST
@given(notes())
def test_basic_memory_keeps_every_source_value(
    note: tuple[dict[str, Any], list[str], list[tuple[str, str]], str],
) -> None:
    fm, categories, links, text = note
    body = "\n".join(
        [f"# {fm['title']}", text]
        + [f"- [{c}] observed {c} #{c}x" for c in categories]
        + [f"- {rel} [[{target}]]" for rel, target in links]
    )
    data = ("---\n" + yaml12.dump(fm) + "---\n" + body + "\n").encode()
    item = decoded_one(basic_memory.decode(data, name="n.md")[0])
    assert item.content == body  # observations and relations stay in the body
    tags = set(item.fields.get("tags", ()))
    assert set(fm.get("tags", ())) | set(categories) | {f"{c}x" for c in categories} <= tags
    relations = {(r["rel"], r["target"]) for r in item.fields.get("relations", ())}
    assert relations == {(f"basic-memory:{rel}", target) for rel, target in links}
    assert item.fields["title"] == fm["title"]
    # basic-memory's permalink is made from the file's path when the note names none
    assert item.fields["path"] == fm.get("permalink", "n")
    kept = fields_of(item) if item.x_import and "fields" in item.x_import else {}
    assert kept[basic_memory.OWN]["file_path"] == "n.md"
    for key, value in fm.items():
        if key in ("title", "tags", "permalink"):
            continue
        if key == "type" and value == "note":
            continue  # the default type says nothing
        assert kept[key] == value
