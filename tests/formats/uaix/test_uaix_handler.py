"""The UAIX handler's behaviour beyond single golden envelopes: replay, redaction, the API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from make_golden import CALLER, MANDATORY, base, create_body

import troth.formats.uaix as uaix
from troth.core.errors import FormatError, InvalidInputError
from troth.formats.uaix import (
    InMemoryCheckpointPort,
    apply_redactions,
    compute_checksum,
    handle_request,
    parse_path,
    seal,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _raw(envelope: dict[str, Any]) -> bytes:
    return json.dumps(seal(envelope)).encode()


def test_resent_message_gets_the_first_answer_and_writes_nothing() -> None:
    port = InMemoryCheckpointPort()
    raw = _raw(base(create_body(MANDATORY), "msg-replay"))
    first = handle_request(raw, caller=CALLER, now=NOW, port=port)
    writes = port.writes
    # Even after expiry and at another time, the resend returns the stored bytes.
    again = handle_request(raw, caller=CALLER, now=NOW + timedelta(hours=1), port=port)
    assert again == first
    assert port.writes == writes
    assert len(port.checkpoints) == 1


def test_reused_message_id_with_another_envelope_is_a_conflict() -> None:
    port = InMemoryCheckpointPort()
    envelope = base(create_body(MANDATORY), "msg-reuse")
    handle_request(_raw(envelope), caller=CALLER, now=NOW, port=port)
    envelope["body"]["parameters"]["summary"] = "Something else entirely."
    answer = json.loads(handle_request(_raw(envelope), caller=CALLER, now=NOW, port=port))
    assert answer["body"]["code"] == "message-id-conflict"
    assert len(port.checkpoints) == 1


def test_another_principal_cannot_read_a_stored_answer() -> None:
    port = InMemoryCheckpointPort()
    raw = _raw(base(create_body(MANDATORY), "msg-private"))
    handle_request(raw, caller=CALLER, now=NOW, port=port)
    answer = json.loads(handle_request(raw, caller="human:bob", now=NOW, port=port))
    assert answer["body"]["code"] == "principal-mismatch"


def test_redacted_values_are_absent_from_everything_stored() -> None:
    port = InMemoryCheckpointPort()
    raw = _raw(base(create_body(MANDATORY), "msg-redact"))
    handle_request(raw, caller=CALLER, now=NOW, port=port)
    stored = json.dumps(
        [r.to_dict() for r in port.checkpoints.values()]
        + [[m.content for m in ms] for ms in port.memories.values()]
        + [r.response.decode() for r in port.replies.values()]
    )
    assert "4711" not in stored
    assert "alice@example.org" not in stored
    (record,) = port.checkpoints.values()
    assert record.participant_id is None
    assert [f.text for f in record.stable_facts] == [
        "Alice travels to Lisbon in March",
        "Alice prefers window seats",
    ]


def test_checkpoint_record_round_trips_through_its_dict() -> None:
    port = InMemoryCheckpointPort()
    handle_request(_raw(base(create_body(MANDATORY), "msg-rt")), caller=CALLER, now=NOW, port=port)
    (record,) = port.checkpoints.values()
    assert type(record).from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_created_checkpoint_can_be_audited_and_restored() -> None:
    port = InMemoryCheckpointPort()
    created = json.loads(
        handle_request(
            _raw(base(create_body(MANDATORY), "msg-c")), caller=CALLER, now=NOW, port=port
        )
    )
    checkpoint_id = created["body"]["result"]["checkpoint_id"]
    audit = base(
        {
            "intent": "spiralist.memory.drift.audit",
            "subject": "workspace.session",
            "requested_profile": "spiralist.memory.drift.audit.result.v1",
            "parameters": {
                "session_id": "s",
                "baseline_checkpoint_id": checkpoint_id,
                "current_turn_id": "t",
                "current_session_digest": {
                    "summary": "Alice is planning a trip to Lisbon in March.",
                    "facts": ["Alice travels to Lisbon in March", "Alice prefers window seats"],
                },
            },
            "constraints": [*MANDATORY, "return-drift-score-only"],
            "response_profile": "uai.intent.response.v1",
        },
        "msg-a",
    )
    answer = json.loads(handle_request(_raw(audit), caller=CALLER, now=NOW, port=port))
    assert answer["body"]["result"] == {"drift_score": 0}


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("summary", ("summary",)),
        ("stable_facts[2]", ("stable_facts", 2)),
        ("turn_window.end_turn_id", ("turn_window", "end_turn_id")),
        ("a[0][10].b", ("a", 0, 10, "b")),
    ],
)
def test_field_paths_parse(text: str, path: tuple[str | int, ...]) -> None:
    assert parse_path(text) == path


@pytest.mark.parametrize("text", ["", "[0]", "a.", "a[01]", "a[-1]", "a b", "parameters..x"])
def test_malformed_field_paths_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_path(text)


def test_array_indexes_refer_to_the_array_as_sent() -> None:
    kept = apply_redactions({"f": ["a", "b", "c", "d"]}, ["f[2]", "f[1]"])
    assert kept == {"f": ["a", "d"]}


def test_checksum_ignores_the_integrity_member_and_covers_everything_else() -> None:
    envelope = base(create_body(MANDATORY), "m")
    sealed = seal(envelope)
    assert sealed["integrity"]["checksum"] == compute_checksum(envelope)
    envelope["extensions"] = [{"namespace": "x", "purpose": "p", "critical": False}]
    assert compute_checksum(envelope) != sealed["integrity"]["checksum"]


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(InvalidInputError):
        handle_request(
            b"{}", caller=CALLER, now=datetime(2026, 1, 1), port=InMemoryCheckpointPort()
        )


def test_public_api_is_sorted_and_complete() -> None:
    # Sorted the isort way (as ruff's RUF022 does): CONSTANTS, then Classes, then functions.
    def rank(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert uaix.__all__ == sorted(uaix.__all__, key=rank)
    public = {n for n in dir(uaix) if not n.startswith("_")}
    modules = {
        "checks",
        "codec",
        "envelopes",
        "handler",
        "integrity",
        "port",
        "redaction",
        "requests",
        "refusals",
        "schemas",
    }
    assert public - modules == set(uaix.__all__)


def test_a_refusal_carries_its_uaix_code_as_an_attribute() -> None:
    with pytest.raises(uaix.RefusalError) as refused:
        uaix.parse_request(b"not json")
    assert refused.value.uaix_code == "malformed-envelope"
    assert isinstance(refused.value, FormatError)  # and it is the troth error of its kind
    assert "code" not in refused.value.details
    assert refused.value.to_dict()["uaix_code"] == "malformed-envelope"
