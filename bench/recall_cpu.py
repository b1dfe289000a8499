"""A warm recall's wall time and CPU on a kept ``bench.scale`` store, and its results.

Usage (the store built once by ``bench.scale --keep``)::

    .venv/bin/python -m bench.scale --sizes 100000 --keep /tmp/k100 --no-docs
    PYTHONPATH=$PWD/src .venv/bin/python -m bench.recall_cpu /tmp/k100/sqlite-100000 100000
    PYTHONPATH=$PWD/src .venv/bin/python -m bench.recall_cpu DIR 100000 --dump hits.json

Per round: the median of the 200 questions' wall time, of the recalling thread's CPU
(``time.thread_time``) and of the process's (``time.process_time``, which counts the
vector search's pool thread). Run it in turns with the old code (a worktree of it, its own
``PYTHONPATH``) on the same store: on a shared machine the CPU figures are the ones to
compare. ``--dump`` writes every hit (id, score, ``why``, content) of the questions at
``limit`` 10 and 3 with a fixed ``now``, so two codes' results can be compared byte for
byte (docs/benchmarks.md, "Issue 19, recall CPU").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.scale import OWNER, Corpus
from troth.config import load_policy
from troth.embedding import StaticEmbedder
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.sqlite import SQLiteStore

_FIXED_NOW = "2027-01-01T00:00:00Z"


def main(argv: Sequence[str] | None = None) -> int:
    """Measure (and optionally dump) warm recalls on a kept store."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a bench.scale --keep store folder")
    parser.add_argument("size", type=int, help="its size (names its built-SIZE.json)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dump", type=Path, help="write every hit here (fixed now)")
    args = parser.parse_args(argv)
    built = json.loads((args.folder / f"built-{args.size}.json").read_text())
    corpus = Corpus()
    corpus.random = np.random.default_rng(built["question_seed"])
    questions = [corpus.question(t) for t in built["samples"]]
    memory = Memory(
        SQLiteStore(args.folder / "troth.db"),
        policy=load_policy(None),
        principal=OWNER,
        embedder=StaticEmbedder.default(),
    )
    started = time.perf_counter()
    memory.recall(Query(text=questions[0], limit=10))  # folds the chain: not counted
    first = (time.perf_counter() - started) * 1000
    for question in questions[:50]:
        memory.recall(Query(text=question, limit=10))
    if args.dump is not None:
        hits = [
            [[h.memory.id, h.score, h.why, h.memory.content] for h in memory.recall(query)]
            for limit in (10, 3)
            for query in (Query(text=q, limit=limit, now=_FIXED_NOW) for q in questions)
        ]
        args.dump.write_text(json.dumps(hits, sort_keys=True))
    rounds = []
    for _ in range(args.rounds):
        wall, thread, process = [], [], []
        for question in questions:
            t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
            memory.recall(Query(text=question, limit=10))
            wall.append((time.perf_counter() - t0) * 1000)
            thread.append((time.thread_time() - c0) * 1000)
            process.append((time.process_time() - p0) * 1000)
        rounds.append(
            f"wall p50 {statistics.median(wall):.1f} thread {statistics.median(thread):.1f}"
            f" process {statistics.median(process):.1f} ms"
        )
    load = os.getloadavg()[0]
    print(f"first {first:.0f} ms, load {load:.2f}: " + " | ".join(rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
