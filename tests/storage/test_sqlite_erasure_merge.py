"""SQLite merges the full-text segments after an erasure commits, not inside its transaction.

FTS5 ``optimize`` (the merge that leaves no segment page holding an erased term) rewrites
the whole index; run inside the erasing transaction it held the file's write lock for the
erasure and the merge in a row. It is its own transaction now, made before the redaction
returns (tests/service/test_erasure.py and test_erasure_history.py still find the canary
in no file), and owed by a mark the erasure commits: a crash between the erasure's commit
and the merge leaves the mark, and the next open merges. SQLite only: FTS5 is this
backend's index (PostgreSQL's erasure is tests/storage/test_pg_scrub.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import connection, files_holding
from tests.conftest import facade
from tests.service.test_erasure import CANARY, TOKENS
from troth.service.memory import Memory
from troth.storage.erasure import Finisher
from troth.storage.sqlite import SQLiteStore
from troth.storage.sqlite.transaction import FTS_MERGE_OWED

MERGE = "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"


def with_a_secret(store: SQLiteStore) -> tuple[Memory, str]:
    memory = facade(store)
    secret = memory.remember(
        f"my locker word is {CANARY}", reason=f"remember {CANARY} for me", title=f"The {CANARY}"
    )
    for i in range(20):
        memory.remember(f"an unrelated memory number {i} about tea")
    return memory, secret.id


def owed(store: SQLiteStore) -> bool:
    row = connection(store).execute("SELECT 1 FROM meta WHERE key = ?", (FTS_MERGE_OWED,))
    return row.fetchone() is not None


def test_the_merge_is_a_transaction_of_its_own_after_the_erasure_commits(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "troth.db")
    memory, secret = with_a_secret(store)
    statements: list[str] = []
    connection(store).set_trace_callback(statements.append)
    memory.redact(secret, reason="erasure request")
    connection(store).set_trace_callback(None)
    transactions: list[list[str]] = []
    for statement in statements:
        if statement.startswith("BEGIN"):
            transactions.append([])
        elif transactions:
            transactions[-1].append(statement)
    erasing = [t for t in transactions if any("pending_erasures (owner)" in s for s in t)]
    merging = [t for t in transactions if MERGE in t]
    assert len(erasing) == len(merging) == 1
    assert erasing[0] is not merging[0]
    assert transactions.index(erasing[0]) < transactions.index(merging[0])
    assert not owed(store)
    assert store.pending_erasures() == 0
    for needle in [CANARY, *TOKENS]:
        assert files_holding(store, needle) == [], needle
    memory.close()


def test_a_merge_a_crash_cut_off_is_made_on_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "troth.db"
    store = SQLiteStore(path)
    memory, secret = with_a_secret(store)
    # The process dies once the erasure has committed: nothing after the commit runs.
    monkeypatch.setattr(Finisher, "finish", lambda self, wait=0.0: False)
    memory.redact(secret, reason="erasure request")
    assert owed(store)
    assert store.pending_erasures() == 1
    assert files_holding(store, CANARY)  # the positive control: not finished yet
    memory.close()
    monkeypatch.undo()
    reopened = SQLiteStore(path)  # the next open finishes what is pending
    try:
        assert not owed(reopened)
        assert reopened.pending_erasures() == 0
        for needle in [CANARY, *TOKENS]:
            assert files_holding(reopened, needle) == [], needle
    finally:
        reopened.close()
