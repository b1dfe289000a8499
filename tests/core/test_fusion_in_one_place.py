"""The fusion mode and the neighbour offsets are decided in core.ranking alone; the first
stage (core.firststage) asks it rather than repeating the choice."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tests.core.test_firststage import ranking_base
from troth.core.firststage import shortlist
from troth.core.ranking import DEFAULT_RANKING, fuse_scores, neighbour_offsets

RRF = replace(DEFAULT_RANKING, fusion="rrf")


def _found(count: int) -> dict[str, dict[str, float | int]]:
    rng = random.Random(3)
    found: dict[str, dict[str, float | int]] = {}
    lexical_ranks = rng.sample(range(1, count + 1), count)
    vector_ranks = rng.sample(range(1, count + 1), count)
    for i in range(count):
        scores: dict[str, float | int] = {}
        if rng.random() < 0.6:
            scores |= {"lexical_rank": lexical_ranks[i], "lexical_score": rng.uniform(0.1, 9.0)}
        if not scores or rng.random() < 0.6:
            scores |= {"vector_rank": vector_ranks[i], "vector_score": rng.uniform(-0.1, 0.9)}
        found[f"m{i:03d}"] = scores
    return found


@pytest.mark.parametrize("config", [DEFAULT_RANKING, RRF], ids=["score", "rrf"])
def test_the_first_stage_keeps_the_best_by_the_rankings_own_fusion(config: object) -> None:
    found = _found(400)
    base = ranking_base(found, config)  # type: ignore[arg-type]
    best = sorted(base, key=lambda m: (-base[m], m))
    chosen = shortlist(found, {}, keep=60, expand=0, config=config)  # type: ignore[arg-type]
    assert set(best[:60]) <= set(chosen)
    assert len(chosen) <= 63


def test_rank_fusion_without_the_ranks_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the lexical and vector ranks"):
        fuse_scores(["a"], [1.0], [0.5], RRF)


def test_the_neighbour_offsets_are_the_span_either_side_nearest_first() -> None:
    assert neighbour_offsets() == (-1, 1, -2, 2)
    assert neighbour_offsets(replace(DEFAULT_RANKING, neighbour_span=1)) == (-1, 1)
    assert neighbour_offsets(replace(DEFAULT_RANKING, neighbour_span=0)) == ()
