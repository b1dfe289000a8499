"""What signed checkpoints cost: writes and verification with checkpointing on and off.

`python -m bench.sealing [--entries 20000] [--writes 200] [--cold 15] [--cli 5]` builds one
owner's ledger of ``--entries`` entries on the embedded SQLite store (in batches, no
embedder) with a directory witness, then measures:

- **warm writes** (a library caller or a server: one facade, one sealer): ``--writes``
  ``remember`` calls, each followed by ``Sealer.seal_moved`` under each checkpoint policy
  (off, each commit, each 10 and 100 commits, each second), as writes per second;
- **cold writes** (what each CLI command does in-process: a new store, facade and sealer,
  the guard against the witness, one write, the seal): ``--cold`` of them, off and each
  commit, milliseconds each;
- **CLI writes**: ``--cli`` real ``troth remember`` processes, off and each commit;
- **verification**: ``Memory.verify`` (the chain and projection), then ``Sealer.hold`` with
  ``full=True`` (``troth verify``'s witness half), as entries per second; and the writer's
  hold from the sealed tip.

The results replace the section between ``<!-- bench:sealing:start -->`` and
``<!-- bench:sealing:end -->`` in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.common import markers, record_block, step_clock
from bench.ledger import machine, text
from troth.config import load_policy
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.schedule import SealingSchedule
from troth.service.sealing import CheckpointPolicy, Sealer
from troth.service.tips import SealedTips
from troth.service.witness import DirectoryWitness
from troth.storage.sqlite import SQLiteStore

OWNER = "human:bench"
LEDGER = "bench.local/1"
START, END = markers("sealing")
SERVED = "each commit, by the server's schedule (default, `troth serve`)"
MODES: dict[str, CheckpointPolicy | None] = {
    "off": None,
    "each commit, in the writer (default, a CLI write)": CheckpointPolicy(entries=1),
    "each 10 commits": CheckpointPolicy(entries=10),
    "each 100 commits": CheckpointPolicy(entries=100),
    "each 1 s": CheckpointPolicy(entries=None, seconds=1.0),
}


def timed(work: Callable[[], object]) -> float:
    """Seconds one call takes."""
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


class Bench:
    """One ledger in a temporary folder, with its key, witness and sealed tips."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "home" / "troth.db"
        self.config = root / "config"
        self.keys = KeyStore(self.config / "signing.key")

    def memory(self) -> Memory:
        """A new facade over a new store, as a new process opens one."""
        return Memory(
            SQLiteStore(self.db), policy=load_policy(None), principal=OWNER, clock=step_clock(1)
        )

    def sealer(self, memory: Memory, policy: CheckpointPolicy | None) -> Sealer:
        """A new sealer (no witness when ``policy`` is None: checkpointing off)."""
        witnesses = [] if policy is None else [DirectoryWitness(self.config / "witness")]
        return Sealer(
            memory.store,
            self.keys,
            LEDGER,
            witnesses,
            policy=policy,
            tips=SealedTips(self.config / "sealed"),
            on_verified=memory.parts.ledger.trust,
        )


def warm_rate(bench: Bench, memory: Memory, policy: CheckpointPolicy | None, n: int) -> float:
    """Writes per second through one facade, each followed by the policy's seal."""
    sealer = bench.sealer(memory, policy)
    sealer.seal_due(all_grown=True)
    began = time.perf_counter()
    for i in range(n):
        before = {OWNER: memory.store.tip(OWNER).length}
        memory.remember(f"warm note {i}")
        sealer.seal_moved(before)
    return n / (time.perf_counter() - began)


def served_rate(bench: Bench, memory: Memory, n: int) -> float:
    """Writes per second through one facade while ``troth serve``'s schedule seals each
    commit in its own thread (the writes never wait for a seal)."""
    schedule = SealingSchedule(bench.sealer(memory, CheckpointPolicy(entries=1)))
    schedule.start()
    try:
        began = time.perf_counter()
        for i in range(n):
            memory.remember(f"served note {i}")
        took = time.perf_counter() - began
    finally:
        schedule.stop()
    return n / took


def cold_write(bench: Bench, policy: CheckpointPolicy | None) -> float:
    """Seconds for a CLI command's write in-process: open, guard, write, seal, close."""
    began = time.perf_counter()
    memory = bench.memory()
    sealer = bench.sealer(memory, policy)
    lengths = sealer.guard()
    memory.remember("one cold note")
    sealer.seal_moved(lengths)
    memory.close()
    return time.perf_counter() - began


