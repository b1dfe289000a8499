"""PostgreSQL's lexical search ranks by BM25 (``storage.postgres.search.bm25_statement``):
the order and scores of a seeded corpus's searches are those of BM25 computed here in
Python from the stored ``tsvector`` lexemes; a rare word outranks a common one (idf, which
``ts_rank`` before had not); a memory's own words outrank a neighbour's (weight A over C);
a word said three times counts as once; and a longer text ranks below a shorter one."""

from __future__ import annotations

import math
import random
import re

import pytest

from tests.backends import connection
from tests.conftest import StepClock, facade
from troth.core.query import lexical_terms
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.postgres.search import BM25_B, BM25_K1, CONTEXT_WEIGHT

ALICE = "human:alice"
WORDS = [
    "tea",
    "kettle",
    "garden",
    "parrot",
    "novel",
    "violin",
    "harbour",
    "lantern",
    "meadow",
    "pepper",
]
# One lexeme of a tsvector's text form and its positions: 'kettl':3A,7C
_LEXEME = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


def _corpus(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(count)]


def _weights(vector: str) -> dict[str, set[str]]:
    """Each lexeme of a tsvector's text and the weights of its positions (D unmarked)."""
    found = {}
    for lexeme, positions in _LEXEME.findall(vector):
        found[lexeme.replace("''", "'")] = {
            p[-1] if p[-1] in "ABC" else "D" for p in (positions or "1").split(",")
        }
    return found


def _expected_bm25(db: object, question: str) -> list[tuple[str, float]]:
    """BM25 as documented on ``bm25_statement``, over the owner's retrievable matches."""
    terms = [t for t in lexical_terms(question) if t.text]
    lexemes = []
    for term in terms:
        (normal,) = db.execute(  # type: ignore[attr-defined]
            "SELECT to_tsquery(%s::regconfig, %s)::text",
            (TEXT_SEARCH_CONFIG, "'" + term.text.replace("'", "''") + "'"),
        ).fetchone()
        lexemes.append((normal.strip("'"), term.prefix))
    rows = db.execute(  # type: ignore[attr-defined]
        "SELECT id, seq, body::text, length(body) FROM memories WHERE owner = %s"
        " AND retrievable AND status = 'active' AND sensitivity <> 'sensitive'",
        (ALICE,),
    ).fetchall()
    per_memory = []
    for memory_id, seq, vector, length in rows:
        weights = _weights(vector)
        found = []
        for lexeme, prefix in lexemes:
            held = set().union(
                *(
                    w
                    for lx, w in weights.items()
                    if lx == lexeme or (prefix and lx.startswith(lexeme))
                )
            )
            found.append(1.0 if "A" in held else CONTEXT_WEIGHT if held else 0.0)
        if any(found):
            per_memory.append((str(memory_id), int(seq), float(length), found))
    total = float(len(per_memory))
    average = max(sum(m[2] for m in per_memory) / total, 1.0)
    holding = [sum(1 for m in per_memory if m[3][i] > 0) for i in range(len(lexemes))]
    scored = []
    for memory_id, seq, length, found in per_memory:
        score = 0.0
        for i, f in enumerate(found):
            idf = math.log(1 + (total - holding[i] + 0.5) / (holding[i] + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            score += idf * f * (BM25_K1 + 1) / (f + norm)
        scored.append((-score, -seq, memory_id))
    scored.sort()
    return [(memory_id, -negative) for negative, _, memory_id in scored]


def test_the_lexical_order_and_scores_are_bm25(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with facade(store, clock=StepClock()) as memory:
        memory.remember_many(
            [{"text": text, "session": f"s{i // 5}"} for i, text in enumerate(_corpus(19, 120))]
        )
        db = connection(store)
        for question in ("tea parrot", "violin", "harbour lantern meadow", "peppers", "kettles"):
            hits = store.lexical(
                ALICE, lexical_terms(question), 40, MemoryFilter(retrievable_only=True)
            )
            expected = _expected_bm25(db, question)[:40]
            assert len(hits) == len(expected) > 0, question
            assert [h.memory_id for h in hits] == [m for m, _ in expected], question
            assert [h.score for h in hits] == pytest.approx([s for _, s in expected], rel=1e-9)


def test_a_rare_word_outranks_a_common_one(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with facade(store, clock=StepClock()) as memory:
        for i in range(12):
            memory.remember(f"tea in the morning {i}", session=f"t{i}")
        # Written first: on a tie, the later memory (higher seq) would come first.
        rare = memory.remember("violin again", session="b").memory.id
        common = memory.remember("tea again", session="a").memory.id
        hits = store.lexical(ALICE, lexical_terms("tea violin"), 20, MemoryFilter())
        order = [h.memory_id for h in hits]
        # ts_rank gave both the same score (one word each, the same length).
        assert order.index(rare) == 0
        assert order.index(rare) < order.index(common)


def test_own_words_outrank_a_neighbours_a_repeat_counts_once(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with facade(store, clock=StepClock()) as memory:
        own = memory.remember("quetzal feathers", session="s1").memory.id
        beside = memory.remember("a fine bird indeed", session="s1").memory.id
        once = memory.remember("quetzal", session="s2").memory.id
        thrice = memory.remember("quetzal quetzal quetzal", session="s3").memory.id
        longer = memory.remember(
            "quetzal seen over the green forest canopy at dawn", session="s4"
        ).memory.id
        hits = store.lexical(ALICE, lexical_terms("quetzal"), 10, MemoryFilter())
        score = {h.memory_id: h.score for h in hits}
        assert set(score) == {own, beside, once, thrice, longer}
        # The neighbour holds the word only at weight C (context expansion).
        assert score[own] > score[beside] > 0
        # Whether a text holds the word, not how often: three times is once.
        assert score[once] == score[thrice]
        # Divided by the length: the longer text says more besides.
        assert score[once] > score[own] > score[longer]
