"""Session checkpoints end to end: UAIX envelopes through the real ledger-backed port."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.backends import execute, reopen, stored_files
from tests.formats.uaix.make_golden import (
    BASELINE,
    CALLER,
    MANDATORY,
    base,
    create_body,
    restore_body,
)
from tests.formats.uaix.test_uaix_golden import GOLDEN, independent_jcs
from troth.config import default_policy_document
from troth.core.checkpoints import CheckpointRecord
from troth.core.errors import StorageError
from troth.core.policy import Policy
from troth.formats.uaix import ERROR_PROFILE, RESPONSE_PROFILE, seal, validator
from troth.service import checkpoints as service_checkpoints
from troth.service.memory import Memory
from troth.storage.base import Store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
UNKNOWNS = [*MANDATORY, "brief-must-identify-unknowns"]
SECRET_EMAIL = "alice@example.org"
SECRET_FACT = "Alice's card PIN is 4711"


def automatic_synthesis_policy() -> Policy:
    """The default policy plus one rule: a person's own checkpoint facts are kept at once."""
    document = copy.deepcopy(default_policy_document())
    rules = document["approval"]["rules"]
    rules.insert(
        len(rules) - 2,
        {
            "why": "a person's own session checkpoint is kept at once",
            "channels": ["synthesis"],
            "writers": ["self"],
            "mode": "automatic",
        },
    )
    return Policy.from_document(document)


def open_memory(store: Store, policy: Policy | None = None, principal: str = CALLER) -> Memory:
    return Memory(
        store,
        policy=policy or Policy.from_document(default_policy_document()),
        principal=principal,
        clock=lambda: NOW,
    )


@pytest.fixture
def ledger(any_store: Store) -> Iterator[Memory]:
    with open_memory(any_store) as memory:
        yield memory


@pytest.fixture
def auto_ledger(any_store: Store) -> Iterator[Memory]:
    with open_memory(any_store, automatic_synthesis_policy()) as memory:
        yield memory


def envelope(body: dict[str, Any], message_id: str, **changes: Any) -> bytes:
    """A sealed request (expiring five minutes after NOW, as in the golden cases)."""
    request = base(body, message_id)
    for key, value in changes.items():
        request[key] = value
    return json.dumps(seal(request)).encode()


def answer(memory: Memory, raw: bytes, **options: Any) -> dict[str, Any]:
    response = memory.handle_checkpoint(raw, **options)
    assert_sealed_and_valid(response)
    parsed: dict[str, Any] = json.loads(response)
    return parsed


def assert_sealed_and_valid(response: bytes) -> None:
    """Valid against the shipped schema; checksum reproduced by an independent JCS."""
    parsed = json.loads(response)
    schema = (
        "response.schema.json" if parsed["profile"] == RESPONSE_PROFILE else "error.schema.json"
    )
    assert parsed["profile"] in (RESPONSE_PROFILE, ERROR_PROFILE)
    assert [e.message for e in validator(schema).iter_errors(parsed)] == []
    covered = {k: v for k, v in parsed.items() if k != "integrity"}
    assert parsed["integrity"]["checksum"] == hashlib.sha256(independent_jcs(covered)).hexdigest()
    assert response == independent_jcs(parsed)


def replies(memory: Memory) -> int:
    return int(execute(memory.store, "SELECT count(*) FROM checkpoint_replies").fetchone()[0])


def files_under(memory: Memory) -> Iterator[tuple[Path, bytes]]:
    """The files that hold the store's data (on PostgreSQL its relation files)."""
    for path in sorted(stored_files(memory.store)):
        yield path, path.read_bytes()


def golden(name: str) -> tuple[bytes, dict[str, Any]]:
    folder = GOLDEN / name
    expected = json.loads((folder / "expected-response.json").read_text())
    return (folder / "request.json").read_bytes(), expected


