"""What PostgreSQL's erasure scrub costs at a size: its steps' time, junk rows and WAL.

``python -m bench.scrub_cost [--sizes 20000,100000]`` writes 1,000 memories through the
library, copies them by SQL under other owners up to each size (the copies are rows like
the library's, so the tables are as large as that many memories make them), then redacts
one memory and times each step of ``storage.postgres.scrub`` while another owner writes
in a loop; the figures go to docs/benchmarks.md (``bench:scrub``).
"""

from __future__ import annotations

import argparse
import threading
import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.common import markers, record_block
from bench.scale import machine, postgres_store
from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.postgres import PostgresStore
from troth.storage.postgres import scrub as pgscrub
from troth.storage.postgres.schema import ERASABLE_TABLES

SEED = 1000  # memories written through the library; the rest are copies of them
_COPY_LEDGER = (
    "INSERT INTO ledger SELECT 'copy:' || %(n)s, seq, ts, content, source, tags, content_hash,"
    " prev_hash, hash, redacted, meta, texts FROM ledger WHERE owner = 'human:alice'"
    " AND seq <= %(seed)s"
)
_COPY_MEMORIES = (
    "INSERT INTO memories (owner, id, status, retrievable, kind, scope, partition,"
    " sensitivity, tags, seq, updated_at, digest, doc, recall, body, embedding)"
    " SELECT 'copy:' || %(n)s, id || '-' || %(n)s, status, retrievable, kind, scope,"
    " partition, sensitivity, tags, seq, updated_at, digest, doc, recall, body, embedding"
    " FROM memories WHERE owner = 'human:alice' AND seq <= %(seed)s"
)


def grow(db: Any, copies: range) -> None:
    """Copy alice's first memories (and their ledger rows) under one owner per copy."""
    for n in copies:
        db.execute(_COPY_LEDGER, {"n": n, "seed": SEED})
        db.execute(_COPY_MEMORIES, {"n": n, "seed": SEED})
    db.execute("VACUUM ANALYZE")


def measure(store: PostgresStore, alice: Memory, bob: Memory) -> dict[str, float]:
    """Redact one memory, then scrub step by step while bob writes; the figures."""
    secret = alice.remember("my locker word is zqxcostcanary " + "and more words " * 20)
    alice.redact(secret.id, reason="benchmark")
    db = psycopg.connect(store.url, autocommit=True)  # the scrub runs on any such connection
    figures: dict[str, float] = {}
    waits: list[float] = []
    junk: list[int] = []
    done = threading.Event()

    def write() -> None:
        while not done.is_set():
            started = time.monotonic()
            bob.remember("bob writes while the scrub runs")
            waits.append(time.monotonic() - started)

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    wal = db.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    started = time.monotonic()
    steps = (
        ("vacuum", lambda: pgscrub.vacuum(db, ERASABLE_TABLES)),
        ("reindex", lambda: [pgscrub.reindex(db, i) for i in pgscrub.TEXT_INDEXES]),
        ("overwrite", lambda: junk.append(pgscrub.overwrite_free_space(db, ERASABLE_TABLES))),
        ("vacuum again", lambda: pgscrub.vacuum(db, ERASABLE_TABLES)),
    )
    for name, step in steps:
        begun = time.monotonic()
        step()
        figures[name] = time.monotonic() - begun
    figures["scrub"] = time.monotonic() - started
    figures["junk"] = float(sum(junk))
    row = db.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (wal,)).fetchone()
    figures["wal"] = float(row[0]) / 2**20
    time.sleep(0.3)
    done.set()
    writer.join()
    figures["writes"], figures["longest"] = len(waits), max(waits)
    db.close()
    store.finish_erasures()  # the pending row
    return figures


def main() -> None:
    """Measure each size on one server and record the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rows = []
    with postgres_store() as (store, _size, label):
        assert isinstance(store, PostgresStore)
        alice = Memory(store, policy=load_policy(None), principal="human:alice")
        bob = Memory(store, policy=load_policy(None), principal="human:bob")
        alice.remember_many([f"memory number {i} about tea, the word {i * 7}" for i in range(SEED)])
        bob.remember("a first write: bob's chain is verified before the clock starts")
        copies = 1
        for size in sizes:
            with psycopg.connect(store.url, autocommit=True) as db:
                grow(db, range(copies, size // SEED))
            copies = size // SEED
            f = measure(store, alice, bob)
            rows.append(
                f"| {size:,} | {f['scrub']:.2f} s | {f['vacuum']:.2f} / {f['reindex']:.2f} /"
                f" {f['overwrite']:.2f} / {f['vacuum again']:.2f} s | {int(f['junk']):,} |"
                f" {f['wal']:.0f} MB | {int(f['writes'])}, longest {f['longest']:.3f} s |"
            )
            print(rows[-1], flush=True)
    start, end = markers("scrub")
    block = "\n".join(
        [
            start,
            f"## The PostgreSQL erasure scrub (`python -m bench.scrub_cost --sizes {args.sizes}`)",
            "",
            f"Machine: {machine()}. Date: {datetime.now(UTC):%Y-%m-%d}. {label}.",
            "",
            f"{SEED:,} memories written through the library, copied by SQL under other owners",
            "up to each size; one redaction; another owner writes in a loop meanwhile.",
            "",
            "| memories | scrub | VACUUM / REINDEX / overwrite / VACUUM | junk rows"
            " | WAL | other owner's writes |",
            "|---|---|---|---|---|---|",
            *rows,
            end,
        ]
    )
    record_block("scrub", block)


if __name__ == "__main__":
    main()
