"""A question that names a calendar day lifts the memories created that day (the ``day`` step)."""

from __future__ import annotations

from dataclasses import replace

from troth.core.query import NamedDay, analyze_query, named_days
from troth.core.ranking import ADDITIVE_ADJUSTMENTS, DEFAULT_RANKING, Candidate, rank


def test_days_are_read_in_either_order_with_or_without_a_year() -> None:
    assert named_days("What dish did Nate make on 9 November, 2022?") == (NamedDay(2022, 11, 9),)
    assert named_days("What did Tim say on November 16th, 2023?") == (NamedDay(2023, 11, 16),)
    assert named_days("the 21st of May, 2023") == (NamedDay(2023, 5, 21),)
    assert named_days("Where was John between Aug 11 and August 15 2023?") == (
        NamedDay(None, 8, 11),
        NamedDay(2023, 8, 15),
    )


def test_what_is_not_a_day_is_not_read_as_one() -> None:
    assert named_days("What happened in June 2023?") == ()  # a month, not a day
    assert named_days("on 31 February") == ()
    assert named_days("I may 2 times a week") == ()  # the modal verb
    assert named_days("May 2") == (NamedDay(None, 5, 2),)
    assert named_days("I ran 5 miles") == ()


def test_an_abbreviated_month_with_a_dot_keeps_its_year() -> None:
    assert named_days("5 Feb. 2020") == (NamedDay(2020, 2, 5),)
    assert named_days("on 9 Nov., 2022") == (NamedDay(2022, 11, 9),)
    assert named_days("Nov. 9, 2022") == (NamedDay(2022, 11, 9),)
    assert named_days("Mark 12") == ()  # a month's letters inside a word are no month


def test_a_year_outside_the_usual_range_is_kept_not_dropped() -> None:
    # Dropping it would lift that day of every year: a narrower question became a wider one.
    assert named_days("9 May 3000") == (NamedDay(3000, 5, 9),)
    assert named_days("March 12 1800") == (NamedDay(1800, 3, 12),)
    assert named_days("Jan 1 19999") == (NamedDay(19999, 1, 1),)
    assert not NamedDay(3000, 5, 9).matches(2023, 5, 9)


def test_a_day_without_a_year_matches_that_day_of_any_year() -> None:
    day = NamedDay(None, 3, 9)
    assert day.matches(2021, 3, 9)
    assert day.matches(2024, 3, 9)
    assert not day.matches(2024, 3, 10)
    assert not NamedDay(2023, 3, 9).matches(2024, 3, 9)


def _memory(memory_id: str, created_at: str) -> Candidate:
    # Same words, same scores: only the day they were created differs.
    return Candidate(
        memory_id=memory_id,
        text="Nate: I made a coconut curry",
        created_at=created_at,
        lexical_rank=1,
        lexical_score=5.0,
        vector_rank=1,
        vector_score=0.5,
    )


def test_the_memory_created_on_the_named_day_comes_first_and_says_why() -> None:
    question = "What dish did Nate make on 9 November, 2022?"
    assert analyze_query(question).days == (NamedDay(2022, 11, 9),)
    candidates = [
        _memory("a", "2022-11-02T13:00:00"),  # the same month: the date lift only
        _memory("b", "2022-11-09T18:30:00+00:00"),
        _memory("c", "2021-11-09T10:00:00"),  # the day of another year
    ]
    hits = rank(question, candidates)
    assert hits[0].memory_id == "b"
    assert hits[0].explanation.adjustments["day"] == DEFAULT_RANKING.day_weight
    assert "day" not in hits[1].explanation.adjustments
    assert "day" not in {k for h in hits if h.memory_id == "c" for k in h.explanation.adjustments}
    assert "day" in ADDITIVE_ADJUSTMENTS


def test_the_day_lift_can_be_turned_off_and_needs_a_named_day() -> None:
    candidates = [_memory("a", "2022-11-02T13:00:00"), _memory("b", "2022-11-09T18:30:00")]
    off = rank(
        "What did Nate make on 9 November, 2022?",
        candidates,
        config=replace(DEFAULT_RANKING, day_weight=0.0),
    )
    assert all("day" not in h.explanation.adjustments for h in off)
    plain = rank("What did Nate make in November 2022?", candidates)
    assert [h.memory_id for h in plain] == ["a", "b"]  # a tie, by id: no day named
    assert all("day" not in h.explanation.adjustments for h in plain)
