"""PostgreSQL's in-process vector copies (``postgres.copies``): searched only while current.

The copy must find what the HNSW index finds, and never serve a vector that another
process (here: another store on the same database) changed, forgot or erased since it was
loaded. The owner's vector generation, moved by migration 0013's triggers, decides.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import vector_facade
from troth.core.query import candidate_limits, lexical_terms
from troth.service.memory import Memory
from troth.storage.base import MemoryFilter, searched_in_turn
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.copies import VectorCopies
from troth.storage.vectors import VectorCache

OWNER = "human:alice"
_TEXTS = [
    f"{subject} {verb} {thing} on {day}"
    for subject in ("Alice", "Bob", "the neighbour", "my sister")
    for verb in ("painted", "repaired", "sold", "photographed")
    for thing in ("the blue bicycle", "a kettle", "the garden fence")
    for day in ("Monday", "Friday")
]
_QUESTIONS = ["who painted the fence", "a kettle on Friday", "the blue bicycle", "photographed"]
_EVERY = MemoryFilter(retrievable_only=True)


def _copying(store: PostgresStore, *, background: bool = False) -> VectorCopies:
    """Give ``store`` copies that take any owner and (unless ``background``) load in the
    search that wants them."""
    copies = VectorCopies(store._connect, background=background, copy_from=1)
    store._searches.copies = copies
    return copies


@pytest.fixture
def written(pg_url: str) -> Iterator[tuple[PostgresStore, Memory]]:
    """A store holding ``_TEXTS`` with their vectors, with the copies it opens with."""
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    memory.remember_many(_TEXTS)
    try:
        yield store, memory
    finally:
        memory.close()


@pytest.fixture
def loaded(
    written: tuple[PostgresStore, Memory],
) -> tuple[PostgresStore, Memory, VectorCopies]:
    store, memory = written
    return store, memory, _copying(store)


def _served(copies: VectorCopies, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per search the copy answered from then on."""
    served: list[int] = []
    hits = copies.hits
    monkeypatch.setattr(copies, "hits", lambda *a, **k: served.append(1) or hits(*a, **k))
    return served


def _vector(store: PostgresStore, memory: Memory, text: str, limit: int = 200) -> list[Any]:
    assert memory.embedder is not None
    embedding = memory.embedder.embed([text])[0]
    return store.vector(OWNER, embedding, limit, _EVERY)


def _from_index(store: PostgresStore, memory: Memory, text: str, limit: int = 200) -> list[Any]:
    copies = store._searches.copies
    store._searches.copies = None
    try:
        return _vector(store, memory, text, limit)
    finally:
        store._searches.copies = copies


def _same(found: list[Any], expected: list[Any]) -> None:
    """The same memories with the same cosines (float32 against pgvector's arithmetic), best
    first. Memories of equal cosine may come in either order: each search breaks such
    ties its own way, so the searches here read every memory (no tie at the cut)."""
    assert {h.memory_id: h.seq for h in found} == {h.memory_id: h.seq for h in expected}
    scores = {h.memory_id: h.score for h in expected}
    for hit in found:
        assert hit.score == pytest.approx(scores[hit.memory_id], abs=1e-5)
    assert all(a.score >= b.score - 1e-6 for a, b in itertools.pairwise(found))
    assert [h.rank for h in found] == list(range(1, len(found) + 1))


def _gen(store: PostgresStore, owner: str = OWNER) -> int:
    """The owner's vector generation as committed (0 before its first vector)."""
    row = (
        store._connection()
        .execute("SELECT gen FROM vector_generations WHERE owner = %s", (owner,))
        .fetchone()
    )
    return 0 if row is None else int(row[0])


