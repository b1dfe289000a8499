"""Real erasure: a redacted canary is in no byte under TROTH_HOME, and the chain verifies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StepClock, facade
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore, sqlite3

CANARY = "zqxcanary-7f3a91"
# The canary's distinctive single tokens as the FTS5 porter/unicode61 tokenizer indexes them,
# and as they would sit in any file.
TOKENS = ["zqxcanary", "zqxcanari", "7f3a91"]


def files_holding(home: Path, needle: str) -> list[str]:
    found = []
    for path in sorted(home.rglob("*")):
        if path.is_file() and path.read_bytes().count(needle.encode()):
            found.append(path.name)
    return found


def fts_terms(db: Any) -> set[str]:
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.lm_vocab USING fts5vocab(main, memory_fts, row)"
    )
    return {row[0] for row in db.execute("SELECT term FROM temp.lm_vocab")}


@pytest.fixture
def reader(home: Path, memory: Memory) -> Iterator[Any]:
    """A second connection to the same database, open throughout (another process's view)."""
    db = sqlite3.connect(str(home / "troth.db"), isolation_level=None)
    yield db
    db.close()


def test_a_redacted_canary_is_in_no_file_and_no_index_while_another_connection_is_open(
    memory: Memory, home: Path, reader: Any
) -> None:
    result = memory.remember(
        f"my locker word is {CANARY}", reason=f"remember {CANARY} for me", title=f"The {CANARY}"
    )
    memory.remember("an unrelated memory that stays")
    assert reader.execute("SELECT count(*) FROM ledger").fetchone()[0] == 2
    # Positive controls: before the redaction the canary and its tokens are there to find.
    assert files_holding(home, CANARY)
    assert {"zqxcanari", "7f3a91"} <= fts_terms(reader)

    memory.redact(result.id, reason="erasure request from alice")

    assert reader.execute("SELECT count(*) FROM ledger").fetchone()[0] == 3
    for needle in [CANARY, *TOKENS]:
        assert files_holding(home, needle) == [], needle
    assert not set(TOKENS) & fts_terms(reader)
    assert all(report.ok for report in memory.verify())
    assert memory.recall(CANARY) == []
    erased = memory.get(result.id)
    assert (erased.content, erased.title, erased.reason) == ("", "", "[redacted]")
    assert erased.redacted
    last = erased.audit[-1]
    assert (last.action, last.actor) == ("forgotten", "human:alice")
    assert last.note == "redacted: erasure request from alice"
    assert last.at == erased.updated_at
    assert datetime.fromisoformat(last.at.replace("Z", "+00:00")).tzinfo is not None


def test_a_canary_erased_by_retention_is_in_no_file(home: Path, clock: StepClock) -> None:
    store = SQLiteStore(home / "troth.db")
    with facade(store, clock=clock) as memory:
        result = memory.remember(
            f"temporary {CANARY}", title=CANARY, ttl="expires_at:2026-07-04T00:00:00Z"
        )
        assert files_holding(home, CANARY)
        [expired] = memory.sweep(now=datetime(2026, 7, 5, tzinfo=UTC))
        assert expired.id == result.id
        assert expired.status == "expired"
        assert [a.action for a in expired.audit][-2:] == ["expired", "forgotten"]
        assert expired.audit[-1].actor == "service:troth"
        for needle in [CANARY, *TOKENS]:
            assert files_holding(home, needle) == [], needle
        assert all(report.ok for report in memory.verify())


def test_an_edited_then_redacted_canary_leaves_no_trace(memory: Memory, home: Path) -> None:
    old = memory.remember(f"first version {CANARY}")
    new = memory.edit(old.id, "second version without it")
    memory.redact(old.id, reason="erase the old text too")
    assert files_holding(home, CANARY) == []
    assert memory.get(new.id).status == "active"
    assert all(report.ok for report in memory.verify())


def test_no_store_content_is_never_written(memory: Memory, home: Path) -> None:
    result = memory.remember(f"my password is {CANARY}")
    assert result.status == "no_store"
    assert files_holding(home, CANARY) == []
    assert memory.get(result.id).content == ""
