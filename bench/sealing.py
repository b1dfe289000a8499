"""What signed checkpoints cost: the Merkle root, a seal, a witness check, a proof.

`python -m bench.sealing [--entries 20000] [--runs 3]` builds one owner's ledger of
``--entries`` entries on the embedded SQLite store (in batches, no embedder), then measures
the median of ``--runs`` runs of:

- the RFC 6962 root over the entry hashes (``core.merkle``, pure);
- ``Sealer.seal``: verify the chain to its head, build the tree, sign, hand to a directory
  witness (with the consistency proof from the checkpoint it holds);
- ``Sealer.hold``: the store held against the witnessed checkpoint (what ``verify`` adds);
- ``Sealer.prove``: the inclusion proofs of one memory, with a fresh seal;
- what a CLI write adds: ``guard`` before it, ``seal_moved`` after one more entry.

The results replace the section between ``<!-- bench:sealing:start -->`` and
``<!-- bench:sealing:end -->`` in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.common import markers, record_block, step_clock
from bench.ledger import machine, text
from troth.config import load_policy
from troth.core import merkle
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.service.witness import DirectoryWitness
from troth.storage.sqlite import SQLiteStore

OWNER = "human:bench"
START, END = markers("sealing")


def timed(runs: int, work: Callable[[], object]) -> float:
    """The median seconds of ``runs`` calls."""
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        work()
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the ledger, measure, and record the section."""
    parser = argparse.ArgumentParser(prog="python -m bench.sealing")
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = SQLiteStore(root / "home" / "troth.db")
        memory = Memory(store, policy=load_policy(None), principal=OWNER, clock=step_clock())
        made = 0
        while made < args.entries:
            batch = min(1000, args.entries - made)
            memory.remember_many([text(made + i) for i in range(batch)])
            made += batch
        first = next(iter(store.records(OWNER))).decode()
        assert first is not None
        witness = DirectoryWitness(root / "config" / "witness")
        keys = KeyStore(root / "config" / "signing.key")

        def fresh() -> Sealer:
            """A sealer that has verified nothing yet, as each CLI command starts with."""
            return Sealer(store, keys, "bench.local/1", [witness])

        warm = fresh()
        hashes = [r.entry.hash for r in store.records(OWNER)]
        figures = {
            "root": timed(args.runs, lambda: merkle.Tree.of_entries(hashes).root()),
            "seal": timed(args.runs, lambda: fresh().seal(OWNER)),
            "seal_warm": timed(args.runs, lambda: warm.seal(OWNER)),
            "hold": timed(args.runs, lambda: fresh().hold()),
            "prove": timed(args.runs, lambda: fresh().prove(first.memory, OWNER)),
        }

        def one_cli_write() -> None:
            sealer = fresh()
            lengths = sealer.guard()
            memory.remember("one more note")
            sealer.seal_moved(lengths)

        def one_plain_write() -> None:
            memory.remember("one more note")

        figures["cli_write"] = timed(args.runs, one_cli_write)
        figures["plain_write"] = timed(args.runs, one_plain_write)
        memory.close()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    ms = {k: v * 1000 for k, v in figures.items()}
    block = f"""{START}
## Signed checkpoints (`python -m bench.sealing --entries {args.entries} --runs {args.runs}`)

{when}; {machine()}. One owner, {args.entries:,} entries, SQLite; medians of {args.runs} runs.

| step | time |
|---|---|
| RFC 6962 root over the entry hashes (pure) | {ms["root"]:.1f} ms |
| `seal` by a new sealer: verify the chain, tree, sign, witness | {ms["seal"]:.1f} ms |
| `seal` again by the same sealer (only new rows are read) | {ms["seal_warm"]:.1f} ms |
| `hold` by a new sealer: the store against the witnessed checkpoint | {ms["hold"]:.1f} ms |
| `prove` by a new sealer: one memory's proofs, with a fresh seal | {ms["prove"]:.1f} ms |
| a `remember` alone (the facade has verified the chain before) | {ms["plain_write"]:.1f} ms |
| a `remember` as a CLI write runs it (new sealer: guard, write, seal) | {ms["cli_write"]:.1f} ms |

A new sealer — each CLI command makes one — reads, verifies and hashes the whole chain
once (the guard), then only what the write appended (the seal), so a CLI write costs
about one chain verification more than the write (in a new process the facade verifies
the chain once more before its first write, docs/ledger.md section 10); a long-lived sealer
pays for new rows only. Persisting the tree's nodes beside the chain, and checkpointing every N writes or T
seconds on a server, are the planned next steps (docs/ledger.md, section 12).
{END}"""
    record_block("sealing", block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
