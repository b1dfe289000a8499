"""Recall at scale: ingest rate, query latency and database size on synthetic corpora.

For each size, a fresh store (SQLite in a temporary home, or a PostgreSQL database on a
throw-away server) gets that many generated memories through ``Memory.remember_many``
(batches of 1,000, embeddings computed by the shipped static model), then answers 200
generated questions through ``Memory.recall`` (limit 10). Text is generated from the
model's own word list with a Zipf distribution and a fixed seed, in conversational
sessions of 20 turns with two speakers, so the lexical and vector indexes see realistic
word frequencies; nothing depends on any real data set.

Each run writes ``bench/results/scale-BACKEND-SIZE.json``; the section between
``<!-- bench:scale:start -->`` and ``<!-- bench:scale:end -->`` in docs/benchmarks.md is
rendered from every such file, so SQLite and PostgreSQL, and a 1M run done once, appear
side by side.

Usage::

    .venv/bin/python -m bench.scale                                  # sqlite 10k,100k
    .venv/bin/python -m bench.scale --backend postgres --sizes 10000,100000
    .venv/bin/python -m bench.scale --backend postgres --sizes 100000 --shared-buffers 2GB
    .venv/bin/python -m bench.scale --sizes 1000000                 # long: hours at worst
    .venv/bin/python -m bench.scale --sizes 1000000 --keep /tmp/s1m  # build once, keep it
    .venv/bin/python -m bench.scale --sizes 1000000 --keep /tmp/s1m --profile first.prof

``--keep DIR`` (SQLite) builds the store in DIR and keeps it, with the questions it asks;
a later run with the same DIR and size opens that store instead of building it again, in a
fresh process: its first query then also verifies and folds the owner's whole chain (what
any process's first read does), which a run that ingested wrote itself and never folds.
Its ingest figures are those of the run that built it; a folder whose build did not
finish (a store, no record of it) is refused rather than ingested into again. ``--profile FILE`` writes cProfile
statistics of the first query (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import markers, record_block, throwaway_postgres
from troth.config import load_policy
from troth.core.query import STOPWORDS
from troth.embedding import DEFAULT_MODEL, MODELS_DIR, StaticEmbedder
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import Store

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = markers("scale")
OWNER = "human:scale"
BATCH = 1000
QUERIES = 200
SEED = 20261129
NAMES = [
    "Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall",
    "Logan", "Morgan", "Parker", "Quinn", "Riley", "Rowan", "Sawyer", "Skyler", "Taylor",
]  # fmt: skip


def vocabulary() -> list[str]:
    """Whole words of the shipped model's WordPiece vocabulary (alphabetic, 3+ letters)."""
    document = json.loads((MODELS_DIR / DEFAULT_MODEL / "tokenizer.json").read_text())
    words = [w for w in document["model"]["vocab"] if w.isalpha() and w.isascii() and len(w) > 2]
    return sorted(words)


class Corpus:
    """Deterministic conversational text: sessions of 20 turns between two speakers."""

    def __init__(self, seed: int = SEED) -> None:
        vocab = [w for w in vocabulary() if w not in STOPWORDS]
        self.random = np.random.default_rng(seed)
        # As in natural text, function words take the head of the Zipf distribution; a
        # fixed shuffle orders the content words after them.
        order = np.random.default_rng(seed + 1).permutation(len(vocab))
        self.words = sorted(STOPWORDS) + [vocab[i] for i in order]
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = 1.0 / ranks**1.05
        self.cumulative = np.cumsum(weights / weights.sum())

    def sentence(self, low: int = 6, high: int = 22) -> list[str]:
        """Random words, Zipf-distributed."""
        n = int(self.random.integers(low, high))
        picks = np.searchsorted(self.cumulative, self.random.random(n))
        # Clipped and listed in numpy: the generator runs inside the timed ingest, and a
        # Python min() per word was a twentieth of an ingested memory's cost.
        words = self.words
        return [words[i] for i in np.minimum(picks, len(words) - 1).tolist()]

    def items(self, count: int) -> Iterator[dict[str, Any]]:
        """``count`` memory items for ``remember_many``."""
        start = datetime(2023, 1, 1, tzinfo=UTC)
        for i in range(count):
            session = i // 20
            pair = (NAMES[session % len(NAMES)], NAMES[(session * 7 + 3) % len(NAMES)])
            speaker = pair[i % 2]
            day = start + timedelta(days=session % 1000)
            yield {
                "text": f"{speaker}: " + " ".join(self.sentence()),
                "session": f"s{session}",
                "recorded_at": day.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "extra": {"x_speaker": speaker},
            }

    def question(self, memory: str) -> str:
        """A question sharing a few words with a stored memory, plus noise words."""
        words = [w for w in memory.split(": ", 1)[-1].split() if w not in STOPWORDS] or ["news"]
        picks = self.random.choice(len(words), size=min(3, len(words)), replace=False)
        noise = self.sentence(1, 3)
        return "What did they say about " + " ".join([words[i] for i in sorted(picks)] + noise)


