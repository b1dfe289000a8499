"""PostgreSQL's erasure scrub: the text leaves every file, and no write waits for it.

A redaction's compaction on PostgreSQL (``storage.postgres.scrub``) must (1) leave the
erased text in no heap, TOAST or index file — including the layout where a plain VACUUM
leaves it in a page's free space (the last row written to a page, redacted) — and (2)
take no lock another owner's write waits for: sampled from another connection while it
runs, no lock on an erasable table conflicts with ``ROW EXCLUSIVE``, and another owner
writing in a loop meanwhile never waits a second. The old compaction (``VACUUM FULL``)
holds each table in ``ACCESS EXCLUSIVE`` while it copies it; the test shows that too, so
the sampling is known to see such a lock.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from tests.backends import connection, files_holding
from tests.conftest import facade
from troth.storage.postgres import PostgresStore
from troth.storage.postgres import scrub as pgscrub
from troth.storage.postgres.schema import ERASABLE_TABLES

CANARY = "zqxscrubcanary-4d2b"
ALICE, BOB = "human:alice", "human:bob"
# Lock modes that conflict with ROW EXCLUSIVE, the lock every INSERT/UPDATE/DELETE takes.
BLOCKING = {"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"}


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url, compact_after_erase=False)
    try:
        yield opened
    finally:
        opened.close()


def fill(store: PostgresStore, memories: int) -> str:
    """``memories`` memories of alice, then a secret of 400 characters, written last (the
    last row of its pages); returns the secret's id."""
    alice = facade(store, principal=ALICE)
    for start in range(0, memories, 500):
        batch = range(start, min(start + 500, memories))
        alice.remember_many([f"memory number {i} about tea and the word {i * 7}" for i in batch])
    # Long enough that its redacted row, written below it, does not cover it when the
    # page is compacted (measured: from ~200 characters on, a plain VACUUM leaves it).
    words = " ".join(secrets.token_hex(3) for _ in range(60))
    return alice.remember(f"my locker word is {CANARY} {words} {CANARY}", title=CANARY).id


def test_the_scrub_removes_what_a_plain_vacuum_leaves_in_a_page(store: PostgresStore) -> None:
    secret = fill(store, 200)
    facade(store, principal=ALICE).redact(secret, reason="erasure request")
    assert store.pending_erasures() == 1
    db = connection(store)
    pgscrub.vacuum(db, ERASABLE_TABLES)
    for index in pgscrub.TEXT_INDEXES:
        pgscrub.reindex(db, index)
    # Pruned and reindexed, no query reaches the text, but a heap page's free space keeps
    # the bytes no live row was moved over: this layout is the one that shows it.
    left = files_holding(store, CANARY)
    assert left, (
        "this layout no longer leaves the text after a plain VACUUM and REINDEX: lengthen the"
        " secret (or write more rows before it) so the test still shows what the overwrite is for"
    )
    assert store.finish_erasures()  # the whole scrub: the free space is overwritten too
    assert files_holding(store, CANARY) == []
    assert store.pending_erasures() == 0
    assert all(report.ok for report in facade(store, principal=ALICE).verify())


def test_a_long_text_leaves_the_toast_table_too(store: PostgresStore) -> None:
    alice = facade(store, principal=ALICE)
    # Random hex does not compress: the content is stored out of line, in TOAST chunks.
    long_text = f"{CANARY} " + secrets.token_hex(970) + f" {CANARY}"
    kept = alice.remember("a memory that stays")
    secret = alice.remember(long_text)
    assert toasted(store, secret.id)
    for i in range(5):
        alice.remember(f"after the long one, {i}")
    assert files_holding(store, CANARY)
    alice.redact(secret.id, reason="erasure request")
    assert store.finish_erasures()
    assert files_holding(store, CANARY) == []
    assert alice.get(kept.id).content == "a memory that stays"


