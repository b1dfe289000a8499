"""Trust thresholds, who may approve, retention sweeps, and personaxis tombstones/redaction."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import StepClock
from troth.core import chain
from troth.core.errors import NotFoundError, PolicyDeniedError
from troth.formats import personaxis
from troth.service.memory import Memory

ALICE = "human:alice"


def by(memory: Memory, channel: str) -> str:
    actor = ALICE if channel in ("user", "internal") else "agent:bot"
    result = memory.remember(
        f"a memory through {channel}", actor=actor, owner=ALICE, channel=channel
    )
    if result.status == "proposed":
        memory.approve(result.id)
    return result.id


@pytest.mark.parametrize(
    ("action", "channels", "allowed", "trust"),
    [
        ("delete", ["user"], True, 3),
        ("delete", ["user", "internal"], False, 2),
        ("credential_use", ["internal"], False, 2),
        ("self_edit", ["user"], True, 3),
        ("external_api", ["internal"], True, 2),
        ("external_api", ["user", "tool"], False, 1),
        ("file_write", ["synthesis"], False, 1),
        ("file_write", ["tool"], False, 1),
        ("file_write", ["user", "internal"], True, 2),
    ],
)
def test_may_justify_follows_the_personaxis_thresholds(
    memory: Memory, action: str, channels: list[str], allowed: bool, trust: int
) -> None:
    ids = [by(memory, c) for c in channels]
    answer = memory.may_justify(action, ids)
    assert (answer.allowed, answer.trust) == (allowed, trust)
    assert answer.required == {"delete": 3, "credential_use": 3, "self_edit": 3}.get(action, 2)
    assert answer.reason


def test_may_justify_needs_active_memories_and_at_least_one(memory: Memory) -> None:
    proposed = memory.remember("x", actor="agent:bot", owner=ALICE, channel="tool").id
    assert not memory.may_justify("file_write", []).allowed
    answer = memory.may_justify("file_write", [proposed])
    assert not answer.allowed
    assert "not active" in answer.reason


def test_nobody_approves_their_own_proposal_unless_they_are_the_human_owner(memory: Memory) -> None:
    # Another person reaches no one's ledger but their own (docs/api.md, "Access").
    with pytest.raises(PolicyDeniedError, match="acts on human:bob's ledger only"):
        memory.remember("Alice likes jazz", actor="human:bob", owner=ALICE, channel="internal")
    by_agent = memory.remember(
        "Alice likes jazz", actor="agent:bot", owner=ALICE, channel="synthesis"
    )
    own = memory.remember("my blood pressure is fine", topic="health")
    assert own.status == by_agent.status == "proposed"
    tip = memory.store.tip(ALICE)
    with pytest.raises(PolicyDeniedError, match="only a person"):
        memory.approve(by_agent.id, actor="agent:bot")
    with pytest.raises(NotFoundError, match="no memory"):
        memory.reject(by_agent.id, actor="human:bob")
    assert memory.store.tip(ALICE) == tip
    assert memory.approve(own.id).status == "active"  # the human owner, her own proposal
    assert memory.approve(by_agent.id).status == "active"


# -- retention ----------------------------------------------------------------------------


def test_sweep_enforces_every_retention_rule(memory: Memory, clock: StepClock) -> None:
    start = clock.now
    never = memory.remember("kept for ever").id
    until = memory.remember("until July 10", ttl="expires_at:2026-07-10T00:00:00Z").id
    decay = memory.remember("decays after 3 days", ttl="decay:3").id
    pcp = memory.remember("PCP expires", expires="2026-07-05T00:00:00Z").id
    proposed = memory.remember(
        "proposed, decaying", actor="agent:bot", owner=ALICE, channel="tool", ttl="decay:1"
    ).id

    def statuses() -> dict[str, str]:
        return {i: memory.get(i).status for i in (never, until, decay, pcp, proposed)}

    assert memory.sweep(now=start + timedelta(hours=1)) == []
    swept = memory.sweep(now=start + timedelta(days=2))
    assert {m.id for m in swept} == {pcp, proposed}
    swept = memory.sweep(now=start + timedelta(days=4))
    assert {m.id for m in swept} == {decay}
    swept = memory.sweep(now=datetime(2026, 7, 10, tzinfo=UTC))
    assert {m.id for m in swept} == {until}
    assert statuses() == {
        never: "active",
        until: "expired",
        decay: "expired",
        pcp: "expired",
        proposed: "expired",
    }
    assert memory.sweep(now=datetime(2030, 1, 1, tzinfo=UTC)) == []
    for memory_id in (until, decay, pcp, proposed):
        expired = memory.get(memory_id)
        assert (expired.content, expired.redacted, expired.retrievable) == ("", True, False)
        assert [a.action for a in expired.audit][-2:] == ["expired", "forgotten"]
    assert all(r.ok for r in memory.verify())


def test_decay_counts_from_the_last_transition(memory: Memory, clock: StepClock) -> None:
    proposed = memory.remember("x", actor="agent:bot", owner=ALICE, channel="tool", ttl="decay:2")
    clock.now += timedelta(days=1, hours=12)
    memory.approve(proposed.id)
    assert memory.sweep(now=clock.now + timedelta(days=1)) == []
    assert [m.id for m in memory.sweep(now=clock.now + timedelta(days=3))] == [proposed.id]


def test_sweep_of_one_owner_leaves_the_others(memory: Memory, clock: StepClock) -> None:
    mine = memory.remember("mine", ttl="decay:1").id
    bobs = memory.remember("bob's", ttl="decay:1", actor="human:bob").id
    swept = memory.sweep(now=clock.now + timedelta(days=2), owner="human:bob")
    assert [m.id for m in swept] == [bobs]
    assert memory.get(mine).status == "active"


# -- personaxis rules for tombstones and redaction -----------------------------------------


def exported(memory: Memory) -> list[chain.Entry]:
    # What an export would write, made without one: an export appends its audit event.
    return personaxis.decode(personaxis.encode([r.entry for r in memory.log()]))


def test_forget_writes_a_personaxis_tombstone_and_keeps_the_original_line(memory: Memory) -> None:
    kept = memory.remember("I like tea")
    gone = memory.remember("I like coffee")
    before = exported(memory)
    memory.forget(gone.id, reason="changed my mind")
    after = exported(memory)
    assert after[: len(before)] == before  # the original line is untouched
    tombstone = after[-1]
    assert tombstone.content == "[deleted by user request: changed my mind]"
    assert tombstone.source == "user"
    assert tombstone.tags[:2] == ("tombstone", "target:" + gone.memory.entry_hash)  # type: ignore[union-attr]
    live = [e.content for e in chain.live_entries(after)]
    assert "I like coffee" not in live
    assert "I like tea" in live
    assert memory.get(kept.id).status == "active"
    assert chain.verify(after).ok


def test_redaction_rewrites_only_content_and_appends_the_audit_tombstone(memory: Memory) -> None:
    target = memory.remember("erase me please")
    memory.remember("after it")
    before = exported(memory)
    memory.redact(target.id, reason="user erasure request")
    after = exported(memory)
    index = next(i for i, e in enumerate(before) if e.content == "erase me please")
    redacted = after[index]
    assert redacted.content == "[redacted]"
    assert redacted.redacted
    assert (redacted.hash, redacted.content_hash) == (
        before[index].hash,
        before[index].content_hash,
    )
    line = memory.export("personaxis")[0].decode().splitlines()[index]
    assert line.endswith(',"redacted":true}')  # appended as the last key, as the reference does
    assert list(json.loads(line))[-1] == "redacted"
    assert after[len(before)].content == "[deleted by user request: redacted: user erasure request]"
    assert after[len(before)].target == before[index].hash
    assert [e for i, e in enumerate(after) if i != index][: len(before) - 1] == [
        e for i, e in enumerate(before) if i != index
    ]
    assert chain.verify(after).ok


def test_an_edit_before_redaction_keeps_the_new_memory(memory: Memory) -> None:
    old = memory.remember("version one")
    new = memory.edit(old.id, "version two")
    memory.redact(old.id, reason="erase")
    assert memory.get(new.id).content == "version two"
    assert [h.memory.id for h in memory.recall("version")] == [new.id]


def test_a_proposed_edit_supersedes_only_when_the_owner_approves_it(memory: Memory) -> None:
    original = memory.remember("I live in Lyon")
    tip = memory.store.tip(ALICE)
    pending = memory.edit(original.id, "Alice lives in Paris", actor="agent:bot")
    assert pending.status == "proposed"
    assert memory.get(original.id).status == "active"  # an agent cannot retire it by proposing
    assert [h.memory.id for h in memory.recall("Lyon")] == [original.id]
    rejected = memory.edit(original.id, "Alice lives in Rome", actor="agent:bot")
    memory.reject(rejected.id)
    assert memory.get(original.id).status == "active"
    memory.approve(pending.id)
    old = memory.get(original.id)
    assert (old.status, old.superseded_by, old.content) == ("forgotten", pending.id, "")
    assert old.audit[-1].action == "superseded"
    assert [h.memory.id for h in memory.recall("Paris Lyon")] == [pending.id]
    assert memory.store.tip(ALICE).length == tip.length + 4  # two edits, a reject, an approve
    assert all(r.ok for r in memory.verify())


def test_admitting_a_memory_asks_the_policy_once_and_refuses_what_it_would_not_store(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    policy_class = type(memory.policy)
    decide = policy_class.decide

    def counting(self: object, **kwargs: object) -> object:
        asked.append(str(kwargs["content"]))
        return decide(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(policy_class, "decide", counting)
    memory.admit("the kettle is copper", owner=memory.principal, status="proposed")
    assert asked == ["the kettle is copper"]
    before = memory.store.tip(memory.principal)
    with pytest.raises(PolicyDeniedError, match="does not store"):
        memory.admit("my password is hunter2", owner=memory.principal)
    assert memory.store.tip(memory.principal) == before
