"""Value objects: principals, scopes and ids refuse near-misses such as a trailing newline;
a memory's plain-JSON form."""

from __future__ import annotations

import json

import pytest

from troth.core import lifecycle
from troth.core.chain import make_entry
from troth.core.errors import InvalidInputError
from troth.core.events import Record, canonical
from troth.core.records import (
    AuditItem,
    MemoryRecord,
    Relation,
    Scope,
    check_principal,
    memory_from_dict,
)


@pytest.mark.parametrize("value", ["human:alice\n", "human:", "robot:x", "human:a b", ""])
def test_a_malformed_principal_is_refused(value: str) -> None:
    with pytest.raises(InvalidInputError, match="not a principal"):
        check_principal(value)


def test_a_scope_id_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        Scope("project", "p1\n")


def test_to_dict_is_plain_json_and_the_inverse_of_memory_from_dict() -> None:
    memory = MemoryRecord(
        id="m1",
        owner="human:alice",
        content="tea",
        status="active",
        approval_mode="automatic",
        channel="user",
        actor="human:alice",
        reason="asked",
        created_at="2026-11-29T00:00:00.000Z",
        updated_at="2026-11-29T00:00:00.000Z",
        scope=Scope("project", "p1"),
        audit=(AuditItem("2026-11-29T00:00:00.000Z", "proposed", "human:alice"),),
        relations=(Relation("about", "m0", 0.5),),
        tags=("a", "b"),
        extra={"x_k": [1, 2]},
    )
    data = memory.to_dict()
    assert json.loads(json.dumps(data)) == data  # nothing but JSON values
    assert data["scope"] == {"level": "project", "scope_id": "p1"}
    assert data["audit"] == [{"at": "2026-11-29T00:00:00.000Z", "action": "proposed",
                              "actor": "human:alice"}]  # fmt: skip
    assert data["relations"] == [{"rel": "about", "target": "m0", "confidence": 0.5}]
    assert (data["tags"], data["ttl"], data["extra"]) == (
        ["a", "b"],
        {"policy": "never"},
        {"x_k": [1, 2]},
    )
    assert memory_from_dict(data) == memory


def test_a_projection_from_metadata_with_a_null_field_still_serialises() -> None:
    # A restored chain's metadata only has to be canonical and a known event: a null
    # where troth writes a mapping is projected as it is, not a crash.
    entry = make_entry(
        ts="2026-11-29T00:00:00.000Z", content="tea", source="user", tags=(), prev_hash=""
    )
    meta = canonical(
        {"v": 1, "event": "propose", "memory": "m1", "actor": "human:alice",
         "fields": {"approval_mode": "automatic", "status": "active", "extra": None}}
    )  # fmt: skip
    memories: dict[str, MemoryRecord] = {}
    lifecycle.apply(memories, Record(0, entry, meta, {"reason": "r"}), "human:alice")
    assert memories["m1"].to_dict()["extra"] is None
