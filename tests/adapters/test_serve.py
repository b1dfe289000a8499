"""What `make run` runs (`troth serve --first-token`): a real process that prints where to
open the page, a first token and how to connect an agent, then answers with that token."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2

from tests.backends import files_holding
from tests.service.test_erasure import CANARY, TOKENS
from troth.service.memory import Memory

ALICE = "human:alice"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(home: Path, port: int, *options: str) -> Iterator[subprocess.Popen[str]]:
    """``troth serve`` as a real process over ``home``, stopped when the block ends."""
    env = {**os.environ, "TROTH_HOME": str(home), "TROTH_PRINCIPAL": ALICE}
    command = [sys.executable, "-m", "troth.adapters.cli", "serve", "--port", str(port)]
    server = subprocess.Popen(
        [*command, *options], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        assert server.stdout is not None
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()


def test_serve_prints_the_page_a_first_token_and_how_to_connect_an_agent(tmp_path: Path) -> None:
    port = _free_port()
    with serving(tmp_path, port, "--first-token") as server:
        assert server.stdout is not None
        printed: list[str] = []
        for line in server.stdout:
            printed.append(line)
            if "point the MCP client at" in line:
                break
        text = "".join(printed)
        base = f"http://127.0.0.1:{port}"
        assert f"review page   {base}/" in text
        assert f"MCP endpoint  {base}/mcp" in text
        assert "Connect an agent" in text
        assert "--principal agent:assistant --on-behalf-of human:alice" in text
        found = re.search(r"^\s+(troth_t_\S+)$", text, re.MULTILINE)
        assert found is not None, text
        deadline = time.monotonic() + 30
        while True:
            try:
                me = httpx2.get(
                    f"{base}/api/me", headers={"Authorization": f"Bearer {found[1]}"}, timeout=2
                )
                break
            except httpx2.HTTPError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        assert me.status_code == 200
        assert me.json()["principal"] == ALICE


def test_the_readme_shows_both_mcp_configurations_and_three_http_calls() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert '"command": "/home/you/.local/bin/troth"' in readme  # stdio, as troth connect prints
    assert '"type": "http", "url": "http://127.0.0.1:8765/mcp"' in readme
    calls = re.findall(r"^curl .*http://127\.0\.0\.1:8765/api/\S+", readme, re.MULTILINE)
    calls += re.findall(r"^\s+-d .*http://127\.0\.0\.1:8765/api/\S+", readme, re.MULTILINE)
    assert len(calls) >= 3, calls


def test_serve_erases_text_whose_time_to_live_ends_while_it_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with serving(home, _free_port(), "--sweep-every", "0.5") as server:
        assert server.stdout is not None
        for line in server.stdout:
            if "point the MCP client at" in line:
                break
        # Written while the server runs, by another process, due two seconds from now.
        due = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
        with Memory.open(str(home), principal=ALICE) as memory:
            doomed = memory.remember(
                f"temporary {CANARY}", title=CANARY, expires=due.strftime("%Y-%m-%dT%H:%M:%SZ")
            )
        assert files_holding(home, CANARY), "positive control: the canary is on disk"
        deadline = time.monotonic() + 30
        while files_holding(home, CANARY) or files_holding(home, TOKENS[0]):
            assert server.poll() is None, "the server stopped"
            assert time.monotonic() < deadline, "the served store never erased the text"
            time.sleep(0.2)
        assert datetime.now(UTC) >= due
    with Memory.open(str(home), principal=ALICE) as memory:
        gone = memory.get(doomed.id)
        assert (gone.status, gone.content, gone.redacted) == ("expired", "", True)
        assert [a.actor for a in gone.audit[-2:]] == ["service:troth", "service:troth"]
        assert all(report.ok for report in memory.verify())
