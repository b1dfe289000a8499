"""Rank recall candidates: score-aware fusion of lexical and vector hits, then adjustments.

Pure standard library, identical on every backend. The store fetches candidates from its
lexical index (BM25: FTS5's ``bm25()``, PostgreSQL's ``search.bm25_statement``) and its
vector index (cosine), merges them by memory id into :class:`Candidate` values and calls
:func:`rank`.

The score of a candidate, in order:

1. **fusion** — ``lexical_weight * lexical_norm + vector_weight * vector_norm``, where
   ``lexical_norm`` is the lexical score divided by the best lexical score among the
   candidates, and ``vector_norm`` rescales cosine between the weakest and the best
   candidate's cosine. Unlike reciprocal-rank fusion this keeps *how much* better the
   first hit is than the tenth. (``fusion="rrf"`` gives plain RRF, for comparison.)
2. **neighbours** — ``+ neighbour_weight * max(fused score of the memories at seq ± 1 in
   the same session)``: in a conversation the answer is often in the reply to the turn
   that matches the question's words. **answer** — a memory right after one that asks
   something (its text holds a "?") takes ``+ answer_weight *`` the asking memory's fused
   score besides: a reply to a question on the topic is likelier to hold the answer than
   the turn before the question.
3. **when** — a question that asks *when* lifts memories whose text names a time
   ("yesterday", "last week", a month, a year).
4. **date** — a question that names a month/year lifts memories created in that month;
   **day** — one that names a calendar day ("on 9 November, 2022") lifts, more, the
   memories created that day.
5. **speaker** — a memory whose speaker the query names gets ``speaker_weight`` (+0.5, as
   much as a full lexical match); the caller passes a :class:`Candidate`'s ``speaker`` only
   where it vouches for it (recall: the policy's most trusted channel).
6. **lifecycle** — multiplicative: importance and confidence (neutral when unknown),
   recency (only with ``now``), and a penalty for stale memories.
7. **shape** — multiplicative: a text that repeats its words far more than people write
   (``repetition``) or is a bare list of keywords (``keyword_list``) is pushed down, so an
   entry stuffed with a topic's question words does not outrank what was said on the topic
   (:func:`text_shape`, docs/retrieval.md "Planted memories").
8. **brief** — multiplicative: a text of fewer than ``brief_words`` content words is
   lowered, to at most ``1 - brief_floor`` less (:func:`brief_factor`). bm25's length
   normalisation favours short texts more than their chance of holding an answer
   warrants ("You too, take care!" for a question about taking care of turtles).

:func:`cap_per_writer` then defers, past the others, the hits beyond the first
``max_per_writer`` of any one writer other than the ledger's owner.

Each step is recorded in the hit's :class:`Explanation`.

:func:`assess_relevance` then says whether anything fits at all (the relevance floor,
:class:`RelevanceFloor`): a recall whose best hits share too little of the question's
words, or that names something no candidate mentions, returns nothing.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

from troth.core.query import (
    STOPWORDS,
    QueryAnalysis,
    analyze_query,
    has_time_expression,
    term_pattern,
    tokenize,
)

__all__ = [
    "ADDITIVE_ADJUSTMENTS",
    "DEFAULT_FLOOR",
    "DEFAULT_RANKING",
    "Candidate",
    "Explanation",
    "RankedHit",
    "RankingConfig",
    "Relevance",
    "RelevanceFloor",
    "TextShape",
    "assess_relevance",
    "brief_factor",
    "cap_per_writer",
    "fuse_scores",
    "lift_head",
    "neighbour_offsets",
    "rank",
    "text_shape",
    "weaker_after_stronger",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory found by the lexical index, the vector index, or both.

    ``lexical_score`` is "higher is better" (FTS5: ``-bm25(table)``); ``vector_score`` is
    the cosine similarity. Ranks are 1-based. A candidate with neither (fetched only as
    a neighbour) takes part through the neighbour lift.
    """

    memory_id: str
    text: str
    created_at: str
    lexical_rank: int | None = None
    lexical_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    session: str | None = None
    seq: int | None = None
    speaker: str | None = None
    importance: float | None = None
    confidence: float | None = None
    stale: bool = False


