"""The faster forms of recall's pure steps give what the plain forms gave (issue 19, branch hcpu).

Each reference below is the step as it was written before it was made faster (main at
3e0dbbd), kept here as the oracle: the tokens, the fused scores (to the bit) and the
first stage's choice must be the same, or recall would return something else.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from troth.core.firststage import shortlist
from troth.core.query import term_pattern, tokenize
from troth.core.ranking import DEFAULT_RANKING, RankingConfig, fuse_scores, neighbour_offsets

_APOSTROPHES = "'\u2019"
_TOKEN = re.compile(r"[^\W_]+(?:[" + _APOSTROPHES + r"][^\W_]+)*", re.UNICODE)


def reference_tokenize(text: str) -> list[str]:
    tokens = []
    for raw in _TOKEN.findall(text.lower()):
        word = re.split("[" + _APOSTROPHES + "]", raw, maxsplit=1)[0]
        if word:
            tokens.append(word)
    return tokens


def reference_fuse(
    ids: Sequence[str],
    lexical_scores: Sequence[float | None],
    vector_scores: Sequence[float | None],
    config: RankingConfig,
) -> dict[str, float]:
    lexical = [s for s in lexical_scores if s is not None]
    vector = [s for s in vector_scores if s is not None]
    best_lexical = max(lexical, default=0.0)
    if not vector:
        normalize = lambda value: 0.0  # noqa: E731
    else:
        high, low = max(vector), min(vector)
        if config.vector_normalization == "max":
            normalize = lambda value: max(value, 0.0) / high if high > 0 else 0.0  # noqa: E731
        else:
            span = high - low
            normalize = lambda value: (value - low) / span if span > 0 else 1.0  # noqa: E731
    weakest = min(vector) if vector else None
    fused = {}
    for memory_id, lexical_score, vector_score in zip(
        ids, lexical_scores, vector_scores, strict=True
    ):
        score = 0.0
        if lexical_score is not None and best_lexical > 0:
            score += config.lexical_weight * max(lexical_score, 0.0) / best_lexical
        cosine = vector_score if vector_score is not None else weakest
        if cosine is not None:
            score += config.vector_weight * normalize(cosine)
        fused[memory_id] = score
    return fused


def reference_shortlist(
    found: Mapping[str, Mapping[str, Any]], seqs: Mapping[str, int], keep: int, expand: int
) -> list[str]:
    if len(found) <= keep:
        return list(found)
    scores = list(found.values())
    base = reference_fuse(
        list(found),
        [s.get("lexical_score") for s in scores],
        [s.get("vector_score") for s in scores],
        DEFAULT_RANKING,
    )
    order = [memory_id for _, memory_id in sorted((-score, m) for m, score in base.items())]
    chosen = set(order[:keep])
    lexical = [(s["lexical_score"], m) for m, s in found.items() if "lexical_score" in s]
    vector = [(s["vector_score"], m) for m, s in found.items() if "vector_score" in s]
    if lexical:
        chosen.add(max(lexical)[1])
    if vector:
        chosen.update((max(vector)[1], min(vector)[1]))
    at: dict[int, list[str]] = {}
    for memory_id, position in seqs.items():
        at.setdefault(position, []).append(memory_id)
    for memory_id in order[:expand]:
        seq = seqs.get(memory_id)
        if seq is None:
            continue
        for offset in neighbour_offsets(DEFAULT_RANKING):
            chosen.update(at.get(seq + offset, ()))
    return [memory_id for memory_id in found if memory_id in chosen]


_WORDY = st.text(
    alphabet=st.sampled_from(list("abcAB zé_'\u2019-.9ÉßİΣ\u0130\u2019\n")), max_size=60
)


@given(_WORDY)
@settings(max_examples=400, deadline=None)
def test_tokens_are_those_of_the_split_per_word(text: str) -> None:
    assert tokenize(text) == reference_tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        "Caroline's dog didn't bark",
        "rock\u2019n\u2019roll isn't 'quoted'",
        "snake_case and __dunder__ words",
        "İstanbul ΣΊΣΥΦΟΣ straße 2023's",
        "''' \u2019\u2019 '",
    ],
)
def test_tokens_of_hard_cases(text: str) -> None:
    assert tokenize(text) == reference_tokenize(text)


def _scores(rng: random.Random, count: int) -> tuple[list[str], list[Any], list[Any]]:
    ids = [f"m{i:04d}" for i in range(count)]
    lexical: list[Any] = []
    vector: list[Any] = []
    for _ in ids:
        lexical.append(rng.choice([None, rng.uniform(-1.0, 20.0), 0.0, -0.0]))
        vector.append(rng.choice([None, rng.uniform(-0.3, 0.95), 0.0]))
    return ids, lexical, vector


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("normalization", ["max", "minmax"])
def test_fused_scores_are_the_same_floats(seed: int, normalization: str) -> None:
    rng = random.Random(seed)
    ids, lexical, vector = _scores(rng, rng.choice([1, 2, 50, 900]))
    config = RankingConfig(vector_normalization=normalization)  # type: ignore[arg-type]
    fast = fuse_scores(ids, lexical, vector, config)
    slow = reference_fuse(ids, lexical, vector, config)
    assert list(fast) == list(slow)
    assert all(fast[m] == slow[m] or (math.isnan(fast[m]) and math.isnan(slow[m])) for m in ids)


def test_fused_scores_without_any_vector_or_lexical_score() -> None:
    ids = ["a", "b"]
    for lexical, vector in (([None, None], [0.4, 0.2]), ([3.0, 1.0], [None, None])):
        assert fuse_scores(ids, lexical, vector) == reference_fuse(
            ids, lexical, vector, DEFAULT_RANKING
        )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("keep", "expand"), [(150, 50), (40, 80), (10, 0), (900, 50)])
def test_the_first_stage_chooses_what_it_chose(seed: int, keep: int, expand: int) -> None:
    rng = random.Random(seed)
    found: dict[str, dict[str, Any]] = {}
    seqs: dict[str, int] = {}
    for i in range(rng.choice([120, 600, 875])):
        scores: dict[str, Any] = {}
        if rng.random() < 0.7:
            # Ties on purpose: the order breaks them by id.
            scores |= {"lexical_rank": i + 1, "lexical_score": rng.choice([1.0, 2.5, rng.random()])}
        if not scores or rng.random() < 0.7:
            scores |= {"vector_rank": i + 1, "vector_score": rng.choice([0.5, rng.random()])}
        memory_id = f"m{rng.randrange(10**6):06d}"
        found[memory_id] = scores
        if rng.random() < 0.8:
            seqs[memory_id] = rng.randrange(400)
    fast = shortlist(found, seqs, keep=keep, expand=expand)
    assert fast == reference_shortlist(found, seqs, keep, expand)


def test_a_term_pattern_is_compiled_once_and_matches_as_before() -> None:
    first = term_pattern("painting")
    assert term_pattern("painting") is first
    assert first.search("she painted it") is not None
    assert first.search("a pain") is None
    assert term_pattern("cat", prefix=False).search("cats") is not None
    assert term_pattern("cat", prefix=False).search("catalogue") is None
