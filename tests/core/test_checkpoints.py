"""The pure checkpoint functions: drift score and restore brief."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from troth.core.checkpoints import (
    CheckpointFact,
    CheckpointRecord,
    MemoryView,
    SessionDigest,
    audit_drift,
    compose_restore_brief,
    fact_relation,
    summary_distance,
)

_WORDS = ["alice", "bob", "likes", "tea", "coffee", "lives", "lisbon", "porto", "owns", "bicycle"]
_WORDS += ["works", "remotely", "speaks", "portuguese", "runs", "marathons", "reads", "poetry"]


def _record(facts: list[str], summary: str = "A session about travel plans.") -> CheckpointRecord:
    return CheckpointRecord(
        checkpoint_id="ckpt-1",
        owner="human:alice",
        created_at=datetime(2026, 11, 28, tzinfo=UTC),
        source_message_id="m-1",
        session_id="s-1",
        checkpoint_label="label",
        summary=summary,
        stable_facts=tuple(CheckpointFact(f, f"mem-{i}") for i, f in enumerate(facts)),
    )


def test_contradiction_is_found_by_naive_negation() -> None:
    assert fact_relation("Alice likes tea", "Alice does not like tea") == "contradicts"
    assert fact_relation("Alice is vegetarian", "Alice isn't vegetarian") == "contradicts"
    assert fact_relation("The hotel is booked", "the hotel is booked.") == "same"
    assert fact_relation("Alice likes tea", "Alice likes coffee") == "unrelated"
    assert fact_relation("it is", "it is not") == "unrelated"  # too short to judge


def test_unchanged_digest_scores_zero() -> None:
    record = _record(["Alice likes tea", "Alice lives in Lisbon"])
    digest = SessionDigest(
        summary=record.summary or "", facts=("Alice likes tea", "Alice lives in Lisbon")
    )
    report = audit_drift(record, digest)
    assert report.score == 0
    assert [f.finding for f in report.findings] == ["kept", "kept"]


def test_self_contradictory_checkpoint_unchanged_still_scores_zero() -> None:
    record = _record(["Alice likes tea", "Alice does not like tea"])
    digest = SessionDigest(record.summary or "", tuple(f.text for f in record.stable_facts))
    assert audit_drift(record, digest).score == 0


def test_score_stays_in_unit_interval_for_total_drift() -> None:
    record = _record(["Alice likes tea"], summary="tea")
    report = audit_drift(record, SessionDigest("nothing alike", ("Alice does not like tea",)))
    assert report.score == 1.0


@st.composite
def _facts_and_steps(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    phrases = st.lists(st.sampled_from(_WORDS), min_size=2, max_size=5, unique=True).map(" ".join)
    facts = draw(st.lists(phrases, min_size=1, max_size=8, unique_by=lambda f: f))
    # A random order in which facts are first dropped, then contradicted: each step worsens one.
    order = draw(st.permutations(list(range(len(facts)))))
    return facts, list(order)


def _digest(facts: list[str], states: list[int], summary: str) -> SessionDigest:
    held = []
    for fact, state in zip(facts, states, strict=True):
        if state == 0:
            held.append(fact)
        elif state == 2:
            held.append("not " + fact)
    return SessionDigest(summary, tuple(held))


@given(_facts_and_steps())
def test_drift_rises_monotonically_as_more_facts_are_dropped_then_contradicted(
    case: tuple[list[str], list[int]],
) -> None:
    facts, order = case
    record = _record(facts)
    states = [0] * len(facts)
    scores = [audit_drift(record, _digest(facts, states, record.summary or "")).score]
    for target in (1, 2):
        for index in order:
            states[index] = target
            scores.append(audit_drift(record, _digest(facts, states, record.summary or "")).score)
    assert scores[0] == 0
    assert all(a < b for a, b in itertools.pairwise(scores)), scores


@given(st.text(max_size=60), st.text(max_size=60))
def test_summary_distance_is_a_bounded_symmetric_distance(a: str, b: str) -> None:
    d = summary_distance(a, b)
    assert 0 <= d <= 1
    assert d == summary_distance(b, a)
    assert summary_distance(a, a) == 0


def test_restore_brief_lists_unknowns_and_withholds_new_sensitive_memories() -> None:
    record = _record(["Alice likes tea", "Alice lives in Lisbon", "Alice owns a bicycle"])
    record = CheckpointRecord(**{**record.__dict__, "unresolved_questions": ("which train?",)})
    memories = [
        MemoryView("mem-0", "Alice likes tea"),
        MemoryView("mem-1", "Alice lives in Lisbon", status="forgotten", superseded_by="mem-9"),
        MemoryView("mem-2", "Alice owns a bicycle", status="proposed", retrievable=False),
        MemoryView("mem-9", "Alice lives in Porto"),
        MemoryView("mem-7", "Alice has asthma", sensitivity="sensitive"),
        MemoryView("mem-8", "Alice is tired", stale=True),
    ]
    brief = compose_restore_brief(
        record, memories, identify_unknowns=True, no_sensitive_expansion=True
    )
    assert [f.text for f in brief.facts] == ["Alice likes tea"]
    assert [m.memory_id for m in brief.memories] == ["mem-9"]
    assert brief.withheld_sensitive == 1
    assert brief.unknowns is not None
    assert [u.kind for u in brief.unknowns] == [
        "unresolved-question",
        "fact-superseded",
        "fact-awaiting-review",
    ]


def test_sensitive_memory_the_checkpoint_held_is_kept_without_expansion() -> None:
    record = _record(["Alice has asthma"])
    memories = [MemoryView("mem-0", "Alice has asthma", sensitivity="sensitive")]
    brief = compose_restore_brief(
        record, memories, identify_unknowns=False, no_sensitive_expansion=True
    )
    assert [f.memory_id for f in brief.facts] == ["mem-0"]
    assert brief.unknowns is None
    assert brief.withheld_sensitive == 0