@dataclass(frozen=True, slots=True)
class RankingConfig:
    """Weights of the ranking steps; the defaults are the tuned ones (docs/retrieval.md)."""

    fusion: Literal["score", "rrf"] = "score"
    lexical_weight: float = 0.5
    vector_weight: float = 0.5
    vector_normalization: Literal["max", "minmax"] = "max"
    rrf_k: int = 60
    neighbour_weight: float = 0.7
    neighbour_span: int = 2
    answer_weight: float = 0.2
    session_weight: float = 0.1
    when_weight: float = 0.1
    date_weight: float = 0.4
    day_weight: float = 0.4
    speaker_weight: float = 0.5
    importance_weight: float = 0.2
    confidence_weight: float = 0.2
    recency_weight: float = 0.1
    recency_half_life_days: float = 180.0
    stale_factor: float = 0.5
    # shape: the share of a text's words that repeat a content word beyond its second use;
    # no penalty up to ``repetition_start``, the factor falls linearly to ``repetition_floor``
    # over ``repetition_span`` (the 2,760 LoCoMo dev turns reach 0.06 at most).
    repetition_start: float = 0.1
    repetition_span: float = 0.25
    repetition_floor: float = 0.1
    # A text of ``keyword_min_tokens`` words or more of which under ``keyword_function_share``
    # are function words reads as a keyword list, not as something said (LoCoMo: 0.125 at
    # least). Shorter texts take no shape factor at all.
    keyword_min_tokens: int = 8
    keyword_function_share: float = 0.1
    keyword_factor: float = 0.5
    # brief: a text of ``n < brief_words`` content words (not function words) takes the factor
    # ``brief_floor + (1 - brief_floor) * n / brief_words``.
    brief_words: int = 12
    brief_floor: float = 0.9
    max_per_writer: int = 2


DEFAULT_RANKING = RankingConfig()

