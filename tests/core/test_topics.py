"""The content rules' detectors: minors and health, whatever topic the writer named."""

from __future__ import annotations

import pytest

from troth.core.topics import looks_like_health, looks_like_minor

MINORS = [
    "My daughter Lena starts school in September",
    "my kids love the beach",
    "Anna's toddler is afraid of dogs",
    "Our son turns 7 next week",
    "My nephew is in third grade now",
    "We hired a babysitter for my niece on Fridays",
    "a 5-year-old in my street plays the violin",
    "Tom's grandson goes to kindergarten",
]
NOT_MINORS = [
    "My daughter is a surgeon in Lyon",
    "I took baby steps with the new diet",
    "I kid you not, the train was on time",
    "My son is 34 and lives in Berlin",
    "The meeting is 5 minutes long",
    "My car is 7 years old",
    "I love my new job",
]
HEALTH = [
    "I was diagnosed with asthma last year",
    "I am allergic to peanuts",
    "My doctor changed my medication",
    "She is pregnant with twins",
    "I take 20 mg of sertraline for depression",
]
NOT_HEALTH = ["I prefer green tea in the afternoon"]


@pytest.mark.parametrize("text", MINORS)
def test_facts_about_children_are_read_as_minors(text: str) -> None:
    assert looks_like_minor(text)


@pytest.mark.parametrize("text", NOT_MINORS)
def test_adults_and_idioms_are_not_minors(text: str) -> None:
    assert not looks_like_minor(text)


@pytest.mark.parametrize("text", HEALTH)
def test_conditions_and_treatments_are_read_as_health(text: str) -> None:
    assert looks_like_health(text)


def test_ordinary_preferences_are_not_health() -> None:
    assert not looks_like_health(NOT_HEALTH[0])
