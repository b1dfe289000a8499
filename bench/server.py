"""Load on the served API: N concurrent clients, each writing and searching on ONE owner's chain.

`python -m bench.server [--clients 32] [--ops 500] [--questions topics|distinct] [--no-write]`
starts `troth serve` as a
subprocess on a free loopback port over a fresh home, gives every client a token of the
owner, and has each client alternate writes (POST /api/memories) and searches
(GET /api/search) until it has done ``--ops`` of each. Afterwards it checks that nothing
failed, that the acknowledged writes equal the ledger's entries, and that the chain
verifies; then it records p50/p99 latency and throughput in docs/benchmarks.md between
``<!-- bench:server:start -->`` and ``<!-- bench:server:end -->``.

``--questions topics`` (the default) asks "TOPIC note": 32 clients share 8 questions, so
searches queued together often ask the same thing. ``--questions distinct`` makes every
search its own ("TOPIC client C note I"), so no two searches in a run ask the same: the
figure for a server that cannot answer one search from another's run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx2

from bench.common import DOCS, markers, percentile, record_block

OWNER = "human:bench"
START, END = markers("server")
TOPICS = ["tea", "running", "trains", "jazz", "novels", "gardening", "chess", "cycling"]


@dataclass
class LoadResult:
    """What a load run measured."""

    clients: int
    ops_per_client: int
    wall_seconds: float = 0.0
    acknowledged: int = 0
    errors: list[str] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    entries: int = -1
    chain_ok: bool = False

    @property
    def requests(self) -> int:
        return len(self.write_ms) + len(self.search_ms)

    @property
    def correct(self) -> bool:
        """No error, every acknowledged write is one ledger entry, the chain verifies."""
        return not self.errors and self.acknowledged == self.entries and self.chain_ok


def question(topic: str, index: int, op: int, questions: str) -> str:
    """The search client ``index`` sends at its ``op``-th turn."""
    if questions == "distinct":
        return f"{topic} client {index} note {op}"
    return f"{topic} note"


async def _client(
    http: httpx2.AsyncClient,
    token: str,
    index: int,
    ops: int,
    result: LoadResult,
    questions: str = "topics",
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    for i in range(ops):
        topic = TOPICS[(index + i) % len(TOPICS)]
        started = time.perf_counter()
        try:
            answer = await http.post(
                "/api/memories",
                json={"content": f"client {index} note {i}: likes {topic}", "kind": "fact"},
                headers=headers,
            )
            if answer.status_code == 201:
                result.acknowledged += 1
            else:
                result.errors.append(f"write {answer.status_code}: {answer.text[:200]}")
        except httpx2.HTTPError as exc:
            result.errors.append(f"write {type(exc).__name__}: {exc}")
        result.write_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        try:
            found = await http.get(
                "/api/search",
                params={"q": question(topic, index, i, questions), "limit": "10"},
                headers=headers,
            )
            if found.status_code != 200:
                result.errors.append(f"search {found.status_code}: {found.text[:200]}")
        except httpx2.HTTPError as exc:
            result.errors.append(f"search {type(exc).__name__}: {exc}")
        result.search_ms.append((time.perf_counter() - started) * 1000)


async def drive(url: str, tokens: Sequence[str], ops: int, questions: str = "topics") -> LoadResult:
    """Run one client per token concurrently, then read the chain's status."""
    result = LoadResult(clients=len(tokens), ops_per_client=ops)
    limits = httpx2.Limits(max_connections=len(tokens) + 4, max_keepalive_connections=len(tokens))
    async with httpx2.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(
            *(_client(http, token, i, ops, result, questions) for i, token in enumerate(tokens))
        )
        result.wall_seconds = time.perf_counter() - started
        status = await http.get("/api/verify", headers={"Authorization": f"Bearer {tokens[0]}"})
        data = status.json()
        result.entries = int(data["length"])
        result.chain_ok = bool(data["ok"]) and bool(data["projection_ok"])
    return result


def run_load(url: str, tokens: Sequence[str], ops: int, questions: str = "topics") -> LoadResult:
    """Synchronous entry for tests: drive a server at ``url``."""
    return asyncio.run(drive(url, tokens, ops, questions))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _issue_tokens(home: Path, count: int) -> list[str]:
    from troth.config import Settings, build_memory
    from troth.core.access import HUMAN_DEFAULT_SCOPES
    from troth.service.tokens import Tokens

    memory = build_memory(Settings.load(home=home, principal=OWNER))
    try:
        tokens = Tokens(memory.store)
        return [tokens.create(OWNER, HUMAN_DEFAULT_SCOPES).token for _ in range(count)]
    finally:
        memory.close()


def render(result: LoadResult, command: str) -> str:
    """The markdown section for docs/benchmarks.md."""
    rps = result.requests / result.wall_seconds if result.wall_seconds else 0.0
    machine = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"
    )
    rows = [
        ("writes (POST /api/memories)", result.write_ms),
        ("searches (GET /api/search)", result.search_ms),
    ]
    lines = [
        START,
        "## Served API under load (`bench.server`)",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d')}; machine: {machine};"
        f" Python {platform.python_version()}",
        f"- setup: `troth serve` (uvicorn, one process) on loopback over the embedded SQLite"
        f" store (WAL, synchronous=FULL); {result.clients} concurrent clients, each alternating"
        f" {result.ops_per_client} writes and {result.ops_per_client} searches, all on ONE"
        " owner's chain; recall gate"
        f" {os.environ.get('TROTH_MAX_CONCURRENT_RECALLS') or '1 (the default)'}"
        " (docs/api.md, Concurrency)",
        f"- correctness: {len(result.errors)} errors; {result.acknowledged} acknowledged writes,"
        f" {result.entries} ledger entries; chain and projection verify: {result.chain_ok}",
        f"- throughput: {rps:.0f} requests/s ({result.requests} requests in"
        f" {result.wall_seconds:.1f} s)",
        "",
        "| operation | requests | p50 ms | p99 ms |",
        "|---|---:|---:|---:|",
    ]
    for label, values in rows:
        lines.append(
            f"| {label} | {len(values)} | {statistics.median(values):.1f} |"
            f" {percentile(values, 0.99):.1f} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def record(section: str, path: Path = DOCS) -> None:
    """Replace (or append) the bench:server section of docs/benchmarks.md."""
    record_block("server", section, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Start a server, load it, check it, record the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--ops", type=int, default=500, help="writes (and searches) per client")
    parser.add_argument(
        "--questions",
        choices=("topics", "distinct"),
        default="topics",
        help="topics: 8 questions shared by the clients; distinct: every search its own",
    )
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(list(argv) if argv is not None else None)
    with tempfile.TemporaryDirectory(prefix="troth-bench-") as tmp:
        home = Path(tmp)
        tokens = _issue_tokens(home, args.clients)
        port = _free_port()
        log = (home / "server.log").open("wb")
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "troth.adapters.cli",
                "--home",
                str(home),
                "--as",
                OWNER,
                "serve",
                "--port",
                str(port),
                "--no-first-token",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180  # a loaded machine starts slowly
            while True:
                try:
                    if httpx2.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
            result = run_load(url, tokens, args.ops, args.questions)
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
    command = f"python -m bench.server --clients {args.clients} --ops {args.ops}"
    if args.questions != "topics":
        command += f" --questions {args.questions}"
    section = render(result, command)
    print(section)
    for error in result.errors[:10]:
        print("error:", error, file=sys.stderr)
    if not args.no_write:
        record(section)
    return 0 if result.correct else 1


if __name__ == "__main__":
    sys.exit(main())
