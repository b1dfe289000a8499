"""The served process freezes its startup heap out of the collector's walks (adapters.heap)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.adapters.conftest import Ledger
from troth.adapters import heap, server
from troth.adapters.server import ServerOptions, create_app


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Whatever a test freezes goes back to the collector's generations afterwards."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_settle_freezes_what_is_alive_and_frees_what_is_not(unfrozen: None) -> None:
    kept = _Node()
    _Node()  # garbage at once: collected by settle, not frozen
    frozen = heap.settle()
    assert frozen == gc.get_freeze_count() > 1000
    # A full collection now walks only what was made since: the kept cycle is not in it.
    assert not any(o is kept for o in gc.get_objects(generation=2))
    assert kept.me is kept
    # What requests make afterwards is collected as before.
    later = _Node()
    assert any(o is later for o in gc.get_objects())
    del later
    gc.collect()
    assert not any(isinstance(o, _Node) and o is not kept for o in gc.get_objects())


def _started(ledger: Ledger, options: ServerOptions, calls: list[int], mp: Any) -> int:
    mp.setattr(heap, "settle", lambda: calls.append(1) or 0)
    app = create_app(ledger.memory, ledger.tokens, options)
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        return len(calls)


def test_the_application_settles_its_heap_at_startup_only_when_asked(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, unfrozen: None
) -> None:
    calls: list[int] = []
    asked = ServerOptions(allowed_hosts=("testserver",), settle_heap=True)
    assert _started(ledger, asked, calls, monkeypatch) == 1
    calls.clear()
    assert _started(ledger, ServerOptions(allowed_hosts=("testserver",)), calls, monkeypatch) == 0


def test_troth_serve_asks_for_it(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ServerOptions] = []
    made = server.create_app

    def create(memory: Any, tokens: Any, options: ServerOptions | None = None) -> Any:
        assert options is not None
        seen.append(options)
        return made(memory, tokens, options)

    monkeypatch.setattr(server, "create_app", create)
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **config: None)
    server.serve(ledger.memory, port=0, first_token_for=None)
    assert [o.settle_heap for o in seen] == [True]
