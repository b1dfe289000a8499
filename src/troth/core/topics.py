"""What a text is about, for the policy's content rules: minors and health.

The policy's strongest rules name topics: nothing about minors is stored, health waits for
the person. A writer that names no topic (an agent, an importer, a person in a hurry) must not
get past them, so a text whose topic is ``general`` is read for them (``Policy.decide``), the
way credentials are. Both detectors err towards the rule: a false "health" only asks the person,
and a false "minors" keeps a sentence out that the person can store with an explicit topic.

- **minors**: someone's child named as such ("my kids", "Anna's toddler"), a son, daughter,
  niece, nephew or grandchild together with what only children have (school years,
  kindergarten, nursery, daycare, a babysitter, a bedtime, an age under 18), or "a
  7-year-old".
- **health**: a diagnosis, a condition, a treatment or a clinician (diagnosed, medication,
  therapy, surgery, asthma, diabetes, depression, pregnancy, my doctor, …).

Measured in ``tests/core/test_topics.py``; the default policy turns each on under
``[detectors]`` (``minors``, ``health``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

_WHOSE = r"(?:my|our|his|her|their|your|[A-Z][a-z]+'s)\s+(?:[\w-]+\s+)?"
# A child of someone's: "my kids", "Anna's toddler", "our little baby".
_CHILD: Final = re.compile(
    _WHOSE + r"(?:child|children|kids?|kiddos?|toddlers?|bab(?:y|ies)|infants?|newborns?"
    r"|teen(?:ager)?s?|pre-?teens?|step-?kids?)\b",
)
_OFFSPRING: Final = re.compile(
    r"\b(?:sons?|daughters?|step-?(?:son|daughter)s?|nieces?|nephews?|grand(?:son|daughter"
    r"|child|kid)s?)\b",
    re.IGNORECASE,
)
_UNDER_18 = r"(?:1[0-7]|[1-9]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
# What only children have, or an age under 18, said of an offspring.
_CHILDHOOD: Final = re.compile(
    r"\b(?:(?:starts?|started|starting|begins?|began|back to|first day (?:of|at)) school"
    r"|kindergarten|pre-?school|nursery|daycare|day care|creche|babysitters?|nanny|playdates?"
    r"|bedtime|homework|(?:primary|elementary|middle|junior high|high) school|school bus"
    r"|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|\d(?:st|nd|rd|th)?) grade"
    r"|diapers?|nappies|pacifier|potty|lullab(?:y|ies)|teething"
    rf"|(?:is|turns?|turned|turning|aged?) {_UNDER_18}\b(?! ?(?:%|am|pm|:|hours?|minutes?"
    r"|days?|weeks?|km|miles?|kg))|" + _UNDER_18 + r"[- ](?:years?|months?)[- ]old)\b",
    re.IGNORECASE,
)
# "a 7-year-old", "my 3-year-old": the hyphenated age before a noun is a child's.
_AGED: Final = re.compile(rf"\b{_UNDER_18}-(?:year|month)-olds?\b", re.IGNORECASE)
_HEALTH: Final = re.compile(
    r"\b(?:diagnos(?:ed|is|es)|prescri(?:bed|ption)s?|medications?|meds\b|antibiotics?"
    r"|antidepressants?|insulin|chemo(?:therapy)?|radiotherapy|physiotherapy|in therapy"
    r"|therapy sessions?|(?:my|her|his|their) (?:therapist|counsell?or|psychologist"
    r"|psychiatrist)|surger(?:y|ies)|operation on"
    r"|my (?:doctor|gp|physician|dentist|surgeon|cardiologist|oncologist|dermatologist)"
    r"|hospitali[sz]ed|in (?:the )?hospital|icu\b|a&e\b|emergency room|blood (?:pressure|test"
    r"|sugar)|cholesterol|asthma|diabet(?:es|ic)|cancer|tumou?r|leuka?emia|epilep(?:sy|tic)"
    r"|migraines?|arthritis|allerg(?:y|ies|ic)|intoleran(?:t|ce) to|celiac|coeliac|crohn'?s"
    r"|hiv\b|aids\b|hepatitis|covid|long covid|depress(?:ion|ed)|anxiety (?:disorder|attacks?)|panic attacks?|ptsd"
    r"|adhd|autis(?:m|tic)|bipolar|schizophreni|eating disorder|anorexi|bulimi|ocd\b"
    r"|insomnia|sleep apnea|pregnan(?:t|cy)|miscarriage|ivf\b|infertil|menopause|heart"
    r" (?:attack|condition|disease|failure)|(?:had|suffered|have) a (?:mini-?)?stroke\b|dementia|alzheimer|parkinson"
    r"|disabilit(?:y|ies)|disabled|wheelchair|chronic (?:pain|illness)|illness|disease"
    r"|symptoms?|side effects?|(?:\d+\s?mg)\b|dosage|relapse|rehab\b|sober|addiction)\b",
    re.IGNORECASE,
)


# The words every minors pattern needs one of: most text has none and skips the patterns.
_MINOR_WORDS: Final = frozenset(
    [
        *("child", "children", "kid", "kids", "kiddo", "kiddos", "toddler", "toddlers"),
        *("baby", "babies", "infant", "infants", "newborn", "newborns", "minor", "minors"),
        *("teen", "teens", "teenager", "teenagers", "preteen", "preteens", "stepkid"),
        *("stepkids", "son", "sons", "daughter", "daughters", "stepson", "stepsons"),
        *("stepdaughter", "stepdaughters", "niece", "nieces", "nephew", "nephews"),
        *("grandson", "grandsons", "granddaughter", "granddaughters", "grandchild"),
        *("grandchildren", "grandkid", "grandkids", "year", "month"),
    ]
)


def looks_like_minor(text: str) -> bool:
    """True when ``text`` is about a child."""
    if _words(text).isdisjoint(_MINOR_WORDS):
        return False
    if _CHILD.search(text) or _AGED.search(text):
        return True
    return bool(_OFFSPRING.search(text) and _CHILDHOOD.search(text))


# The words _HEALTH's alternatives are built on: a text holding none of them skips the long
# pattern, as ordinary text does (the policy reads every write; a set lookup per word is far
# cheaper than trying a hundred alternatives at every position).
_HEALTH_WORDS: Final = frozenset(
    [
        "diagnosed",
        "diagnosis",
        "diagnoses",
        "prescribed",
        "prescription",
        "prescriptions",
        "medication",
        "medications",
        "meds",
        "antibiotic",
        "antibiotics",
        "antidepressant",
        "antidepressants",
        "insulin",
        "chemo",
        "chemotherapy",
        "radiotherapy",
        "physiotherapy",
        "therapy",
        "therapist",
        "counsellor",
        "counselor",
        "psychologist",
        "psychiatrist",
        "surgery",
        "surgeries",
        "surgeon",
        "operation",
        "hospitalised",
        "hospitalized",
        "hospital",
        "icu",
        "a&e",
        "emergency",
        "blood",
        "cholesterol",
        "asthma",
        "diabetes",
        "diabetic",
        "cancer",
        "tumour",
        "tumor",
        "leukemia",
        "leukaemia",
        "epilepsy",
        "epileptic",
        "migraine",
        "migraines",
        "arthritis",
        "allergy",
        "allergies",
        "allergic",
        "intolerant",
        "intolerance",
        "celiac",
        "coeliac",
        "crohn",
        "crohns",
        "hiv",
        "aids",
        "hepatitis",
        "covid",
        "depression",
        "depressed",
        "anxiety",
        "panic",
        "ptsd",
        "adhd",
        "autism",
        "autistic",
        "bipolar",
        "schizophrenia",
        "schizophrenic",
        "eating",
        "anorexia",
        "anorexic",
        "bulimia",
        "bulimic",
        "ocd",
        "insomnia",
        "apnea",
        "pregnant",
        "pregnancy",
        "miscarriage",
        "ivf",
        "infertile",
        "infertility",
        "menopause",
        "heart",
        "stroke",
        "dementia",
        "alzheimer",
        "alzheimers",
        "parkinson",
        "parkinsons",
        "disability",
        "disabilities",
        "disabled",
        "wheelchair",
        "chronic",
        "illness",
        "disease",
        "symptom",
        "symptoms",
        "side",
        "mg",
        "dosage",
        "relapse",
        "rehab",
        "sober",
        "addiction",
        "doctor",
        "gp",
        "physician",
        "dentist",
        "cardiologist",
        "oncologist",
        "dermatologist",
    ]
)
_WORD: Final = re.compile(r"[a-z&]+")


@lru_cache(maxsize=4)
def _words(text: str) -> frozenset[str]:
    """A text's lower-case words; the policy asks both detectors about the same text in turn."""
    return frozenset(_WORD.findall(text.lower()))


def looks_like_health(text: str) -> bool:
    """True when ``text`` is about someone's health: a condition, a treatment, a clinician."""
    words = _words(text)
    return not words.isdisjoint(_HEALTH_WORDS) and bool(_HEALTH.search(text))