ADDITIVE_ADJUSTMENTS = frozenset(
    ["neighbours", "answer", "session", "when", "date", "day", "speaker", "interaction"]
)
"""The adjustments :func:`rank` (and the late-interaction re-rank of
``troth.service.interaction``) add to the score; the others (lifecycle) multiply it."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a hit scored what it did: its ranks, base score and each adjustment."""

    lexical_rank: int | None
    vector_rank: int | None
    lexical_score: float | None
    vector_score: float | None
    base: float
    adjustments: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view (e.g. for a recall hit's ``why``)."""
        return {
            "lexical_rank": self.lexical_rank,
            "vector_rank": self.vector_rank,
            "lexical_score": self.lexical_score,
            "vector_score": self.vector_score,
            "base": round(self.base, 6),
            "adjustments": {name: round(value, 6) for name, value in self.adjustments.items()},
        }


@dataclass(frozen=True, slots=True)
class RankedHit:
    """A ranked memory: its id, final score and explanation."""

    memory_id: str
    score: float
    explanation: Explanation


def lift_head(
    head: Sequence[RankedHit], scores: Sequence[float], weight: float, name: str
) -> list[RankedHit]:
    """``head`` lifted by ``weight`` times each hit's share of the best of ``scores`` (negative
    scores lift nothing; the step is recorded as ``name`` in each explanation), re-sorted
    by score with ties in memory-id order as :func:`rank` breaks them. Unchanged when no
    score is positive."""
    best = max(scores, default=0.0)
    if best <= 0:
        return list(head)
    lifted = []
    for hit, score in zip(head, scores, strict=True):
        lift = weight * max(score, 0.0) / best
        # Built directly (``dataclasses.replace`` walks the fields by name: a fifth of the
        # late-interaction step's time), the same explanation with the step added.
        was = hit.explanation
        explanation = Explanation(
            was.lexical_rank,
            was.vector_rank,
            was.lexical_score,
            was.vector_score,
            was.base,
            {**was.adjustments, name: lift},
        )
        lifted.append(RankedHit(hit.memory_id, hit.score + lift, explanation))
    lifted.sort(key=lambda h: (-h.score, h.memory_id))
    return lifted


def weaker_after_stronger(order: Sequence[str], weaker: Mapping[str, Collection[str]]) -> list[str]:
    """Memory ids in ``order``, each weaker side of a conflict (``weaker``: its id → the ids
    of the stronger memories it contradicts) moved to right after the lowest-ranked of
    those stronger ones when it ranked above it: the weaker side never outranks the memory
    it contradicts."""
    ordered = list(order)
    for memory_id in order:
        stronger = weaker.get(memory_id)
        if not stronger:
            continue
        places = [i for i, other in enumerate(ordered) if other in stronger]
        here = ordered.index(memory_id)
        if places and max(places) > here:
            ordered.insert(max(places), ordered.pop(here))
    return ordered


def rank(
    query: str | QueryAnalysis,
    candidates: Sequence[Candidate],
    *,
    now: str | datetime | None = None,
    config: RankingConfig = DEFAULT_RANKING,
    limit: int | None = None,
) -> list[RankedHit]:
    """Rank candidates for a query, best first; ties break by memory id for stability.

    ``now`` enables the recency adjustment (ISO string or datetime); without it recency
    is neutral. ``limit`` cuts the result.
    """
    analysis = query if isinstance(query, QueryAnalysis) else analyze_query(query)
    unique = _dedupe(candidates)
    base = _fuse(unique, config)
    neighbour_lift = _neighbour_lift(unique, base, config)
    answer_lift = _answer_lift(unique, base, config)
    session_lift = _session_lift(unique, base, config)
    query_tokens = set(tokenize(analysis.text))
    now_dt = _parse_datetime(now) if isinstance(now, str) else now
    if now_dt is not None and now_dt.tzinfo is None:
        now_dt = now_dt.replace(tzinfo=UTC)

    # The per-candidate work is kept to arithmetic and dictionary look-ups: a recall ranks
    # ~1,000 candidates, and the hit objects are built for the returned ones only.
    named_date = bool(config.date_weight and (analysis.years or analysis.months))
    named_day = bool(config.day_weight and analysis.days)
    speaker_hit: dict[str, bool] = {}
    dates: dict[str, datetime | None] = {}
    scored: list[tuple[float, str, Candidate, dict[str, float], float, float]] = []
    for candidate in unique:
        memory_id = candidate.memory_id
        adjustments: dict[str, float] = {}
        score = base[memory_id]
        lift = neighbour_lift.get(memory_id, 0.0)
        if lift:
            adjustments["neighbours"] = lift
            score += lift
        lift = answer_lift.get(memory_id, 0.0)
        if lift:
            adjustments["answer"] = lift
            score += lift
        lift = session_lift.get(memory_id, 0.0)
        if lift:
            adjustments["session"] = lift
            score += lift
        if named_date and _matches_named_date(candidate.created_at, analysis, dates):
            adjustments["date"] = config.date_weight
            score += config.date_weight
        if named_day and _matches_named_day(candidate.created_at, analysis, dates):
            adjustments["day"] = config.day_weight
            score += config.day_weight
        speaker = candidate.speaker
        if config.speaker_weight and speaker:
            named = speaker_hit.get(speaker)
            if named is None:
                # A name, not its function words: "The Doctor" names no "the" question.
                named = speaker_hit[speaker] = bool(
                    (set(tokenize(speaker)) - STOPWORDS) & query_tokens
                )
            if named:
                adjustments["speaker"] = config.speaker_weight
                score += config.speaker_weight
        factor = _lifecycle_factor(candidate, now_dt, config, adjustments, dates)
        scored.append((score * factor, memory_id, candidate, adjustments, score, factor))
    when_weight = config.when_weight if analysis.asks_when else 0.0
    scored = _refine(scored, when_weight, config, limit)
    return [
        RankedHit(
            memory_id=memory_id,
            score=score,
            explanation=Explanation(
                lexical_rank=candidate.lexical_rank,
                vector_rank=candidate.vector_rank,
                lexical_score=candidate.lexical_score,
                vector_score=candidate.vector_score,
                base=base[memory_id],
                adjustments=adjustments,
            ),
        )
        for score, memory_id, candidate, adjustments, _, _ in (
            scored if limit is None else scored[:limit]
        )
    ]


_Scored = tuple[float, str, "Candidate", dict[str, float], float, float]
_ADJUSTMENT_ORDER = ("neighbours", "answer", "session", "when", "date", "day", "speaker")


def _with_when(item: _Scored, weight: float) -> _Scored:
    _, memory_id, candidate, adjustments, additive, factor = item
    if not has_time_expression(candidate.text):
        return item
    ordered = {**adjustments, "when": weight}
    ordered = {k: ordered[k] for k in _ADJUSTMENT_ORDER if k in ordered} | {
        k: v for k, v in adjustments.items() if k not in _ADJUSTMENT_ORDER
    }
    return ((additive + weight) * factor, memory_id, candidate, ordered, additive + weight, factor)


@dataclass(frozen=True, slots=True)
class TextShape:
    """How a text is written: its word count, the share of its words that repeat a content
    word beyond that word's second use, and the share that are function words."""

    tokens: int
    repetition: float
    function_share: float

    @property
    def content_words(self) -> int:
        """How many of its words are not function words."""
        return self.tokens - round(self.tokens * self.function_share)


def text_shape(text: str) -> TextShape:
    """The shape of a text, for the ranking's ``shape`` step (and the tests)."""
    tokens = tokenize(text)
    if not tokens:
        return TextShape(0, 0.0, 1.0)
    counts: dict[str, int] = {}
    function_words = 0
    for token in tokens:
        if token in STOPWORDS:
            function_words += 1
        else:
            counts[token] = counts.get(token, 0) + 1
    excess = sum(n - 2 for n in counts.values() if n > 2)
    return TextShape(len(tokens), excess / len(tokens), function_words / len(tokens))


def shape_factors(shape: TextShape, config: RankingConfig) -> dict[str, float]:
    """The multiplicative ``shape`` adjustments of a text (empty when it reads as written)."""
    out: dict[str, float] = {}
    # Short texts are left alone: a few words repeated ("no no no") say little either way,
    # and stuffing needs room.
    long_enough = shape.tokens >= config.keyword_min_tokens
    if long_enough and config.repetition_span > 0 and shape.repetition > config.repetition_start:
        over = (shape.repetition - config.repetition_start) / config.repetition_span
        out["repetition"] = max(config.repetition_floor, 1.0 - over * (1 - config.repetition_floor))
    if long_enough and shape.function_share < config.keyword_function_share:
        out["keyword_list"] = config.keyword_factor
    return out


def brief_factor(shape: TextShape, config: RankingConfig) -> float | None:
    """The multiplicative ``brief`` adjustment of a text, or None when it has
    ``config.brief_words`` content words or more."""
    words = shape.content_words
    if config.brief_words <= 0 or words >= config.brief_words:
        return None
    return config.brief_floor + (1.0 - config.brief_floor) * words / config.brief_words


def _refine(
    scored: list[_Scored], when_weight: float, config: RankingConfig, limit: int | None
) -> list[_Scored]:
    """Add the *when* lift and apply the ``shape`` and ``brief`` factors, best first.

    Both tests read the candidate's text (the time-expression search and the tokenising are
    the costliest work per candidate), so with a ``limit`` they run only where they can
    change the result: in order of the score a candidate would have with the lift and no
    shape factor (a bound, since a factor only lowers a score), a tested candidate being
    final once no untested one can pass it (exactly the order of testing every one).
    """

    def exact(item: _Scored) -> _Scored:
        if when_weight:
            item = _with_when(item, when_weight)
        shape = text_shape(item[2].text)
        factors = shape_factors(shape, config)
        brief = brief_factor(shape, config)
        if brief is not None:
            factors["brief"] = brief
        if not factors:
            return item
        _, memory_id, candidate, adjustments, additive, factor = item
        for value in factors.values():
            factor *= value
        return (additive * factor, memory_id, candidate, adjustments | factors, additive, factor)

    def order(item: _Scored) -> tuple[float, str]:
        return (-item[0], item[1])

    if limit is None:
        return sorted((exact(item) for item in scored), key=order)

    def bound(item: _Scored) -> tuple[float, str]:
        return (-(item[4] + when_weight) * item[5], item[1])

    scored.sort(key=bound)
    out: list[_Scored] = []
    ready: list[tuple[float, str, _Scored]] = []  # tested, best first
    position = 0
    while len(out) < limit and (position < len(scored) or ready):
        if ready and (position == len(scored) or ready[0][:2] <= bound(scored[position])):
            out.append(heapq.heappop(ready)[2])
            continue
        tested = exact(scored[position])
        position += 1
        heapq.heappush(ready, (-tested[0], tested[1], tested))
    rest = [item for _, _, item in ready] + scored[position:]
    return out + sorted(rest, key=order)


def cap_per_writer(
    hits: Sequence[RankedHit],
    writers: Mapping[str, str | None],
    *,
    owner: str,
    cap: int | None = DEFAULT_RANKING.max_per_writer,
) -> tuple[list[RankedHit], frozenset[str]]:
    """Defer the hits of any one writer beyond its first ``cap``, after all the others.

    ``writers`` maps a memory id to whoever wrote it; the ``owner``'s own memories are never
    capped (a person's ledger is mostly their own words), nor are those of an unknown writer.
    Nothing is dropped: a deferred hit still comes when nothing else does. Returns the new
    order and the ids deferred. ``cap=None`` turns the cap off.
    """
    if cap is None:
        return list(hits), frozenset()
    seen: dict[str, int] = {}
    kept: list[RankedHit] = []
    deferred: list[RankedHit] = []
    for hit in hits:
        writer = writers.get(hit.memory_id)
        if writer is None or writer == owner:
            kept.append(hit)
            continue
        seen[writer] = seen.get(writer, 0) + 1
        (kept if seen[writer] <= cap else deferred).append(hit)
    return kept + deferred, frozenset(h.memory_id for h in deferred)


def _dedupe(candidates: Sequence[Candidate]) -> list[Candidate]:
    # A store may pass the same memory twice (once per index); keep the first.
    seen: dict[str, Candidate] = {}
    for candidate in candidates:
        seen.setdefault(candidate.memory_id, candidate)
    return list(seen.values())


def _fuse(candidates: Sequence[Candidate], config: RankingConfig) -> dict[str, float]:
    return fuse_scores(
        [c.memory_id for c in candidates],
        [c.lexical_score for c in candidates],
        [c.vector_score for c in candidates],
        config,
        lexical_ranks=[c.lexical_rank for c in candidates],
        vector_ranks=[c.vector_rank for c in candidates],
    )


def fuse_scores(
    ids: Sequence[str],
    lexical_scores: Sequence[float | None],
    vector_scores: Sequence[float | None],
    config: RankingConfig = DEFAULT_RANKING,
    *,
    lexical_ranks: Sequence[int | None] | None = None,
    vector_ranks: Sequence[int | None] | None = None,
) -> dict[str, float]:
    """Step 1's fusion over parallel lists (``None``: not found by that index), for
    callers that hold index scores without :class:`Candidate` values (recall's first stage
    fuses ~900 per recall, and building a frozen candidate for each cost more than the
    fusion). The one place the fusion mode is chosen: ``config.fusion == "rrf"`` fuses
    the ranks, which it then needs (``lexical_ranks``, ``vector_ranks``)."""
    if config.fusion == "rrf":
        if lexical_ranks is None or vector_ranks is None:
            raise ValueError("rank fusion (fusion='rrf') needs the lexical and vector ranks")
        return {
            memory_id: _rrf(lexical_rank, config.rrf_k) + _rrf(vector_rank, config.rrf_k)
            for memory_id, lexical_rank, vector_rank in zip(
                ids, lexical_ranks, vector_ranks, strict=True
            )
        }
    lexical = [s for s in lexical_scores if s is not None]
    vector = [s for s in vector_scores if s is not None]
    best_lexical = max(lexical, default=0.0)
    weakest_vector = min(vector) if vector else None
    lexical_weight, vector_weight = config.lexical_weight, config.vector_weight
    # A memory the vector index did not return is at most as similar as the weakest one it
    # did return; scoring it as that (not as zero) keeps the fusion fair when the index
    # was only read to a limited depth.
    high = max(vector) if vector else 0.0
    if config.vector_normalization == "max":
        return _fuse_by_max(
            ids, lexical_scores, vector_scores, config, best_lexical, high, weakest_vector
        )
    normalize_vector = _vector_normalizer(high, weakest_vector, config.vector_normalization)
    missing = 0.0
    if weakest_vector is not None:
        missing = vector_weight * normalize_vector(weakest_vector)
    fused = {}
    for memory_id, lexical_score, vector_score in zip(
        ids, lexical_scores, vector_scores, strict=True
    ):
        score = 0.0
        if lexical_score is not None and best_lexical > 0:
            score += lexical_weight * max(lexical_score, 0.0) / best_lexical
        if vector_score is None:
            if weakest_vector is not None:
                score += missing
        else:
            score += vector_weight * normalize_vector(vector_score)
        fused[memory_id] = score
    return fused


def _fuse_by_max(
    ids: Sequence[str],
    lexical_scores: Sequence[float | None],
    vector_scores: Sequence[float | None],
    config: RankingConfig,
    best_lexical: float,
    high: float,
    weakest: float | None,
) -> dict[str, float]:
    """The "max" fusion, term by term in comprehensions (recall's first stage fuses ~950
    scores a recall, and a loop with its branches cost twice as much): each memory's score
    is ``(0.0 + lexical term) + vector term``, the operations and their order of the
    general loop above (``_vector_normalizer``'s "max"), so the same floats to the bit
    (held against the plain loop by tests/core/test_recall_python_paths.py)."""
    if not len(ids) == len(lexical_scores) == len(vector_scores):
        raise ValueError("fuse_scores needs one lexical and one vector score (or None) per id")
    lexical_weight, vector_weight = config.lexical_weight, config.vector_weight
    if best_lexical > 0:
        lexical_terms = [
            0.0 if score is None else 0.0 + lexical_weight * max(score, 0.0) / best_lexical
            for score in lexical_scores
        ]
    else:
        lexical_terms = [0.0] * len(ids)
    if weakest is None:  # no vector score at all: nothing is added
        return dict(zip(ids, lexical_terms, strict=True))
    if high > 0:
        missing = vector_weight * (max(weakest, 0.0) / high)
        vector_terms = [
            missing if score is None else vector_weight * (max(score, 0.0) / high)
            for score in vector_scores
        ]
    else:
        missing = vector_weight * 0.0
        vector_terms = [missing] * len(ids)
    return dict(zip(ids, map(operator.add, lexical_terms, vector_terms), strict=True))


def _vector_normalizer(high: float, low: float | None, how: str) -> Callable[[float], float]:
    """The vector score's normaliser given the best and weakest cosine found (``low`` is
    None when the vector index found nothing)."""
    if low is None:
        return lambda value: 0.0
    if how == "max":
        return lambda value: max(value, 0.0) / high if high > 0 else 0.0
    span = high - low
    return lambda value: (value - low) / span if span > 0 else 1.0


def _rrf(rank_: int | None, k: int) -> float:
    return 0.0 if rank_ is None else 1.0 / (k + rank_)


def neighbour_offsets(config: RankingConfig = DEFAULT_RANKING) -> tuple[int, ...]:
    """The positions (``seq`` offsets in the same session) whose turns lift a memory in the
    neighbour step: ±1 … ±``neighbour_span``, nearest first (none when the span is below 1).
    Recall's first stage brings the same neighbours along (``core.firststage``)."""
    return tuple(o for span in range(1, config.neighbour_span + 1) for o in (-span, span))


def _neighbour_lift(
    candidates: Sequence[Candidate], base: Mapping[str, float], config: RankingConfig
) -> dict[str, float]:
    if not config.neighbour_weight or config.neighbour_span < 1:
        return {}
    # Two memories may share a position (an edit, a duplicate): the stronger one counts.
    # Positions are kept per session (int keys, no tuple built per look-up: ~180
    # candidates and four offsets a recall).
    by_session: dict[str, dict[int, float]] = {}
    for c in candidates:
        if c.session is not None and c.seq is not None:
            positions = by_session.setdefault(c.session, {})
            positions[c.seq] = max(positions.get(c.seq, 0.0), base[c.memory_id])
    offsets = neighbour_offsets(config)
    lift = {}
    for c in candidates:
        if c.session is None or c.seq is None:
            continue
        positions = by_session[c.session]
        if len(positions) < 2:  # alone in its session: no neighbour to lift it
            continue
        # The strongest turn within the span on either side (summing them, or weighting
        # farther turns less, did worse on LoCoMo: docs/retrieval.md).
        pooled = 0.0
        seq = c.seq
        for offset in offsets:
            value = positions.get(seq + offset, 0.0)
            if value > pooled:
                pooled = value
        if pooled > 0:
            lift[c.memory_id] = config.neighbour_weight * pooled
    return lift


def _answer_lift(
    candidates: Sequence[Candidate], base: Mapping[str, float], config: RankingConfig
) -> dict[str, float]:
    # A memory that asks something ("?") makes the one right after it in its session a
    # likely answer: in a conversation the reply to a question on the topic holds what was
    # asked for more often than the turn before the question does. Two memories at one
    # position (an edit, a duplicate): the stronger asking one counts.
    if not config.answer_weight:
        return {}
    asked: dict[tuple[str, int], float] = {}  # the position after each asking memory
    for c in candidates:
        if "?" in c.text and c.session is not None and c.seq is not None:
            after = (c.session, c.seq + 1)
            asked[after] = max(asked.get(after, 0.0), base[c.memory_id])
    if not asked:
        return {}
    weight = config.answer_weight
    return {
        c.memory_id: weight * value
        for c in candidates
        if c.seq is not None
        and c.session is not None
        and (value := asked.get((c.session, c.seq), 0.0)) > 0
    }


def _session_lift(
    candidates: Sequence[Candidate], base: Mapping[str, float], config: RankingConfig
) -> dict[str, float]:
    # A session where several memories match is about the question's topic; its other
    # matching memories are likelier answers than an isolated match elsewhere.
    if not config.session_weight:
        return {}
    strength: dict[str, float] = {}
    for c in candidates:
        if c.session is not None:
            value = base[c.memory_id]
            if value > strength.get(c.session, -math.inf):
                strength[c.session] = value
    return {
        c.memory_id: config.session_weight * strength[c.session]
        for c in candidates
        if c.session is not None and strength[c.session] > 0
    }


def _matches_named_date(
    created_at: str, analysis: QueryAnalysis, dates: dict[str, datetime | None]
) -> bool:
    if not analysis.years and not analysis.months:
        return False
    created = _parse_cached(created_at, dates)
    if created is None:
        return False
    if analysis.years and created.year not in analysis.years:
        return False
    return not analysis.months or created.month in analysis.months


def _matches_named_day(
    created_at: str, analysis: QueryAnalysis, dates: dict[str, datetime | None]
) -> bool:
    # The day a memory was created (its recorded date, as stored), against each named day.
    created = _parse_cached(created_at, dates)
    if created is None:
        return False
    return any(day.matches(created.year, created.month, created.day) for day in analysis.days)


def _lifecycle_factor(
    candidate: Candidate,
    now: datetime | None,
    config: RankingConfig,
    adjustments: dict[str, float],
    dates: dict[str, datetime | None],
) -> float:
    factor = 1.0
    if candidate.importance is not None and config.importance_weight:
        # importance in [0, 1]; 0.5 is neutral.
        value = 1.0 + config.importance_weight * (_clamp(candidate.importance) - 0.5)
        adjustments["importance"] = value
        factor *= value
    if candidate.confidence is not None and config.confidence_weight:
        value = 1.0 - config.confidence_weight * (1.0 - _clamp(candidate.confidence))
        adjustments["confidence"] = value
        factor *= value
    if now is not None and config.recency_weight:
        created = _parse_cached(candidate.created_at, dates)
        if created is not None:
            age_days = max((now - created).total_seconds() / 86400.0, 0.0)
            freshness = math.pow(0.5, age_days / config.recency_half_life_days)
            value = 1.0 + config.recency_weight * (freshness - 0.5)
            adjustments["recency"] = value
            factor *= value
    if candidate.stale:
        adjustments["stale"] = config.stale_factor
        factor *= config.stale_factor
    return factor


def _parse_cached(value: str, dates: dict[str, datetime | None]) -> datetime | None:
    # Memories of one session share their date: parse each distinct string once.
    if value not in dates:
        dates[value] = _parse_datetime(value)
    return dates[value]


def _clamp(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def _parse_datetime(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(value[:10]), datetime.min.time())
        except ValueError:
            return None
    # Naive times are taken as UTC so that they compare with aware ones.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """When a recall returns nothing: the calibrated defaults of docs/retrieval.md.

    ``min_coverage``: the best of the top hits must hold at least this share of the
    question's content words. ``rescue_cosine``: a question none of whose words are
    held still passes when a candidate's cosine reaches this (a paraphrase; the value
    suits the shipped static model and is conservative for stronger ones, whose
    unrelated pairs score lower). ``names``: a question naming things (capitalised
    words, :func:`troth.core.query.named_terms`) none of which a candidate mentions
    fails.
    """

    min_coverage: float = 0.25
    rescue_cosine: float | None = 0.85
    names: bool = True


DEFAULT_FLOOR = RelevanceFloor()


@dataclass(frozen=True, slots=True)
class Relevance:
    """How well the best hits fit the question, for the relevance floor."""

    coverage: float
    cosine: float | None
    missing_names: tuple[str, ...]
    names: tuple[str, ...] = ()

    def fits(self, floor: RelevanceFloor = DEFAULT_FLOOR) -> bool:
        """Whether the hits clear ``floor``."""
        # Every name missing: the question is about someone or something else. One of
        # several missing ("did she move from Lyon to Paris?") still leaves an answer.
        if floor.names and self.names and len(self.missing_names) == len(self.names):
            return False
        if self.coverage >= floor.min_coverage:
            return True
        return (
            floor.rescue_cosine is not None
            and self.cosine is not None
            and self.cosine >= floor.rescue_cosine
        )

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view (a recall hit's ``why["relevance"]``)."""
        return {
            "coverage": round(self.coverage, 6),
            "cosine": None if self.cosine is None else round(self.cosine, 6),
            "missing_names": list(self.missing_names),
        }


def assess_relevance(
    query: str | QueryAnalysis,
    candidates: Sequence[Candidate],
    hits: Sequence[RankedHit],
    *,
    top: int = 10,
) -> Relevance:
    """Measure how well the ranked ``hits`` (of ``candidates``) fit the question.

    ``coverage`` is the largest share of the question's content words that one of the
    first ``top`` hits contains (matched by :func:`troth.core.query.term_pattern`);
    ``cosine`` the best vector similarity among the candidates; ``missing_names`` the
    named words no lexical candidate's text contains (any candidate's, without lexical
    candidates). ``top`` is fixed rather than the recall's
    limit so that the floor's answer does not depend on how many hits were asked for.
    """
    analysis = query if isinstance(query, QueryAnalysis) else analyze_query(query)
    cosines = [c.vector_score for c in candidates if c.vector_score is not None]
    cosine = max(cosines) if cosines else None
    # Lower-cased where read (the top hits, and every text only for a named thing): a
    # recall ranks ~180 candidates and judges ten.
    texts = {c.memory_id: c.text for c in candidates}
    patterns = [term_pattern(term) for term in analysis.terms]
    coverage = 0.0
    if patterns:
        for hit in hits[:top]:
            text = texts.get(hit.memory_id, "").lower()
            share = sum(1 for p in patterns if p.search(text)) / len(patterns)
            coverage = max(coverage, share)
            if coverage == 1.0:
                break
    missing: tuple[str, ...] = ()
    if analysis.names:
        # The lexical index returns every memory holding one of the question's words (up
        # to its depth), so a name none of them holds is in no memory; the vector
        # candidates are read only when the lexical index was not asked. One search over
        # the joined text: cheap, and a held name is usually found at once.
        lexical = [c.text.lower() for c in candidates if c.lexical_rank is not None]
        everything = "\n".join(lexical or [text.lower() for text in texts.values()])
        missing = tuple(
            n for n in analysis.names if not term_pattern(n, prefix=False).search(everything)
        )
    return Relevance(coverage=coverage, cosine=cosine, missing_names=missing, names=analysis.names)
