"""What the fail-closed read path costs: a recall checked against the chain, and without.

`python -m bench.readcheck [--memories 10000] [--runs 200]` builds one owner's ledger of
``--memories`` memories on the embedded SQLite store (in batches, no embedder: the lexical
index only), then measures:

- a recall through the facade, which holds every memory it serves against the verified
  chain (``service/readcheck.py``), and the same recall run on the backend itself with no
  check (``service.recall.recall`` over the raw store): medians of ``--runs`` recalls, in
  alternation so both see the same machine;
- the check alone on what one recall serves (``ReadCheck.served``);
- the first read of the owner in a new process: the chain read, verified and folded once,
  and the projection counted (what every later read builds on);
- the first read of the owner in the process that wrote it (the read check took the
  writes: the witness and the census only);
- the first read in a new process from the fold a previous one saved (``service/folds.py``),
  with ``--since`` memories written after it was saved, and the time to save it.

The results replace the section between ``<!-- bench:readcheck:start -->`` and
``<!-- bench:readcheck:end -->`` in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.common import markers, record_block, step_clock
from bench.ledger import machine, text
from troth.config import load_policy
from troth.core import lifecycle
from troth.core.events import verify_records
from troth.service.folds import FoldFiles
from troth.service.memory import Memory
from troth.service.readcheck import ReadCheck
from troth.service.recall import Query
from troth.service.recall import recall as raw_recall
from troth.storage.sqlite import SQLiteStore

OWNER = "human:bench"
START, END = markers("readcheck")
QUERIES = ("tea and coffee", "garden on weekdays", "piano but not lisbon", "marathon train")


def main(argv: Sequence[str] | None = None) -> int:
    """Build the ledger, measure, and record the section."""
    parser = argparse.ArgumentParser(prog="python -m bench.readcheck")
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--since", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "troth.db")
        memory = Memory(store, policy=load_policy(None), principal=OWNER, clock=step_clock())
        made = 0
        while made < args.memories:
            batch = min(1000, args.memories - made)
            memory.remember_many([text(made + i) for i in range(batch)])
            made += batch
        now = datetime(2026, 12, 1, tzinfo=UTC)

        began = time.perf_counter()
        first = ReadCheck(store)
        first.chain(OWNER)
        first_read = time.perf_counter() - began
        began = time.perf_counter()
        records = list(store.records(OWNER))
        verify_records(records, owner=OWNER)
        verified = time.perf_counter() - began
        began = time.perf_counter()
        lifecycle.fold(records, OWNER)
        folded = time.perf_counter() - began
        del records

        # The fold saved by one process (the facade's close), then ``--since`` memories
        # written by another, then a new process's first read from the saved fold.
        folds = FoldFiles(Path(tmp) / "folds", lambda: b"k" * 32, lambda o: f"bench/{o}")
        saver = ReadCheck(store)
        saver.folds = folds
        saver.chain(OWNER)
        began = time.perf_counter()
        saver.save()
        saving = time.perf_counter() - began
        del saver
        memory.remember_many([text(args.memories + i) for i in range(args.since)])
        began, cpu = time.perf_counter(), time.thread_time()
        resumed = ReadCheck(store)
        resumed.folds = folds
        resumed.chain(OWNER)
        from_saved, from_saved_cpu = time.perf_counter() - began, time.thread_time() - cpu

        began = time.perf_counter()
        memory.recall(QUERIES[0])  # the facade's first read: this process wrote the owner
        own_writes = time.perf_counter() - began
        checked, unchecked, alone, alone_saved = [], [], [], []
        for run in range(args.runs):
            query = QUERIES[run % len(QUERIES)]
            began = time.perf_counter()
            hits = memory.recall(query)
            checked.append(time.perf_counter() - began)
            began = time.perf_counter()
            raw_recall(
                store,
                None,
                OWNER,
                Query(text=query),
                text=query,
                now=now,
                speakers_from=memory.policy.most_trusted(),
            )
            unchecked.append(time.perf_counter() - began)
            served = [h.memory for h in hits]
            began = time.perf_counter()
            first.served(OWNER, served)
            alone.append(time.perf_counter() - began)
            began = time.perf_counter()
            resumed.served(OWNER, served)
            alone_saved.append(time.perf_counter() - began)
        memory.close()
    ms = {
        "checked": statistics.median(checked) * 1000,
        "unchecked": statistics.median(unchecked) * 1000,
        "alone": statistics.median(alone) * 1000,
        "alone_saved": statistics.median(alone_saved) * 1000,
        "own_writes": own_writes * 1000,
        "from_saved": from_saved * 1000,
        "from_saved_cpu": from_saved_cpu * 1000,
        "saving": saving * 1000,
        "first": first_read * 1000,
        "verified": verified * 1000,
        "folded": folded * 1000,
    }
    share = ms["alone"] / ms["unchecked"] * 100
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = f"""{START}
## The fail-closed read path (`python -m bench.readcheck --memories {args.memories} --runs {args.runs}`)

{when}; {machine()}. One owner, {args.memories:,} memories, SQLite, lexical index only;
medians of {args.runs} recalls (limit 10), the checked and the unchecked one in turn;
load average {os.getloadavg()[0]:.1f} when it ended (other work shares the machine: compare
rows of one run with each other, not with other sections).

| step | time |
|---|---|
| a recall through the facade (every served memory held against the chain) | {ms["checked"]:.2f} ms |
| the same recall on the backend, unchecked | {ms["unchecked"]:.2f} ms |
| the check alone on what one recall serves (`ReadCheck.served`) | {ms["alone"]:.3f} ms ({share:.1f}% of the recall) |
| the first read of the owner in a process: chain read, verified, folded; projection counted | {ms["first"]:.0f} ms |
| of which: the chain read and verified | {ms["verified"]:.0f} ms |
| of which: the fold | {ms["folded"]:.0f} ms |
| the first read in the process that wrote the owner (a recall: witness and census only) | {ms["own_writes"]:.0f} ms |
| the first read in a new process from the saved fold, {args.since} memories written since | {ms["from_saved"]:.1f} ms ({ms["from_saved_cpu"]:.1f} ms thread CPU) |
| saving the fold (`ReadCheck.save`, at `Memory.close`) | {ms["saving"]:.0f} ms |
| the check on what one recall serves, over the saved fold (digests) | {ms["alone_saved"]:.3f} ms |

Each later read asks the store for the owner's tip (one query) and compares each served
memory with the one the chain makes (a dict look-up and one comparison, or over a saved
fold a `searchsorted` and a digest); the first read of an owner in a new process pays for
one pass over its chain, or, from a saved fold, for its MAC and the entries since
(docs/ledger.md, section 13).
{END}"""
    record_block("readcheck", block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