def toasted(store: PostgresStore, memory_id: str) -> bool:
    """Whether the memory's document is stored out of line, in the TOAST table."""
    row = (
        connection(store)
        .execute(
            "SELECT pg_column_toast_chunk_id(doc) IS NOT NULL FROM memories WHERE id = %s",
            (memory_id,),
        )
        .fetchone()
    )
    return bool(row and row[0])


class LockWatch:
    """Samples pg_locks from its own connection: every lock mode held or asked for on the
    erasable tables and their TOAST tables by another session."""

    def __init__(self, url: str) -> None:
        self.db = psycopg.connect(url, autocommit=True)
        self.seen: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LockWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.db.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            rows = self.db.execute(
                "SELECT t.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " JOIN pg_class t ON t.oid = c.oid OR t.reltoastrelid = c.oid"
                # (locktype 'extend' is the page-extension lock every insert takes)
                " WHERE l.locktype = 'relation' AND t.relname = ANY(%s)"
                " AND l.pid <> pg_backend_pid()",
                (list(ERASABLE_TABLES),),
            ).fetchall()
            self.seen.update((str(r[0]), str(r[1])) for r in rows)
            time.sleep(0.002)


def writes_during(store: PostgresStore, work: Callable[[], None]) -> tuple[list[float], float]:
    """Bob writes in a loop while ``work`` runs; (each write's seconds, work's seconds)."""
    bob = facade(store, principal=BOB)
    bob.remember("bob's first memory")  # bob's chain is verified before the clock starts
    waits: list[float] = []
    done = threading.Event()

    def write() -> None:
        while not done.is_set():
            started = time.monotonic()
            bob.remember(f"bob writes, {len(waits)}")
            waits.append(time.monotonic() - started)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    time.sleep(0.2)
    started = time.monotonic()
    try:
        work()
    finally:
        took = time.monotonic() - started
        done.set()
        writer.join(timeout=30)
    return waits, took


def test_the_scrub_takes_no_lock_a_write_waits_for(store: PostgresStore) -> None:
    secret = fill(store, 2000)
    facade(store, principal=ALICE).redact(secret, reason="erasure request")
    with LockWatch(store.url) as watch:
        waits, took = writes_during(store, lambda: store.finish_erasures())
    blocking = {seen for seen in watch.seen if seen[1] in BLOCKING}
    print(f"scrub {took:.2f} s; {len(waits)} writes, longest {max(waits):.3f} s; {watch.seen}")
    assert ("memories", "ShareUpdateExclusiveLock") in watch.seen  # the watch saw the scrub
    assert blocking == set()
    assert len(waits) >= 5
    assert max(waits) < 1.0, sorted(waits)[-5:]
    assert store.pending_erasures() == 0
    assert files_holding(store, CANARY) == []


def test_the_full_rewrite_holds_the_tables_the_scrub_does_not(store: PostgresStore) -> None:
    # The control: compact() (VACUUM FULL) is seen asking for each table exclusively. Each
    # table is held in ACCESS SHARE by a reader until the watch has seen that ask, so the
    # ask lasts long enough to be sampled however fast the copy is.
    fill(store, 200)
    readers = {table: psycopg.connect(store.url) for table in ("ledger", "memories")}
    try:
        for table, reader in readers.items():
            reader.execute(f"LOCK TABLE {table} IN ACCESS SHARE MODE")  # a transaction
        with LockWatch(store.url) as watch:
            rewrite = threading.Thread(target=store.compact)
            rewrite.start()
            deadline = time.monotonic() + 60
            while readers and time.monotonic() < deadline:
                for table in [t for t in readers if (t, "AccessExclusiveLock") in watch.seen]:
                    readers.pop(table).close()  # its transaction ends: the rewrite goes on
                time.sleep(0.01)
            rewrite.join(timeout=60)
        assert not rewrite.is_alive()
        assert {("ledger", "AccessExclusiveLock"), ("memories", "AccessExclusiveLock")} <= (
            watch.seen
        )
    finally:
        for reader in readers.values():
            reader.close()
