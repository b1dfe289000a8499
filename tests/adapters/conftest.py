"""Fixtures for the adapters: a ledger with tokens, an in-process client, a live server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from tests.conftest import facade
from troth.adapters.cli import cli
from troth.adapters.console import EXIT_OK
from troth.adapters.server import ServerOptions, create_app
from troth.core.access import HUMAN_DEFAULT_SCOPES
from troth.service.memory import Memory
from troth.service.tokens import Tokens
from troth.storage.base import Tip
from troth.storage.sqlite import SQLiteStore

ALICE, BOB, AGENT = "human:alice", "human:bob", "agent:assistant"


@dataclass
class Ledger:
    """A served store with one token per kind of caller."""

    memory: Memory
    tokens: Tokens
    home: Path
    alice: str
    bob: str
    agent: str
    agent_for_bob: str
    reader: str

    def head(self, owner: str = ALICE) -> tuple[int, str]:
        tip = self.memory.store.tip(owner)
        return tip.length, tip.head


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def make_ledger(home: Path) -> Ledger:
    memory = facade(SQLiteStore(home / "troth.db"), principal=ALICE)
    tokens = memory.tokens
    agent_scopes = ["memory:read", "memory:write"]
    return Ledger(
        memory=memory,
        tokens=tokens,
        home=home,
        alice=tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token,
        bob=tokens.create(BOB, HUMAN_DEFAULT_SCOPES).token,
        agent=tokens.create(AGENT, agent_scopes, on_behalf_of=ALICE).token,
        agent_for_bob=tokens.create(AGENT, agent_scopes, on_behalf_of=BOB).token,
        reader=tokens.create("agent:reader", ["memory:read"], on_behalf_of=ALICE).token,
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    made = make_ledger(tmp_path / "home")
    yield made
    made.memory.close()


@pytest.fixture
def client(ledger: Ledger) -> Iterator[TestClient]:
    app = create_app(ledger.memory, ledger.tokens, ServerOptions(allowed_hosts=("testserver",)))
    with TestClient(app) as c:
        yield c


class LiveServer:
    """uvicorn on a free loopback port in a thread, for clients that need real HTTP."""

    def __init__(
        self, ledger: Ledger, options: ServerOptions | None = None, *, public: bool = False
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        options = options or ServerOptions()
        if public:  # the server knows its URL, as under `troth serve`: OAuth is served
            options = replace(options, public_url=self.url)
        app = create_app(ledger.memory, ledger.tokens, options)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()


@pytest.fixture
def live(ledger: Ledger) -> Iterator[LiveServer]:
    with LiveServer(ledger) as server:
        yield server


# -- the CLI, as a person types it ------------------------------------------------------


def invoke(home: Path, *args: str, who: str = ALICE) -> Result:
    """``troth --home HOME --as WHO ARGS…`` in process."""
    return CliRunner().invoke(cli, ["--home", str(home), "--as", who, *args])


def said(result: Result) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def as_json(result: Result, *, code: int = EXIT_OK) -> dict[str, Any]:
    """A command's ``--json`` output, after it exited with ``code`` (by default: success)."""
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def tip(home: Path, owner: str = ALICE) -> Tip:
    """The head of an owner's chain in HOME's database, read by a store of its own."""
    store = SQLiteStore(home / "troth.db")
    try:
        return store.tip(owner)
    finally:
        store.close()