def test_the_generation_moves_with_each_change_of_an_owners_vectors_and_only_then(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    bob = vector_facade(store, principal="human:bob")
    try:
        assert _gen(store) == 0
        memory.remember("the first memory with a vector")
        first = _gen(store)
        assert first > 0
        bob.remember("bob's own memory")
        assert _gen(store) == first  # another owner's vectors are not this owner's
        db = store._connection()
        db.execute(
            "UPDATE memories SET doc = doc, updated_at = updated_at WHERE owner = %s", (OWNER,)
        )
        assert _gen(store) == first  # a row rewritten with the same vector
        db.execute("UPDATE memories SET embedding = NULL WHERE owner = %s", (OWNER,))
        assert _gen(store) > first
        nulled = _gen(store)
        db.execute("UPDATE memories SET embedding = NULL WHERE owner = %s", (OWNER,))
        assert _gen(store) == nulled  # already without one: nothing changed
        memory.remember("a second memory")
        second = _gen(store)
        assert second > nulled
        db.execute("DELETE FROM memories WHERE owner = %s AND embedding IS NULL", (OWNER,))
        assert _gen(store) == second  # rows without a vector took none away
        db.execute("DELETE FROM memories WHERE owner = %s", (OWNER,))
        assert _gen(store) > second
        before = {owner: _gen(store, owner) for owner in (OWNER, "human:bob")}
        store.set_vector_model("another-model", 8)
        assert _gen(store, "human:bob") > before["human:bob"]
    finally:
        bob.close()
        memory.close()


def test_a_current_copy_finds_what_the_index_finds(
    loaded: tuple[PostgresStore, Memory, VectorCopies],
) -> None:
    store, memory, copies = loaded
    for question in _QUESTIONS:
        _same(_vector(store, memory, question), _from_index(store, memory, question))
    assert copies.loads == 1  # one load, then the copy served every search
    held = copies.cache.held(OWNER)
    assert held is not None
    assert held.live == len(_TEXTS)
    assert held.generation == _gen(store)


def test_both_searches_at_once_read_the_copy_and_find_what_they_find_in_turn(
    loaded: tuple[PostgresStore, Memory, VectorCopies], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory, copies = loaded
    assert memory.embedder is not None
    _vector(store, memory, "warm: loads the copy")
    served = _served(copies, monkeypatch)
    for question in _QUESTIONS:
        embedding = memory.embedder.embed([question])[0]
        terms = lexical_terms(question)
        together = store.candidates(OWNER, terms, embedding, candidate_limits(10), _EVERY)
        in_turn = searched_in_turn(store, OWNER, terms, embedding, candidate_limits(10), _EVERY)
        assert together.lexical == in_turn.lexical
        _same(together.vector, in_turn.vector)
        assert together.vector
    assert len(served) == 2 * len(_QUESTIONS)


def test_what_another_process_forgets_or_rewrites_is_never_served_from_a_copy(
    loaded: tuple[PostgresStore, Memory, VectorCopies], pg_url: str
) -> None:
    store, memory, copies = loaded
    gone = next(
        m for m in memory.memories() if m.content == "Alice painted the garden fence on Monday"
    )
    question = "Alice painted the garden fence on Monday"
    assert _vector(store, memory, question)[0].memory_id == gone.id  # the copy holds it
    other_store = PostgresStore(pg_url, vector_copies=False)
    other = vector_facade(other_store)
    try:
        other.forget(gone.id, reason="asked to")
        found = _vector(store, memory, question)
        assert gone.id not in [h.memory_id for h in found]
        _same(found, _from_index(store, memory, question))
        held = copies.cache.held(OWNER)
        assert held is not None
        assert held.generation == _gen(store)
        assert held.live == len(_TEXTS) - 1  # the forgotten memory's vector left the copy
        # A rewritten memory is found by its new words, with the cosine the index gives.
        kept = next(m for m in memory.memories() if m.content == "Bob sold a kettle on Friday")
        other.edit(kept.id, "Bob gave away the old copper kettle")
        new = "Bob gave away the old copper kettle"
        _same(_vector(store, memory, new), _from_index(store, memory, new))  # found stale
        held = copies.cache.held(OWNER)
        assert held is not None
        assert held.generation == _gen(store)  # loaded again: the next search reads it
        _same(_vector(store, memory, new), _from_index(store, memory, new))
    finally:
        other.close()


def test_this_process_drops_its_copy_as_soon_as_it_forgets(
    loaded: tuple[PostgresStore, Memory, VectorCopies],
) -> None:
    store, memory, copies = loaded
    _vector(store, memory, "warm: loads the copy")
    assert copies.cache.held(OWNER) is not None
    memory.forget(memory.memories()[0].id, reason="asked to")
    assert copies.cache.held(OWNER) is None  # before any search reads the generation


def test_inside_a_snapshot_or_a_write_the_index_is_read(
    loaded: tuple[PostgresStore, Memory, VectorCopies], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory, copies = loaded

    def refuse(*_: object) -> None:
        raise AssertionError("the copy was asked inside a transaction")

    monkeypatch.setattr(copies, "usable", refuse)
    with store.snapshot():
        assert _vector(store, memory, "the blue bicycle")
    with store.write(OWNER):
        assert _vector(store, memory, "the blue bicycle")


def test_an_owner_with_few_vectors_keeps_the_index_and_reads_no_generation(
    written: tuple[PostgresStore, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory = written
    copies = store.vector_copies
    assert copies is not None  # the default: copies, from COPY_FROM vectors
    _vector(store, memory, "the blue bicycle")
    copies.join()
    assert copies.cache.held(OWNER) is None

    served = _served(copies, monkeypatch)  # the copy's statement reads the generation
    assert _vector(store, memory, "the blue bicycle")
    assert served == []


def test_a_copy_loads_in_the_background_and_serves_once_loaded(
    written: tuple[PostgresStore, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory = written
    copies = _copying(store, background=True)
    served = _served(copies, monkeypatch)
    first = _vector(store, memory, "the blue bicycle")  # the index; a load starts
    assert served == []
    copies.join()
    _same(_vector(store, memory, "the blue bicycle"), first)
    assert served == [1]


def test_a_load_that_fails_leaves_the_index_in_use(written: tuple[PostgresStore, Memory]) -> None:
    store, memory = written

    def refused() -> psycopg.Connection[Any]:
        raise psycopg.OperationalError("connection refused")

    copies = VectorCopies(refused, background=False, copy_from=1)
    store._searches.copies = copies
    _same(_vector(store, memory, "a kettle"), _from_index(store, memory, "a kettle"))
    assert copies.cache.held(OWNER) is None


def test_a_closed_store_leaves_no_load_running_and_no_copy(
    written: tuple[PostgresStore, Memory],
) -> None:
    store, memory = written
    copies = _copying(store, background=True)
    _vector(store, memory, "the blue bicycle")  # starts a load
    store.close()
    assert copies.cache.held(OWNER) is None
    assert not [t for t in threading.enumerate() if t.name == "troth-vector-copy"]


def test_a_copy_of_another_models_vectors_is_loaded_again(
    loaded: tuple[PostgresStore, Memory, VectorCopies],
) -> None:
    store, memory, copies = loaded
    _vector(store, memory, "warm: loads the copy")
    store.set_vector_model("eight-dimensions", 8)
    db = store._connection()
    db.execute("UPDATE memories SET embedding = '[1,0,0,0,0,0,0,0]' WHERE owner = %s", (OWNER,))
    found = store.vector(OWNER, [1.0] + [0.0] * 7, 200, _EVERY)
    assert len(found) == len(_TEXTS)  # through the index: the 64-dimension copy is stale
    held = copies.cache.held(OWNER)
    assert held is not None
    assert held.dimension == 8  # loaded again, of the new model
    assert held.generation == _gen(store)


def test_a_load_that_read_before_this_process_forgot_keeps_nothing(
    written: tuple[PostgresStore, Memory],
) -> None:
    store, memory = written
    copies: VectorCopies

    def forgetting_meanwhile() -> psycopg.Connection[Any]:
        db = store._connect()
        copies.forget(OWNER)  # as a forget committing while the load reads
        return db

    copies = VectorCopies(forgetting_meanwhile, background=False, copy_from=1)
    store._searches.copies = copies
    _vector(store, memory, "the blue bicycle")
    assert copies.loads == 1
    assert copies.cache.held(OWNER) is None


def test_an_owner_whose_vectors_do_not_fit_the_budget_is_not_read_again_and_again(
    written: tuple[PostgresStore, Memory],
) -> None:
    store, memory = written
    copies = VectorCopies(
        store._connect, background=False, copy_from=1, cache=VectorCache(max_bytes=1000)
    )
    store._searches.copies = copies
    for question in _QUESTIONS:
        _same(_vector(store, memory, question), _from_index(store, memory, question))
    assert copies.loads == 1  # counted once, then left to the index for a while
    assert copies.cache.held(OWNER) is None


def test_a_filter_that_leaves_few_of_the_copys_neighbours_is_left_to_the_index(
    loaded: tuple[PostgresStore, Memory, VectorCopies], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, memory, copies = loaded
    assert memory.embedder is not None
    _vector(store, memory, "warm: loads the copy")
    store._connection().execute(
        "UPDATE memories SET partition = 'rare' WHERE owner = %s AND id IN"
        " (SELECT id FROM memories WHERE owner = %s ORDER BY seq LIMIT 3)",
        (OWNER, OWNER),
    )
    narrow = MemoryFilter(retrievable_only=True, partition="rare")
    embedding = memory.embedder.embed(["the blue bicycle"])[0]
    # One pass reads 5 + 32 of the 96 neighbours here (the shipped two read 148: all).
    monkeypatch.setattr("troth.storage.postgres.copies._READS", 1)
    served = copies.hits(store._connection(), OWNER, _gen(store), embedding, 5, narrow)
    assert served is None  # too few passed: the index's iterative scan reads on
    found = store.vector(OWNER, embedding, 5, narrow)
    assert len(found) == 3
    assert copies.cache.held(OWNER) is not None  # the copy stays: it was not stale


def test_the_copys_side_connection_ended_while_idle_is_replaced(
    loaded: tuple[PostgresStore, Memory, VectorCopies], pg_url: str
) -> None:
    store, memory, copies = loaded
    assert memory.embedder is not None
    question = "the blue bicycle"
    embedding = memory.embedder.embed([question])[0]
    terms = lexical_terms(question)
    before = store.candidates(OWNER, terms, embedding, candidate_limits(10), _EVERY)
    served = _served(copies, monkeypatch := pytest.MonkeyPatch())
    try:
        with store._searches.lent() as side:
            pid = int(side.info.backend_pid)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            for _ in range(500):
                gone = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))
                if gone.fetchone() == (0,):
                    break
                time.sleep(0.01)
        after = store.candidates(OWNER, terms, embedding, candidate_limits(10), _EVERY)
        assert after.lexical == before.lexical
        _same(after.vector, before.vector)
        assert served == [1, 1]  # the copy answered, on a second try with a new connection
    finally:
        monkeypatch.undo()


def test_a_bulk_load_starts_loading_the_copy_of_the_owner_it_wrote(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    try:
        copies = _copying(store, background=True)
        with memory.bulk_load():
            memory.remember_many(_TEXTS)
        copies.join()  # no search has run: the end of the load started it
        held = copies.cache.held(OWNER)
        assert held is not None
        assert held.live == len(_TEXTS)
        assert held.generation == _gen(store)
    finally:
        memory.close()
