"""SQLite's two searches return, row for row, what the plain statements return (issue 19,
branch hcpu: the lexical rows are sorted as tuples, the vector rows that pass the filter
come back as one ordered array instead of a map of rids).

The oracles are plain SQL, one statement per question (lexical) or per nearest row (vector),
with no JSON packing: the same ids, ranks, scores and positions, in the same order.
"""

from __future__ import annotations

import random
from pathlib import Path

from tests.conftest import vector_facade
from troth.core.query import lexical_terms
from troth.embedding import HashingEmbedder
from troth.service.recall import Query
from troth.storage.base import MemoryFilter
from troth.storage.rows import CONTEXT_WEIGHT
from troth.storage.sqlite import SQLiteStore
from troth.storage.sqlite.schema import sqlite3
from troth.storage.sqlite.search import FILTERS, fts5_match
from troth.storage.vectors import as_vector

_WORDS = [f"topic{i}" for i in range(30)] + ["garden", "painting", "trip", "music"]


def _store(tmp_path: Path) -> tuple[SQLiteStore, list[str]]:
    rng = random.Random(3)
    store = SQLiteStore(tmp_path / "troth.db")
    with vector_facade(store) as memory:
        items = [
            {
                "text": " ".join(rng.choice(_WORDS) for _ in range(8)),
                "session": f"s{i // 10}",
                # Every fifth is sensitive: the default filter drops it from both searches.
                "sensitivity": "sensitive" if i % 5 == 0 else "normal",
            }
            for i in range(240)
        ]
        ids = [r.id for r in memory.remember_many(items)]
        for memory_id in ids[1:40:3]:  # forgotten: no text, no vector, never a hit
            memory.forget(memory_id, reason="test")
    return store, ids


def test_lexical_rows_are_the_plain_statements(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    flt = MemoryFilter(retrievable_only=True)
    where, params = FILTERS.where("human:alice", flt, alias="m")
    db = sqlite3.connect(tmp_path / "troth.db")  # the oracle reads on its own connection
    for question in ["garden painting", "topic3 trip music", "topic7", "music topic1 topic2"]:
        terms = lexical_terms(question)
        for limit in (5, 40, 500):
            hits = store.lexical("human:alice", terms, limit, flt)
            # The terms the search ran: without those in half the rows (storage.sqlite.terms).
            ran = store.search.common.scored(db, terms, fts5_match, store.search.common.total)
            plain = db.execute(
                # The context column weighs CONTEXT_WEIGHT of the body's (context expansion).
                f"SELECT m.id, bm25(memory_fts, 1.0, {CONTEXT_WEIGHT}) AS s, m.seq FROM memory_fts"
                " CROSS JOIN memories m ON m.rid = memory_fts.rowid"
                f" WHERE memory_fts MATCH ? AND {where} ORDER BY s, memory_fts.rowid LIMIT ?",
                [fts5_match(ran), *params, limit],
            ).fetchall()
            assert [(h.memory_id, h.rank, h.score, h.seq) for h in hits] == [
                (i, rank, -score, seq) for rank, (i, score, seq) in enumerate(plain, start=1)
            ]


def test_vector_rows_are_the_nearest_that_pass_in_order(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    flt = MemoryFilter(retrievable_only=True)
    where, params = FILTERS.where("human:alice", flt, alias="m")
    db = sqlite3.connect(tmp_path / "troth.db")
    embedder = HashingEmbedder()  # vector_facade's
    for question in ["garden painting", "topic3 trip", "music"]:
        vector = as_vector(embedder.embed([question])[0], embedder.dim)
        for limit in (5, 60, 500):
            hits = store.vector("human:alice", vector, limit, flt)
            copy = store.search.vectors.get(
                "human:alice", store.search.generation(db, "human:alice")
            )
            assert copy is not None  # the in-process copy the search read
            nearest = copy.nearest(vector, 10_000)
            expected = []
            for rid, score in nearest:
                row = db.execute(
                    f"SELECT m.id, m.seq FROM memories m WHERE m.rid = ? AND {where}",
                    [rid, *params],
                ).fetchone()
                if row is not None:
                    expected.append((row[0], score, row[1]))
            expected = expected[:limit]
            assert [(h.memory_id, h.score, h.seq) for h in hits] == expected
            assert [h.rank for h in hits] == list(range(1, len(expected) + 1))


def test_a_forgotten_memory_is_not_recalled_by_the_words_it_held(tmp_path: Path) -> None:
    """Nothing of the faster recall keeps a memory's text between recalls: once forgotten,
    the same question no longer finds it (nor any trace of its text in the hits)."""
    store = SQLiteStore(tmp_path / "troth.db")
    with vector_facade(store) as memory:
        kept = memory.remember("I planted quinces in the orchard").id
        gone = memory.remember("The zanzibarian lighthouse keeper owes me money").id
        question = Query(text="zanzibarian lighthouse orchard", min_relevance=None)
        assert {h.memory.id for h in memory.recall(question)} == {kept, gone}
        memory.forget(gone, reason="asked to")
        hits = memory.recall(question)
        assert [h.memory.id for h in hits] == [kept]
        assert "zanzibarian" not in repr([h.to_dict() for h in hits])