def normalised(response: dict[str, Any]) -> dict[str, Any]:
    """The response with the ledger's random memory ids renamed mem-0001… in order of use.

    The checksum covers those ids, so it is left out (it is checked on the real bytes).
    """
    out = copy.deepcopy(response)
    del out["integrity"]["checksum"]
    for index, item in enumerate(out["body"]["result"]["memories"], start=1):
        item["memory_id"] = f"mem-{index:04d}"
    return out


def ledger_is_sound(memory: Memory) -> None:
    assert all(report.ok for report in memory.verify())
    assert all(result["equal"] for result in memory.rebuild())


# -- golden envelopes through the ledger ------------------------------------------------

REFUSALS = sorted(p.name for p in GOLDEN.iterdir() if p.name.startswith("invalid-"))


@pytest.mark.parametrize("name", REFUSALS)
def test_golden_refusal_is_identical_through_the_ledger_and_writes_no_entry(
    auto_ledger: Memory, name: str
) -> None:
    raw, expected = golden(name)
    response = auto_ledger.handle_checkpoint(raw)
    assert json.loads(response) == expected
    assert_sealed_and_valid(response)
    assert auto_ledger.store.tip(CALLER).length == 0
    assert auto_ledger.memories() == []


@pytest.mark.parametrize(
    "name", ["valid-create-checkpoint-automatic", "valid-create-checkpoint-review"]
)
def test_golden_create_gives_the_expected_answer_through_the_ledger(
    auto_ledger: Memory, name: str
) -> None:
    raw, expected = golden(name)
    response = answer(auto_ledger, raw)
    assert normalised(response) == normalised(expected)
    statuses = {m["memory_id"]: m["status"] for m in response["body"]["result"]["memories"]}
    for memory_id, status in statuses.items():
        assert auto_ledger.get(memory_id).status == status
    ledger_is_sound(auto_ledger)


def test_human_review_required_holds_facts_even_where_policy_would_keep_them(
    auto_ledger: Memory,
) -> None:
    automatic = answer(auto_ledger, golden("valid-create-checkpoint-automatic")[0])
    review = answer(auto_ledger, golden("valid-create-checkpoint-review")[0])
    assert {m["status"] for m in automatic["body"]["result"]["memories"]} == {"active"}
    assert {m["status"] for m in review["body"]["result"]["memories"]} == {"proposed"}
    held = auto_ledger.get(review["body"]["result"]["memories"][0]["memory_id"])
    assert held.approval_mode == "ask"
    assert held.channel == "synthesis"


def seed_baseline(memory: Memory) -> None:
    """The golden baseline checkpoint, appended to the real ledger through the port."""
    record = CheckpointRecord.from_dict(BASELINE)
    with memory.parts.ledger.writing(CALLER) as tx:
        port = memory.parts.checkpoints.port(tx, actor=CALLER, now=NOW, include_sensitive=True)
        port.store_checkpoint(record)


@pytest.mark.parametrize(
    "name",
    ["valid-drift-audit-full", "valid-drift-audit-score-only", "valid-drift-audit-unchanged"],
)
def test_golden_drift_audit_is_identical_against_a_checkpoint_in_the_ledger(
    ledger: Memory, name: str
) -> None:
    seed_baseline(ledger)
    raw, expected = golden(name)
    assert answer(ledger, raw) == expected
    ledger_is_sound(ledger)


def test_checkpoint_round_trips_through_its_ledger_event(ledger: Memory) -> None:
    seed_baseline(ledger)
    with ledger.parts.ledger.writing(CALLER) as tx:
        port = ledger.parts.checkpoints.port(tx, actor=CALLER, now=NOW, include_sensitive=True)
        loaded = port.load_checkpoint(CALLER, BASELINE["checkpoint_id"])
        assert port.load_checkpoint("human:bob", BASELINE["checkpoint_id"]) is None
    assert loaded == CheckpointRecord.from_dict(BASELINE)


# -- the promises ---------------------------------------------------------------


