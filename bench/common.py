"""What every benchmark shares: its section of docs/benchmarks.md, a nearest-rank quantile,
and the step clock and vocabulary of the write benchmarks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
