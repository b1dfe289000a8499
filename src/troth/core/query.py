"""Query analysis for recall: content words, the lexical terms, and intent.

Pure standard library. Recall calls :func:`lexical_terms` to build the lexical query
(:class:`Term` values; each store renders them in its own syntax: an FTS5 MATCH on
SQLite, a ``tsquery`` on PostgreSQL) and :func:`candidate_limits` to decide how many candidates to fetch
from each index; the ranker calls :func:`analyze_query` for the intent signals.

Nothing here knows any particular conversation: the word lists are general English
stopwords, question words and calendar words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "CandidateLimits",
    "NamedDay",
    "QueryAnalysis",
    "Term",
    "analyze_query",
    "candidate_limits",
    "content_terms",
    "drop_common_terms",
    "fts5_match_expression",
    "has_time_expression",
    "lexical_terms",
    "named_days",
    "named_terms",
    "term_pattern",
    "tokenize",
]

T = TypeVar("T")

# General English stopwords plus the auxiliaries and question words a recall query
# is phrased with; they carry no topic, and in an OR-query they would match most rows.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can cannot could couldn did didn do does
    doesn doing don down during each else ever few for from further get gets got had
    hadn has hasn have haven having he her here hers herself him himself his how i if in
    into is isn it its itself just let like ll me might more most much must mustn my
    myself no nor not now of off on once only or other ought our ours ourselves out over
    own re same shall shan she should shouldn so some such than that the their theirs
    them themselves then there these they this those through to too under until up upon
    us ve very was wasn we were weren what whatever when whenever where whereas which
    while who whom whose why will with won would wouldn yet you your yours yourself
    yourselves s t d m o y kind kinds sort type types thing things something anything
    way ways many often long
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

# Words that, in a question, ask for a point or span in time.
_TEMPORAL_QUESTION = re.compile(
    r"\b(when|what\s+(year|month|day|date|time)|which\s+(year|month|day|date)|"
    r"how\s+long|how\s+many\s+(years|months|weeks|days)|since\s+when|what\s+age)\b",
    re.IGNORECASE,
)

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_ABBREVIATIONS = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

# Time expressions in a memory's text: relative day/week/month words, month and weekday
# names, years, "ago", "last/next <unit>". A turn that says *when* something happened
# is what a "when did ..." question needs.
_TIME_EXPRESSION = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|recently|ago|last\s+(night|week|weekend|month|year|"
    r"summer|winter|spring|fall|autumn|time|" + "|".join(_WEEKDAYS) + r")|"
    r"next\s+(week|weekend|month|year|" + "|".join(_WEEKDAYS) + r")|"
    r"this\s+(morning|afternoon|evening|week|weekend|month|year|summer|winter|spring|fall)|"
    r"the\s+other\s+day|(a|one|two|three|few|couple\s+of)\s+(days|weeks|months|years)|"
    r"(19|20)\d\d|" + "|".join(_MONTHS) + "|" + "|".join(_WEEKDAYS) + r")\b",
    re.IGNORECASE,
)

_APOSTROPHES = "'\u2019"
# A word (letters and digits, inner apostrophes allowed) with the part before its first
# apostrophe captured: findall then gives each token without its possessive/contracted
# tail in one pass in C (a recall tokenises a few hundred texts; a split per word looked
# up a compiled pattern per word).
_TOKEN_HEAD = re.compile(r"([^\W_]+)(?:[" + _APOSTROPHES + r"][^\W_]+)*", re.UNICODE)
_APOSTROPHE = re.compile("[" + _APOSTROPHES + "]")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
# A calendar day a question names: "9 November, 2022", "November 9th 2022", "3 June",
# "5 Feb. 2020". The year is optional (then any year's day matches); abbreviated months
# count ("Nov 9"). Any four or more digits after the day are its year, kept even when no
# memory can be from it, so that a day never widens to every year.
_MONTH_NAME = r"(" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)(?:\.|\b)"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR_AFTER = r"(?:,?\s*(\d{4,})\b)?"
_DAY_MONTH = re.compile(r"\b" + _ORDINAL + r"\s+(?:of\s+)?" + _MONTH_NAME + _YEAR_AFTER, re.I)
_MONTH_DAY = re.compile(r"\b" + _MONTH_NAME + r"\s+" + _ORDINAL + r"\b" + _YEAR_AFTER, re.I)
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def tokenize(text: str) -> list[str]:
    """Split text into lower-case word tokens, dropping possessive/contracted tails."""
    found: list[str] = _TOKEN_HEAD.findall(text.lower())
    return found


def content_terms(text: str) -> list[str]:
    """Return the query's content words in order, without stopwords or repeats."""
    seen: dict[str, None] = {}
    for token in tokenize(text):
        if token in STOPWORDS or token in seen:
            continue
        seen[token] = None
    return list(seen)


