"""PostgreSQL's lexical search ranks by ``ts_rank`` over the text's length (issue 19,
branch hpg4): the order and scores of a seeded corpus's searches are those of the same
query ordered by ``ts_rank(body, q, 2)`` in SQL, a memory's own words outrank a
neighbour's (weight A over C), and a word said twice does not outrank a text that says it
once (normalisation 2)."""

from __future__ import annotations

import random

from tests.backends import connection
from tests.conftest import StepClock, facade
from troth.core.query import lexical_terms
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.postgres.search import tsquery_text

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


def _corpus(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(count)]


def test_the_lexical_order_is_ts_rank_over_the_length(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with facade(store, clock=StepClock()) as memory:
        memory.remember_many(
            [{"text": text, "session": f"s{i // 5}"} for i, text in enumerate(_corpus(19, 120))]
        )
        db = connection(store)
        for question in ("tea parrot", "violin", "harbour lantern meadow", "peppers"):
            terms = lexical_terms(question)
            hits = store.lexical(ALICE, terms, 40, MemoryFilter(retrievable_only=True))
            expected = db.execute(
                "SELECT id, ts_rank(body, q, 2) AS score FROM memories,"
                " to_tsquery(%s::regconfig, %s) AS q WHERE body @@ q AND owner = %s"
                ' ORDER BY score DESC, seq DESC, id COLLATE "C" LIMIT 40',
                (TEXT_SEARCH_CONFIG, tsquery_text(terms), ALICE),
            ).fetchall()
            assert len(hits) == len(expected) > 0, question
            assert [h.memory_id for h in hits] == [str(row[0]) for row in expected]
            assert [h.score for h in hits] == [float(row[1]) for row in expected]


def test_own_words_outrank_a_neighbours_and_a_repeat_does_not_outrank(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with facade(store, clock=StepClock()) as memory:
        own = memory.remember("quetzal feathers", session="s1").memory.id
        beside = memory.remember("a fine bird indeed", session="s1").memory.id
        once = memory.remember("quetzal", session="s2").memory.id
        thrice = memory.remember("quetzal quetzal quetzal", session="s3").memory.id
        hits = store.lexical(ALICE, lexical_terms("quetzal"), 10, MemoryFilter())
        score = {h.memory_id: h.score for h in hits}
        assert set(score) == {own, beside, once, thrice}
        # The neighbour holds the word only at weight C (context expansion).
        assert score[own] > score[beside] > 0
        # Divided by the length: saying it three times is not three times as relevant.
        assert score[once] > score[thrice]
