"""Regenerate the golden UAIX cases: ``.venv/bin/python tests/formats/uaix/make_golden.py``.

Each case is a directory under ``golden/`` with ``request.json`` (the bytes sent),
``case.json`` (caller, now, the port's state before) and ``expected-response.json``. Review the
diff of the expected responses before committing them: they are the contract.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from troth.formats.uaix import seal

GOLDEN = Path(__file__).parent / "golden"
NOW = "2026-11-29T12:00:00Z"
CALLER = "human:alice"
MANDATORY = ["runtime-payload-only", "no-protocol5-registry-write"]

BASELINE_ID = "ckpt-baseline-0001"
BASELINE: dict[str, Any] = {
    "checkpoint_id": BASELINE_ID,
    "owner": CALLER,
    "created_at": "2026-11-28T18:00:00Z",
    "source_message_id": "msg-earlier-0001",
    "session_id": "sess-42",
    "checkpoint_label": "trip planning, day 1",
    "summary": "Alice is planning a trip to Lisbon in March. The budget is fixed.",
    "turn_window": {"start_turn_id": "t-1", "end_turn_id": "t-30", "turn_count": 30},
    "participant_id": None,
    "stable_facts": [
        {"text": "Alice travels to Lisbon in March", "memory_id": "mem-0001"},
        {"text": "Alice prefers window seats", "memory_id": "mem-0002"},
        {"text": "The hotel is booked near Alfama", "memory_id": "mem-0003"},
        {"text": "Alice is vegetarian", "memory_id": None},
    ],
    "open_tasks": ["book the airport transfer"],
    "unresolved_questions": ["does Alice need travel insurance?"],
    "persona_constraints": ["answer in English"],
    "redactions": [{"field": "participant_id", "reason": "personal-data"}],
    "review_required": False,
    "extra": {},
}
MEMORIES: list[dict[str, Any]] = [
    {"memory_id": "mem-0001", "content": "Alice travels to Lisbon in March"},
    {
        "memory_id": "mem-0002",
        "content": "Alice prefers window seats",
        "status": "forgotten",
        "retrievable": False,
        "superseded_by": "mem-0005",
    },
    {"memory_id": "mem-0003", "content": "The hotel is booked near Alfama", "stale": True},
    {"memory_id": "mem-0004", "content": "Alice has a pollen allergy", "sensitivity": "sensitive"},
    {"memory_id": "mem-0005", "content": "Alice prefers aisle seats"},
    {"memory_id": "mem-0006", "content": "Alice's passport expires in 2031"},
]


def base(body: dict[str, Any], message_id: str) -> dict[str, Any]:
    """A valid request envelope around ``body`` (not yet sealed)."""
    return {
        "uai_version": "1.0",
        "profile": "uai.intent.request.v1",
        "message_id": message_id,
        "source": {"type": "agent", "id": "assistant-7", "role": "assistant"},
        "target": {"type": "service", "id": "troth"},
        "conversation": {"conversation_id": "conv-9", "turn_id": "t-31", "sequence": 31},
        "delivery": {
            "mode": "sync",
            "priority": "interactive",
            "expires_at": "2026-11-29T12:05:00Z",
            "reply_requested": True,
            "ack_required": False,
        },
        "trust": {"channel": "credentialed", "auth_scheme": "bearer", "principal": CALLER},
        "body": body,
        "provenance": {
            "trace_id": "trace-1",
            "issued_at": "2026-11-29T11:59:58Z",
            "log_ref": "assistant-7:log/31",
            "agent_id": "assistant-7",
            "model_id": "some-model",
            "confidence": 0.9,
        },
        "integrity": {"version": 1, "algorithm": "sha256", "canonicalization": "jcs"},
        "extensions": [],
    }


def create_body(constraints: list[str]) -> dict[str, Any]:
    """A checkpoint.create body with redactions."""
    return {
        "intent": "spiralist.memory.checkpoint.create",
        "subject": "workspace.session",
        "requested_profile": "spiralist.memory.checkpoint.result.v1",
        "parameters": {
            "session_id": "sess-42",
            "participant_id": "alice@example.org",
            "checkpoint_label": "trip planning, day 1",
            "turn_window": {"start_turn_id": "t-1", "end_turn_id": "t-30", "turn_count": 30},
            "summary": "Alice is planning a trip to Lisbon in March.",
            "stable_facts": [
                "Alice travels to Lisbon in March",
                "Alice prefers window seats",
                "Alice's card PIN is 4711",
            ],
            "open_tasks": ["book the airport transfer"],
            "unresolved_questions": ["does Alice need travel insurance?"],
            "canonical_symbol_refs": ["protocol5.symbol.spiral"],
            "runtime_entropy": {
                "storage_class": "runtime-execution-payload",
                "registry_authority": "none",
                "protocol5_registry_write_allowed": False,
                "protocol5_registry_write_attempted": False,
                "crisis_plate": "this-one",
            },
            "redactions": [
                {"field": "participant_id", "reason": "personal-data"},
                {"field": "stable_facts[2]", "reason": "credential"},
            ],
        },
        "constraints": constraints,
        "response_profile": "uai.intent.response.v1",
    }


def drift_body(constraints: list[str], digest: dict[str, Any]) -> dict[str, Any]:
    """A drift.audit body against the baseline checkpoint."""
    return {
        "intent": "spiralist.memory.drift.audit",
        "subject": "workspace.session",
        "requested_profile": "spiralist.memory.drift.audit.result.v1",
        "parameters": {
            "session_id": "sess-43",
            "baseline_checkpoint_id": BASELINE_ID,
            "current_turn_id": "t-12",
            "current_session_digest": digest,
        },
        "constraints": constraints,
        "response_profile": "uai.intent.response.v1",
    }


DRIFTED = {
    "summary": "Alice is planning a trip to Lisbon in April. The budget is fixed.",
    "facts": [
        "Alice travels to Lisbon in March",
        "Alice does not prefer window seats",
        "Alice is vegetarian",
    ],
    "open_tasks": [],
}


def restore_body(constraints: list[str], checkpoint_id: str = BASELINE_ID) -> dict[str, Any]:
    """A restore.brief body."""
    return {
        "intent": "spiralist.memory.restore.brief",
        "subject": "workspace.session",
        "requested_profile": "spiralist.memory.restore.brief.result.v1",
        "parameters": {"session_id": "sess-43", "checkpoint_id": checkpoint_id},
        "constraints": constraints,
        "response_profile": "uai.intent.response.v1",
    }


def sealed(
    envelope: dict[str, Any], tamper: Callable[[dict[str, Any]], None] | None = None
) -> bytes:
    """Seal ``envelope``, then apply ``tamper`` (after sealing, so the checksum is stale)."""
    out = seal(envelope)
    if tamper is not None:
        tamper(out)
    return (json.dumps(out, indent=2, ensure_ascii=False) + "\n").encode()


def _set(path: list[str], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(envelope: dict[str, Any]) -> None:
        target = envelope
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return apply


def cases() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Every golden case: name → (request bytes, case settings)."""
    with_state = {"checkpoints": [BASELINE], "memories": {CALLER: MEMORIES}}
    review = [*MANDATORY, "human-review-required"]
    out: dict[str, tuple[bytes, dict[str, Any]]] = {}

    def add(name: str, raw: bytes, **settings: Any) -> None:
        out[name] = (raw, {"caller": CALLER, "now": NOW, **settings})

    add("valid-create-checkpoint-review", sealed(base(create_body(review), "msg-create-1")))
    automatic = base(create_body(MANDATORY), "msg-create-2")
    automatic["extensions"] = [{"namespace": "x.trace", "purpose": "tracing", "critical": False}]
    add("valid-create-checkpoint-automatic", sealed(automatic))
    add(
        "valid-drift-audit-full",
        sealed(base(drift_body(MANDATORY, DRIFTED), "msg-drift-1")),
        **with_state,
    )
    add(
        "valid-drift-audit-score-only",
        sealed(base(drift_body([*MANDATORY, "return-drift-score-only"], DRIFTED), "msg-drift-2")),
        **with_state,
    )
    unchanged = {
        "summary": BASELINE["summary"],
        "facts": [f["text"] for f in BASELINE["stable_facts"]],
    }
    add(
        "valid-drift-audit-unchanged",
        sealed(base(drift_body(MANDATORY, unchanged), "msg-drift-3")),
        **with_state,
    )
    strict = [*MANDATORY, "brief-must-identify-unknowns", "no-sensitive-data-expansion"]
    add(
        "valid-restore-brief-unknowns",
        sealed(base(restore_body(strict), "msg-restore-1")),
        **with_state,
    )
    add(
        "valid-restore-brief-plain",
        sealed(base(restore_body(MANDATORY), "msg-restore-2")),
        **with_state,
    )
    create = base(create_body(MANDATORY), "msg-bad-1")
    add(
        "invalid-bad-checksum",
        sealed(create, _set(["body", "parameters", "summary"], "Alice is planning a trip.")),
    )
    expired = base(create_body(MANDATORY), "msg-bad-2")
    expired["delivery"]["expires_at"] = "2026-11-29T11:59:59Z"
    add("invalid-expired", sealed(expired))
    critical = base(create_body(MANDATORY), "msg-bad-3")
    critical["extensions"] = [{"namespace": "x.escrow", "purpose": "escrow", "critical": True}]
    add("invalid-unknown-critical-extension", sealed(critical))
    add(
        "invalid-missing-constraint",
        sealed(base(create_body(["runtime-payload-only"]), "msg-bad-4")),
    )
    wrong = base(create_body(MANDATORY), "msg-bad-5")
    wrong["body"]["requested_profile"] = "spiralist.memory.checkpoint.result.v2"
    add("invalid-wrong-requested-profile", sealed(wrong))
    wrong_envelope = base(create_body(MANDATORY), "msg-bad-6")
    wrong_envelope["profile"] = "uai.intent.response.v1"
    add("invalid-wrong-envelope-profile", sealed(wrong_envelope))
    schema = base(create_body(MANDATORY), "msg-bad-7")
    schema["body"]["parameters"]["turn_window"]["turn_count"] = 0
    del schema["body"]["parameters"]["summary"]
    add("invalid-schema-violation", sealed(schema))
    bad_time = base(create_body(MANDATORY), "msg-bad-8")
    bad_time["delivery"]["expires_at"] = "tomorrow"
    add("invalid-schema-date-time", sealed(bad_time))
    add("invalid-malformed-json", b'{"uai_version": "1.0", "message_id": "msg-bad-9", ')
    duplicate = sealed(base(restore_body(MANDATORY), "msg-bad-10")).replace(
        b'"uai_version": "1.0",', b'"uai_version": "1.0", "uai_version": "1.0",', 1
    )
    add("invalid-duplicate-key", duplicate)
    intruder = base(restore_body(MANDATORY), "msg-bad-11")
    intruder["trust"]["principal"] = "human:bob"
    add("invalid-principal-mismatch", sealed(intruder), **with_state)
    other = base(restore_body(MANDATORY), "msg-bad-12")
    other["body"]["intent"] = "spiralist.memory.checkpoint.delete"
    add("invalid-unsupported-intent", sealed(other))
    redaction = base(create_body(MANDATORY), "msg-bad-13")
    redaction["body"]["parameters"]["redactions"].append(
        {"field": "sumary", "reason": "user-request"}
    )
    add("invalid-redaction-path", sealed(redaction))
    add(
        "invalid-checkpoint-not-found",
        sealed(base(restore_body(MANDATORY, "ckpt-nope"), "msg-bad-14")),
        **with_state,
    )
    return out


def main() -> None:
    """Rewrite every case directory, including ``expected-response.json``."""
    from test_uaix_golden import run_case  # the runner the tests use

    shutil.rmtree(GOLDEN, ignore_errors=True)
    for name, (raw, settings) in cases().items():
        folder = GOLDEN / name
        folder.mkdir(parents=True)
        (folder / "request.json").write_bytes(raw)
        (folder / "case.json").write_text(json.dumps(settings, indent=2) + "\n")
        response, _ = run_case(folder)
        expected = json.loads(response)
        text = json.dumps(expected, indent=2, ensure_ascii=False, sort_keys=True)
        (folder / "expected-response.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
