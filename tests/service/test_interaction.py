"""Late interaction (troth.service.interaction): what the re-rank may and may not do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import vector_facade
from troth.core.ranking import Explanation, RankedHit
from troth.embedding import HashingEmbedder, StaticEmbedder
from troth.service.interaction import Interaction, WordVectors, content_words, rerank
from troth.service.recall import Query
from troth.storage.sqlite import SQLiteStore

EMBEDDER = HashingEmbedder()
VECTORS = WordVectors(EMBEDDER)
WORDS = st.sampled_from(
    [
        *("tea", "coffee", "garden", "violin", "paint", "river"),
        *("mountain", "novel", "bicycle", "lantern", "harbor", "pottery"),
    ]
)


def hit(memory_id: str, score: float) -> RankedHit:
    return RankedHit(memory_id, score, Explanation(None, None, None, None, base=score))


@settings(max_examples=60, deadline=None)
@given(
    asked=st.lists(WORDS, min_size=1, max_size=4, unique=True),
    others=st.lists(st.text("xyzqwk", min_size=3, max_size=8), min_size=1, max_size=5),
    score=st.floats(0.0, 2.0),
)
def test_a_memory_holding_every_asked_word_never_falls_below_one_holding_none(
    asked: list[str], others: list[str], score: float
) -> None:
    texts = {"a-none": " ".join(others), "z-all": "I said " + " and ".join(asked)}
    # Same score before the re-rank, and the id order favours the one without overlap.
    out = rerank(" ".join(asked) + "?", [hit("a-none", score), hit("z-all", score)], texts, VECTORS)
    assert out[0].memory_id == "z-all"
    assert out[0].explanation.adjustments["interaction"] == Interaction().weight


@settings(max_examples=40, deadline=None)
@given(
    scores=st.lists(st.floats(0.0, 3.0), min_size=2, max_size=40),
    words=st.lists(st.lists(WORDS, max_size=5), min_size=40, max_size=40),
    top=st.integers(2, 12),
)
def test_only_the_head_moves_and_each_lift_is_between_zero_and_the_weight(
    scores: list[float], words: list[list[str]], top: int
) -> None:
    hits = sorted(
        (hit(f"m{i:02}", s) for i, s in enumerate(scores)), key=lambda h: (-h.score, h.memory_id)
    )
    texts = {h.memory_id: " ".join(words[i]) for i, h in enumerate(hits)}
    config = Interaction(top=top, weight=0.3)
    out = rerank("painting by the river with coffee", hits, texts, VECTORS, config)
    assert out[top:] == hits[top:]
    assert {h.memory_id for h in out[:top]} == {h.memory_id for h in hits[:top]}
    before = {h.memory_id: h.score for h in hits}
    for moved in out[:top]:
        # No lift at all when none of the head's memories holds a content word.
        lift = moved.explanation.adjustments.get("interaction", 0.0)
        assert 0.0 <= lift <= config.weight + 1e-9
        assert moved.score == before[moved.memory_id] + lift
    # The head still ranks at or above every tail hit: the lift is never negative.
    if len(out) > top:
        assert min(h.score for h in out[:top]) >= out[top].score


def test_a_paraphrase_beats_an_unrelated_turn_with_the_shipped_model() -> None:
    vectors = WordVectors(StaticEmbedder.default())
    texts = {
        "a": "We cooked pasta and watched a film on Sunday.",
        "b": "That song gives me strength and makes me feel brave.",
    }
    out = rerank(
        "Which music makes her courageous?", [hit("a", 1.0), hit("b", 1.0)], texts, vectors
    )
    assert out[0].memory_id == "b"


def test_each_lift_is_the_memorys_maxsim_over_the_best_one() -> None:
    # The batched product of rerank against maxsim written out per memory: the mean over
    # the question's words of the best cosine with one of the memory's words.
    query = "violin garden harbor"
    texts = {
        "m0": "violin garden harbor",
        "m1": "the garden by the river",
        "m2": "pottery lantern novel bicycle",
        "m3": "and the of it",  # no content word: no lift
    }
    hits = [hit(m, 1.0) for m in sorted(texts)]
    out = {h.memory_id: h for h in rerank(query, hits, texts, VECTORS)}
    asked = VECTORS.matrix(content_words(query))

    def maxsim(text: str) -> float:
        words = content_words(text)
        if not words:
            return 0.0
        return float((asked @ VECTORS.matrix(words).T).max(axis=1).mean())

    expected = {m: maxsim(t) for m, t in texts.items()}
    assert abs(expected["m0"] - 1.0) < 1e-6  # every asked word is held
    best = max(expected.values())
    weight = Interaction().weight
    for memory_id, value in expected.items():
        lift = out[memory_id].explanation.adjustments["interaction"]
        assert abs(lift - weight * max(value, 0.0) / best) < 1e-6
    assert out["m3"].explanation.adjustments["interaction"] == 0.0


def test_the_word_cache_stays_within_its_bound_and_gives_the_embedders_rows() -> None:
    vectors = WordVectors(EMBEDDER, max_words=3)
    words = ["tea", "coffee", "garden", "violin", "paint", "tea"]
    got = vectors.matrix(words)
    assert np.allclose(got, EMBEDDER.embed(words))
    assert len(vectors) <= 3


def test_content_words_drop_stopwords_and_repeats() -> None:
    assert content_words("What does she paint, and does she paint rivers?") == ["paint", "rivers"]


def test_recall_says_when_the_interaction_lifted_a_hit_and_can_turn_it_off(tmp_path: Path) -> None:
    with vector_facade(SQLiteStore(tmp_path / "l.db")) as mind:
        mind.remember("I play the violin in a small orchestra")
        mind.remember("The garden needs water every evening")
        lifted = mind.recall(Query(text="violin orchestra"))
        assert "interaction" in lifted[0].why["adjustments"]
        plain = mind.recall(Query(text="violin orchestra", interaction=False))
        assert all("interaction" not in h.why["adjustments"] for h in plain)
