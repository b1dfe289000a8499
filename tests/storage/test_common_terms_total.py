"""A lexical search of several words reads the index size in its own statement (issue 19).

Which words bm25 gives no weight depends on the index's size N (storage.sqlite.terms).
It used to be read by a statement of its own before every search of two or more words;
now the search reads it in its statement, the words are chosen at the N the previous
search read, and a search whose own N decides other words is run again with them.
"""

from __future__ import annotations

from pathlib import Path

from tests.backends import connection
from tests.conftest import facade
from troth.core.query import Term
from troth.storage.base import MemoryFilter
from troth.storage.sqlite import SQLiteStore

TOPICS = ["tea", "jazz", "chess", "trains"]


def _store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "troth.db")
    with facade(store) as memory:
        memory.remember_many([{"text": f"note {i}: likes {TOPICS[i % 4]}"} for i in range(200)])
    return SQLiteStore(tmp_path / "troth.db")


def test_a_search_of_two_words_is_one_statement(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.owners()[0]
    words = [Term("jazz"), Term("note")]
    store.lexical(owner, words, 20, MemoryFilter())  # counts the words once, learns N
    statements: list[str] = []
    connection(store).set_trace_callback(statements.append)
    try:
        hits = store.lexical(owner, words, 20, MemoryFilter())
    finally:
        connection(store).set_trace_callback(None)
    assert len(hits) == 20
    statements = [s for s in statements if not s.startswith("--")]  # FTS5's own, inside
    assert len(statements) == 1, statements
    assert "memory_fts" in statements[0]


def test_words_are_chosen_again_when_the_index_grew_past_them(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.owners()[0]
    # "note" is in all 200 memories: common, left out; only the tea memories come back.
    before = store.lexical(owner, [Term("tea"), Term("note")], 500, MemoryFilter())
    assert len(before) == 50
    # Another process adds 400 memories without "note": it is in a third now, and weighs.
    with facade(SQLiteStore(tmp_path / "troth.db")) as other:
        other.remember_many([{"text": f"entry {i}: likes cocoa"} for i in range(400)])
    after = store.lexical(owner, [Term("tea"), Term("note")], 500, MemoryFilter())
    fresh = SQLiteStore(tmp_path / "troth.db")  # a process that never searched
    try:
        expected = fresh.lexical(owner, [Term("tea"), Term("note")], 500, MemoryFilter())
    finally:
        fresh.close()
    assert len(after) == 200  # every note memory, not only the 50 about tea
    assert [(h.memory_id, h.score) for h in after] == [(h.memory_id, h.score) for h in expected]
    store.close()
