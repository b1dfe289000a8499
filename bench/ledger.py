"""The ledger on the embedded SQLite store: durable appends, full-chain verification, size.

`python -m bench.ledger [--entries 100000] [--singles 200] [--runs 5] [--no-write]` measures,
on a fresh database in a temporary directory:

- durable appends one at a time: ``Memory.remember``, one transaction (and one fsync,
  ``synchronous=FULL``) per memory;
- durable appends in batches: ``Memory.remember_many`` of 100 and of 1,000 memories, one
  transaction per batch;
- full-chain verification of ``--entries`` entries: the chain alone (``verify_records``
  over every stored row: personaxis hashes, positions, metadata and erasable texts), then
  ``Memory.verify`` (the chain, its recorded head, and the projection against a rebuild);
- database bytes per memory, after a WAL checkpoint.

Every figure is the median of ``--runs`` runs. The results replace the section between
``<!-- bench:ledger:start -->`` and ``<!-- bench:ledger:end -->`` in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from bench.common import markers, record_block
from troth.config import load_policy
from troth.core.events import verify_records
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

OWNER = "human:bench"
START, END = markers("ledger")
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
WORDS = ["tea", "jazz", "trains", "novels", "chess", "running", "gardening", "cycling"]
WORDS += ["rain", "coffee", "maps"]


def text(i: int) -> str:
    """A memory of realistic length (~60 characters), different each time."""
    a, b, c = WORDS[i % 11], WORDS[(i // 11) % 11], WORDS[(i // 121) % 11]
    return f"note {i}: the person likes {a} and {b}, but not {c} on weekdays"


def machine() -> str:
    """CPU model, cores, RAM, OS."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown RAM"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = f"; load average {os.getloadavg()[0]:.1f} when the run ended"
    return f"{model}, {os.cpu_count()} cores, {ram}; {platform.system()} {platform.release()}{load}"


def open_memory(home: Path) -> Memory:
    return Memory(SQLiteStore(home / "troth.db"), policy=load_policy(None), principal=OWNER)


def timed(step: Callable[[], int]) -> float:
    """Items per second of one call of ``step`` (which returns how many items it did)."""
    began = time.perf_counter()
    done = step()
    return done / (time.perf_counter() - began)


