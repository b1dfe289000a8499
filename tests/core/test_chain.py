"""The personaxis chain: derived vectors, verification, redaction, legacy lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from tests.conftest import SHARED
from troth.core import chain
from troth.formats import personaxis

VECTORS = json.loads(
    (SHARED / "seeds/personaxis/derived-vectors/episodic_chain_vectors.json").read_text()
)
REFERENCE = SHARED / "seeds/personaxis/derived-vectors/reference_generated.jsonl"


def entries(name: str) -> list[chain.Entry]:
    return [chain.entry_from_json(item) for item in VECTORS[name]]


def test_derived_vectors_verify() -> None:
    for name in ("v1_chain", "after_redaction_and_audit", "legacy_chain"):
        result = chain.verify(entries(name))
        assert result.ok, (name, result)


def test_reference_generated_log_verifies_and_reserialises_byte_for_byte() -> None:
    data = REFERENCE.read_bytes()
    decoded = personaxis.decode(data)
    assert chain.verify(decoded).ok
    assert personaxis.encode(decoded) == data


def test_making_the_v1_chain_reproduces_the_vectors_exactly() -> None:
    prev = ""
    for expected in VECTORS["v1_chain"]:
        made = chain.make_entry(
            ts=expected["ts"],
            content=expected["content"],
            source=expected["source"],
            tags=expected["tags"],
            prev_hash=prev,
        )
        assert made.to_json() == expected
        prev = made.hash


def test_redacting_then_tombstoning_reproduces_the_redaction_vector() -> None:
    v1 = entries("v1_chain")
    redacted = [v1[0], chain.redact_entry(v1[1]), v1[2]]
    tombstone = chain.make_entry(
        ts="2026-07-03T12:00:03.000Z",
        content=chain.tombstone_content("redacted: user erasure request"),
        source="user",
        tags=["tombstone", "target:" + v1[1].hash],
        prev_hash=v1[2].hash,
    )
    expected = VECTORS["after_redaction_and_audit"]
    assert [e.to_json() for e in [*redacted, tombstone]] == expected
    assert list(personaxis.encode([*redacted, tombstone]).decode().splitlines()) == [
        json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in expected
    ]


def test_editing_redacted_log_breaks_at_the_edited_entry() -> None:
    log = entries("after_redaction_and_audit")
    tampered = chain.Entry(**_replace(log[2], content="x"))
    assert chain.verify([*log[:2], tampered, log[3]]).broken_at == 2


def _replace(entry: chain.Entry, **changes: object) -> dict[str, object]:
    values = {f: getattr(entry, f) for f in entry.__slots__}
    values.update(changes)
    return values


def test_nfd_normalisation_of_cafe_breaks_the_chain() -> None:
    log = entries("v1_chain")
    nfd = chain.Entry(**_replace(log[1], content=log[1].content.replace("é", "e\u0301")))
    assert chain.verify([log[0], nfd, log[2]]).broken_at == 1


def test_legacy_chain_reanchors_into_a_verifying_v1_chain() -> None:
    legacy = entries("legacy_chain")
    migrated, remap = chain.reanchor(legacy)
    assert chain.verify(migrated).ok
    assert not migrated[0].is_legacy
    assert remap[legacy[0].hash] == migrated[0].hash
    legacy_edit = chain.Entry(**_replace(legacy[0], content="changed"))
    assert chain.verify([legacy_edit]).broken_at == 0


def test_format_ts_writes_what_to_iso_string_writes() -> None:
    plus_five = timezone(timedelta(hours=5))
    assert chain.format_ts(datetime(2026, 1, 1, 4, 0, 0, 123999, tzinfo=plus_five)) == (
        "2025-12-31T23:00:00.123Z"
    )
    assert chain.format_ts(datetime(999, 5, 6, tzinfo=UTC)) == "0999-05-06T00:00:00.000Z"
