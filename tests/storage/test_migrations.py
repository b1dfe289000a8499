"""Numbered schema migrations on both backends: an older database opens and is brought up
to date, a fresh one gets every migration, a newer one is refused."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.conftest import StepClock
from tests.pg import TestServer, database_url
from troth.config import load_policy
from troth.core.errors import StorageError
from troth.service.memory import Memory
from troth.storage.postgres import PostgresStore
from troth.storage.sql import migrations
from troth.storage.sqlite import SCHEMA_VERSION, SQLiteStore, sqlite3

ALICE = "human:alice"


def remember_and_verify(store: SQLiteStore | PostgresStore, text: str) -> None:
    with Memory(store, policy=load_policy(None), principal=ALICE, clock=StepClock()) as memory:
        memory.remember(text)
        assert all(report.ok for report in memory.verify())
        assert text in [m.content for m in memory.memories()]


def test_sqlite_migrations_are_numbered_from_one_without_gaps() -> None:
    versions = [version for version, _, _ in migrations("sqlite")]
    assert versions == list(range(1, len(versions) + 1))
    assert SCHEMA_VERSION == versions[-1] >= 2


def test_a_fresh_sqlite_file_gets_every_migration(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "troth.db")
    assert store.migrated == list(range(1, SCHEMA_VERSION + 1))
    assert store.schema_version() == SCHEMA_VERSION
    store.close()
    again = SQLiteStore(tmp_path / "troth.db")
    assert again.migrated == []
    again.close()


def test_a_sqlite_file_of_the_original_schema_is_migrated_and_keeps_its_data(
    tmp_path: Path,
) -> None:
    # The original schema: what every store wrote before migrations were numbered
    # (0001_initial.sql is it, verbatim, with its `schema_version` 1 in `meta`).
    path = tmp_path / "troth.db"
    [(_, _, initial)] = [m for m in migrations("sqlite") if m[0] == 1]
    db = sqlite3.connect(str(path))
    db.executescript(initial)
    db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
    db.commit()
    db.close()
    with Memory(
        SQLiteStore(path), policy=load_policy(None), principal=ALICE, clock=StepClock()
    ) as memory:
        memory.remember("written at version 2")
    # Back to version 1 (the index and the token channel the later migrations made
    # dropped), then opened again.
    db = sqlite3.connect(str(path))
    db.execute("DROP INDEX tokens_principal")
    db.execute("ALTER TABLE tokens DROP COLUMN channel")
    db.execute("DROP INDEX memories_session")  # 0007_fts_context's, on the column below
    db.execute("ALTER TABLE memories DROP COLUMN recall")  # 0005_recall_column's
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    assert store.migrated == list(range(2, SCHEMA_VERSION + 1))
    assert store.schema_version() == SCHEMA_VERSION
    names = {r[0] for r in store._connection().execute("SELECT name FROM sqlite_master")}
    assert "tokens_principal" in names
    remember_and_verify(store, "written after the migration")
    store = SQLiteStore(path)
    assert len(list(store.records(ALICE))) == 2
    store.close()


def test_a_sqlite_file_of_a_newer_troth_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "troth.db").close()
    db = sqlite3.connect(str(tmp_path / "troth.db"))
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(StorageError, match="newer than this troth's"):
        SQLiteStore(tmp_path / "troth.db")


def empty_database(pg_server: TestServer, name: str) -> str:
    with psycopg.connect(pg_server.admin, autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        db.execute(f"CREATE DATABASE {name}")
    return database_url(pg_server.server, name)


def test_a_postgres_database_of_the_previous_version_is_migrated(pg_server: TestServer) -> None:
    url = empty_database(pg_server, "lm_migrate_prev")
    latest = max(version for version, _, _ in migrations("postgres"))
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, name, text in migrations("postgres")[:-1]:
            db.execute(text.encode())
            db.execute("INSERT INTO schema_version VALUES (%s, %s)", (version, name))
    store = PostgresStore(url)
    try:
        assert store.schema_version() == latest
        row = (
            store._connection()
            .execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_id'")
            .fetchone()
        )
        assert row is not None
        assert row[0].startswith("CREATE UNIQUE INDEX")
        remember_and_verify(store, "written after the migration")
    finally:
        store.close()
        pg_server.drop(url)


def test_a_postgres_database_holding_one_id_under_two_owners_says_so(
    pg_server: TestServer,
) -> None:
    url = empty_database(pg_server, "lm_migrate_dup")
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, name, text in migrations("postgres")[:4]:
            db.execute(text.encode())
            db.execute("INSERT INTO schema_version VALUES (%s, %s)", (version, name))
        for owner in (ALICE, "human:bob"):
            db.execute(
                "INSERT INTO memories (owner, id, status, retrievable, kind, scope, partition,"
                " sensitivity, tags, seq, updated_at, digest, doc, body) VALUES (%s, 'm_same',"
                " 'active', true, 'fact', 'global', 'default', 'normal', '{}', 0, '', '', '{}',"
                " ''::tsvector)",
                (owner,),
            )
    try:
        with pytest.raises(
            StorageError, match=r"(?s)could not be migrated.*m_same.*unique across owners"
        ):
            PostgresStore(url)
    finally:
        pg_server.drop(url)
