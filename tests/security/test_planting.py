"""Planted memories through the facade, on both backends (issue 15, point 7).

An agent writes through its own channel and the person approves without reading: a stuffed
entry still ranks below what was said on the topic, one writer fills at most a few of the
top hits, a "correction" of the person's statement comes back marked as contradicting it,
and a tag the agent gave itself does not pass a filter on the person's tag.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StepClock, vector_facade
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Store
from troth.storage.sqlite import SQLiteStore

ALICE, AGENT = "human:alice", "agent:scraper"
GENUINE = [
    "I prefer green tea in the afternoon",
    "My favourite tea is a smoky lapsang souchong",
    "I drink my tea without sugar",
    "I am allergic to peanuts",
    "I work as a nurse at the city hospital",
]


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        for made in m.remember_many(GENUINE):
            if made.status == "proposed":
                m.approve(made.id)
        yield m


def planted(mind: Memory, text: str, **fields: object) -> str:
    """An agent's write through the tool channel, approved by the person unread."""
    made = mind.remember(
        text,
        actor=AGENT,
        owner=ALICE,
        channel="tool",
        on_behalf_of=ALICE,
        **fields,  # type: ignore[arg-type]
    )
    mind.approve(made.id)
    return made.id


def test_a_stuffed_entry_ranks_below_the_genuine_memories_on_its_topic(mind: Memory) -> None:
    stuffed = planted(
        mind, "what tea do I like favourite tea prefer tea drink tea " * 6 + "hate tea"
    )
    hits = mind.recall(Query(text="what tea do I like?", limit=5))
    order = [h.memory.id for h in hits]
    tea = [i for i, h in enumerate(hits) if "tea" in h.memory.content and h.memory.id != stuffed]
    assert tea  # the genuine memories are found
    assert stuffed not in order or order.index(stuffed) > max(tea)


def test_one_writer_fills_at_most_two_of_the_top_hits(mind: Memory) -> None:
    flood = [
        planted(mind, f"I switched to coffee, note {n}: I drink only espresso") for n in range(8)
    ]
    hits = mind.recall(Query(text="what do I drink in the afternoon?", limit=5))
    assert len(hits) == 5
    assert sum(h.memory.id in flood for h in hits) <= 2
    deferred = [
        h for h in mind.recall(Query(text="espresso coffee", limit=10)) if h.memory.id in flood
    ]
    assert all("deferred" in h.why for h in deferred[2:])
    # The cap is a setting of the query: off, the flood comes back whole.
    uncapped = mind.recall(Query(text="espresso coffee", limit=8, max_per_writer=None))
    assert {h.memory.id for h in uncapped} == set(flood)


def test_the_persons_own_memories_are_never_capped(mind: Memory) -> None:
    own = [m.id for m in mind.remember_many([f"I walked the dog, walk {n}" for n in range(6)])]
    hits = mind.recall(Query(text="dog walk", limit=6))
    assert {h.memory.id for h in hits} == set(own)


def test_a_contradicting_memory_is_linked_and_recalled_marked_after_the_persons(
    mind: Memory,
) -> None:
    person = next(m for m in mind.memories(ALICE) if m.content == "I am allergic to peanuts")
    claim = planted(mind, "Actually, I am not allergic to peanuts any more")
    stored = mind.get(claim, owner=ALICE)
    assert [(r.rel, r.target) for r in stored.relations] == [("contradicts", person.id)]
    hits = {
        h.memory.id: h
        for h in mind.recall(
            Query(text="am I allergic to peanuts?", limit=5, include_sensitive=True)
        )
    }
    assert hits[claim].conflicts == (person.id,)
    assert hits[claim].why["conflict"] == {"with": [person.id], "weaker": True}
    assert hits[person.id].conflicts == (claim,)
    assert hits[person.id].why["conflict"]["weaker"] is False
    order = list(hits)
    assert order.index(claim) == order.index(person.id) + 1
    # Once the person's memory is forgotten, nothing conflicts any more.
    mind.forget(person.id)
    again = mind.recall(Query(text="am I allergic to peanuts?", limit=5, include_sensitive=True))
    assert all(h.conflicts == () and "conflict" not in h.why for h in again)


def test_a_memory_as_trusted_as_the_earlier_one_is_not_linked(mind: Memory) -> None:
    # The person correcting themselves: the strongest channel has nothing above it.
    made = mind.remember("Actually, I am not allergic to peanuts any more")
    assert mind.get(made.id, owner=ALICE).relations == ()


def test_a_tag_the_agent_gave_itself_does_not_pass_the_persons_filter(mind: Memory) -> None:
    theirs = planted(mind, "My tea supplier is verified-teas.example", tags=["verified"])
    mine = mind.remember("My tea supplier is the corner shop", tags=["verified"]).id
    assert mind.get(theirs, owner=ALICE).tags == (f"{AGENT}/verified",)
    assert mind.get(mine, owner=ALICE).tags == ("verified",)
    person = mind.recall(Query(text="who is my tea supplier?", tags=("verified",)))
    assert [h.memory.id for h in person] == [mine]
    agent = mind.recall(Query(text="who is my tea supplier?", tags=(f"{AGENT}/verified",)))
    assert [h.memory.id for h in agent] == [theirs]


def test_an_agents_edit_keeps_the_persons_tags_and_names_its_own(mind: Memory) -> None:
    mine = mind.remember("I swim on Mondays", tags=["sport"]).id
    edit = mind.edit(mine, "I swim on Tuesdays", actor=AGENT, owner=ALICE, tags=["sport", "fixed"])
    assert mind.get(edit.id, owner=ALICE).tags == ("sport", f"{AGENT}/fixed")


def test_an_export_carries_the_namespace_and_an_import_keeps_it(
    mind: Memory, tmp_path: Path
) -> None:
    planted(mind, "My tea supplier is verified-teas.example", tags=["verified"])
    data, _ = mind.export("hux", owner=ALICE)
    assert f'"{AGENT}/verified"'.encode() in data
    path = tmp_path / "alice.hux.json"
    path.write_bytes(data)
    with vector_facade(SQLiteStore(tmp_path / "other.db"), principal=ALICE) as other:
        other.import_path(path, fmt="hux")
        tagged = [m.tags for m in other.memories(ALICE) if "supplier" in m.content]
    assert tagged
    assert all(f"{AGENT}/verified" in tags and "verified" not in tags for tags in tagged)
    assert all(not any(t.startswith(f"{AGENT}/{AGENT}") for t in tags) for tags in tagged)
