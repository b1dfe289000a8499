"""The projection row's ``recall`` column: what recall ranks by, kept beside the document.

Each write stores the column from the memory's own fields (``storage.rows.memory_docs``); a
database made before the column existed gets it from the stored documents in its
migrations (SQLite 0005, PostgreSQL 0008; the writer of the text's origin, its last value,
SQLite 0008, PostgreSQL 0011). Both must give the same values as the document.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import StepClock, facade
from troth.service.recall import Query
from troth.storage.base import Store
from troth.storage.rows import RECALL_FIELDS, memory_docs, recall_fields, recall_row
from troth.storage.sql import migrations
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"


def fill(store: Store) -> list[str]:
    """Memories holding every recall field in some form; their ids."""
    with facade(store, clock=StepClock()) as memory:
        ids = [
            memory.remember(
                "Ünïcode tea: “oolong” at 7",
                title="Tea",
                importance=0.9,
                confidence=0.75,
                session="s1",
                recorded_at="2024-03-01T10:00:00Z",
                valid_from="2024-01-01",
                valid_until="2030-12-31",
                extra={"x_speaker": "Avery"},
                ttl="decay:30",
            ).memory.id,
            memory.remember(
                "plain note about chess", ttl="expires_at:2031-01-01T00:00:00Z"
            ).memory.id,
            memory.remember(
                "a note that expires", expires="2031-06-01T00:00:00Z", lifecycle="stale"
            ).memory.id,
        ]
        ids.append(memory.edit(ids[1], "plain note about chess, edited").memory.id)
        return ids


def expected(store: Store, ids: list[str]) -> dict[str, Any]:
    """The recall rows as read from the stored documents themselves."""
    held = store.get_many(ALICE, ids)
    out = {}
    for mid in ids:
        doc, column = memory_docs(held[mid])
        assert json.loads(column) == recall_fields(json.loads(doc))  # by RECALL_FIELDS
        out[mid] = recall_row(recall_fields(json.loads(doc)))
    return out


WRITER = "recall_writer"
"""The migration that adds the writer of the text's origin as the column's last value (by
name: the numbers differ between backends)."""


def update_statement(backend: str, name: str = "recall_column") -> str:
    """A migration's statement that fills the column from the documents (by default the
    one that made it, from the documents' RECALL_FIELDS)."""
    [(_, _, text)] = [m for m in migrations(backend) if m[1].endswith(f"_{name}.sql")]
    lines = [line for line in text.splitlines() if line.startswith("UPDATE")]
    assert len(lines) == 1
    return lines[0].rstrip(";")


def test_recall_rows_are_the_documents_fields(any_store: Store) -> None:
    ids = fill(any_store)
    rows = any_store.recall_rows(ALICE, [*ids, "m_missing"])
    assert rows == expected(any_store, ids)
    edited = rows[ids[3]]
    assert edited.text == "plain note about chess, edited"
    assert (rows[ids[0]].speaker, rows[ids[0]].ttl_decay_days) == ("Avery", 30)
    assert rows[ids[2]].lifecycle == "stale"
    assert any_store.recall_rows(ALICE, []) == {}


def test_the_migration_fills_the_column_with_the_same_values(
    any_store: Store, backend: str
) -> None:
    ids = fill(any_store)
    before = any_store.recall_rows(ALICE, ids)
    db = any_store._connection()
    stored = [r[0] for r in db.execute("SELECT recall FROM memories ORDER BY id")]
    if backend == "sqlite":
        db.execute("UPDATE memories SET recall = NULL")
        db.execute(update_statement(backend))
        db.execute(update_statement(backend, WRITER))
    else:
        with db.transaction():
            db.execute("UPDATE memories SET recall = 'null'")
            db.execute(update_statement(backend))
            db.execute(update_statement(backend, WRITER))
    again = [r[0] for r in db.execute("SELECT recall FROM memories ORDER BY id")]
    assert [json.loads(r) for r in again] == [json.loads(r) for r in stored]
    assert any_store.recall_rows(ALICE, ids) == before


def test_the_migration_reads_each_recall_field_by_its_path() -> None:
    # The SQL files spell the paths out; they must be RECALL_FIELDS's, in order.
    sqlite, postgres = update_statement("sqlite"), update_statement("postgres")
    for _name, path, _type in RECALL_FIELDS:
        assert f"doc -> '$.{'.'.join(path)}'" in sqlite
        assert f"d #> '{{{','.join(path)}}}'" in postgres
    assert sqlite.count("doc -> ") == postgres.count("d #> ") == len(RECALL_FIELDS)


def test_an_older_sqlite_file_gets_the_column_and_recalls_the_same(tmp_path: Any) -> None:
    path = tmp_path / "troth.db"
    store = SQLiteStore(path)
    ids = fill(store)
    before = store.recall_rows(ALICE, ids)
    db = store._connection()
    db.execute("DROP INDEX memories_session")  # made on the column by 0007
    db.execute("ALTER TABLE memories DROP COLUMN recall")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    store.close()
    reopened = SQLiteStore(path)
    try:
        shipped = [version for version, _, _ in migrations("sqlite")]
        assert reopened.migrated == [v for v in shipped if v >= 5]  # 0005 and after
        assert reopened.recall_rows(ALICE, ids) == before
        with facade(reopened, clock=StepClock()) as memory:
            hits = memory.recall(Query(text="oolong tea"))
            assert [hit.memory.id for hit in hits][:1] == [ids[0]]
    finally:
        reopened.close()
