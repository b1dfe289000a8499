"""The per-writer cap counts who wrote a memory's text, through the owner's edits too.

An owner's edit of an agent's memory is a new memory written by the owner, but its text
derives from the agent's (``core.provenance``: its origin names the agent). The cap of
recall (``Query.max_per_writer``) counts that writer — ``MemoryRecord.writer`` — so an
edit does not lift one of a flood of planted memories out of the cap. Both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import nullcontext

import pytest

from tests.conftest import StepClock, vector_facade
from tests.storage.test_recall_column import WRITER, update_statement
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Store

ALICE, AGENT = "human:alice", "agent:scraper"


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        yield m


def planted(mind: Memory, text: str) -> str:
    """An agent's write through the tool channel, approved by the person unread."""
    made = mind.remember(text, actor=AGENT, owner=ALICE, channel="tool", on_behalf_of=ALICE)
    mind.approve(made.id)
    return made.id


def test_an_owners_edit_of_an_agents_memory_is_capped_as_the_agents(mind: Memory) -> None:
    flood = [
        planted(mind, f"I switched to coffee, note {n}: I drink only espresso") for n in range(6)
    ]
    edited = mind.edit(flood[0], "I switched to coffee, note zero: I drink only espresso")
    assert edited.memory.actor == ALICE  # the owner wrote the edit's entry
    assert edited.memory.writer == AGENT  # and the text is still the agent's
    flood[0] = edited.memory.id
    hits = mind.recall(Query(text="espresso coffee", limit=10))
    ours = [h for h in hits if h.memory.id in flood]
    assert {h.memory.id for h in ours} == set(flood)
    # Two of the agent's six come first; the other four, the edited one among them if it
    # ranks past the second, are deferred — none escapes as the owner's own.
    assert sum("deferred" not in h.why for h in ours) == 2
    assert {h.memory.writer for h in ours} == {AGENT}


def test_the_owners_edit_comes_first_only_as_one_of_the_agents_two(mind: Memory) -> None:
    flood = [
        planted(mind, f"I switched to coffee, note {n}: I drink only espresso") for n in range(4)
    ]
    # The edit makes this memory the best match; it still takes one of the agent's two
    # places rather than a third.
    edited = mind.edit(flood[3], "espresso coffee espresso: I switched to coffee").memory.id
    flood[3] = edited
    hits = mind.recall(Query(text="espresso coffee", limit=10))
    kept = [h.memory.id for h in hits if h.memory.id in flood and "deferred" not in h.why]
    assert len(kept) == 2
    deferred = [h.memory.id for h in hits if "deferred" in h.why]
    assert len(deferred) == 2
    assert set(kept) | set(deferred) == set(flood)


def test_an_older_databases_rows_get_the_writer_from_their_migration(
    mind: Memory, any_store: Store, backend: str
) -> None:
    flood = [
        planted(mind, f"I switched to coffee, note {n}: I drink only espresso") for n in range(4)
    ]
    flood[0] = mind.edit(flood[0], "I switched to coffee, note zero: espresso").memory.id
    db = any_store._connection()
    # Each row's column as the older schema left it: without its last value, the writer.
    strip = (
        "UPDATE memories SET recall = json_remove(recall, '$[#-1]')"
        if backend == "sqlite"
        else "UPDATE memories SET recall = (recall::jsonb - (-1))::text"
    )
    with db.transaction() if backend == "postgres" else nullcontext():
        db.execute(strip)
        assert {len(json.loads(r[0])) for r in db.execute("SELECT recall FROM memories")} == {20}
        db.execute(update_statement(backend, WRITER))
    rows = any_store.recall_rows(ALICE, flood)
    assert {rows[m].writer for m in flood} == {AGENT}
    assert rows[flood[0]].actor == ALICE
    hits = mind.recall(Query(text="espresso coffee", limit=10))
    assert sum("deferred" not in h.why for h in hits if h.memory.id in flood) == 2