def machine() -> str:
    """The machine line of the results."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()},"
        f" Python {platform.python_version()}, load average {load:.1f} at start"
    )


@contextmanager
def sqlite_store(keep: Path | None = None) -> Iterator[tuple[Store, Callable[[], int], str]]:
    """A SQLite store in a temporary home (or in ``keep``, which is kept); yields it, a
    size function and a label."""
    from troth.storage.sqlite import SQLiteStore

    home = keep or Path(tempfile.mkdtemp(prefix="troth-scale-"))
    home.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(home / "troth.db")

    def size() -> int:
        store.compact()
        return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())

    try:
        yield store, size, "SQLite (WAL, synchronous=FULL) + FTS5 + sqlite-vec"
    finally:
        store.close()
        if keep is None:
            shutil.rmtree(home, ignore_errors=True)


@contextmanager
def postgres_store(
    shared_buffers: str | None = None,
) -> Iterator[tuple[Store, Callable[[], int], str]]:
    """A PostgreSQL database on a :func:`throwaway_postgres` server."""
    import psycopg

    from troth.storage.postgres import PostgresStore

    with throwaway_postgres(shared_buffers) as (server, socket_dir):
        with psycopg.connect(server.get_uri(), autocommit=True) as db:
            db.execute("CREATE DATABASE bench_scale")
            version = db.execute("SHOW server_version").fetchone()
            settings = ", ".join(
                f"{name}={db.execute(f'SHOW {name}').fetchone()[0]}"  # type: ignore[index]
                for name in ("synchronous_commit", "shared_buffers")
            )
        url = f"postgresql://postgres@/bench_scale?host={socket_dir}"
        store = PostgresStore(url)

        def size() -> int:
            row = store._connection().execute("SELECT pg_database_size(current_database())")
            return int(row.fetchone()[0])  # type: ignore[index]

        label = (
            f"PostgreSQL {version[0] if version else '?'} + pgvector (HNSW), unix socket,"
            f" {settings}"
        )
        try:
            yield store, size, label
        finally:
            store.close()


def run(
    backend: str,
    size: int,
    progress: Callable[[str, int, int], None],
    keep: Path | None = None,
    profile: Path | None = None,
    shared_buffers: str | None = None,
) -> dict[str, Any]:
    """Ingest ``size`` memories and time ``QUERIES`` recalls; the result record.

    ``keep``: build the store there and keep it, or open the one a run of the same size
    built there (see the module's docstring); ``profile``: cProfile the first query.
    """
    built_record = None if keep is None else keep / f"built-{size}.json"
    reused = built_record is not None and built_record.exists()
    if keep is not None and not reused and (keep / "troth.db").exists():
        # A build that stopped part way: ingesting again would add to what it left.
        raise SystemExit(
            f"bench.scale: {keep} holds a store no finished run built (no {built_record});"
            " remove that folder or keep elsewhere"
        )
    corpus = Corpus()
    embedder = StaticEmbedder.default()
    if keep is None:
        opener = sqlite_store if backend == "sqlite" else lambda: postgres_store(shared_buffers)
    elif backend == "sqlite":
        opener = lambda: sqlite_store(keep)  # noqa: E731 - one call site
    else:
        raise SystemExit("bench.scale: --keep is for the SQLite backend")
    with opener() as (store, db_size, label):
        memory = Memory(store, policy=load_policy(None), principal=OWNER, embedder=embedder)
        if reused:
            assert built_record is not None
            built = json.loads(built_record.read_text())
            samples: list[str] = built["samples"]
            ingest_s, build_s = built["ingest_s"], built["index_build_s"]
            ingest_cpu_s = built.get("ingest_cpu_s")
            corpus.random = np.random.default_rng(built["question_seed"])
        else:
            samples, ingest_s, build_s, ingest_cpu_s = ingest(memory, corpus, size, progress)
            if built_record is not None:
                built_record.write_text(
                    json.dumps(
                        {
                            "samples": samples,
                            "ingest_s": ingest_s,
                            "index_build_s": build_s,
                            "ingest_cpu_s": ingest_cpu_s,
                            "question_seed": SEED + size,
                        }
                    )
                )
            if keep is not None:
                corpus.random = np.random.default_rng(SEED + size)
        questions = [corpus.question(text) for text in samples]
        profiler = cProfile.Profile() if profile is not None else None
        cold_started, cold_cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        memory.recall(Query(text=questions[0], limit=10))
        if profiler is not None:
            profiler.disable()
        cold_ms = (time.perf_counter() - cold_started) * 1000
        # The thread's own CPU too: on a shared machine the wall time includes waiting.
        cold_cpu_ms = (time.thread_time() - cold_cpu) * 1000
        if profiler is not None and profile is not None:
            profiler.dump_stats(profile)
        timings = []
        for i, question in enumerate(questions):
            t = time.perf_counter()
            memory.recall(Query(text=question, limit=10))
            timings.append((time.perf_counter() - t) * 1000)
            progress("query", i + 1, len(questions))
        ordered = sorted(timings)
        command = f"python -m bench.scale --backend {backend} --sizes {size}" + (
            "" if shared_buffers is None else f" --shared-buffers {shared_buffers}"
        )
        result = {
            "backend": backend,
            "store": label,
            "memories": size,
            "ingest_per_s": round(size / ingest_s, 1),
            "ingest_s": round(ingest_s, 1),
            "index_build_s": round(build_s, 1),
            # The process's CPU (all its threads) per memory ingested: less moved by other
            # work on a shared machine than the rate (not by a backend's server processes).
            "ingest_cpu_us_per_memory": None
            if ingest_cpu_s is None
            else round(ingest_cpu_s / size * 1e6, 1),
            "query_p50_ms": round(statistics.median(timings), 2),
            "query_p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "first_query_ms": round(cold_ms, 1),
            "first_query_cpu_ms": round(cold_cpu_ms, 1),
            "db_bytes": db_size(),
            "machine": machine(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "command": command + (" --keep DIR" if keep is not None else ""),
        }
        if reused:
            result["note"] = (
                "store reopened from --keep in a fresh process: the first query includes"
                " verifying and folding the whole chain; ingest figures from the run that built it"
            )
        return result


def ingest(
    memory: Memory, corpus: Corpus, size: int, progress: Callable[[str, int, int], None]
) -> tuple[list[str], float, float, float]:
    """Remember ``size`` generated memories; the question samples, the ingest and build
    seconds, and the process's CPU seconds over the ingest."""
    samples: list[str] = []
    pick_every = max(1, size // QUERIES)
    batch: list[dict[str, Any]] = []
    started, cpu = time.perf_counter(), time.process_time()
    done = 0
    # A first load: the store may defer index upkeep to one build, counted in the rate.
    with memory.bulk_load():
        for index, item in enumerate(corpus.items(size)):
            batch.append(item)
            if index % pick_every == 0 and len(samples) < QUERIES:
                samples.append(item["text"])
            if len(batch) == BATCH:
                memory.remember_many(batch)
                done += len(batch)
                batch = []
                progress("ingest", done, size)
        if batch:
            memory.remember_many(batch)
            done += len(batch)
            progress("ingest", done, size)
        built = time.perf_counter()
    build_s = time.perf_counter() - built
    return samples, time.perf_counter() - started, build_s, time.process_time() - cpu


def section(records: Sequence[dict[str, Any]]) -> str:
    """The markdown section for every recorded run."""
    lines = [
        START,
        "## Recall at scale (`bench.scale`)",
        "",
        "Synthetic conversational memories (shipped model's word list, Zipf frequencies,"
        " fixed seed, sessions of 20 turns), one owner; ingest through"
        " `Memory.remember_many` in batches of 1,000 with embeddings, inside"
        " `Memory.bulk_load()` (PostgreSQL builds its HNSW index once at the end; the build"
        " counts in the ingest rate); 200 generated questions"
        " through `Memory.recall(limit=10)` after one warm-up query (its time is the"
        " 'first query' column: the process's first read of the owner, its witness and census, and"
        " the recall; the vector copy was started by the ingest). Bars: ingest ≥ 1,000/s and query"
        " p50 ≤ 50 ms at 100k.",
        "",
        "| backend | memories | ingest /s | of which index build s | query p50 ms |"
        " query p95 ms | first query ms | database | date | machine |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["backend"], r["memories"])):
        lines.append(
            f"| {r['backend']} | {r['memories']:,} | {r['ingest_per_s']:,.0f} |"
            f" {_build(r)} | {r['query_p50_ms']:.1f} | {r['query_p95_ms']:.1f} | {r['first_query_ms']:,.0f} |"
            f" {r['db_bytes'] / 1e6:,.0f} MB | {r['date']} | {r['machine']} |"
        )
    lines += [
        "",
        "Stores: " + "; ".join(sorted({f"{r['backend']}: {r['store']}" for r in records})),
    ]
    notes = [
        f"- {r['backend']} {r['memories']:,}: {r['note']}"
        for r in sorted(records, key=lambda r: (r["backend"], r["memories"]))
        if r.get("note")
    ]
    if notes:
        lines += ["", "Notes (the `note` field of a result file):", "", *notes]
    commands = sorted({r["command"] for r in records})
    lines += ["", "Commands: " + ", ".join(f"`{c}`" for c in commands), END]
    return "\n".join(lines)


def _build(record: dict[str, Any]) -> str:
    # SQLite has no index build to defer; PostgreSQL runs before bulk loading existed kept
    # their HNSW index up to date row by row.
    if record["backend"] == "sqlite":
        return "none"
    build = record.get("index_build_s")
    return "row by row" if build is None else f"{build:,.1f}"


def record(records: Sequence[dict[str, Any]], path: Path = DOCS) -> None:
    """Replace (or append) the bench:scale section of docs/benchmarks.md."""
    record_block("scale", section(records), path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sizes on one backend, save each result and update docs/benchmarks.md."""
    parser = argparse.ArgumentParser(prog="bench.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated corpus sizes")
    parser.add_argument("--no-docs", action="store_true", help="do not update benchmarks.md")
    parser.add_argument(
        "--keep", type=Path, help="build the SQLite store in this folder and keep it; reuse it"
    )
    parser.add_argument("--profile", type=Path, help="write cProfile stats of the first query")
    parser.add_argument(
        "--shared-buffers",
        help="PostgreSQL's shared_buffers for the throw-away server, e.g. 2GB (default: the"
        " server's own, 128MB)",
    )
    args = parser.parse_args(argv)
    if args.shared_buffers is not None:
        if args.backend != "postgres":
            parser.error(
                "--shared-buffers is a setting of the PostgreSQL server (--backend postgres)"
            )
        if not re.fullmatch(r"[1-9][0-9]*(kB|MB|GB)", args.shared_buffers):
            parser.error(
                f"--shared-buffers takes a size such as 512MB or 2GB; {args.shared_buffers!r}"
                " was given"
            )
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]

    def progress(phase: str, done: int, total: int) -> None:
        if done == total or done % (BATCH * 20) == 0:
            print(f"  {phase}: {done:,}/{total:,}", file=sys.stderr, flush=True)

    RESULTS.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        print(f"== {args.backend} {size:,}", file=sys.stderr, flush=True)
        keep = None if args.keep is None else args.keep / f"{args.backend}-{size}"
        result = run(args.backend, size, progress, keep, args.profile, args.shared_buffers)
        print(json.dumps(result), flush=True)
        out = RESULTS / f"scale-{args.backend}-{size}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
    if not args.no_docs:
        records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("scale-*.json"))]
        record(records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
