"""An erasure never stalls another owner's write, and always completes.

While another connection holds a snapshot taken before a redaction (a long read), the
redaction commits, records its erasure as pending and waits for that reader without
holding any lock a writer needs: another owner's writes finish in well under a second.
Once the reader goes the erased text leaves every file. A redaction whose process is
killed after its commit, before it answered, is finished by the next open, and asking
for it again finishes the compaction instead of answering a conflict. Both backends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.backends import files_holding, is_postgres
from tests.conftest import facade, open_backend
from troth.core.records import MemoryRecord
from troth.storage.base import Store
from troth.storage.sqlite import SQLiteStore, sqlite3

CANARY = "zqxwaitcanary-5e1c"
ALICE, BOB = "human:alice", "human:bob"
HOLD = 30.0  # seconds the reader keeps its snapshot (the measurement)


class OldSnapshot:
    """Another connection in a read transaction that has read the ledger: it holds a
    snapshot taken before what is written next (on PostgreSQL, REPEATABLE READ)."""

    def __init__(self, store: Store) -> None:
        if is_postgres(store):
            self.db: Any = psycopg.connect(store.url, autocommit=True)  # type: ignore[attr-defined]
            self.db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        else:
            assert isinstance(store, SQLiteStore)
            self.db = sqlite3.connect(str(store.path), isolation_level=None)
            self.db.execute("BEGIN")
        self.db.execute("SELECT count(*) FROM ledger").fetchone()
        self.started = time.monotonic()

    def release(self) -> None:
        self.db.execute("COMMIT")
        self.db.close()


def pending(store: Store) -> int:
    """Pending erasures as a fresh connection sees them (not the store's own snapshot)."""
    if is_postgres(store):
        with psycopg.connect(store.url) as db:  # type: ignore[attr-defined]
            row = db.execute("SELECT count(*) FROM pending_erasures").fetchone()
    else:
        assert isinstance(store, SQLiteStore)
        db = sqlite3.connect(str(store.path))
        try:
            row = db.execute("SELECT count(*) FROM pending_erasures").fetchone()
        finally:
            db.close()
    assert row is not None
    return int(row[0])


def holding(store: Store, home: Path, needle: str = CANARY) -> list[str]:
    """The files holding ``needle``: the store's own, and every file under the home."""
    files = files_holding(store, needle)
    if home.exists():
        files += files_holding(home, needle)
    return files


@pytest.fixture
def backend_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if backend == "postgres" else None


@pytest.fixture
def store(backend: str, home: Path, backend_url: str | None) -> Iterator[Store]:
    opened = open_backend(backend, home, backend_url)
    try:
        yield opened
    finally:
        opened.close()


def in_thread(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            out["result"] = work()
        except BaseException as exc:  # the test asserts on it
            out["error"] = exc
        out["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_another_owner_writes_at_once_while_a_redaction_waits_for_an_old_reader(
    store: Store, home: Path
) -> None:
    alice, bob = facade(store, principal=ALICE), facade(store, principal=BOB)
    secret = alice.remember(f"my locker word is {CANARY}", title=CANARY)
    bob.remember("bob's first memory")  # bob's chain is verified before the clock starts
    reader = OldSnapshot(store)
    released = False
    try:
        thread, redaction = in_thread(lambda: alice.redact(secret.id, reason="erasure request"))
        deadline = time.monotonic() + 10
        while pending(store) == 0:  # the redaction has committed and now waits
            assert time.monotonic() < deadline, redaction
            assert thread.is_alive(), redaction
            time.sleep(0.05)
        writes = []
        while time.monotonic() - reader.started < HOLD:
            started = time.monotonic()
            bob.remember(f"bob writes while the reader reads, {len(writes)}")
            writes.append(time.monotonic() - started)
            time.sleep(2)
        assert thread.is_alive()  # the redaction still waits for the reader ...
        assert holding(store, home)  # ... whose snapshot still holds the erased text
        reader.release()
        released = True
        thread.join(timeout=30)
        assert not thread.is_alive()
    finally:
        if not released:
            reader.release()
    # (shown with -s: the figures docs/ledger.md quotes)
    print(f"redaction {redaction['seconds']:.1f} s; {len(writes)} writes, max {max(writes):.3f} s")
    assert "error" not in redaction, redaction
    assert isinstance(redaction["result"], MemoryRecord)
    assert redaction["result"].redacted
    assert len(writes) >= 10
    assert max(writes) < 1.0, writes
    assert redaction["seconds"] >= HOLD - 5
    assert holding(store, home) == []
    assert pending(store) == 0
    assert all(report.ok for report in alice.verify())
    assert len(bob.memories()) == len(writes) + 1


def test_a_redaction_that_stopped_waiting_is_finished_once_the_reader_goes(
    backend: str, home: Path, backend_url: str | None
) -> None:
    store = open_backend(backend, home, backend_url)
    store.erasure_wait = 0.5
    try:
        alice = facade(store, principal=ALICE)
        secret = alice.remember(f"my locker word is {CANARY}")
        reader = OldSnapshot(store)
        started = time.monotonic()
        erased = alice.redact(secret.id, reason="erasure request")
        assert time.monotonic() - started < 5
        assert erased.redacted
        assert pending(store) == 1
        assert holding(store, home)
        reader.release()
        deadline = time.monotonic() + 10
        while pending(store):  # the store's background finisher, without any call
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert holding(store, home) == []
    finally:
        store.close()


CHILD = """
import sys
from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

backend, where, memory_id = sys.argv[1:]
store = SQLiteStore(where) if backend == "sqlite" else PostgresStore(where)
memory = Memory(store, policy=load_policy(None), principal="human:alice")
memory.redact(memory_id, reason="erasure request")
print("acknowledged", flush=True)
"""


def kill_mid_redaction(store: Store, backend: str, where: str, memory_id: str) -> None:
    """Redact in a child process while a reader holds an old snapshot (so the child waits
    after its commit), and SIGKILL it once the erasure is committed, before it answers."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, backend, where, memory_id],
        stdout=subprocess.PIPE,
        env=os.environ.copy(),
    )
    deadline = time.monotonic() + 60
    while pending(store) == 0:  # committed; the child now waits for the reader
        assert child.poll() is None
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    assert child.stdout is not None
    with child.stdout:
        assert child.stdout.read() == b""  # it never answered


def test_a_redaction_killed_after_its_commit_is_finished_on_the_next_open_and_by_a_retry(
    backend: str, home: Path, backend_url: str | None
) -> None:
    where = backend_url or str(home / "troth.db")
    first = open_backend(backend, home, backend_url)
    alice = facade(first, principal=ALICE)
    opened = alice.remember(f"finished by the open {CANARY}a")
    retried = alice.remember(f"finished by the retry {CANARY}b")
    alice.remember(f"kept {CANARY}c")

    # 1. Killed after its commit; the reader goes; nothing runs until the next open.
    reader = OldSnapshot(first)
    try:
        kill_mid_redaction(first, backend, where, opened.id)
        assert holding(first, home, f"{CANARY}a")  # committed, and still on disk
    finally:
        reader.release()
    first.close()
    # (SQLite's last connection to close checkpoints the WAL on its own; the record of the
    # erasure stays until an open checks it is done.)
    assert pending(first) == 1
    second = open_backend(backend, home, backend_url)
    try:
        assert pending(second) == 0  # the open finished it
        assert holding(second, home, f"{CANARY}a") == []
        assert holding(second, home, f"{CANARY}c")  # the scan sees what is kept
        assert facade(second, principal=ALICE).get(opened.id).redacted

        # 2. Killed again; the next open meets the reader still there, and cannot finish.
        reader = OldSnapshot(second)
        released = False
        try:
            kill_mid_redaction(second, backend, where, retried.id)
            third = open_backend(backend, home, backend_url)
            try:
                again = facade(third, principal=ALICE)
                thread, retry = in_thread(lambda: again.redact(retried.id, reason="retry"))
                time.sleep(1.5)
                assert thread.is_alive()
                assert pending(third) == 1
                reader.release()
                released = True
                thread.join(timeout=30)
                assert "error" not in retry, retry
                assert retry["result"].redacted
                assert retry["result"].id == retried.id
                assert pending(third) == 0
                assert holding(third, home, f"{CANARY}b") == []
                reports = again.verify()
                assert all(report.ok for report in reports), [r.to_dict() for r in reports]
                redactions = [
                    e for r in again.log(ALICE) if (e := r.decode()) and e.event == "redact"
                ]
                assert [e.memory for e in redactions] == [opened.id, retried.id]  # once each
            finally:
                third.close()
        finally:
            if not released:
                reader.release()
    finally:
        second.close()
