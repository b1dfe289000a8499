"""Whether a new statement contradicts an earlier one: the test behind ``contradicts`` links.

Pure standard library. A write through a channel trusted less than the strongest is compared
with the owner's retrievable memories from more trusted channels that share its words
(``service.conflicts``); where :func:`contradicts` holds, the new memory is linked to the
earlier one (``contradicts``) and recall marks the conflict (docs/retrieval.md, "Planted
memories").

The test is deliberately plain and errs towards linking: a false link only shows a conflict
that a person can dismiss, a missed one serves a planted "correction" as an equal. Two
statements contradict when they are about the same thing — most of the shorter one's
content words are in the other — and the new one either flips its polarity (one says
"not", "never", "no" or "…n't" an odd number of times more) or reads as a correction
("actually", "no longer", "instead", "wrong" …) of it.
"""

from __future__ import annotations

import re
from typing import Final

from troth.core.query import STOPWORDS, tokenize

__all__ = ["CORRECTION_CUES", "contradicts"]

_WORD: Final = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)
_NEGATORS: Final = frozenset(
    ["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without"]
)
CORRECTION_CUES: Final = frozenset(
    [
        "actually",
        "correction",
        "corrected",
        "correct",
        "incorrect",
        "wrong",
        "mistaken",
        "mistake",
        "update",
        "updated",
        "instead",
        "anymore",
        "longer",
        "switched",
        "changed",
        "retract",
        "retracted",
        "false",
        "untrue",
    ]
)
"""Words that mark a statement as the correction of another."""

#: The share of the shorter statement's content words the other must hold: with a flipped
#: polarity, and (lower) when the new one reads as a correction.
NEGATION_OVERLAP: Final = 0.6
CORRECTION_OVERLAP: Final = 0.4
#: Fewer shared content words than this (or than the shorter statement has) are too little
#: for a flipped polarity to say two texts speak of one thing.
MIN_SHARED: Final = 2


def _negations(text: str) -> int:
    count = 0
    for word in _WORD.findall(text.lower()):
        if word in _NEGATORS or word.endswith(("n't", "n\u2019t")):
            count += 1
    return count


def _stem(word: str) -> str:
    # A naive plural / third-person "s": "peanuts" meets "peanut", "likes" meets "like".
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _content(words: list[str]) -> set[str]:
    return {_stem(w) for w in words if w not in STOPWORDS and w not in CORRECTION_CUES}


def contradicts(newer: str, earlier: str) -> bool:
    """Whether ``newer`` contradicts ``earlier`` (see the module's docstring for the rule)."""
    earlier_words, newer_words = tokenize(earlier), tokenize(newer)
    held, said = _content(earlier_words), _content(newer_words)
    smaller = min(len(held), len(said))
    if max(len(held), len(said)) < MIN_SHARED or smaller == 0:
        return False  # one word against one word is too little to compare
    shared = held & said
    if not shared:
        return False
    # Measured on the shorter statement: "I don't live in Lisbon" speaks of all it says.
    overlap = len(shared) / smaller
    flipped = _negations(newer) % 2 != _negations(earlier) % 2
    if flipped and overlap >= NEGATION_OVERLAP and len(shared) >= min(MIN_SHARED, smaller):
        return True
    # A statement that says it corrects another needs less in common with it ("that's wrong,
    # I love peanuts" against "I am allergic to peanuts").
    corrects = any(w in CORRECTION_CUES for w in newer_words) and not any(
        w in CORRECTION_CUES for w in earlier_words
    )
    return corrects and overlap >= CORRECTION_OVERLAP
