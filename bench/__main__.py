"""Run every benchmark in turn: `python -m bench` (what `make bench` does)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = [
    "bench.ledger",
    "bench.locomo",
    "bench.scale",
    "bench.portability",
    "bench.server",
    "bench.sealing",
    "bench.readcheck",
]


def main() -> int:
    """Run each benchmark's ``main()`` in order; fails when any of them reports a failure."""
    failed = []
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        if importlib.import_module(name).main([]):
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
