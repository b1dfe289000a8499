"""The served request path's own costs: where a token is checked, and that a search's
answer is built once for the searches sharing a recall and says what the models say."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from starlette.testclient import TestClient

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from tests.conftest import counting
from troth.adapters import http
from troth.adapters.http import HitOut, MemoryOut, SearchOut
from troth.adapters.server import ServerOptions, create_app
from troth.core.access import HUMAN_DEFAULT_SCOPES
from troth.service.memory import Memory
from troth.service.scoped import ScopedMemory

WORKER = "AnyIO worker thread"


def test_tokens_are_checked_in_the_loop_on_sqlite_and_in_a_worker_on_postgres(
    any_memory: Memory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = any_memory.tokens
    assert tokens.local is (backend == "sqlite")
    token = tokens.create(ALICE, HUMAN_DEFAULT_SCOPES)
    threads: list[str] = []
    real = tokens.authenticate

    def recorded(presented: str | None) -> Any:
        threads.append(threading.current_thread().name)
        return real(presented)

    monkeypatch.setattr(tokens, "authenticate", recorded)
    app = create_app(any_memory, tokens, ServerOptions(allowed_hosts=("testserver",)))
    with TestClient(app) as client:
        me = client.get("/api/me", headers=auth(token.token))
        assert me.status_code == 200, me.text
        assert me.json()["principal"] == ALICE
        # A revoked token is refused at the next request: nothing is cached.
        tokens.revoke(token.record.token_id)
        refused = client.get("/api/me", headers=auth(token.token))
        assert refused.status_code == 401
        assert refused.json()["error"] == "unauthenticated"
        assert client.get("/api/me").status_code == 401
    assert len(threads) == 3
    # On the embedded store the check runs where the route's coroutine runs (the loop);
    # across a network it runs in a worker thread, so the loop never waits for it.
    if backend == "sqlite":
        assert WORKER not in threads
    else:
        assert set(threads) == {WORKER}


def _expected(scoped: ScopedMemory, q: str, limit: int) -> dict[str, Any]:
    """What the answer was before it was built once per run: through the models, per hit."""
    hits = scoped.recall(scoped.search_query(q, limit=limit))
    out = SearchOut(
        hits=[
            HitOut.model_validate({**h.to_dict(), "memory": MemoryOut.of(h.memory)}) for h in hits
        ]
    )
    return out.model_dump(mode="json")


def test_a_search_answers_what_the_models_say(ledger: Ledger, client: TestClient) -> None:
    topics = ["tea", "jazz", "chess"]
    for i in range(30):
        ledger.memory.remember(f"note {i}: likes {topics[i % 3]}", kind="fact", tags=[f"t{i % 2}"])
    scoped = ScopedMemory(ledger.memory, ledger.tokens.authenticate(ledger.alice))
    answer = client.get(
        "/api/search", params={"q": "tea note", "limit": 5}, headers=auth(ledger.alice)
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == _expected(scoped, "tea note", 5)
    assert len(answer.json()["hits"]) == 5
    # A filtered search narrows the best 100 and keeps the models' shape too.
    tagged = client.get(
        "/api/search", params={"q": "tea note", "limit": 3, "tag": "t1"}, headers=auth(ledger.alice)
    )
    assert tagged.status_code == 200, tagged.text
    wanted = [h for h in _expected(scoped, "tea note", 100)["hits"] if "t1" in h["memory"]["tags"]]
    assert tagged.json() == {"hits": wanted[:3]}
    # The published schema still names the model.
    schema = client.get("/openapi.json").json()
    ok = schema["paths"]["/api/search"]["get"]["responses"]["200"]["content"]
    assert ok["application/json"]["schema"] == {"$ref": "#/components/schemas/SearchOut"}


def test_searches_sharing_a_run_share_one_answer_built_once(
    ledger: Ledger, live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        ledger.memory.remember(f"note {i}: likes {'tea' if i % 2 else 'jazz'}", kind="fact")
    started, release = threading.Event(), threading.Event()
    real = ScopedMemory.recall

    def held(self: ScopedMemory, query: Any) -> Any:
        if query.text == "jazz note":
            started.set()
            assert release.wait(20)
        return real(self, query)

    monkeypatch.setattr(ScopedMemory, "recall", held)
    built = counting(monkeypatch, http, "search_body")
    asked = counting(monkeypatch, ScopedMemory, "search_query")
    tokens = [ledger.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token for _ in range(4)]

    def search(token: str, q: str) -> bytes:
        answer = httpx2.get(
            f"{live.url}/api/search", params={"q": q, "limit": 5}, headers=auth(token), timeout=30
        )
        assert answer.status_code == 200, answer.text
        return answer.content

    with ThreadPoolExecutor(5) as pool:
        holder = pool.submit(search, ledger.alice, "jazz note")  # holds the gate
        assert started.wait(20)
        queued = [pool.submit(search, token, "tea note") for token in tokens]
        # The four tea searches have asked (and so queued behind the held run): the route
        # joins the run in the same step of the event loop as it makes the query.
        deadline = time.monotonic() + 30
        while len(asked) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        release.set()
        bodies = [f.result() for f in queued]
        holder.result()
    assert len(set(bodies)) == 1  # the same bytes for all four
    assert b"tea" in bodies[0]
    assert len(built) == 2  # one answer for the jazz run, one for the four tea searches