@dataclass(frozen=True, slots=True)
class Term:
    """One word of a lexical query: matched as is, or (``prefix``) as a word's beginning.

    A lexical search matches any of its terms. The text is data, never syntax: each store
    quotes it in its own query language.
    """

    text: str
    prefix: bool = False


def lexical_terms(
    text: str, *, prefix_min_length: int = 5, terms: Sequence[str] | None = None
) -> tuple[Term, ...]:
    """The lexical query for free text: its content words, the long ones as prefixes.

    Words of at least ``prefix_min_length`` characters match as a prefix so that "paint"
    finds "painting" even without a stemmer; shorter ones would match too much. Empty
    when the text has no content word (the caller then skips the lexical index).
    ``terms`` overrides the words taken from ``text`` (e.g. after
    :func:`drop_common_terms`).
    """
    if terms is None:
        terms = content_terms(text)
    return tuple(
        Term(term, bool(prefix_min_length) and len(term) >= prefix_min_length) for term in terms
    )


def fts5_match_expression(
    text: str, *, prefix_min_length: int = 5, terms: Sequence[str] | None = None
) -> str | None:
    """:func:`lexical_terms` as an FTS5 MATCH expression (for a plain FTS5 table).

    The stores render terms themselves; this form serves code that queries an FTS5 table
    of its own (the LoCoMo benchmark). Each term is quoted (inner quotes doubled), so no
    input reaches FTS5's syntax; ``None`` without content words.
    """
    found = lexical_terms(text, prefix_min_length=prefix_min_length, terms=terms)
    if not found:
        return None
    return " OR ".join('"' + t.text.replace('"', '""') + '"' + "*" * t.prefix for t in found)


def drop_common_terms(terms: Sequence[T], common: Collection[T]) -> list[T]:
    """``terms`` without the ``common`` ones, unless every term is common: then all stay.

    The one rule for a too-common word, wherever it is applied: SQLite's lexical search
    leaves out the terms bm25 gives no weight (``storage.sqlite.terms.CommonTerms``, in
    half the rows or more), and the benchmark's ``drop-common-terms`` ablation those in
    more than a fifth of the turns. A question made only of common words keeps them all
    rather than one of them: which is least common is not known where the counts stop at
    the threshold (CommonTerms counts no further than half the rows), and the rows holding
    any of them are then as good candidates as the rows holding one.
    """
    kept = [term for term in terms if term not in common]
    return kept or list(terms)


@dataclass(frozen=True, slots=True)
class CandidateLimits:
    """How many candidates the store fetches from each index for one recall."""

    lexical: int
    vector: int


def candidate_limits(top_k: int, *, corpus_size: int | None = None) -> CandidateLimits:
    """Return how many candidates to fetch from each index for a recall of ``top_k``.

    Depth matters beyond ``top_k``: the neighbour lift can only use neighbours that are
    candidates, and a relevant memory is often ranked 50-300 by one index alone. On
    LoCoMo, 500 per index gave +0.02 recall@10 over 100 (docs/retrieval.md); it costs a
    few milliseconds per recall on SQLite.
    """
    depth = max(500, 50 * top_k)
    if corpus_size is not None:
        depth = min(depth, max(corpus_size, 1))
    return CandidateLimits(lexical=depth, vector=depth)


@dataclass(frozen=True, slots=True)
class NamedDay:
    """A calendar day a query names; ``year`` is ``None`` when it gives none."""

    year: int | None
    month: int
    day: int

    def matches(self, year: int, month: int, day: int) -> bool:
        """Whether the date ``year-month-day`` is this day."""
        return self.month == month and self.day == day and self.year in (None, year)


