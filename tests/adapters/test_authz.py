"""The authorisation matrix of docs/api.md, cell by cell: principal, operation, owner and
transport. A denial leaves both ledgers' heads where they were and returns no content."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from starlette.testclient import TestClient

from tests.adapters.conftest import AGENT, ALICE, BOB, Ledger, LiveServer, auth
from troth.adapters.mcp import create_mcp
from troth.core.access import HUMAN_DEFAULT_SCOPES, hash_token

SECRET = {ALICE: "xyzzy alice keeps this", BOB: "plugh bob keeps this"}
PRINCIPALS = ["owner", "other_human", "agent", "agent_for_other", "reader"]
BAD_TOKENS = ["missing", "malformed", "expired", "revoked"]
ID_OPS = ["read", "audit_memory", "forget", "approve", "reject", "edit", "redact"]
LEDGER_OPS = ["search", "list", "write", "brief", "audit", "verify", "export"]
MCP_OPS = {
    "read": "memory.read",
    "audit_memory": "audit.list",
    "forget": "memory.forget",
    "search": "memory.search",
    "list": "memory.list",
    "write": "memory.write",
    "brief": "context.brief",
    "audit": "audit.list",
}
REVIEW_OPS = {"approve", "reject", "edit", "redact"}
WRITE_OPS = {"forget", "write"}


def acts_for(principal: str) -> str:
    return {"owner": ALICE, "agent": ALICE, "reader": ALICE}.get(principal, BOB)


def expected(principal: str, op: str, target: str | None) -> int:
    """The status the matrix promises (200 family = allowed)."""
    human = principal in ("owner", "other_human")
    if op in REVIEW_OPS and not human:
        return 403
    if op in WRITE_OPS and principal == "reader":
        return 403
    if op == "export" and not human:
        return 403
    if target is not None and target != acts_for(principal):
        return 404
    return 201 if op in ("write", "edit") else 200


def token_of(ledger: Ledger, principal: str) -> str:
    return {
        "owner": ledger.alice,
        "other_human": ledger.bob,
        "agent": ledger.agent,
        "agent_for_other": ledger.agent_for_bob,
        "reader": ledger.reader,
    }[principal]


def seed(ledger: Ledger) -> dict[str, str]:
    """A proposed memory in each ledger (an agent wrote it), plus an active one to search."""
    ids = {}
    for owner in (ALICE, BOB):
        ids[owner] = ledger.memory.remember(
            SECRET[owner], owner=owner, actor=AGENT, channel="synthesis", on_behalf_of=owner
        ).id
        ledger.memory.remember(SECRET[owner] + " too", owner=owner, actor=owner)
    return ids


def http_call(client: TestClient, token: str | None, op: str, memory_id: str) -> Any:
    h = auth(token) if token is not None else {}
    base = f"/api/memories/{memory_id}"
    requests: dict[str, tuple[str, str, dict[str, Any] | None, dict[str, str] | None]] = {
        "read": ("GET", base, None, None),
        "audit_memory": ("GET", "/api/audit", None, {"memory_id": memory_id}),
        "forget": ("POST", base + "/forget", {}, None),
        "approve": ("POST", base + "/approve", {}, None),
        "reject": ("POST", base + "/reject", {}, None),
        "edit": ("POST", base + "/edit", {"content": "edited text"}, None),
        "redact": ("POST", base + "/redact", {"reason": "test"}, None),
        "search": ("GET", "/api/search", None, {"q": "xyzzy plugh keeps"}),
        "list": ("GET", "/api/memories", None, None),
        "write": ("POST", "/api/memories", {"content": "a new memory"}, None),
        "brief": ("GET", "/api/brief", None, {"task": "xyzzy plugh keeps"}),
        "audit": ("GET", "/api/audit", None, None),
        "verify": ("GET", "/api/verify", None, None),
        "export": ("GET", "/api/export", None, {"format": "personaxis"}),
    }
    method, path, body, params = requests[op]
    return client.request(method, path, json=body, params=params, headers=h)


def mcp_call(ledger: Ledger, token: str, op: str, memory_id: str) -> tuple[bool, str]:
    grant = ledger.tokens.authenticate(token)
    arguments: dict[str, Any] = {
        "read": {"id": memory_id},
        "audit_memory": {"memory_id": memory_id},
        "forget": {"id": memory_id},
        "search": {"query": "xyzzy plugh keeps"},
        "list": {},
        "write": {"content": "a new memory"},
        "brief": {"task": "xyzzy plugh keeps"},
        "audit": {},
    }[op]

    async def main() -> tuple[bool, str]:
        async with Client(create_mcp(ledger.memory, stdio_grant=grant)) as client:
            result = await client.call_tool(MCP_OPS[op], arguments)
            return bool(result.is_error), result.content[0].text

    return anyio.run(main)


def heads(ledger: Ledger) -> tuple[tuple[int, str], tuple[int, str]]:
    return ledger.head(ALICE), ledger.head(BOB)


CELLS = [
    (p, op, target, transport)
    for transport in ("http", "mcp")
    for p in PRINCIPALS
    for op in ID_OPS + LEDGER_OPS
    for target in ((ALICE, BOB) if op in ID_OPS else (None,))
    if transport == "http" or op in MCP_OPS
]


@pytest.mark.parametrize(("principal", "op", "target", "transport"), CELLS)
def test_matrix_cell(
    client: TestClient,
    ledger: Ledger,
    principal: str,
    op: str,
    target: str | None,
    transport: str,
) -> None:
    ids = seed(ledger)
    memory_id = ids[target] if target else ids[ALICE]
    before = heads(ledger)
    want = expected(principal, op, target)
    other = BOB if acts_for(principal) == ALICE else ALICE
    token = token_of(ledger, principal)
    if transport == "http":
        answer = http_call(client, token, op, memory_id)
        assert answer.status_code == want, answer.text
        text = answer.text
        denied = want >= 400
    else:
        denied, text = mcp_call(ledger, token, op, memory_id)
        assert denied == (want >= 400), text
        if denied:
            assert {403: "denied", 404: "not_found"}[want] in text
    assert SECRET[other] not in text, "another owner's memory leaked"
    if denied:
        assert heads(ledger) == before
        assert SECRET[ALICE] not in text
        assert SECRET[BOB] not in text
        if transport == "http":
            assert set(json.loads(text)) <= {"error", "message", "id", "scope", "actor", "field"}


@pytest.mark.parametrize("op", ID_OPS + LEDGER_OPS)
@pytest.mark.parametrize("kind", BAD_TOKENS)
def test_bad_tokens_get_401_over_http(
    client: TestClient, ledger: Ledger, kind: str, op: str
) -> None:
    ids = seed(ledger)
    token = bad_token(ledger, kind)
    before = heads(ledger)
    answer = http_call(client, token, op, ids[ALICE])
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthenticated"
    assert heads(ledger) == before
    assert SECRET[ALICE] not in answer.text


@pytest.mark.parametrize("kind", BAD_TOKENS)
def test_bad_tokens_get_401_over_mcp(ledger: Ledger, live: LiveServer, kind: str) -> None:
    seed(ledger)
    token = bad_token(ledger, kind)
    before = heads(ledger)
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory.write", "arguments": {"content": "sneaky"}},
    }
    answer = httpx2.post(f"{live.url}/mcp", json=body, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert heads(ledger) == before


def bad_token(ledger: Ledger, kind: str) -> str | None:
    if kind == "missing":
        return None
    if kind == "malformed":
        return "troth_not-a-token"
    issued = ledger.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES)
    if kind == "revoked":
        ledger.tokens.revoke(issued.record.token_id)
        return issued.token
    # expired: the same record with an expiry in the past
    store: Any = ledger.memory.store
    store.revoke_token(issued.record.token_id, "2000-01-01T00:00:00.000Z")
    expired = replace(
        issued.record,
        token_id="t_" + "e" * 12,
        expires_at="2001-01-01T00:00:00.000Z",
        revoked_at=None,
    )
    secret = issued.token.split("_", 3)[3]
    token = f"troth_{expired.token_id}_{secret}"
    store.put_token(replace(expired, secret_hash=hash_token(token)))
    return token


def test_the_matrix_covers_every_principal_and_operation() -> None:
    assert len(CELLS) == len(PRINCIPALS) * (2 * len(ID_OPS) + len(LEDGER_OPS)) + len(
        PRINCIPALS
    ) * sum(2 if op in ID_OPS else 1 for op in MCP_OPS)
