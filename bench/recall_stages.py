"""Where a recall's time goes at scale: the store's calls, each search alone, and the rest.

A fresh store (SQLite, or PostgreSQL on a throw-away server) gets ``--size`` memories
generated as ``bench.scale`` generates them, then answers ``bench.scale``'s questions
through ``Memory.recall`` (limit 10), ``--rounds`` times after a warm-up. Each call the
recall makes to the store is timed where it is made, so the table says how long a recall
waits for each, and "ranking in Python" is the rest of its wall time (the first stage,
``rank``, the late interaction, the relevance floor, building the hits). Then each
question's two searches are timed alone, one after the other: a recall runs them side by
side (``Store.candidates``), so the longer of the two is its critical path.

Usage::

    .venv/bin/python -m bench.recall_stages                          # SQLite, 100k
    .venv/bin/python -m bench.recall_stages --backend postgres --shared-buffers 2GB
    .venv/bin/python -m bench.recall_stages --size 20000 --json stages.json

Nothing is written to docs/benchmarks.md: the figures are for finding the stage to work
on, and the section that uses them names the command and the machine.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from bench.scale import OWNER, Corpus, ingest, machine, postgres_store, sqlite_store
from troth.config import load_policy
from troth.core.query import candidate_limits, lexical_terms
from troth.embedding import StaticEmbedder
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import MemoryFilter, Store

#: The store calls a recall makes, timed where the recall makes them.
STORE_CALLS = ("erasure_epoch", "candidates", "recall_rows", "get_many")
WARM_UP = 50


def _timed(
    store: Store, name: str, spent: dict[str, list[float]], now: list[float]
) -> Callable[..., Any]:
    """``store.name`` that adds each call's milliseconds to ``spent[name]`` and ``now[0]``."""
    method = getattr(store, name)

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            spent[name].append(elapsed)
            now[0] += elapsed

    return call


def measure(
    store: Store, questions: Sequence[str], rounds: int, embedder: StaticEmbedder
) -> dict[str, Any]:
    """The medians (ms) of a recall's wall time, of each store call, of the rest, and of
    each search alone, over ``rounds`` passes of ``questions`` after a warm-up."""
    memory = Memory(store, policy=load_policy(None), principal=OWNER, embedder=embedder)
    for question in questions[:WARM_UP]:
        memory.recall(Query(text=question, limit=10))
    spent: dict[str, list[float]] = defaultdict(list)
    in_store = [0.0]
    for name in STORE_CALLS:
        # An attribute of the instance shadows the class's method for this store alone.
        setattr(store, name, _timed(store, name, spent, in_store))
    wall: list[float] = []
    rest: list[float] = []
    try:
        for _ in range(rounds):
            for question in questions:
                in_store[0] = 0.0
                started = time.perf_counter()
                memory.recall(Query(text=question, limit=10))
                elapsed = (time.perf_counter() - started) * 1000
                wall.append(elapsed)
                rest.append(elapsed - in_store[0])
    finally:
        for name in STORE_CALLS:
            delattr(store, name)
    limits = candidate_limits(10)
    every = MemoryFilter(retrievable_only=True)
    alone: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for question in questions:
            terms = lexical_terms(question)
            vector = embedder.embed([question])[0]
            started = time.perf_counter()
            store.lexical(OWNER, terms, limits.lexical, every)
            alone["lexical"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            store.vector(OWNER, vector, limits.vector, every)
            alone["vector"].append((time.perf_counter() - started) * 1000)
    median = statistics.median
    copies = getattr(store, "vector_copies", None)  # PostgreSQL's; SQLite has none
    load_s = None if copies is None else copies.last_load_s
    return {
        "recall_p50_ms": round(median(wall), 2),
        "store_calls_p50_ms": {name: round(median(spent[name]), 2) for name in STORE_CALLS},
        "ranking_in_python_p50_ms": round(median(rest), 2),
        "alone_p50_ms": {name: round(median(times), 2) for name, times in alone.items()},
        "recalls": len(wall),
        # PostgreSQL: how long loading the owner's vector copy took (None: no copy).
        "vector_copy_load_s": None if load_s is None else round(load_s, 3),
    }


def table(result: dict[str, Any]) -> str:
    """The result as a Markdown table, one stage a row."""
    rows = [("a recall, wall", result["recall_p50_ms"])]
    rows += [(f"store.{n}", v) for n, v in result["store_calls_p50_ms"].items()]
    rows += [("ranking in Python (the rest)", result["ranking_in_python_p50_ms"])]
    rows += [(f"{n} search alone", v) for n, v in result["alone_p50_ms"].items()]
    lines = ["| stage | p50 ms |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the store, measure it and print the table (and ``--json``)."""
    parser = argparse.ArgumentParser(
        prog="bench.recall_stages", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--size", type=int, default=100_000, help="memories to generate")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    parser.add_argument("--shared-buffers", help="PostgreSQL's shared_buffers, e.g. 2GB")
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args(argv)
    if args.size < 1 or args.rounds < 1:
        parser.error("--size and --rounds take a whole number of at least 1")
    if args.shared_buffers is not None and args.backend != "postgres":
        parser.error("--shared-buffers is a setting of the PostgreSQL server (--backend postgres)")
    opener: Callable[[], AbstractContextManager[tuple[Store, Any, str]]] = (
        sqlite_store
        if args.backend == "sqlite"
        else functools.partial(postgres_store, args.shared_buffers)
    )
    embedder = StaticEmbedder.default()

    def progress(phase: str, done: int, total: int) -> None:
        if done == total or done % 20_000 == 0:
            print(f"  {phase}: {done:,}/{total:,}", file=sys.stderr, flush=True)

    with opener() as (store, _size, label):
        memory = Memory(store, policy=load_policy(None), principal=OWNER, embedder=embedder)
        corpus = Corpus()
        samples, *_ = ingest(memory, corpus, args.size, progress)
        questions = [corpus.question(text) for text in samples]
        result = measure(store, questions, args.rounds, embedder)
    result |= {"backend": args.backend, "store": label, "memories": args.size}
    result |= {"machine": machine(), "date": time.strftime("%Y-%m-%d", time.gmtime())}
    print(table(result))
    if result["vector_copy_load_s"] is not None:
        print(f"\nThe owner's vector copy loaded in {result['vector_copy_load_s']} s.")
    print(f"\n{label}; {args.size:,} memories; {result['machine']}; {result['date']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