def test_create_then_restore_brief_returns_facts_tasks_and_questions(ledger: Memory) -> None:
    created = answer(ledger, envelope(create_body(MANDATORY), "msg-create-1"))
    result = created["body"]["result"]
    assert [m["status"] for m in result["memories"]] == ["proposed", "proposed"]
    checkpoint_id = result["checkpoint_id"]

    before = answer(ledger, envelope(restore_body(UNKNOWNS, checkpoint_id), "msg-restore-1"))
    brief = before["body"]["result"]
    assert brief["facts"] == []  # still awaiting the person's review: not yet to be relied on
    assert {(u["kind"], u["text"]) for u in brief["unknowns"]} == {
        ("fact-awaiting-review", "Alice travels to Lisbon in March"),
        ("fact-awaiting-review", "Alice prefers window seats"),
        ("unresolved-question", "does Alice need travel insurance?"),
        ("redacted-field", "participant_id"),
        ("redacted-field", "stable_facts[2]"),
    }

    for item in result["memories"]:
        ledger.approve(item["memory_id"])
    after = answer(ledger, envelope(restore_body(UNKNOWNS, checkpoint_id), "msg-restore-2"))
    brief = after["body"]["result"]
    assert [f["text"] for f in brief["facts"]] == [
        "Alice travels to Lisbon in March",
        "Alice prefers window seats",
    ]
    assert brief["summary"] == "Alice is planning a trip to Lisbon in March."
    assert brief["open_tasks"] == ["book the airport transfer"]
    assert {u["text"] for u in brief["unknowns"] if u["kind"] == "unresolved-question"} == {
        "does Alice need travel insurance?"
    }
    assert brief["memories"] == []  # the facts are not repeated as extra memories
    ledger_is_sound(ledger)


def test_restore_brief_reports_what_became_of_the_facts_in_the_ledger(ledger: Memory) -> None:
    created = answer(ledger, envelope(create_body(MANDATORY), "msg-create-1"))
    result = created["body"]["result"]
    first, second = (m["memory_id"] for m in result["memories"])
    ledger.approve(first)
    ledger.approve(second)
    newer = ledger.edit(second, "Alice prefers aisle seats")  # the person's own edit: active
    ledger.approve(ledger.remember("I am allergic to pollen", topic="health").id)
    ledger.remember("My passport expires in 2031")
    brief = answer(
        ledger,
        envelope(
            restore_body([*UNKNOWNS, "no-sensitive-data-expansion"], result["checkpoint_id"]),
            "msg-restore-1",
        ),
    )["body"]["result"]
    assert [f["memory_id"] for f in brief["facts"]] == [first]
    superseded = [u for u in brief["unknowns"] if u["kind"] == "fact-superseded"]
    assert [(u["memory_id"], u["detail"]) for u in superseded] == [
        (second, f"superseded by {newer.id}")
    ]
    assert [m["content"] for m in brief["memories"]] == [
        "My passport expires in 2031",
        "Alice prefers aisle seats",
    ]
    assert brief["withheld_sensitive"] == 1


def test_redacted_fields_are_in_no_file_of_the_store(ledger: Memory) -> None:
    created = answer(ledger, envelope(create_body(UNKNOWNS), "msg-create-1"))
    checkpoint_id = created["body"]["result"]["checkpoint_id"]
    for item in created["body"]["result"]["memories"]:
        ledger.approve(item["memory_id"])
    answer(ledger, envelope(restore_body(UNKNOWNS, checkpoint_id), "msg-restore-1"))
    ledger.store.compact()
    # Not the bare "4711": four hex digits turn up by chance in hashes and ids.
    needles = [SECRET_EMAIL, SECRET_FACT, "PIN is 4711", json.dumps(SECRET_FACT)[1:-1]]
    for path, data in files_under(ledger):
        for needle in needles:
            assert needle.encode() not in data, (needle, path)
    # …while what was not redacted is there, so the scan looks where it should.
    assert any(b"Alice prefers window seats" in data for _, data in files_under(ledger))


