"""What every benchmark shares: its section of docs/benchmarks.md and a nearest-rank quantile."""

from __future__ import annotations

from collections.abc import Sequence
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
