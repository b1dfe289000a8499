"""Recall through the facade: what is never returned, filters, time, and ranking properties."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.backends import fresh_store
from tests.conftest import StepClock, vector_facade
from tests.pg import TestServer
from troth.config import Settings, load_policy
from troth.core.errors import ConflictError, InvalidInputError
from troth.embedding import HashingEmbedder
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Store
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"


@pytest.fixture
def mind(any_store: Store, clock: StepClock) -> Iterator[Memory]:
    with vector_facade(any_store, principal=ALICE, clock=clock) as m:
        yield m


def ids(mind: Memory, text: str, **options: object) -> list[str]:
    return [h.memory.id for h in mind.recall(Query(text=text, **options))]  # type: ignore[arg-type]


def test_each_hit_has_an_id_a_score_and_why_it_ranked(mind: Memory) -> None:
    tea = mind.remember("I drink green tea every morning")
    mind.remember("The dog is called Pixel")
    hits = mind.recall("what tea do I drink")
    assert hits[0].memory.id == tea.id
    as_dict = hits[0].to_dict()
    assert as_dict["id"] == tea.id
    assert as_dict["score"] > 0
    assert as_dict["why"]["lexical_rank"] == 1
    assert as_dict["why"]["vector_rank"] is not None
    assert "adjustments" in as_dict["why"]


@pytest.mark.parametrize("step", ["forget", "hide", "redact", "reject", "supersede", "expire"])
def test_a_memory_that_left_retrieval_is_never_returned(mind: Memory, step: str) -> None:
    if step == "reject":
        gone = mind.remember(
            "zebra stripes are unique", actor="agent:bot", owner=ALICE, channel="tool"
        )
        assert gone.status == "proposed"
        assert ids(mind, "zebra stripes") == []  # proposed: not yet retrievable
        mind.reject(gone.id)
    else:
        gone = mind.remember("zebra stripes are unique")
        assert ids(mind, "zebra stripes") == [gone.id]
        if step == "forget":
            mind.forget(gone.id)
        elif step == "hide":
            mind.hide(gone.id)
        elif step == "redact":
            mind.redact(gone.id, reason="test")
        elif step == "supersede":
            new = mind.edit(gone.id, "okapi stripes are unique too")
            assert ids(mind, "stripes unique") == [new.id]
        elif step == "expire":
            mind.parts.changes.change(gone.id, "expire", mind.principal, ALICE, {})
    assert gone.id not in ids(mind, "zebra stripes are unique")
    assert gone.id not in mind.store.vector_ids(ALICE)


def test_expired_by_retention_is_excluded_before_the_sweep(mind: Memory) -> None:
    soon = mind.remember("the parking code is 4411", expires="2026-07-04T00:00:00Z")
    ttl = mind.remember(
        "the guest wifi is 4411", ttl={"policy": "expires_at", "expires_at": "2026-07-04T00:00:00Z"}
    )
    assert set(ids(mind, "4411")) == {soon.id, ttl.id}
    assert ids(mind, "4411", now="2026-07-05T00:00:00Z") == []


def test_sensitive_needs_the_right_and_archived_needs_asking(mind: Memory) -> None:
    secret = mind.remember("my lucky number is 17", sensitivity="sensitive")
    archived = mind.remember("my old lucky number was 17", lifecycle="archived")
    assert ids(mind, "lucky number 17") == []
    assert ids(mind, "lucky number 17", include_sensitive=True) == [secret.id]
    assert ids(mind, "lucky number 17", include_archived=True) == [archived.id]


def test_stale_is_down_ranked_not_excluded(mind: Memory) -> None:
    stale = mind.remember("I live in Lyon", lifecycle="stale")
    fresh = mind.remember("I live in Lyon")
    hits = mind.recall("where do I live, Lyon")
    assert [h.memory.id for h in hits] == [fresh.id, stale.id]
    assert hits[1].why["adjustments"]["stale"] == 0.5
    assert ids(mind, "Lyon", include_stale=False) == [fresh.id]
    old = mind.remember("I lived in Oslo", valid_until="2020-01-01")
    assert mind.recall("Oslo")[0].why["adjustments"]["stale"] == 0.5
    assert ids(mind, "Oslo")[0] == old.id


def test_valid_on_a_date_keeps_what_was_true_then(mind: Memory) -> None:
    paris = mind.remember("I work in Paris", valid_from="2020-01-01", valid_until="2022-12-31")
    rome = mind.remember("I work in Rome", valid_from="2023-01-01")
    always = mind.remember("I work in an office")
    assert set(ids(mind, "work", valid_on="2021-06-01")) == {paris.id, always.id}
    assert set(ids(mind, "work", valid_on="2024-06-01")) == {rome.id, always.id}
    assert set(ids(mind, "work", valid_on="2022-12-31")) == {paris.id, always.id}
    with pytest.raises(InvalidInputError):
        mind.recall(Query(text="work", valid_on="yesterday"))


def test_as_of_answers_as_the_ledger_stood_then(mind: Memory, clock: StepClock) -> None:
    early = mind.remember("the boat is blue")
    t1 = clock().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    clock.now = clock.now.replace(minute=clock.now.minute + 1)
    hidden_later = mind.remember("the boat has a red sail")
    t2 = clock().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    clock.now = clock.now.replace(minute=clock.now.minute + 1)
    mind.hide(hidden_later.id)
    late = mind.remember("the boat is now green")
    assert set(ids(mind, "boat")) == {early.id, late.id}
    assert ids(mind, "boat", as_of=t1) == [early.id]
    assert set(ids(mind, "boat", as_of=t2)) == {early.id, hidden_later.id}
    forgotten = mind.remember("the boat cost a fortune")
    mind.forget(forgotten.id)
    assert forgotten.id not in ids(mind, "boat fortune", as_of=t2)  # its text is gone
    with pytest.raises(InvalidInputError):
        mind.recall(Query(text="boat", as_of="2026-07-03"))


def test_as_of_keeps_an_admitted_proposal_out_until_its_approval(
    mind: Memory, clock: StepClock
) -> None:
    # The default policy writes a person's own memories automatically; an admitted page
    # that was still proposed where it came from is not active until approved here.
    proposal = mind.admit("the kettle is copper", owner=ALICE, status="proposed")
    before = clock().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    mind.approve(proposal.id)
    after = clock().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    assert ids(mind, "kettle copper", as_of=before) == []
    assert ids(mind, "kettle copper", as_of=after) == [proposal.id]


def test_filters_by_kind_scope_partition_and_tags(mind: Memory) -> None:
    pref = mind.remember("I prefer oolong", kind="preference", tags=["drinks"])
    work = mind.remember("oolong for the team", scope="project:alpha", partition="work")
    assert ids(mind, "oolong", kinds=("preference",)) == [pref.id]
    assert ids(mind, "oolong", scope="project:alpha") == [work.id]
    assert ids(mind, "oolong", partition="work") == [work.id]
    assert ids(mind, "oolong", tags=("drinks",)) == [pref.id]


def test_owners_never_see_each_others_memories(mind: Memory) -> None:
    mine = mind.remember("Alice likes tea")
    mind.remember("Bob likes tea", owner="human:bob", actor="human:bob")
    assert ids(mind, "likes tea") == [mine.id]
    assert ids(mind, "likes tea", indexes=("vector",)) == [mine.id]


def test_a_superseded_memory_never_outranks_its_successor(mind: Memory) -> None:
    old = mind.remember("my bike is a red Peugeot")
    new = mind.edit(old.id, "my bike is a blue Peugeot")
    found = ids(mind, "red Peugeot bike")
    assert found == [new.id]


def test_an_approved_proposal_gets_its_vector(mind: Memory) -> None:
    proposed = mind.remember(
        "we visit grandma on sundays", actor="agent:bot", owner=ALICE, channel="tool"
    )
    assert proposed.id not in mind.store.vector_ids(ALICE)
    mind.approve(proposed.id)
    assert proposed.id in mind.store.vector_ids(ALICE)
    assert ids(mind, "grandma", indexes=("vector",))[0] == proposed.id


def test_a_model_change_asks_for_a_reindex(mind: Memory) -> None:
    kept = mind.remember("the cat is called Miso")
    other = Memory(
        mind.store,
        policy=mind.policy,
        principal=ALICE,
        embedder=HashingEmbedder(dim=32, name="hashing-32"),
    )
    with pytest.raises(ConflictError, match="troth reindex"):
        other.recall("cat")
    assert other.reindex() == {ALICE: 1}
    assert mind.store.vector_model() == ("hashing-32", 32)
    assert [h.memory.id for h in other.recall("cat Miso")] == [kept.id]


def test_rebuild_restores_the_vectors(mind: Memory) -> None:
    kept = mind.remember("the cat is called Miso")
    mind.rebuild()
    assert mind.store.vector_ids(ALICE) == {kept.id}


def test_invalid_queries_are_refused(mind: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mind.recall(Query(text="x", limit=0))
    with pytest.raises(InvalidInputError):
        mind.recall(Query(text="x", indexes=("graph",)))


WORDS = st.sampled_from(
    [
        "apple",
        "river",
        "stone",
        "cloud",
        "piano",
        "garden",
        "yellow",
        "winter",
        "coffee",
        "lantern",
        "violet",
        "harbor",
        "tiger",
        "meadow",
        "copper",
        "silent",
        "orange",
        "forest",
        "candle",
        "rocket",
    ]
)
TEXTS = st.lists(WORDS, min_size=3, max_size=7).map(" ".join)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@settings(max_examples=25, deadline=None)
@given(corpus=st.lists(TEXTS, min_size=1, max_size=8, unique=True), pick=st.integers(0, 7))
def test_a_memorys_own_exact_text_ranks_first(
    backend: str, pg_server: TestServer, corpus: list[str], pick: int
) -> None:
    with fresh_store(backend, pg_server) as store, vector_facade(store, principal=ALICE) as mind:
        written = mind.remember_many(corpus)
        target = written[pick % len(written)]
        text = corpus[pick % len(written)]
        hits = mind.recall(text)
        # Another memory with the same words (reordered) may tie; none may score higher.
        assert hits[0].score == max(h.score for h in hits)
        assert target.id in [h.memory.id for h in hits if h.score == hits[0].score]


class _CountingStore:
    """Wraps a store; its searches (``candidates``, both indexes in one call) wait until
    ``together`` recalls are inside them at once (a barrier: fewer, and it times out) and
    record the most that ever were."""

    def __init__(self, inner: SQLiteStore, together: int) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(together, timeout=10)
        self.running = 0
        self.most = 0

    def candidates(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self._barrier.wait()
            return self._inner.candidates(*args, **kwargs)
        finally:
            with self._lock:
                self.running -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# The gate is the facade's, whatever the store: these run on SQLite only.
@pytest.mark.parametrize("gate", [1, 3])
def test_no_more_recalls_run_at_once_than_the_gate_admits(tmp_path: Path, gate: int) -> None:
    store = _CountingStore(SQLiteStore(tmp_path / "l.db"), together=gate)
    mind = Memory(
        store,  # type: ignore[arg-type]
        policy=load_policy(None),
        principal="human:alice",
        clock=StepClock(),
        max_concurrent_recalls=gate,
    )
    mind.remember("green tea in the morning")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: mind.recall("green tea"), range(15)))
    assert all(len(a) == 1 for a in answers)
    assert store.most == gate  # the barrier proves `gate` ran at once; never more


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_gate_below_one_is_refused(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="max_concurrent_recalls"):
        Memory(
            SQLiteStore(tmp_path / "l.db"),
            policy=load_policy(None),
            principal="human:alice",
            max_concurrent_recalls=bad,
        )


def test_the_gate_comes_from_the_environment_and_bad_values_are_named(tmp_path: Path) -> None:
    settings = Settings.load(
        home=tmp_path, principal="human:alice", environ={"TROTH_MAX_CONCURRENT_RECALLS": "3"}
    )
    assert settings.max_concurrent_recalls == 3
    for bad in ("0", "two", "-1", "²"):
        with pytest.raises(InvalidInputError, match="TROTH_MAX_CONCURRENT_RECALLS"):
            Settings.load(
                home=tmp_path,
                principal="human:alice",
                environ={"TROTH_MAX_CONCURRENT_RECALLS": bad},
            )


def test_nothing_fits_returns_no_hit_unless_the_floor_is_off(mind: Memory) -> None:
    # The case: the tea memory is gone, so nothing about tea is held.
    novels = mind.remember("I read novels before bed")
    assert mind.recall("what tea do I like?") == []
    unfloored = mind.recall(Query(text="what tea do I like?", min_relevance=None))
    assert [h.memory.id for h in unfloored] == [novels.id]
    hits = mind.recall("which novels do I read?")
    assert [h.memory.id for h in hits] == [novels.id]
    assert hits[0].why["relevance"]["coverage"] == 1.0
    assert hits[0].why["relevance"]["missing_names"] == []


def test_a_question_naming_someone_the_ledger_never_mentions_gets_no_hit(mind: Memory) -> None:
    mind.remember("Caroline: I painted a sunrise over the lake")
    assert ids(mind, "What did Caroline paint?") != []
    assert ids(mind, "What did Melanie paint?") == []
    # A month or a word opening the question is no name.
    assert ids(mind, "Painted what in July?") != []


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_min_relevance_out_of_range_is_refused(mind: Memory, value: float) -> None:
    with pytest.raises(InvalidInputError, match="min_relevance is a share"):
        mind.recall(Query(text="tea", min_relevance=value))
