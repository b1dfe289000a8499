"""Migration 0007 (SQLite) / 0010 (PostgreSQL): a store made before context expansion gets
its neighbours' words on open, the same index a store written since has."""

from __future__ import annotations

from tests.backends import connection, execute, is_postgres, reopen
from tests.conftest import StepClock, facade
from troth.core.query import lexical_terms
from troth.storage.base import MemoryFilter, Store
from troth.storage.sqlite import SCHEMA_VERSION

ALICE = "human:alice"
TURNS = [
    "Caroline: what is your parrot called?",
    "Melanie: quetzalbeard, and he whistles",
    "Caroline: a fine name",
]


def found(store: Store, word: str) -> set[str]:
    return {h.memory_id for h in store.lexical(ALICE, lexical_terms(word), 20, MemoryFilter())}


def make_old(store: Store) -> None:
    """Turn the store's index back into the one the schema before the migration kept."""
    if is_postgres(store):
        db = connection(store)
        with db.transaction():
            db.execute("DROP INDEX memories_session")
            db.execute("UPDATE memories SET body = setweight(ts_filter(body, '{a}'), 'D')")
            db.execute("DELETE FROM schema_version WHERE version = 10")
        return
    for statement in (
        "BEGIN IMMEDIATE",
        "DROP INDEX memories_session",
        "DROP TABLE memory_fts",
        "CREATE VIRTUAL TABLE memory_fts USING fts5(body, tokenize = 'porter unicode61"
        " remove_diacritics 2', content = '', contentless_delete = 1)",
        "INSERT INTO memory_fts (rowid, body) SELECT rid, json_extract(doc, '$.content')"
        " FROM memories",
        # Before 0008 too (SQLite's version is the highest applied): without the writer.
        "UPDATE memories SET recall = json_remove(recall, '$[#-1]')",
        "UPDATE meta SET value = '6' WHERE key = 'schema_version'",
        "COMMIT",
    ):
        execute(store, statement)


def test_an_older_store_gets_its_neighbours_words_on_open(any_store: Store) -> None:
    with facade(any_store, clock=StepClock()) as memory:
        ids = [memory.remember(text, session="s1").memory.id for text in TURNS]
    assert found(any_store, "quetzalbeard") == set(ids)
    select = "SELECT id, body::text FROM memories ORDER BY id"
    written = execute(any_store, select).fetchall() if is_postgres(any_store) else None
    make_old(any_store)
    assert found(any_store, "quetzalbeard") == {ids[1]}  # the old index: its own row only
    again = reopen(any_store)
    try:
        if is_postgres(again):
            versions = execute(again, "SELECT version FROM schema_version").fetchall()
            assert (10,) in versions
        else:
            # 0007 and 0008, and every later one (each may run again on such a file).
            assert again.migrated == list(range(7, SCHEMA_VERSION + 1))  # type: ignore[attr-defined]
        assert found(again, "quetzalbeard") == set(ids)
        assert found(again, "whistles") == set(ids)
        if written is not None:
            assert execute(again, select).fetchall() == written
        else:  # 0008 gave the writer back: the recall column as a store written since has
            rows = execute(again, "SELECT json_array_length(recall) FROM memories").fetchall()
            assert {n for (n,) in rows} == {21}
    finally:
        again.close()