class Bench:
    """The measurements, with one progress bar per phase on a terminal."""

    def __init__(self, args: argparse.Namespace, progress: Progress) -> None:
        self.args = args
        self.progress = progress
        self.results: dict[str, float] = {}

    def phase(self, label: str, total: int) -> Callable[[int], None]:
        task = self.progress.add_task(label, total=total)
        return lambda n: self.progress.advance(task, n)

    def singles(self, home: Path) -> None:
        advance = self.phase("single appends", self.args.runs * self.args.singles)
        rates = []
        with open_memory(home) as memory:
            for run in range(self.args.runs):

                def step(run: int = run) -> int:
                    for i in range(self.args.singles):
                        memory.remember(text(run * 100_000 + i))
                        advance(1)
                    return int(self.args.singles)

                rates.append(timed(step))
        self.results["single"] = statistics.median(rates)

    def batches(self, home: Path, size: int) -> None:
        count = max(size, self.args.batched // size * size)
        advance = self.phase(f"batches of {size}", self.args.runs * count)
        rates = []
        with open_memory(home) as memory:
            for run in range(self.args.runs):

                def step(run: int = run) -> int:
                    for start in range(0, count, size):
                        memory.remember_many([text(run * 10**6 + start + i) for i in range(size)])
                        advance(size)
                    return count

                rates.append(timed(step))
        self.results[f"batch{size}"] = statistics.median(rates)

    def scale(self, home: Path) -> None:
        entries = self.args.entries
        advance = self.phase(f"writing {entries:,} memories", entries)
        with open_memory(home) as memory:
            for start in range(0, entries, 1000):
                size = min(1000, entries - start)
                memory.remember_many([text(start + i) for i in range(size)])
                advance(size)
            store = memory.store
            assert isinstance(store, SQLiteStore)
            store.compact()
            self.results["bytes_per_memory"] = (home / "troth.db").stat().st_size / entries

            advance = self.phase("verifying the chain", self.args.runs * entries)
            rates = []
            for _ in range(self.args.runs):

                def chain_step() -> int:
                    result = verify_records(store.records(OWNER))
                    assert result.ok, result
                    assert result.length == entries, result
                    advance(entries)
                    return entries

                rates.append(timed(chain_step))
            self.results["verify_chain"] = statistics.median(rates)

            runs = max(1, self.args.runs // 2)
            advance = self.phase("verify + projection", runs * entries)
            rates = []
            for _ in range(runs):

                def full_step() -> int:
                    [report] = memory.verify(OWNER)
                    assert report.ok, report.to_dict()
                    advance(entries)
                    return entries

                rates.append(timed(full_step))
            self.results["verify_full"] = statistics.median(rates)


def section(args: argparse.Namespace, results: dict[str, float], command: str) -> str:
    """The markdown section of docs/benchmarks.md."""
    today = datetime.now(UTC).date().isoformat()
    rows = [
        ("durable appends, one memory per transaction", results["single"], "memories/s"),
        ("durable appends, batches of 100 (`remember_many`)", results["batch100"], "memories/s"),
        ("durable appends, batches of 1,000", results["batch1000"], "memories/s"),
        (
            f"full-chain verification at {args.entries:,} entries (`verify_records`)",
            results["verify_chain"],
            "entries/s",
        ),
        (
            f"`Memory.verify` at {args.entries:,} (chain + head + projection vs rebuild)",
            results["verify_full"],
            "entries/s",
        ),
        ("database size", results["bytes_per_memory"], "bytes/memory"),
    ]
    lines = [
        START,
        "### Ledger (embedded SQLite)",
        "",
        f"Machine: {machine()}. Python {platform.python_version()}. Date: {today}.",
        "",
        f"Command: `{command}` (medians of {args.runs} runs; verification at scale:"
        f" {args.runs} chain runs, {max(1, args.runs // 2)} full runs).",
        "",
        "| measurement | median | unit |",
        "|---|---:|---|",
    ]
    lines += [f"| {label} | {value:,.0f} | {unit} |" for label, value, unit in rows]
    lines += [
        "",
        "Appends are durable: WAL with `synchronous=FULL`, so each transaction waits for an"
        " fsync (here: ext4 on a virtual disk, whose fsync is cheap); every append first verifies the chain incrementally (from the last verified"
        " head) and checks the policy. One memory is one ledger entry (~60 characters of"
        " content, a reason, the `lm:meta` metadata document) plus its projection row and"
        " full-text row, which the size per memory includes.",
        "",
        END,
    ]
    return "\n".join(lines)


def record(text_: str, path: Path = DOCS) -> None:
    """Replace (or append) this benchmark's section of docs/benchmarks.md."""
    record_block("ledger", text_, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ledger benchmark and record it."""
    parser = argparse.ArgumentParser(prog="python -m bench.ledger", description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000, help="chain length to verify")
    parser.add_argument("--singles", type=int, default=200, help="single appends per run")
    parser.add_argument("--batched", type=int, default=5_000, help="batched appends per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(list(argv) if argv is not None else None)
    shown = [a for a in (argv or []) if a != "--no-write"]
    command = " ".join(["python -m bench.ledger", *shown])
    columns = (
        TextColumn("{task.description:<28}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    with (
        Progress(*columns, disable=not sys.stdout.isatty()) as progress,
        tempfile.TemporaryDirectory(prefix="troth-bench-") as tmp,
    ):
        bench = Bench(args, progress)
        for name in ("singles", "batches", "scale"):
            (Path(tmp) / name).mkdir()
        bench.singles(Path(tmp) / "singles")
        bench.batches(Path(tmp) / "batches", 100)
        bench.batches(Path(tmp) / "batches", 1000)
        bench.scale(Path(tmp) / "scale")
    text_ = section(args, bench.results, command)
    print(text_)
    if not args.no_write:
        record(text_)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
