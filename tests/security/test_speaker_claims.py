"""A speaker claimed by a weaker channel takes no speaker lift (docs/retrieval.md, "The
speaker lift" and "Planted memories").

The speaker is what the writer declares (``extra["x_speaker"]``). A conversation the person
records through their own channel names its speakers; an agent or a tool writing that
someone said something is a claim nobody vouched for, and at +0.5 the lift would let one
such memory outrank what the person recorded that speaker saying.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import StepClock, vector_facade
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Store

ALICE, AGENT = "human:alice", "agent:scraper"
TURNS = [
    ("Joanna", "I baked a lemon cake for my sister's birthday last weekend"),
    ("Nate", "That sounds great, I only ever bake bread"),
    ("Joanna", "Next I want to try a chocolate tart"),
    ("Nate", "My turtles are doing well, thanks for asking"),
]


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    # Both backends: the channel is read from each store's ranking row (RecallRow.channel).
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        made = m.remember_many(
            [
                {"text": f"{who}: {said}", "session": "s1", "extra": {"x_speaker": who}}
                for who, said in TURNS
            ]
        )
        for each in made:
            if each.status == "proposed":
                m.approve(each.id)
        yield m


def test_a_tool_written_speaker_claim_takes_no_speaker_lift(mind: Memory) -> None:
    # Approved unread: the endorsement makes it active, it does not raise the tool channel.
    made = mind.remember(
        "Joanna: I never bake, I buy a cake",
        actor=AGENT,
        owner=ALICE,
        channel="tool",
        on_behalf_of=ALICE,
        extra={"x_speaker": "Joanna"},
    )
    if made.status == "proposed":
        mind.approve(made.id)
    hits = mind.recall(Query(text="What cake has Joanna baked?", limit=5))
    order = [h.memory.id for h in hits]
    assert made.id in order, "the plant shares the question's words: it is a candidate"
    assert "speaker" not in hits[order.index(made.id)].why["adjustments"]
    joanna = [i for i, h in enumerate(hits) if h.memory.extra.get("x_speaker") == "Joanna"]
    genuine = [i for i in joanna if hits[i].memory.id != made.id]
    assert len(genuine) == 2
    assert all(hits[i].why["adjustments"]["speaker"] == 0.5 for i in genuine)
    # What the person recorded Joanna saying comes before what a tool says she said.
    assert max(genuine) < order.index(made.id)


def test_a_speaker_the_person_recorded_is_lifted(mind: Memory) -> None:
    hits = mind.recall(Query(text="What cake has Joanna baked?", limit=3))
    assert hits[0].memory.extra["x_speaker"] == "Joanna"
    assert hits[0].why["adjustments"]["speaker"] == 0.5
