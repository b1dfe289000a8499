"""Run every benchmark in turn: `python -m bench` (what `make bench` does)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ["bench.ledger", "bench.locomo", "bench.scale", "bench.portability", "bench.server"]


def main() -> int:
    """Run each benchmark module's ``main()`` that exists, in order."""
    for name in BENCHMARKS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        print(f"== {name}", flush=True)
        module.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