def test_a_fact_the_policy_does_not_store_leaves_no_text_in_the_checkpoint(
    ledger: Memory,
) -> None:
    body = create_body(MANDATORY)
    body["parameters"]["stable_facts"][1] = "the vault password is hunter2-canary"
    created = answer(ledger, envelope(body, "msg-create-1"))
    statuses = [m["status"] for m in created["body"]["result"]["memories"]]
    assert statuses == ["proposed", "no_store"]
    ledger.store.compact()
    for path, data in files_under(ledger):
        assert b"hunter2-canary" not in data, path


def test_resent_message_gets_the_first_answer_and_writes_nothing(
    ledger: Memory,
) -> None:
    raw = envelope(create_body(MANDATORY), "msg-create-1")
    first = ledger.handle_checkpoint(raw)
    tip, stored, count = ledger.store.tip(CALLER), replies(ledger), len(ledger.memories())
    assert ledger.handle_checkpoint(raw) == first
    assert (ledger.store.tip(CALLER), replies(ledger), len(ledger.memories())) == (
        tip,
        stored,
        count,
    )
    ledger.close()
    with open_memory(reopen(ledger.store)) as again:  # another process: the reply is kept
        assert again.handle_checkpoint(raw) == first
        assert again.store.tip(CALLER) == tip


def test_reused_message_id_for_another_envelope_is_refused_without_writing(
    ledger: Memory,
) -> None:
    ledger.handle_checkpoint(envelope(create_body(MANDATORY), "msg-create-1"))
    tip = ledger.store.tip(CALLER)
    other = create_body(MANDATORY)
    other["parameters"]["summary"] = "Something else entirely."
    refused = answer(ledger, envelope(other, "msg-create-1"))
    assert refused["body"]["code"] == "message-id-conflict"
    assert ledger.store.tip(CALLER) == tip


def test_the_envelope_principal_must_be_the_caller(ledger: Memory) -> None:
    raw = envelope(create_body(MANDATORY), "msg-create-1")
    refused = answer(ledger, raw, caller="human:bob")
    assert refused["body"]["code"] == "principal-mismatch"
    assert ledger.store.owners() == []
    assert replies(ledger) == 0


def test_an_agent_keeps_checkpoints_in_the_ledger_of_the_person_it_names(ledger: Memory) -> None:
    agent = "agent:assistant-7"
    request = base(create_body(MANDATORY), "msg-agent-1")
    request["trust"]["principal"] = agent
    raw = json.dumps(seal(request)).encode()
    # (Without ``owner`` an agent relayed through a person's facade acts for that person:
    # docs/api.md, "Access".)
    created = answer(ledger, raw, caller=agent, owner=CALLER)
    facts = [ledger.get(m["memory_id"]) for m in created["body"]["result"]["memories"]]
    assert {(m.owner, m.actor, m.status) for m in facts} == {(CALLER, agent, "proposed")}
    checkpoint_id = created["body"]["result"]["checkpoint_id"]
    restore = base(restore_body(MANDATORY, checkpoint_id), "msg-agent-2")
    restore["trust"]["principal"] = agent
    brief = answer(ledger, json.dumps(seal(restore)).encode(), caller=agent, owner=CALLER)
    assert brief["body"]["result"]["checkpoint_id"] == checkpoint_id
    # The same agent asking about another person's ledger finds nothing there.
    restore["message_id"] = "msg-agent-3"
    other = answer(ledger, json.dumps(seal(restore)).encode(), caller=agent, owner="human:bob")
    assert other["body"]["code"] == "checkpoint-not-found"


def test_the_checkpoint_is_in_the_ledger_but_never_a_memory(ledger: Memory) -> None:
    created = answer(ledger, envelope(create_body(MANDATORY), "msg-create-1"))
    checkpoint_id = created["body"]["result"]["checkpoint_id"]
    events = [(r.decode() or None) for r in ledger.log()]
    kinds = [e.event for e in events if e is not None]
    assert kinds == ["propose", "propose", "checkpoint"]
    assert events[-1] is not None
    assert events[-1].memory == checkpoint_id
    assert len(ledger.memories()) == 2
    for item in created["body"]["result"]["memories"]:
        ledger.approve(item["memory_id"])
    assert ledger.recall("book the airport transfer") == []
    assert checkpoint_id not in {m.id for m in ledger.memories()}
    ledger_is_sound(ledger)


