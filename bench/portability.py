"""Export and import throughput at 10k memories: ``python -m bench.portability [N]``.

Fills a fresh SQLite ledger with N memories, then times: PCP archive export (tar), restore of
that archive into an empty ledger, import (x_import) of it into another, a second import of
the same archive (idempotent: nothing written), and HUX / personaxis export. Results go to
the ``bench:portability`` section of docs/benchmarks.md.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import markers, record_block
from troth.config import load_policy
from troth.service import portability
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = markers("portability")
OWNER = "human:alice"


def _memory(root: Path, name: str) -> Memory:
    return Memory(SQLiteStore(root / name / "troth.db"), policy=load_policy(None), principal=OWNER)


def _timed(label: str, count: int, work: Callable[[], Any], rows: list[str]) -> Any:
    began = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - began
    rows.append(f"| {label} | {count} | {seconds:.2f} | {count / seconds:,.0f} |")
    print(rows[-1], flush=True)
    return result


def cpu() -> str:
    """The processor's model name, where the platform says it."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def run(n: int) -> list[str]:
    """Time each operation on N memories; returns the table rows."""
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = _memory(root, "source")
        items = [
            {"text": f"memory number {i}: the person likes item {i % 97}", "tags": [f"t{i % 7}"]}
            for i in range(n)
        ]
        for start in range(0, n, 1000):
            source.remember_many(items[start : start + 1000])
        at = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
        result = _timed(
            "export PCP archive (tar)", n, lambda: portability.export_archive(source, at=at), rows
        )
        _timed("export HUX (JSON)", n, lambda: source.export("hux"), rows)
        _timed("export personaxis", n, lambda: source.export("personaxis"), rows)
        restored = _memory(root, "restored")
        _timed(
            "restore PCP archive",
            n,
            lambda: portability.import_bytes(restored, result.data, name="a.tar", mode="restore"),
            rows,
        )
        imported = _memory(root, "imported")
        _timed(
            "import PCP archive (x_import)",
            n,
            lambda: portability.import_bytes(imported, result.data, name="a.tar"),
            rows,
        )
        _timed(
            "import the same archive again (nothing written)",
            n,
            lambda: portability.import_bytes(imported, result.data, name="a.tar"),
            rows,
        )
        for m in (source, restored, imported):
            m.close()
    return rows


def main(argv: list[str]) -> int:
    """Run at N memories (default 10,000) and write the docs section."""
    n = int(argv[0]) if argv else 10_000
    rows = run(n)
    section = "\n".join(
        [
            START,
            "## Export and import (portability)",
            "",
            f"Machine: {platform.machine()}, {cpu()}, {os.cpu_count()} cores,"
            f" Python {platform.python_version()}, {platform.system()};"
            f" date {datetime.now(UTC).date()}; command `python -m bench.portability {n}`.",
            f"Import and restore write {portability.BATCH} memories per transaction, each"
            " validated and decided alone (per-item refusals; SQLite `synchronous=FULL`). Pages"
            " in the form troth writes are read by its canonical-form YAML reader (the full"
            " ruamel.yaml reader, about 3 ms a page, takes anything else). A repeated import"
            " hashes each page and skips the known (path, sha256) keys without parsing them."
            " The PCP export's time includes appending its `export` event; the HUX and"
            " personaxis rows time `Memory.export` (the bytes only).",
            "",
            "| operation | memories | seconds | memories/s |",
            "|---|---:|---:|---:|",
            *rows,
            END,
        ]
    )
    record_block("portability", section, DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
