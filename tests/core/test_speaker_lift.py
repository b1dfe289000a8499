"""The speaker step of core.ranking: a memory whose speaker the question names is lifted."""

from __future__ import annotations

from dataclasses import replace

from troth.core.ranking import DEFAULT_RANKING, Candidate, rank


def _turn(memory_id: str, speaker: str, text: str) -> Candidate:
    return Candidate(
        memory_id,
        f"{speaker}: {text}",
        "2023-05-08T13:56:00",
        lexical_rank=1,
        lexical_score=2.0,
        vector_rank=1,
        vector_score=0.5,
        speaker=speaker,
    )


def test_the_named_speakers_memory_comes_first_by_the_speaker_weight() -> None:
    candidates = [_turn("a", "Nate", "I baked a cake"), _turn("b", "Joanna", "I baked a cake")]
    # The brief factor off: it scales both scores, and so the difference the lift makes.
    config = replace(DEFAULT_RANKING, brief_words=0)
    hits = rank("What cake has Joanna baked?", candidates, config=config)
    assert [h.memory_id for h in hits] == ["b", "a"]
    assert hits[0].explanation.adjustments["speaker"] == DEFAULT_RANKING.speaker_weight
    assert "speaker" not in hits[1].explanation.adjustments
    assert hits[0].score - hits[1].score == DEFAULT_RANKING.speaker_weight


def test_a_question_naming_both_speakers_lifts_both_alike() -> None:
    candidates = [_turn("a", "Nate", "I baked a cake"), _turn("b", "Joanna", "I baked a cake")]
    hits = rank("What cake have Nate and Joanna baked?", candidates)
    assert hits[0].score == hits[1].score
    assert [h.memory_id for h in hits] == ["a", "b"]  # the tie breaks by id


def test_a_question_naming_no_speaker_lifts_none() -> None:
    hits = rank("What cake was baked?", [_turn("a", "Nate", "I baked a cake")])
    assert "speaker" not in hits[0].explanation.adjustments


def test_a_speakers_function_words_name_no_one() -> None:
    # "The Doctor" is named by "doctor", not by the "what" and "the" of every question.
    hits = rank("What is the cake tin for?", [_turn("a", "What The Doctor", "a cake tin")])
    assert "speaker" not in hits[0].explanation.adjustments
    hits = rank("What did the doctor bake?", [_turn("a", "What The Doctor", "a cake tin")])
    assert hits[0].explanation.adjustments["speaker"] == DEFAULT_RANKING.speaker_weight
