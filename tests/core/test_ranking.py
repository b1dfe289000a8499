"""Tests for the pure ranking and query analysis."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from troth.core.query import (
    analyze_query,
    candidate_limits,
    content_terms,
    drop_common_terms,
    fts5_match_expression,
    has_time_expression,
)
from troth.core.ranking import (
    DEFAULT_RANKING,
    Candidate,
    RankingConfig,
    brief_factor,
    rank,
    text_shape,
)

NOW = "2026-11-29T12:00:00+00:00"


def candidate(memory_id: str, **fields: object) -> Candidate:
    values: dict[str, object] = {"text": f"memory {memory_id}", "created_at": "2026-01-01T00:00:00"}
    values.update(fields)
    return Candidate(memory_id=memory_id, **values)  # type: ignore[arg-type]


def test_content_terms_drop_stopwords_question_words_and_possessives() -> None:
    assert content_terms("When did Caroline's dog go to the park?") == [
        "caroline",
        "dog",
        "go",
        "park",
    ]


def test_match_expression_quotes_every_token_and_prefixes_long_ones() -> None:
    assert fts5_match_expression("painting trip") == '"painting"* OR "trip"'


def test_match_expression_is_none_without_content_words() -> None:
    assert fts5_match_expression("what was it?") is None


@given(st.text())
def test_match_expression_never_leaks_fts5_syntax(text: str) -> None:
    expression = fts5_match_expression(text)
    if expression is None:
        return
    for part in expression.split(" OR "):
        body = part.removesuffix("*")
        assert body.startswith('"')
        assert body.endswith('"')
        assert '"' not in body[1:-1].replace('""', "")


def test_drop_common_terms_keeps_every_term_when_all_are_common() -> None:
    assert drop_common_terms(["jon", "good", "dance"], {"jon", "good"}) == ["dance"]
    assert drop_common_terms(["jon", "good"], {"jon", "good"}) == ["jon", "good"]
    assert drop_common_terms([], {"jon"}) == []


def test_candidate_limits_cover_a_conversation_but_not_more_than_the_corpus() -> None:
    assert candidate_limits(10).lexical >= 500
    assert candidate_limits(10, corpus_size=40).vector == 40


def test_analysis_detects_when_questions_and_named_dates() -> None:
    analysis = analyze_query("When did she visit Paris in June 2023?")
    assert analysis.asks_when
    assert analysis.years == (2023,)
    assert analysis.months == (6,)
    assert analyze_query("What may she like?").months == ()


def test_time_expressions_are_recognised_in_memory_text() -> None:
    assert has_time_expression("We went hiking last weekend")
    assert has_time_expression("Back in 2019 I moved")
    assert not has_time_expression("I love hiking with my dog")


def test_score_fusion_prefers_the_candidate_strong_in_both_indexes() -> None:
    hits = rank(
        "hiking trip",
        [
            candidate("a", lexical_rank=1, lexical_score=10.0, vector_rank=3, vector_score=0.2),
            candidate("b", lexical_rank=2, lexical_score=9.0, vector_rank=1, vector_score=0.8),
            candidate("c", vector_rank=2, vector_score=0.5),
        ],
    )
    assert [h.memory_id for h in hits] == ["b", "a", "c"]


def test_rrf_fusion_uses_ranks_only() -> None:
    config = replace(DEFAULT_RANKING, fusion="rrf", neighbour_weight=0.0)
    hits = rank(
        "x",
        [
            candidate("a", lexical_rank=1, lexical_score=100.0),
            candidate("b", lexical_rank=2, lexical_score=99.0, vector_rank=1, vector_score=0.9),
        ],
        config=config,
    )
    assert hits[0].memory_id == "b"
    assert abs(hits[0].explanation.base - (1 / 62 + 1 / 61)) < 1e-12


def test_neighbour_lift_raises_the_reply_next_to_a_strong_match() -> None:
    strong = candidate("q", session="s1", seq=4, lexical_rank=1, lexical_score=10.0)
    reply = candidate("r", session="s1", seq=5, lexical_rank=3, lexical_score=2.0)
    elsewhere = candidate("e", session="s2", seq=9, lexical_rank=2, lexical_score=3.0)
    hits = rank("question", [strong, reply, elsewhere])
    order = [h.memory_id for h in hits]
    assert order.index("r") < order.index("e")
    reply_hit = next(h for h in hits if h.memory_id == "r")
    assert reply_hit.explanation.adjustments["neighbours"] > 0


def test_the_reply_to_a_question_takes_the_answer_lift() -> None:
    # The question turn matches best; the turn before it and the reply after it match alike
    # (and take the same neighbour lift from it), but only the reply answers it.
    before = candidate("b", text="I was at the shop", session="s1", seq=3, lexical_score=2.0)
    question = candidate(
        "q", text="What tea do you like best?", session="s1", seq=4, lexical_score=10.0
    )
    reply = candidate("r", text="I was at the shop", session="s1", seq=5, lexical_score=2.0)
    hits = {h.memory_id: h for h in rank("what tea does she like?", [before, question, reply])}
    answer = hits["r"].explanation.adjustments["answer"]
    assert answer == DEFAULT_RANKING.answer_weight * hits["q"].explanation.base
    assert "answer" not in hits["b"].explanation.adjustments
    assert hits["r"].score > hits["b"].score


def test_the_answer_lift_needs_a_question_in_the_same_session() -> None:
    statement = candidate("s", text="I like green tea", session="s1", seq=4, lexical_score=10.0)
    after = candidate("a", text="Nice", session="s1", seq=5, lexical_score=2.0)
    asked = candidate("q", text="Tea?", session="s2", seq=6, lexical_score=9.0)
    other = candidate("o", text="Nice", session="s3", seq=7, lexical_score=2.0)
    hits = rank("tea", [statement, after, asked, other])
    assert all("answer" not in h.explanation.adjustments for h in hits)
    off = replace(DEFAULT_RANKING, answer_weight=0.0)
    question = replace(statement, text="Do you like green tea?")
    hits = rank("tea", [question, after], config=off)
    assert all("answer" not in h.explanation.adjustments for h in hits)


def test_a_brief_text_takes_the_brief_factor_in_proportion_to_its_words() -> None:
    config = DEFAULT_RANKING
    assert brief_factor(text_shape("You too, take care!"), config) == (
        config.brief_floor + (1 - config.brief_floor) * 2 / config.brief_words
    )
    assert brief_factor(text_shape(""), config) == config.brief_floor
    long = (
        "He cleans the tank water weekly, feeds them fresh greens with calcium powder,"
        " and keeps a basking lamp over a shallow pool for the turtles"
    )
    assert text_shape(long).content_words >= config.brief_words
    assert brief_factor(text_shape(long), config) is None
    assert brief_factor(text_shape("take care"), replace(config, brief_words=0)) is None


def test_a_brief_text_ranks_below_a_fuller_one_it_ties_with() -> None:
    brief = candidate("a", text="You too, take care!", lexical_score=5.0)
    full = candidate(
        "b",
        text="He cleans the tank water weekly, feeds them fresh greens with calcium powder,"
        " and keeps a basking lamp over a shallow pool for the turtles",
        lexical_score=5.0,
    )
    hits = rank("how does he take care of turtles?", [brief, full])
    assert [h.memory_id for h in hits] == ["b", "a"]
    assert "brief" in hits[1].explanation.adjustments
    assert "brief" not in hits[0].explanation.adjustments


def test_when_questions_lift_memories_that_name_a_time() -> None:
    plain = candidate("a", text="I adopted a dog", lexical_rank=1, lexical_score=5.0)
    dated = candidate("b", text="I adopted a dog last week", lexical_rank=2, lexical_score=4.9)
    hits = rank("When did she adopt a dog?", [plain, dated])
    assert hits[0].memory_id == "b"
    assert "when" in hits[0].explanation.adjustments


def test_stale_memories_rank_below_equal_fresh_ones() -> None:
    fresh = candidate("a", lexical_rank=1, lexical_score=5.0)
    stale = candidate("b", lexical_rank=1, lexical_score=5.0, stale=True)
    hits = rank("x", [stale, fresh])
    assert [h.memory_id for h in hits] == ["a", "b"]
    assert hits[1].explanation.adjustments["stale"] == DEFAULT_RANKING.stale_factor


def test_recency_applies_only_with_now() -> None:
    old = candidate("a", created_at="2020-01-01T00:00:00", lexical_score=5.0)
    new = candidate("b", created_at="2026-11-01T00:00:00", lexical_score=5.0)
    assert "recency" not in rank("x", [old, new])[0].explanation.adjustments
    hits = rank("x", [old, new], now=NOW)
    assert hits[0].memory_id == "b"


def test_importance_and_confidence_are_neutral_when_unknown() -> None:
    hit = rank("x", [candidate("a", lexical_score=1.0)])[0]
    assert "importance" not in hit.explanation.adjustments
    assert "confidence" not in hit.explanation.adjustments


def test_duplicates_are_merged_and_ties_break_by_id() -> None:
    hits = rank("x", [candidate("b"), candidate("a"), candidate("b")])
    assert [h.memory_id for h in hits] == ["a", "b"]


score_strategy = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
candidates_strategy = st.lists(
    st.builds(
        candidate,
        st.text(alphabet="abcdef", min_size=1, max_size=4),
        lexical_score=st.none() | score_strategy,
        vector_score=st.none() | st.floats(min_value=-1.0, max_value=1.0),
        session=st.none() | st.sampled_from(["s1", "s2"]),
        seq=st.none() | st.integers(min_value=0, max_value=10),
        stale=st.booleans(),
    ),
    max_size=12,
)


@given(candidates_strategy, st.integers(min_value=0, max_value=5))
def test_rank_returns_each_candidate_once_sorted_and_limited(
    candidates: list[Candidate], limit: int
) -> None:
    hits = rank("dog park", candidates, limit=limit, config=RankingConfig())
    ids = [h.memory_id for h in hits]
    assert len(ids) == len(set(ids)) == min(limit, len({c.memory_id for c in candidates}))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


@given(candidates_strategy)
def test_rank_is_independent_of_input_order(candidates: list[Candidate]) -> None:
    unique = list({c.memory_id: c for c in candidates}.values())
    forward = [(h.memory_id, h.score) for h in rank("dog", unique)]
    backward = [(h.memory_id, h.score) for h in rank("dog", list(reversed(unique)))]
    assert forward == backward


def test_explanation_is_json_ready() -> None:
    import json

    hit = rank("x", [candidate("a", lexical_rank=1, lexical_score=2.0, stale=True)])[0]
    view = hit.explanation.to_dict()
    assert json.loads(json.dumps(view))["adjustments"]["stale"] == DEFAULT_RANKING.stale_factor
    assert view["lexical_rank"] == 1


def test_recency_accepts_naive_and_aware_now() -> None:
    from datetime import datetime

    old = candidate("a", created_at="2020-01-01T00:00:00Z", lexical_score=5.0)
    new = candidate("b", created_at="2026-11-01T00:00:00", lexical_score=5.0)
    for now in (datetime(2026, 11, 29), datetime.fromisoformat(NOW)):
        assert rank("x", [old, new], now=now)[0].memory_id == "b"


def test_named_terms_are_capitalised_words_inside_the_question() -> None:
    from troth.core.query import named_terms

    assert named_terms("What did Caroline's friend Mel see in July? The Four Seasons, LGBTQ") == [
        "caroline",
        "mel",
        "four",
        "seasons",
    ]
    assert named_terms("Caroline asked what I like") == []


def test_term_pattern_finds_inflections_and_prefixes_but_names_whole() -> None:
    from troth.core.query import term_pattern

    assert term_pattern("painting").search("she painted it")
    assert term_pattern("cats").search("a cat")
    assert not term_pattern("cat").search("a catalogue")
    assert term_pattern("italy", prefix=False).search("trip to italy.")
    assert not term_pattern("nate", prefix=False).search("nature walks")


def test_assess_relevance_measures_coverage_cosine_and_missing_names() -> None:
    from troth.core.ranking import RelevanceFloor, assess_relevance

    held = [
        Candidate("a", "Caroline: I painted a sunrise", "2023-05-01", 1, 2.0, 1, 0.7),
        Candidate("b", "Melanie: the kids went camping", "2023-05-01", None, None, 2, 0.4),
    ]
    hits = rank("What did Caroline paint at sunrise?", held)
    fit = assess_relevance("What did Caroline paint at sunrise?", held, hits)
    assert fit.coverage == 1.0
    assert fit.cosine == 0.7
    assert fit.missing_names == ()
    assert fit.fits()
    other = assess_relevance("What did Jon paint at sunrise?", held, hits)
    assert other.missing_names == ("jon",)
    assert not other.fits()
    assert other.fits(RelevanceFloor(names=False))
    weak = assess_relevance("Which tea does she drink?", held, hits)
    assert weak.coverage == 0.0
    assert not weak.fits()
    assert weak.fits(RelevanceFloor(rescue_cosine=0.6))


def test_a_limited_ranking_is_the_head_of_the_full_one() -> None:
    # ``rank`` skips the time-expression search where it cannot change the top ``limit``:
    # the result must be exactly the first ``limit`` of ranking every candidate.
    import random

    generator = random.Random(7)
    words = ["yesterday", "garden", "tea", "last week", "in 2023", "paint", "novel", "why?"]
    for trial in range(30):
        candidates = [
            Candidate(
                f"m{i:03d}",
                " ".join(generator.choice(words) for _ in range(3)),
                f"2023-0{1 + i % 9}-01",
                lexical_rank=i + 1 if i % 3 else None,
                lexical_score=generator.random() * 5 if i % 3 else None,
                vector_rank=i + 1,
                vector_score=generator.random(),
                session=f"s{i % 4}",
                seq=i,
            )
            for i in range(60)
        ]
        question = "When did she paint the garden?" if trial % 2 else "What tea in 2023?"
        full = rank(question, candidates, now="2024-01-01T00:00:00Z")
        for limit in (1, 3, 10):
            head = rank(question, candidates, now="2024-01-01T00:00:00Z", limit=limit)
            assert head == full[:limit]


def test_a_keyword_query_counts_its_first_word_as_a_name() -> None:
    from troth.core.query import named_terms

    assert named_terms("Paris Lyon") == ["paris", "lyon"]
    assert named_terms("Describe the trip to Lyon") == ["lyon"]
    assert named_terms("Lyon?") == []
