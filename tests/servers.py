"""Start ``troth serve`` as a process and wait for it, for the tests that need a real server."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import httpx2

BANNER_END = "point the MCP client at"


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running server: its base URL and the banner it printed."""

    base: str
    banner: str


@contextmanager
def serving(argv: Sequence[str], env: Mapping[str, str], port: int) -> Iterator[Served]:
    """Run ``argv`` (a ``troth … serve --port PORT`` line) until the block ends.

    Reads the banner up to its last line, then waits until ``/healthz`` answers.
    """
    server = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(env)
    )
    try:
        assert server.stdout is not None
        printed: list[str] = []
        for line in server.stdout:
            printed.append(line)
            if BANNER_END in line:
                break
        banner = "".join(printed)
        assert BANNER_END in banner, f"the server stopped before its banner ended:\n{banner}"
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not answer /healthz"
            time.sleep(0.1)
        yield Served(base, banner)
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
