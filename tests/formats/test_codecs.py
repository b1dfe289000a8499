"""Round-trip properties of each codec, detection, and the foreign formats' mappings."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from troth.core.chain import make_entry
from troth.formats import (
    archive,
    basic_memory,
    hux,
    omp,
    pcp,
    personaxis,
    registry,
    remnic,
    yaml12,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
UTC_TIMES = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z".format,
    st.integers(1970, 2100),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
SEGMENT = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9._-]{0,10}\Z")
PATHS = st.lists(SEGMENT, min_size=1, max_size=3).map("/".join)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(TEXT, JSON, max_size=6))
def test_yaml_frontmatter_reads_back_as_the_same_json(data: dict[str, Any]) -> None:
    assert yaml12.load(yaml12.dump(data), where="t") == data


@settings(max_examples=100, deadline=None)
@given(
    title=TEXT.filter(lambda t: 0 < len(t) <= 300),
    updated=UTC_TIMES,
    tags=st.lists(TEXT.filter(lambda t: 0 < len(t) <= 100), unique=True, max_size=4),
    body=TEXT,
    extra=JSON,
    path=PATHS,
)
def test_a_page_survives_encode_and_decode(
    title: str, updated: str, tags: list[str], body: str, extra: Any, path: str
) -> None:
    fm: dict[str, Any] = {"title": title, "updated": updated, "x_extra": extra}
    if tags:
        fm["tags"] = tags
    fm["derived_from"] = [path]
    page = pcp.Page(fm, body.replace("\r", ""))
    assert pcp.decode_page(pcp.encode_page(page), where="p.md") == page


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(PATHS, st.binary(max_size=64)), max_size=5, unique_by=lambda x: x[0]))
def test_an_archive_reads_back_the_files_it_wrote(pages: list[tuple[str, bytes]]) -> None:
    files = archive.build(
        pages,
        [],
        owner="human:a",
        exported_at="2026-01-01T00:00:00Z",
        version="1",
        sensitive_pages=0,
    )
    for writer in (archive.write_tar, archive.write_zip):
        data = writer(files, "2026-01-01T00:00:00Z")
        assert archive.read(data, where="a") == files
        assert archive.verify(files, where="a")["memory"]["page_count"] == len(pages)
        assert writer(files, "2026-01-01T00:00:00Z") == data  # deterministic


@settings(max_examples=50, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=6))
def test_a_personaxis_log_round_trips_byte_for_byte(contents: list[str]) -> None:
    entries = []
    prev = ""
    for i, text in enumerate(contents):
        entry = make_entry(
            ts=f"2026-01-01T00:00:{i:02d}.000Z",
            content=text,
            source="user",
            tags=(),
            prev_hash=prev,
        )
        entries.append(entry)
        prev = entry.hash
    data = personaxis.encode(entries)
    assert personaxis.decode(data) == entries
    assert personaxis.encode(personaxis.verified(data, name="e.jsonl")) == data
    items, _ = personaxis.items(data)
    assert [i.content for i in items] == contents


def test_hux_records_validate_and_import(tmp_path: Path) -> None:
    record = {
        "schema": "hux.memory.v1",
        "id": "m_1",
        "owner": "human:alice",
        "scope": {"level": "global"},
        "kind": "preference",
        "content": "green tea",
        "status": "active",
        "approval_mode": "automatic",
        "sensitivity": "normal",
        "topic": "general",
        "ttl": {"policy": "never"},
        "source": {"channel": "user", "principal": "human:alice"},
        "provenance": {"ledger": "human:alice", "entry_hash": "0" * 64, "seq": 0},
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "audit": [{"at": "2026-01-01T00:00:00.000Z", "action": "proposed", "actor": "human:alice"}],
        "reason": "asked",
        "retrievable": True,
        "revision": 1,
    }
    for data in (json.dumps([record]).encode(), (json.dumps(record) + "\n").encode()):
        assert registry.detect(data, "m.json").name == "hux"
        items, refused = hux.items(data)
        assert not refused
        assert items[0].content == "green tea"
        assert items[0].x_import is not None
        assert items[0].x_import["id"] == "m_1"


def test_omp_export_maps_by_the_interop_table() -> None:
    record = {
        "id": "mem_0123456789abcdef",
        "content": "Prefers dark mode",
        "type": "semantic",
        "source": {"tool": "claude", "session_id": "s1", "timestamp": "2026-01-01T10:00:00Z"},
        "tags": ["ui"],
        "namespace": "project:x",
        "created_at": "2026-01-01T10:00:00Z",
        "updated_at": "2026-01-02T10:00:00Z",
        "expires_at": "2027-01-01T00:00:00Z",
        "embedding": [0.1, 0.2],
    }
    data = json.dumps([record]).encode()
    assert registry.detect(data, "omp.json").name == "omp"
    (item,), _ = omp.decode(data)
    assert item.fields["page_type"] == "semantic"
    assert item.fields["valid_until"] == "2027-01-01T00:00:00Z"
    assert item.x_import is not None
    assert item.x_import["fields"] == {
        "namespace": "project:x",
        "updated_at": "2026-01-02T10:00:00Z",
    }


def test_remnic_category_maps_to_type_and_is_kept_as_a_tag() -> None:
    data = (
        b"---\nid: pref-tea\ncategory: preference\nlifecycle_state: validated\nconfidence: 0.8\n"
        b"validAt: 2026-01-01\nrelations:\n  - type: supports\n    target: drinks/tea\n"
        b"mood: calm\n---\nLikes green tea\n"
    )
    assert registry.detect(data, "pref-tea.md").name == "remnic"
    (item,), _ = remnic.decode(data, name="pref-tea.md")
    assert item.fields["page_type"] == "semantic"
    assert item.fields["tags"] == ["preference"]
    assert item.fields["lifecycle"] == "validated"
    assert item.fields["valid_from"] == "2026-01-01"
    assert item.fields["relations"] == [{"rel": "remnic:supports", "target": "drinks/tea"}]
    assert item.x_import is not None
    assert item.x_import["fields"] == {"mood": "calm"}


def test_basic_memory_note_maps_observations_and_relations() -> None:
    data = (
        b"---\ntitle: Coffee Brewing Methods\ntype: note\ntags: [coffee, brewing]\n"
        b"permalink: coffee-brewing-methods\nsource: wiki\n---\n# Coffee Brewing Methods\n"
        b"- [method] Pour over gives clarity #brewing\n- relates_to [[Coffee Bean Origins]]\n"
    )
    assert registry.detect(data, "coffee.md").name == "basic-memory"
    (item,), _ = basic_memory.decode(data, name="coffee.md")
    assert item.fields["path"] == "coffee-brewing-methods"
    assert item.fields["tags"] == ["coffee", "brewing", "method"]
    assert item.fields["relations"] == [
        {"rel": "basic-memory:relates_to", "target": "coffee-bean-origins"}
    ]
    assert item.x_import is not None
    assert item.x_import["fields"] == {
        "source": "wiki",
        "basic-memory": {
            "file_path": "coffee.md",
            "relations": [{"type": "relates_to", "target": "Coffee Bean Origins"}],
        },
    }


def test_yaml_timestamps_and_yes_stay_strings() -> None:
    assert yaml12.load("a: 2026-01-08\nb: yes\nc: 2026-01-08T10:00:00Z\n", where="t") == {
        "a": "2026-01-08",
        "b": "yes",
        "c": "2026-01-08T10:00:00Z",
    }


@pytest.mark.parametrize("name", registry.names())
def test_every_registered_codec_satisfies_the_one_codec_protocol(name: str) -> None:
    codec = registry.get(name)
    assert isinstance(codec, registry.Codec)
    assert codec.name == name
    assert codec.description
    assert codec.sniff(b"\x00not any format\xff", "x.bin") is False
    # Every format module's decoder takes the protocol's options, whichever it uses.
    assert isinstance(codec, registry.FunctionCodec)
    inspect.signature(codec.decoder).bind(b"", name="x", restore=True, reanchor=True, known=())