def named_days(text: str) -> tuple[NamedDay, ...]:
    """The calendar days ``text`` names ("on 9 November, 2022", "May 3rd"), in order.

    A day number that no month can have (32, 0) is not a day, nor a lower-case "may"
    without a year (the modal verb is far commoner).
    """
    found: dict[NamedDay, None] = {}
    spans = [
        (m.start(), int(m.group(1)), m.group(2), m.group(3)) for m in _DAY_MONTH.finditer(text)
    ]
    spans += [
        (m.start(), int(m.group(2)), m.group(1), m.group(3)) for m in _MONTH_DAY.finditer(text)
    ]
    for _, day, month_name, year in sorted(spans):
        if month_name == "may" and not year:
            continue  # "I may 2 ..." : lower-case "may" is a day's month only with a year
        month = _MONTH_ABBREVIATIONS[month_name.lower()[:3]]
        if 1 <= day <= _DAYS_IN_MONTH[month - 1]:
            found.setdefault(NamedDay(int(year) if year else None, month, day))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What the ranker needs to know about a query."""

    text: str
    terms: tuple[str, ...]
    asks_when: bool
    years: tuple[int, ...]
    months: tuple[int, ...]
    names: tuple[str, ...] = ()
    days: tuple[NamedDay, ...] = ()


def analyze_query(text: str) -> QueryAnalysis:
    """Analyse a recall query: content terms, whether it asks "when", dates it names."""
    tokens = tokenize(text)
    years = tuple(sorted({int(y) for y in _YEAR.findall(text)}))
    months = tuple(
        sorted(
            {
                _MONTH_ABBREVIATIONS[t[:3]]
                for t in tokens
                # "may" is a month only next to a year; as a modal verb it is far commoner.
                if (t in _MONTHS and (t != "may" or years)) or _is_abbr(t)
            }
        )
    )
    return QueryAnalysis(
        text=text,
        terms=tuple(content_terms(text)),
        asks_when=bool(_TEMPORAL_QUESTION.search(text)),
        years=years,
        months=months,
        names=tuple(named_terms(text)),
        days=named_days(text),
    )


_ABBREVIATIONS = frozenset(
    ["jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
)


def _is_abbr(token: str) -> bool:
    return token in _ABBREVIATIONS


def has_time_expression(text: str) -> bool:
    """Whether a memory's text mentions a time (relative word, month, weekday, year)."""
    return _TIME_EXPRESSION.search(text) is not None


_CALENDAR_WORDS = (
    frozenset(_MONTHS) | frozenset(_WEEKDAYS) | frozenset(_MONTH_ABBREVIATIONS) | {"sept"}
)
_WORD_WITH_CASE = re.compile(r"[^\W_]+(?:[" + _APOSTROPHES + r"][^\W_]+)*", re.UNICODE)


def named_terms(text: str) -> list[str]:
    """The words a query names as things: capitalised inside the sentence, lower-cased.

    A word written with a capital that does not open the text ("What did *Caroline*
    paint?", "the trip to *Oslo*"), or any capitalised word of a keyword query ("*Paris*
    *Lyon*"), is a name, the most specific word a question can
    have. Stopwords ("The Four Seasons"), month and weekday names, and words in capitals
    throughout (acronyms, "I") are not counted. The relevance floor uses them: a ledger
    that holds no memory naming the thing holds no answer about it (docs/retrieval.md).
    """
    names: dict[str, None] = {}
    words = _WORD_WITH_CASE.findall(text)
    # A sentence's first word is capitalised by grammar; in a list of keywords ("Paris
    # Lyon": no stopword, no question mark) it is capitalised because it is a name.
    keywords = "?" not in text and not any(w.lower() in STOPWORDS for w in words)
    for index, word in enumerate(words):
        base = _APOSTROPHE.split(word, maxsplit=1)[0]
        lower = base.lower()
        if (
            (index > 0 or keywords)
            and base[:1].isupper()
            and not base.isupper()
            and lower not in STOPWORDS
            and lower not in _CALENDAR_WORDS
        ):
            names[lower] = None
    return list(names)


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str, *, prefix: bool = True) -> re.Pattern[str]:
    """A regular expression finding ``term`` in lower-case text roughly as the index would.

    The term loses a plain inflection (``-s``, ``-es``, ``-ed``, ``-ing``, ``-ly``); a
    root of four letters or more then matches as a word prefix ("painting" finds
    "painted", "paints"), a shorter one as a word with an inflection at most ("cat" finds
    "cats", not "catalogue"). An approximation of FTS5's porter stemmer that needs no
    index, so that both backends judge relevance alike. Compiled once per term and kept
    (the 4,096 most recently asked: a question's words, never a memory's text).
    """
    root = term
    for suffix in ("ing", "ed", "es", "ly", "s") if prefix else ():
        if len(term) > len(suffix) + 2 and term.endswith(suffix):
            root = term[: -len(suffix)]
            break
    escaped = re.escape(root)
    if prefix and len(root) >= 5:
        return re.compile(r"(?<![^\W_])" + escaped)
    return re.compile(r"(?<![^\W_])" + escaped + r"(?:s|es|ed|ing|d)?(?![^\W_])")
