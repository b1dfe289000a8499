"""Moving a ledger between backends: SQLite → PostgreSQL → SQLite gives identical exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import StepClock, facade
from troth.core.errors import ConflictError
from troth.service.memory import Memory
from troth.service.migration import migrate
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

OWNERS = ("human:alice", "human:bob")
MEMORIES = 1000  # the 10k run is in bench/postgres.py (see docs/benchmarks.md)


def fill(memory: Memory, count: int) -> None:
    """A ledger with every kind of event: writes, approvals, edits, forgets, redactions."""
    for i in range(count):
        owner = OWNERS[i % 2]
        result = memory.remember(
            f"note {i}: the {['cat', 'dog', 'bird'][i % 3]} likes {i % 7} things ✓",
            owner=owner,
            actor=owner,
            tags=[f"t{i % 5}"],
            reason=f"reason {i}",
        )
        if i % 50 == 1:
            memory.edit(result.id, f"edited note {i}", actor=owner)
        elif i % 50 == 2:
            memory.forget(result.id, actor=owner)
        elif i % 50 == 3:
            memory.redact(result.id, reason="private", actor=owner)


def exports(memory: Memory) -> list[bytes]:
    """What an export of each owner would hand over, made without auditing it (an audited
    export appends its event, which the migrated copies would then hold)."""
    cut = memory.parts.exports.cut
    return [cut(fmt, o).result.data for o in OWNERS for fmt in ("personaxis", "hux")]


def test_sqlite_to_postgres_to_sqlite_keeps_exports_byte_identical(
    tmp_path: Path, pg_url: str
) -> None:
    original = facade(SQLiteStore(tmp_path / "a.db"), principal=OWNERS[0], clock=StepClock())
    fill(original, MEMORIES)
    before = exports(original)
    server = PostgresStore(pg_url)
    reports = migrate(original.store, server, batch=128)
    assert [r.owner for r in reports] == list(OWNERS)
    assert sum(r.rows for r in reports) == sum(original.store.tip(o).length for o in OWNERS)
    back = SQLiteStore(tmp_path / "b.db")
    migrate(server, back)
    on_server = facade(server, principal=OWNERS[0])
    returned = facade(back, principal=OWNERS[0])
    assert exports(on_server) == before
    assert exports(returned) == before
    assert all(r.ok for r in returned.verify())
    assert all(r.ok for r in on_server.verify())
    for owner in OWNERS:
        assert back.tip(owner) == original.store.tip(owner) == server.tip(owner)
    for m in (original, on_server, returned):
        m.close()


def test_a_second_migration_resumes_and_a_diverging_target_is_refused(
    tmp_path: Path, pg_url: str
) -> None:
    source = facade(SQLiteStore(tmp_path / "a.db"), principal=OWNERS[0])
    source.remember("first")
    target = PostgresStore(pg_url)
    migrate(source.store, target)
    source.remember("second")
    (report,) = migrate(source.store, target)
    assert (report.rows, report.copied) == (2, 1)
    other = facade(SQLiteStore(tmp_path / "c.db"), principal=OWNERS[0])
    other.remember("something else")
    other.remember("and more")
    with pytest.raises(ConflictError):
        migrate(other.store, target)
    for m in (source, other):
        m.close()
    target.close()