def test_a_fact_the_facade_refuses_refuses_the_request_and_writes_no_memory(
    ledger: Memory,
) -> None:
    body = create_body(MANDATORY)
    body["parameters"]["stable_facts"][1] = "x" * 2001
    refused = answer(ledger, envelope(body, "msg-create-1"))
    assert refused["body"]["code"] == "schema-violation"
    assert refused["body"]["details"]["errors"][0]["path"] == "/body/parameters/stable_facts/1"
    assert ledger.store.tip(CALLER).length == 0


def test_a_failing_write_leaves_the_ledger_exactly_as_it_was(
    ledger: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.remember("I like rain")
    tip = ledger.store.tip(CALLER)

    def broken(*_: Any, **__: Any) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(service_checkpoints, "checkpoint_event", broken)
    with pytest.raises(StorageError):
        ledger.handle_checkpoint(envelope(create_body(MANDATORY), "msg-create-1"))
    assert ledger.store.tip(CALLER) == tip
    assert len(ledger.memories()) == 1
    assert replies(ledger) == 0
    monkeypatch.undo()
    created = answer(ledger, envelope(create_body(MANDATORY), "msg-create-1"))
    assert created["profile"] == RESPONSE_PROFILE


# -- erasure reaches the copies a checkpoint made ------------------------------------------

CANARY_FACT = "Alice hides the spare key under the zqxcanary flowerpot"


def canary_create() -> dict[str, Any]:
    body = create_body(UNKNOWNS)
    body["parameters"]["stable_facts"][1] = CANARY_FACT
    return body


def test_redacting_a_fact_erases_its_copies_in_checkpoint_and_replies(any_memory: Memory) -> None:
    created = answer(any_memory, envelope(canary_create(), "msg-create-1"))
    result = created["body"]["result"]
    first, canary = (m["memory_id"] for m in result["memories"])
    any_memory.approve(first)
    any_memory.approve(canary)
    restore = envelope(restore_body(UNKNOWNS, result["checkpoint_id"]), "msg-restore-1")
    before = any_memory.handle_checkpoint(restore)
    assert CANARY_FACT.encode() in before

    any_memory.redact(canary, reason="asked to erase")

    again = any_memory.handle_checkpoint(
        restore
    )  # its first answer quoted the fact: answered afresh
    assert_sealed_and_valid(again)
    assert b"zqxcanary" not in again
    withdrawn = [
        u for u in json.loads(again)["body"]["result"]["unknowns"] if u["kind"] == "fact-withdrawn"
    ]
    assert [(u["memory_id"], u["text"]) for u in withdrawn] == [(canary, "[redacted]")]
    # The create answer quoted no fact: a resend still gets the very first bytes.
    assert (
        any_memory.handle_checkpoint(envelope(canary_create(), "msg-create-1"))
        == json.dumps(created, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    )
    assert all(
        "zqxcanary" not in row.entry.content and "zqxcanary" not in json.dumps(row.texts)
        for row in any_memory.log()
    )
    ledger_is_sound(any_memory)


def test_a_redacted_fact_is_in_no_file_of_the_store(ledger: Memory) -> None:
    created = answer(ledger, envelope(canary_create(), "msg-create-1"))
    result = created["body"]["result"]
    for item in result["memories"]:
        ledger.approve(item["memory_id"])
    answer(ledger, envelope(restore_body(UNKNOWNS, result["checkpoint_id"]), "msg-restore-1"))
    ledger.redact(result["memories"][1]["memory_id"], reason="asked to erase")
    for path, data in files_under(ledger):
        assert b"zqxcanary" not in data, path
    ledger_is_sound(ledger)
