"""The faster forms of recall's Python steps give what the plain forms gave (issue 19, branch hpy).

Each reference is the step as main (9d93a98) wrote it (the fusion's and the first stage's
are branch hcpu's oracles, imported), or what it computes written out: the fused
scores (to the bit), the first stage's choice, the neighbour lift, the late-interaction
lift, the relevance check and the word matrix must be the same, or a recall would return
something else (end to end: ``bench.recall_cpu --dump`` gives byte-identical JSON).
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

# main's fusion and first stage, kept as oracles by branch hcpu's tests.
from tests.core.test_recall_fast_paths import reference_fuse, reference_shortlist
from troth.core.firststage import shortlist
from troth.core.query import analyze_query
from troth.core.ranking import (
    DEFAULT_RANKING,
    Candidate,
    Explanation,
    RankedHit,
    RankingConfig,
    assess_relevance,
    fuse_scores,
    lift_head,
    neighbour_offsets,
    rank,
)
from troth.embedding import StaticEmbedder
from troth.service.interaction import WordVectors


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _score_lists(rng: random.Random, count: int) -> tuple[list[str], list[Any], list[Any]]:
    ids = [f"m{i:04d}" for i in range(count)]
    # Zeros of both signs, negatives, ties and gaps: the cases a sum's order would show.
    lexical = [rng.choice([None, rng.uniform(-2.0, 25.0), 0.0, -0.0, 3.5]) for _ in ids]
    vector = [rng.choice([None, rng.uniform(-0.4, 0.97), 0.0, -0.0, 0.5]) for _ in ids]
    return ids, lexical, vector


@pytest.mark.parametrize("seed", range(12))
def test_the_max_fusion_gives_the_loops_floats(seed: int) -> None:
    rng = random.Random(seed)
    ids, lexical, vector = _score_lists(rng, rng.choice([1, 2, 7, 150, 950]))
    if seed % 4 == 1:
        vector = [None] * len(ids)  # no vector score at all
    if seed % 4 == 2:
        lexical = [None] * len(ids)
    if seed % 4 == 3:
        vector = [None if v is None else -abs(v) for v in vector]  # best cosine <= 0
    weights = RankingConfig(lexical_weight=0.3, vector_weight=0.7) if seed > 8 else DEFAULT_RANKING
    fast = fuse_scores(ids, lexical, vector, weights)
    slow = reference_fuse(ids, lexical, vector, weights)
    assert list(fast) == list(slow)
    assert [_bits(fast[m]) for m in ids] == [_bits(slow[m]) for m in ids]


def test_the_max_fusion_refuses_lists_of_other_lengths() -> None:
    with pytest.raises(ValueError, match="one lexical and one vector score"):
        fuse_scores(["a", "b"], [1.0, 2.0], [0.5])


@pytest.mark.parametrize("seed", range(10))
def test_the_first_stage_chooses_as_the_loop_did(seed: int) -> None:
    rng = random.Random(seed)
    found: dict[str, dict[str, Any]] = {}
    seqs: dict[str, int] = {}
    for i in range(rng.choice([151, 400, 950])):
        scores: dict[str, Any] = {}
        if rng.random() < 0.6:
            scores |= {"lexical_rank": i + 1, "lexical_score": rng.choice([2.0, rng.random()])}
        if not scores or rng.random() < 0.6:
            scores |= {"vector_rank": i + 1, "vector_score": rng.choice([0.5, rng.random()])}
        memory_id = f"m{rng.randrange(10**6):06d}"
        found[memory_id] = scores
        if rng.random() < 0.9:
            seqs[memory_id] = rng.randrange(300)  # shared positions on purpose
    keep, expand = rng.choice([(150, 50), (20, 60), (100, 0)])
    assert shortlist(found, seqs, keep=keep, expand=expand) == reference_shortlist(
        found, seqs, keep, expand
    )


def reference_neighbour_lift(candidates: Sequence[Candidate]) -> dict[str, float]:
    """main's neighbour step: the strongest fused score at seq ± 1, ± 2 in the session."""
    base = fuse_scores(
        [c.memory_id for c in candidates],
        [c.lexical_score for c in candidates],
        [c.vector_score for c in candidates],
    )
    by_position: dict[tuple[str, int], float] = {}
    for c in candidates:
        if c.session is not None and c.seq is not None:
            key = (c.session, c.seq)
            by_position[key] = max(by_position.get(key, 0.0), base[c.memory_id])
    lift = {}
    for c in candidates:
        if c.session is None or c.seq is None:
            continue
        pooled = 0.0
        for offset in neighbour_offsets(DEFAULT_RANKING):
            value = by_position.get((c.session, c.seq + offset), 0.0)
            if value > pooled:
                pooled = value
        if pooled > 0:
            lift[c.memory_id] = DEFAULT_RANKING.neighbour_weight * pooled
    return lift


