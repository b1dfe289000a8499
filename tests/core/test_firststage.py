"""Recall's first stage (core.firststage): what the full ranking reads and ranks."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import vector_facade
from troth.core.firststage import shortlist
from troth.core.ranking import DEFAULT_RANKING, Candidate, RankingConfig, rank
from troth.service import recall as recall_module
from troth.service.recall import Query
from troth.storage.sqlite import SQLiteStore


def ranking_base(
    found: dict[str, dict[str, float | int]], config: RankingConfig = DEFAULT_RANKING
) -> dict[str, float]:
    """Each found memory's fused score as the ranking itself computes it (the base of its
    explanation): the oracle the first stage is held to."""
    candidates = [Candidate(m, "", "", **s) for m, s in found.items()]  # type: ignore[arg-type]
    return {hit.memory_id: hit.explanation.base for hit in rank("", candidates, config=config)}


def _found(count: int, seed: int = 7) -> dict[str, dict[str, float | int]]:
    rng = random.Random(seed)
    found: dict[str, dict[str, float | int]] = {}
    for i in range(count):
        scores: dict[str, float | int] = {}
        if rng.random() < 0.7:
            scores |= {"lexical_rank": i + 1, "lexical_score": rng.uniform(0.1, 12.0)}
        if not scores or rng.random() < 0.7:
            scores |= {"vector_rank": i + 1, "vector_score": rng.uniform(-0.2, 0.9)}
        found[f"m{i:04d}"] = scores
    return found


def test_a_short_list_is_every_candidate_in_order() -> None:
    found = _found(40)
    assert shortlist(found, {}, keep=40) == list(found)


def test_it_keeps_the_best_fused_the_extremes_and_the_best_ones_neighbours() -> None:
    found = _found(600)
    seqs = {memory_id: i for i, memory_id in enumerate(found)}
    chosen = shortlist(found, seqs, keep=100, expand=20)
    base = ranking_base(found)
    best = sorted(base, key=lambda m: (-base[m], m))
    assert set(best[:100]) <= set(chosen)
    # The neighbours (seq within 2) of the best 20, found by an index, come along.
    for memory_id in best[:20]:
        seq = seqs[memory_id]
        near = [m for m, s in seqs.items() if 0 < abs(s - seq) <= 2]
        assert set(near) <= set(chosen)
    # The weakest cosine stays, so the fusion imputes it as it would among all.
    vector = [m for m, s in found.items() if "vector_score" in s]
    assert min(vector, key=lambda m: found[m]["vector_score"]) in chosen
    assert len(chosen) <= 100 + 20 * 4 + 3
    assert chosen == [m for m in found if m in set(chosen)]  # found's order


def test_it_does_not_pair_neighbours_it_was_not_told_the_position_of() -> None:
    found = _found(300)
    chosen = shortlist(found, {}, keep=50, expand=50)
    assert len(chosen) <= 53


@pytest.mark.parametrize("seed", [1, 2])
def test_recall_with_the_first_stage_returns_what_ranking_every_candidate_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Hundreds of candidates (sessions of 20 turns sharing words): the first stage
    changes how many rows are read, not the hits."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(60)]
    items = [
        {
            "text": " ".join(rng.choice(words) for _ in range(12)),
            "session": f"s{i // 20}",
            "recorded_at": f"2024-01-{1 + i // 20 % 28:02d}T00:00:00Z",
        }
        for i in range(400)
    ]
    with vector_facade(SQLiteStore(tmp_path / "troth.db")) as memory:
        memory.remember_many(items)
        questions = [" ".join(rng.sample(words, 3)) for _ in range(12)]

        def run() -> list[list[str]]:
            return [
                [h.memory.id for h in memory.recall(Query(text=q, limit=10, min_relevance=None))]
                for q in questions
            ]

        staged = run()
        monkeypatch.setattr(recall_module, "shortlist", lambda found, seqs: list(found))
        every = run()
    assert all(len(hits) == 10 for hits in staged)
    assert staged == every
