"""The detectors' cheap cues skip work, never a match: each answers as its plain regex does."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from troth.core import injection
from troth.core.policy import _SECRET_PATTERNS, looks_like_secret

PLAIN_SECRET = re.compile("|".join(f"(?:{p})" for p in _SECRET_PATTERNS), re.IGNORECASE)
PLAIN_LEETY = re.compile(r"[a-z][0-9@$]|[0-9@$][a-z]")
PLAIN_UNEVEN = re.compile(r"[ \t\r\f\v][\t\r\f\v ]|[\t\r\f\v]")

PIECES = [
    *("password", "passwd", "PIN code", "api_key", "API-KEY", "secret key", "auth token"),
    *(" is ", ": ", "=", "sk-", "ghp_", "AKIA", "xoxb-", "-----BEGIN RSA PRIVATE KEY-----"),
    *("4111", " ", "-", "1111", "ignore", "i g n o r e", "h3ll0", "\t", "  ", "\u017f", "\u212a"),
    *("previous instructions", "[", "](", "!!", "--", ":", "#", "<", "send", "to"),
]
TEXTS = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(PIECES), max_size=14).map("".join),
    st.lists(st.sampled_from([*PIECES, "a", "b", "0", "9", "@", "$"]), max_size=30).map("".join),
)


@settings(max_examples=600)
@given(TEXTS)
def test_the_secret_cues_answer_as_the_plain_pattern(text: str) -> None:
    assert looks_like_secret(text) == bool(PLAIN_SECRET.search(text))


@settings(max_examples=600)
@given(TEXTS)
def test_the_normaliser_cues_answer_as_the_plain_patterns(text: str) -> None:
    lowered = text.lower()
    assert bool(injection._LEETY.search(lowered)) == bool(PLAIN_LEETY.search(lowered))
    assert injection._uneven_space(lowered) == bool(PLAIN_UNEVEN.search(lowered))
    if injection._SPACED.search(lowered):
        assert injection._SPACED_CUE.search(lowered)


@settings(max_examples=600)
@given(TEXTS)
def test_the_scorer_finds_the_moves_the_plain_loop_finds(text: str) -> None:
    normal = injection.normalise(text)
    words = set(re.findall(r"[a-z]+", normal))
    words.update(mark for mark in (":", "<", "[", "#", "--", "!!", "](") if mark in normal)
    plain = tuple(
        name
        for name, _, needs, pattern in injection.SIGNALS
        if (needs is None or not needs.isdisjoint(words)) and pattern.search(normal)
    )
    assert injection.injection_score(text)[1] == plain
