"""What a redaction costs another owner: that owner's longest write while it runs.

``python -m bench.erasure [--memories 20000] [--backend sqlite --backend postgres]`` fills
one owner's ledger with N memories, then redacts one of them while another owner writes in
a loop on another thread, and records the redaction's time and the other owner's longest
write, and on PostgreSQL the longest of those that ran while its compaction did
(docs/benchmarks.md, ``bench:erasure``). The redaction holds the write lock on SQLite
(one writer per file) while it truncates the WAL; on PostgreSQL the compaction it runs
(``storage.postgres.scrub``) takes no lock another owner's write waits for, and grows with
the store only in its own duration (the redaction's time), not in the other owner's.
"""

from __future__ import annotations

import argparse
import threading
import time
from datetime import UTC, datetime

from bench.common import markers, record_block
from bench.scale import machine, postgres_store, sqlite_store
from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.base import Store

STORES = {"sqlite": sqlite_store, "postgres": postgres_store}


def measure(store: Store, memories: int) -> tuple[float, int, float, float | None]:
    """(redaction seconds, other owner's writes meanwhile, the longest of them, the longest
    of those that ran while the compaction did — PostgreSQL, whose compaction this runs
    apart from the redaction's transaction; None on SQLite, where they are one step)."""
    alice = Memory(store, policy=load_policy(None), principal="human:alice")
    bob = Memory(store, policy=load_policy(None), principal="human:bob")
    for start in range(0, memories, 1000):
        batch = range(start, min(start + 1000, memories))
        alice.remember_many([f"memory number {i} about tea and the word {i * 7}" for i in batch])
    secret = alice.remember("my locker word is zqxbenchcanary")
    bob.remember("a first write: bob's chain is verified before the clock starts")
    apart = hasattr(store, "compact_after_erase")
    if apart:
        store.compact_after_erase = False  # type: ignore[attr-defined]
    waits: list[tuple[float, float]] = []
    done = threading.Event()

    def write() -> None:
        while not done.is_set():
            started = time.monotonic()
            bob.remember("bob writes while alice redacts")
            waits.append((started, time.monotonic() - started))

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.5)
    started = time.monotonic()
    alice.redact(secret.id, reason="benchmark")
    compaction = time.monotonic()
    if apart:
        store.finish_erasures(store.erasure_wait)
    took = time.monotonic() - started
    time.sleep(0.5)
    done.set()
    writer.join()
    during = [w for at, w in waits if at + w >= compaction] if apart else []
    return took, len(waits), max(w for _, w in waits), (max(during) if during else None)


def main() -> None:
    """Measure each backend and record the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20000)
    parser.add_argument("--backend", action="append", choices=sorted(STORES))
    args = parser.parse_args()
    rows = []
    for name in args.backend or sorted(STORES, reverse=True):
        with STORES[name]() as (store, _size, label):
            took, writes, longest, compacting = measure(store, args.memories)
        apart = "(one step)" if compacting is None else f"{compacting:.3f} s"
        rows.append(f"| {label} | {took:.2f} s | {writes} | {longest:.3f} s | {apart} |")
        print(rows[-1], flush=True)
    start, end = markers("erasure")
    command = "python -m bench.erasure --memories " + str(args.memories)
    block = "\n".join(
        [
            start,
            f"Machine: {machine()}. Date: {datetime.now(UTC):%Y-%m-%d}.",
            "",
            f"Command: `{command}` (one owner holds {args.memories:,} memories; another",
            "writes in a loop while one of them is redacted)",
            "",
            "| store | redaction | other owner's writes meanwhile | longest of them"
            " | longest while the compaction ran |",
            "|---|---|---|---|---|",
            *rows,
            end,
        ]
    )
    record_block("erasure", block)


if __name__ == "__main__":
    main()