def cli_write(bench: Bench, sealing: bool) -> float:
    """Seconds for a real ``troth remember`` process."""
    env = {
        **os.environ,
        "TROTH_SIGNING_KEY": str(bench.config / "signing.key"),
        "TROTH_WITNESS": str(bench.config / "witness") if sealing else "off",
        "TROTH_SEALING": str(bench.config / "sealing.toml"),
        "TROTH_LEDGER": LEDGER,
    }
    command = [sys.executable, "-m", "troth.adapters.cli", "--home", str(bench.db.parent)]
    began = time.perf_counter()
    subprocess.run(
        [*command, "--as", OWNER, "remember", "one CLI note"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return time.perf_counter() - began


def build(bench: Bench, entries: int) -> Memory:
    """The ledger of ``entries`` entries, sealed once."""
    memory = bench.memory()
    made = 0
    while made < entries:
        batch = min(1000, entries - made)
        memory.remember_many([text(made + i) for i in range(batch)])
        made += batch
    bench.sealer(memory, CheckpointPolicy()).seal()
    return memory


def main(argv: Sequence[str] | None = None) -> int:
    """Build the ledger, measure, and record the section."""
    parser = argparse.ArgumentParser(prog="python -m bench.sealing")
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--cold", type=int, default=15)
    parser.add_argument("--cli", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp))
        memory = build(bench, args.entries)
        # Modes in turns, round after round, so the machine's drift falls on all alike.
        rates: dict[str, list[float]] = {name: [] for name in MODES}
        for _ in range(args.rounds):
            for name, policy in MODES.items():
                rates[name].append(warm_rate(bench, memory, policy, args.writes))
            rates.setdefault(SERVED, []).append(served_rate(bench, memory, args.writes))
        warm = {name: statistics.median(r) for name, r in rates.items()}
        cold: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(args.cold):
            cold["off"].append(cold_write(bench, None))
            cold["on"].append(cold_write(bench, CheckpointPolicy()))
        cli: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(args.cli):
            cli["off"].append(cli_write(bench, False))
            cli["on"].append(cli_write(bench, True))
        length = memory.store.tip(OWNER).length
        verify_s = statistics.median(timed(lambda: memory.verify(OWNER)) for _ in range(3))
        hold_full = statistics.median(
            timed(lambda: bench.sealer(memory, CheckpointPolicy()).hold(full=True))
            for _ in range(3)
        )
        hold_tip = statistics.median(
            timed(lambda: bench.sealer(memory, CheckpointPolicy()).hold()) for _ in range(3)
        )
        memory.close()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    off = warm["off"]
    rows = "\n".join(
        f"| {name} | {rate:,.0f} | {100 * (rate / off - 1):+.1f}% |" for name, rate in warm.items()
    )
    c_off, c_on = (statistics.median(cold[k]) * 1000 for k in ("off", "on"))
    each = warm["each commit, in the writer (default, a CLI write)"]
    seal_ms = (1 / each - 1 / off) * 1000
    p_off, p_on = (statistics.median(cli[k]) * 1000 for k in ("off", "on"))
    command = (
        f"python -m bench.sealing --entries {args.entries} --writes {args.writes}"
        f" --cold {args.cold} --cli {args.cli} --rounds {args.rounds}"
    )
    block = f"""{START}
## Signed checkpoints (`{command}`)

{when}; {machine()}. One owner, {args.entries:,} entries (then {length:,} after the
writes), SQLite, a directory witness in the same file system.

**Warm writes** — one facade and one sealer (a library caller, `troth serve`): `remember`
then `Sealer.seal_moved` under each policy, {args.writes} writes a run, the median of
{args.rounds} runs taken in turns:

| checkpoints | writes/s | against off |
|---|---|---|
{rows}

One checkpoint made in the writer costs {seal_ms:.1f} ms here (from the first two rows: one
Ed25519 signature, the witness file checked, written and fsynced, the tip kept in memory);
each N commits spreads it over N writes.

**Cold writes** — what one CLI command does, in-process (a new store, facade and sealer;
hold against the witness; one write; seal): median of {args.cold}, in turns —
off {c_off:.1f} ms, each commit {c_on:.1f} ms ({100 * (c_on / c_off - 1):+.1f}%).
**CLI writes** — a real `troth remember` process, median of {args.cli}, in turns —
off {p_off:.0f} ms, each commit {p_on:.0f} ms ({100 * (p_on / p_off - 1):+.1f}%).

**Verification** of the {length:,} entries — `Memory.verify` (chain and projection)
{verify_s * 1000:.0f} ms ({length / verify_s:,.0f} entries/s); the witness half of
`troth verify` (`hold(full=True)`: the whole chain verified and hashed by a new sealer,
held against the witnessed root) {hold_full * 1000:.0f} ms ({length / hold_full:,.0f}
entries/s); a writer's hold from the sealed tip (what every write adds before it writes)
{hold_tip * 1000:.1f} ms.
{END}"""
    record_block("sealing", block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