def _candidates(rng: random.Random, count: int) -> list[Candidate]:
    out = []
    for i in range(count):
        lexical = rng.choice([None, rng.uniform(0.0, 12.0)])
        vector = rng.choice([None, rng.uniform(-0.1, 0.9)]) if lexical is not None else 0.4
        out.append(
            Candidate(
                memory_id=f"m{i:03d}",
                text=rng.choice(["tea in May 2023", "I read novels", "we met yesterday"]),
                created_at=rng.choice(["2023-05-01T10:00:00Z", "2024-02-03", ""]),
                lexical_rank=None if lexical is None else i + 1,
                lexical_score=lexical,
                vector_rank=None if vector is None else i + 1,
                vector_score=vector,
                session=rng.choice([None, "s1", "s2", f"alone{i}"]),
                seq=rng.choice([None, rng.randrange(12)]),
                stale=rng.random() < 0.1,
            )
        )
    return out


@pytest.mark.parametrize("seed", range(10))
def test_the_neighbour_lift_is_the_loops(seed: int) -> None:
    candidates = _candidates(random.Random(seed), 120)
    expected = reference_neighbour_lift(candidates)
    hits = rank("when did we have tea?", candidates, now="2025-01-01T00:00:00Z")
    lifted = {h.memory_id: h.explanation.adjustments.get("neighbours") for h in hits}
    assert {m: v for m, v in lifted.items() if v is not None} == expected


def test_the_late_interaction_lift_builds_the_same_hits() -> None:
    rng = random.Random(5)
    head = [
        RankedHit(
            f"m{i}",
            rng.uniform(0.0, 2.0),
            Explanation(i + 1, None, rng.random(), None, rng.random(), {"neighbours": 0.1}),
        )
        for i in range(30)
    ]
    scores = [rng.uniform(-0.2, 1.0) for _ in head]
    best = max(scores)
    # Each hit lifted by its share of the best score (none below zero), the step recorded
    # after the others, then best first with ties by id.
    expected = sorted(
        (
            (
                hit.score + 0.3 * max(score, 0.0) / best,
                hit.memory_id,
                {**hit.explanation.adjustments, "interaction": 0.3 * max(score, 0.0) / best},
                hit.explanation,
            )
            for hit, score in zip(head, scores, strict=True)
        ),
        key=lambda item: (-item[0], item[1]),
    )
    lifted = lift_head(head, scores, 0.3, "interaction")
    assert [(h.score, h.memory_id, h.explanation.adjustments) for h in lifted] == [
        item[:3] for item in expected
    ]
    assert [h.explanation for h in lifted] == [
        replace(item[3], adjustments=item[2]) for item in expected
    ]


def test_the_relevance_check_reads_as_before() -> None:
    rng = random.Random(3)
    candidates = _candidates(rng, 60)
    candidates[7] = replace(candidates[7], text="Tea with ALICE in Lyon")
    for question in ("Did Alice drink tea in Lyon?", "what about Bob?", "novels", "the"):
        analysis = analyze_query(question)
        hits = rank(analysis, candidates)
        lowered = [replace(c, text=c.text.lower()) for c in candidates]
        assert assess_relevance(analysis, candidates, hits) == assess_relevance(
            analysis, lowered, hits
        )


def test_the_word_matrix_has_the_stacked_rows() -> None:
    embedder = StaticEmbedder.default()
    vectors = WordVectors(embedder)
    words = ["tea", "novels", "tea", "zzqxv", "brave", "courageous"]
    first = vectors.matrix(words)  # computed
    again = vectors.matrix(words)  # cached
    stacked = np.stack([np.asarray(embedder.embed([w])[0], dtype=np.float32) for w in words])
    assert first.dtype == again.dtype == np.float32
    assert np.array_equal(first, stacked)
    assert np.array_equal(again, stacked)
    assert vectors.matrix([]).shape == (0, embedder.dim)
    assert not math.isnan(float(first.sum()))
