"""`troth compact` on PostgreSQL finishes pending erasures by its full rewrite alone.

``Memory.compact`` rewrites every erasable table (``VACUUM FULL``); a scrub of the same
tables before it (``storage.postgres.scrub``) would be spent work, so none runs: the rewrite
finishes the erasures pending when it starts. A session holding a snapshot older than an
erasure keeps its row versions alive through a rewrite as through a scrub, so then the
erasure stays pending and is scrubbed once that reader ends. PostgreSQL only: on SQLite
finishing an erasure is the same WAL truncation ``compact`` makes
(tests/adapters/test_cli_compact.py runs the verb on both backends). Nor does the store
``troth compact`` opens scrub as it opens, as any other open does when a stopped process
left an erasure pending.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from tests.backends import files_holding
from tests.conftest import counting, facade
from troth.adapters.cli import cli
from troth.storage.postgres import PostgresStore
from troth.storage.postgres import scrub as pgscrub

CANARY = "zqxcompactcanary-91e4"
ALICE = "human:alice"


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    # A redaction here leaves its erasure pending, as a deployment that chooses when the
    # scrub's I/O happens does (docs/operations.md).
    opened = PostgresStore(pg_url, compact_after_erase=False, erasure_wait=0.3)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def scrubs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each scrub that runs appends 1."""
    return counting(monkeypatch, pgscrub, "scrub")


def redacted(store: PostgresStore) -> None:
    alice = facade(store, principal=ALICE)
    for i in range(50):
        alice.remember(f"an unrelated memory number {i}")
    secret = alice.remember(f"my locker code is {CANARY}", title=CANARY).id
    alice.redact(secret, reason="erasure request")
    assert store.pending_erasures() == 1


def test_compact_finishes_a_pending_erasure_without_a_scrub(
    store: PostgresStore, scrubs: list[int]
) -> None:
    redacted(store)
    assert facade(store, principal=ALICE).compact() == 0
    assert scrubs == []
    assert store.pending_erasures() == 0
    assert files_holding(store, CANARY) == []


def test_an_older_reader_leaves_the_erasure_pending_until_it_ends(
    store: PostgresStore, scrubs: list[int]
) -> None:
    reader = psycopg.connect(store.url, autocommit=True)
    try:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT 1").fetchone()  # its snapshot is taken, no table held
        redacted(store)
        assert facade(store, principal=ALICE).compact() == 1  # the rewrite ran, it waited 0.3 s
        assert scrubs == []
    finally:
        reader.close()
    assert store.finish_erasures(wait=30)
    assert store.pending_erasures() == 0
    assert scrubs  # the reader gone, the scrub finished it
    assert files_holding(store, CANARY) == []


# -- `troth compact` as a new process ---------------------------------------------------


def pending_left(pg_url: str) -> None:
    """A process that redacts and stops before its erasure is finished."""
    store = PostgresStore(pg_url, compact_after_erase=False)
    redacted(store)
    store.close()


def test_troth_compact_in_a_new_process_runs_no_scrub(
    pg_url: str, tmp_path: Path, scrubs: list[int]
) -> None:
    pending_left(pg_url)
    env = {"TROTH_HOME": str(tmp_path / "home"), "TROTH_DATABASE_URL": pg_url}
    done = CliRunner().invoke(cli, ["--as", ALICE, "compact", "--json"], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"compacted": True, "pending_erasures": 0}
    assert scrubs == []  # neither as the store opened nor before the rewrite
    store = PostgresStore(pg_url)
    try:
        assert store.pending_erasures() == 0
        assert files_holding(store, CANARY) == []
    finally:
        store.close()


def test_any_other_open_still_finishes_what_was_left_pending(
    pg_url: str, scrubs: list[int]
) -> None:
    pending_left(pg_url)
    store = PostgresStore(pg_url)
    try:
        assert scrubs == [1]
        assert store.pending_erasures() == 0
    finally:
        store.close()
