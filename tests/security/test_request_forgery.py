"""A destructive request cannot be planted: approving what reads as a plain memory never
forgets or redacts another one, whoever put the request marker on it (service/requests.py)."""

from __future__ import annotations

from tests.conftest import StepClock, facade
from troth.storage.base import Store

ALICE, AGENT = "human:alice", "agent:assistant"


def test_a_marker_behind_a_harmless_text_is_approved_as_a_plain_memory(
    any_store: Store,
) -> None:
    alice = facade(any_store, clock=StepClock())
    kept = alice.remember("Alice likes green tea in the afternoon")
    planted = alice.remember(
        "Alice prefers window seats on trains",
        actor=AGENT,
        owner=ALICE,
        channel="tool",
        extra={"x_request": {"act": "forget", "target": kept.id}},
    )
    assert planted.status == "proposed"
    approved = alice.approve(planted.id)
    assert approved.status == "active"
    assert approved.retrievable
    assert alice.get(kept.id).status == "active"
    assert alice.verify(ALICE)[0].ok


def test_a_genuine_request_still_says_what_approving_it_does(any_store: Store) -> None:
    alice = facade(any_store, clock=StepClock())
    kept = alice.remember("Alice likes green tea in the afternoon")
    request = alice.forget(kept.id, actor=AGENT, owner=ALICE, reason="she stopped")
    assert request.content.startswith(f"{AGENT} asks to forget memory {kept.id}: ")
    alice.approve(request.id)
    assert alice.get(kept.id).status == "forgotten"
