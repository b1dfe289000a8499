"""SQLite's lexical search leaves out the words bm25 gives no weight (storage.sqlite.terms)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import facade
from troth.core.query import Term
from troth.storage.base import MemoryFilter
from troth.storage.sqlite import SQLiteStore

TOPICS = ["tea", "jazz", "chess", "trains"]


def _store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "troth.db")
    with facade(store) as memory:
        memory.remember_many(
            [
                {"text": f"note {i}: likes {TOPICS[i % 4]}" + " tea" * (i % 8 == 0)}
                for i in range(200)
            ]
        )
    return SQLiteStore(tmp_path / "troth.db")


def test_a_word_in_every_memory_adds_no_candidate_and_changes_no_order(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.owners()[0]
    both = store.lexical(owner, [Term("tea"), Term("note")], 500, MemoryFilter())
    alone = store.lexical(owner, [Term("tea")], 500, MemoryFilter())
    # "note" is in all 200: bm25 clamps its idf, so it ranks nothing and is not queried.
    assert [h.memory_id for h in both] == [h.memory_id for h in alone]
    assert [h.score for h in both] == [h.score for h in alone]
    assert 0 < len(both) < 200


def test_a_common_word_alone_is_still_searched(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.owners()[0]
    assert len(store.lexical(owner, [Term("note")], 500, MemoryFilter())) == 200


def test_a_word_in_fewer_than_half_is_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.owners()[0]
    # "jazz" (50 memories) and "chess" (50): neither is common, both are searched.
    hits = store.lexical(owner, [Term("jazz"), Term("chess")], 500, MemoryFilter())
    assert len(hits) == 100


def test_a_question_of_common_words_only_keeps_them_all(tmp_path: Path) -> None:
    # The one rule of core.query.drop_common_terms: every term common, none is left out.
    store = _store(tmp_path)
    owner = store.owners()[0]
    hits = store.lexical(owner, [Term("note"), Term("likes")], 500, MemoryFilter())
    assert len(hits) == 200
