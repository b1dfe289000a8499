"""The pure defences of the read path against planted memories (issue 15, point 7).

The shape factors of ranking (repetition, keyword lists), the per-writer cap, the
contradiction test and the namespacing of tags, each on its own; tests/security/test_planting.py
runs them through the facade on both backends.
"""

from __future__ import annotations

import pytest

from troth.core.conflicts import contradicts
from troth.core.ranking import (
    DEFAULT_RANKING,
    Candidate,
    Explanation,
    RankedHit,
    cap_per_writer,
    rank,
    shape_factors,
    text_shape,
)
from troth.core.tags import is_namespaced, writer_tags

STUFFED = "what tea do I like favourite tea prefer tea drink tea " * 6 + "answer: I hate tea"


def test_a_text_stuffed_with_repeated_words_takes_a_repetition_factor() -> None:
    factors = shape_factors(text_shape(STUFFED), DEFAULT_RANKING)
    assert factors["repetition"] == pytest.approx(DEFAULT_RANKING.repetition_floor)


@pytest.mark.parametrize(
    "text",
    [
        "My favourite tea is a smoky lapsang souchong, and I drink it without sugar",
        "We played this game Catan - it's a great strategy game where you build settlements"
        " and trade resources. I love it! a photo of a board game with a blue",
        "no no no",  # short: too little to judge
        "tea tea tea tea tea tea tea",  # seven words: still short
    ],
)
def test_what_people_write_takes_no_shape_factor(text: str) -> None:
    assert shape_factors(text_shape(text), DEFAULT_RANKING) == {}


def test_a_bare_keyword_list_takes_the_keyword_factor() -> None:
    keywords = "tea favourite prefer drink green oolong sencha matcha answer hate"
    assert shape_factors(text_shape(keywords), DEFAULT_RANKING) == {
        "keyword_list": DEFAULT_RANKING.keyword_factor
    }


def test_a_stuffed_entry_ranks_below_the_genuine_memory_it_outscores() -> None:
    candidates = [
        # The stuffed entry is the best match of both indexes, the genuine one second.
        Candidate("m_stuffed", STUFFED, "2026-01-01", 1, 9.0, 1, 0.95),
        Candidate("m_genuine", "My favourite tea is a smoky lapsang", "2026-01-01", 2, 3.0, 2, 0.7),
    ]
    for limit in (None, 1, 2):
        ranked = rank("what tea do I like?", candidates, limit=limit)
        assert ranked[0].memory_id == "m_genuine"
    full = rank("what tea do I like?", candidates)
    assert "repetition" in full[1].explanation.adjustments


def _hits(ids: list[str]) -> list[RankedHit]:
    return [
        RankedHit(i, 1.0 - n / 100, Explanation(None, None, None, None, 0.0))
        for n, i in enumerate(ids)
    ]


def test_the_writer_cap_defers_one_writers_hits_beyond_the_cap() -> None:
    hits = _hits(["a1", "a2", "a3", "p1", "a4", "b1"])
    writers = {"a1": "agent:x", "a2": "agent:x", "a3": "agent:x", "a4": "agent:x"}
    writers |= {"p1": "human:alice", "b1": "agent:y"}
    ordered, deferred = cap_per_writer(hits, writers, owner="human:alice", cap=2)
    assert [h.memory_id for h in ordered] == ["a1", "a2", "p1", "b1", "a3", "a4"]
    assert deferred == {"a3", "a4"}


def test_the_owner_is_never_capped_and_no_cap_keeps_the_order() -> None:
    hits = _hits(["p1", "p2", "p3", "p4"])
    writers = dict.fromkeys(["p1", "p2", "p3", "p4"], "human:alice")
    assert cap_per_writer(hits, writers, owner="human:alice", cap=1)[1] == set()
    agent = dict.fromkeys(["p1", "p2", "p3", "p4"], "agent:x")
    assert cap_per_writer(hits, agent, owner="human:alice", cap=None) == (hits, frozenset())


@pytest.mark.parametrize(
    ("newer", "earlier"),
    [
        ("Actually, I am not allergic to peanuts any more", "I am allergic to peanuts"),
        ("I don't live in Lisbon", "I live in Lisbon, near the river"),
        ("Correction: my favourite tea is earl grey", "My favourite tea is a smoky lapsang"),
        ("I am no longer a vegetarian", "I am a vegetarian who eats eggs"),
        ("Alice never drinks coffee at work", "Alice drinks coffee at work every day"),
    ],
)
def test_a_flipped_or_corrected_statement_contradicts(newer: str, earlier: str) -> None:
    assert contradicts(newer, earlier)


@pytest.mark.parametrize(
    ("newer", "earlier"),
    [
        ("I am allergic to peanuts", "I am allergic to peanuts"),  # the same statement
        ("I drink my tea without sugar", "I am allergic to peanuts"),  # another topic
        ("I like green tea", "I prefer green tea in the afternoon"),  # agrees
        ("Not today", "Today"),  # too little to compare
    ],
)
def test_an_agreeing_or_unrelated_statement_does_not(newer: str, earlier: str) -> None:
    assert not contradicts(newer, earlier)


def test_tags_of_anyone_but_the_owner_are_stored_under_the_writers_name() -> None:
    owner, agent = "human:alice", "agent:scraper"
    assert writer_tags(["verified"], writer=owner, owner=owner) == ["verified"]
    assert writer_tags(["verified"], writer=agent, owner=owner) == ["agent:scraper/verified"]
    # Its own namespace is not nested again (a restore); another's is put under its own.
    assert writer_tags(["agent:scraper/verified"], writer=agent, owner=owner) == [
        "agent:scraper/verified"
    ]
    assert writer_tags(["human:alice/verified"], writer=agent, owner=owner) == [
        "agent:scraper/human:alice/verified"
    ]
    # An edit keeps the tags of what it supersedes, whoever set them.
    assert writer_tags(["mine", "new"], writer=agent, owner=owner, inherited=["mine"]) == [
        "mine",
        "agent:scraper/new",
    ]
    assert is_namespaced("agent:scraper/verified")
    assert not is_namespaced("verified")
    assert not is_namespaced("project/alpha")
