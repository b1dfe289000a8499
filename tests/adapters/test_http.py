"""The HTTP API: the review flow, the error table, discovery and the request guard."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from tests.adapters.conftest import ALICE, Ledger, auth
from tests.bundles import export_member, unpacked_text
from troth.adapters.http import STATUS, status_of
from troth.core import errors


def test_an_agents_memory_is_proposed_then_approved_by_the_person(
    client: TestClient, ledger: Ledger
) -> None:
    written = client.post(
        "/api/memories", json={"content": "Alice drinks green tea"}, headers=auth(ledger.agent)
    )
    assert written.status_code == 201
    assert written.json()["status"] == "proposed"
    memory_id = written.json()["id"]
    found = client.get("/api/search", params={"q": "tea"}, headers=auth(ledger.agent))
    assert found.json()["hits"] == []
    inbox = client.get("/api/memories", params={"status": "proposed"}, headers=auth(ledger.alice))
    assert [m["id"] for m in inbox.json()["memories"]] == [memory_id]
    approved = client.post(f"/api/memories/{memory_id}/approve", headers=auth(ledger.alice))
    assert approved.status_code == 200
    assert approved.json()["status"] == "active"
    hits = client.get("/api/search", params={"q": "tea"}, headers=auth(ledger.agent)).json()
    assert [h["id"] for h in hits["hits"]] == [memory_id]
    shown = client.get(f"/api/memories/{memory_id}", headers=auth(ledger.agent)).json()
    assert shown["on_behalf_of"] == ALICE
    assert shown["channel"] == "synthesis"
    assert [a["action"] for a in shown["audit"]] == ["proposed", "approved"]


def test_a_persons_own_statement_is_kept_and_edit_approves_a_proposal(
    client: TestClient, ledger: Ledger
) -> None:
    own = client.post(
        "/api/memories",
        json={"content": "I like jazz", "kind": "preference"},
        headers=auth(ledger.alice),
    )
    assert own.json()["status"] == "active"
    proposed = client.post(
        "/api/memories", json={"content": "Alice likes jaz"}, headers=auth(ledger.agent)
    ).json()
    edited = client.post(
        f"/api/memories/{proposed['id']}/edit",
        json={"content": "Alice likes jazz on Sundays"},
        headers=auth(ledger.alice),
    )
    assert edited.status_code == 201
    assert edited.json()["status"] == "active"
    assert edited.json()["supersedes"] == proposed["id"]


def test_forget_and_redact_remove_a_memory_from_search_and_verify(
    client: TestClient, ledger: Ledger
) -> None:
    h = auth(ledger.alice)
    first = client.post("/api/memories", json={"content": "my locker is 12"}, headers=h).json()
    second = client.post("/api/memories", json={"content": "my bike is blue"}, headers=h).json()
    assert client.post(f"/api/memories/{first['id']}/forget", headers=h).json()["status"] == (
        "forgotten"
    )
    redacted = client.post(
        f"/api/memories/{second['id']}/redact", json={"reason": "erase"}, headers=h
    )
    assert redacted.json()["redacted"] is True
    assert client.get("/api/search", params={"q": "locker bike"}, headers=h).json()["hits"] == []
    status = client.get("/api/verify", headers=h).json()
    assert status["ok"] is True
    assert status["projection_ok"] is True
    exported = client.get("/api/export", params={"format": "personaxis"}, headers=h)
    assert exported.status_code == 200
    assert "bike is blue" not in unpacked_text(exported.content)


def test_another_owners_memory_is_not_found_with_the_same_message(
    client: TestClient, ledger: Ledger
) -> None:
    bobs = client.post("/api/memories", json={"content": "bob's secret"}, headers=auth(ledger.bob))
    bob_id = bobs.json()["id"]
    other = client.get(f"/api/memories/{bob_id}", headers=auth(ledger.alice))
    missing = client.get("/api/memories/m_doesnotexist", headers=auth(ledger.alice))
    assert other.status_code == missing.status_code == 404
    assert other.json()["message"] == missing.json()["message"].replace("m_doesnotexist", bob_id)
    assert "bob" not in other.text


def test_sensitive_memories_need_the_sensitive_scope(client: TestClient, ledger: Ledger) -> None:
    h = auth(ledger.alice)
    written = client.post(
        "/api/memories", json={"content": "Alice has asthma", "topic": "health"}, headers=h
    ).json()
    client.post(f"/api/memories/{written['id']}/approve", headers=h)
    agent = auth(ledger.agent)
    assert client.get(f"/api/memories/{written['id']}", headers=agent).status_code == 404
    assert client.get("/api/search", params={"q": "asthma"}, headers=agent).json()["hits"] == []
    assert client.get("/api/memories", headers=agent).json()["total"] == 0
    assert client.get("/api/search", params={"q": "asthma"}, headers=h).json()["hits"] != []


def test_me_says_who_the_token_is(client: TestClient, ledger: Ledger) -> None:
    me = client.get("/api/me", headers=auth(ledger.agent)).json()
    assert me["principal"] == "agent:assistant"
    assert me["owner"] == ALICE
    assert me["scopes"] == ["memory:read", "memory:write"]


def test_every_error_kind_has_one_status() -> None:
    kinds = [
        errors.InvalidInputError,
        errors.NotFoundError,
        errors.ConflictError,
        errors.PolicyDeniedError,
        errors.FormatError,
        errors.IntegrityError,
        errors.AuthenticationError,
        errors.StorageError,
    ]
    assert set(STATUS) == set(kinds)
    assert [status_of(k("x")) for k in kinds] == [422, 404, 409, 403, 400, 500, 401, 503]


def test_invalid_bodies_are_422_in_the_error_shape(client: TestClient, ledger: Ledger) -> None:
    answer = client.post("/api/memories", json={"content": ""}, headers=auth(ledger.alice))
    assert answer.status_code == 422
    assert answer.json()["error"] == "invalid_input"
    conflict = client.post("/api/memories", json={"content": "x y"}, headers=auth(ledger.alice))
    again = client.post(
        f"/api/memories/{conflict.json()['id']}/approve", headers=auth(ledger.alice)
    )
    assert again.status_code == 409


def test_discovery_names_the_mcp_endpoint(client: TestClient) -> None:
    document = client.get("/.well-known/pcp.json").json()
    assert document["pcp_version"] == "0.3"
    assert document["mcp_endpoint"] == "http://testserver/mcp"
    paths = client.get("/openapi.json").json()["paths"]
    assert "/api/memories/{memory_id}/approve" in paths


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://testserver.evil"])
def test_cross_site_writes_are_refused(client: TestClient, ledger: Ledger, origin: str) -> None:
    before = ledger.head()
    answer = client.post(
        "/api/memories", json={"content": "x"}, headers={**auth(ledger.alice), "Origin": origin}
    )
    assert answer.status_code == 403
    assert ledger.head() == before


def test_same_origin_writes_pass_the_guard(client: TestClient, ledger: Ledger) -> None:
    answer = client.post(
        "/api/memories",
        json={"content": "same origin"},
        headers={**auth(ledger.alice), "Origin": "http://testserver"},
    )
    assert answer.status_code == 201


def test_a_foreign_host_header_is_refused(client: TestClient) -> None:
    assert client.get("/healthz", headers={"Host": "evil.example"}).status_code == 421


def test_the_review_page_is_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "access-control-allow-origin" not in page.headers


def test_a_served_export_is_audited_in_the_callers_ledger(
    client: TestClient, ledger: Ledger
) -> None:
    h = auth(ledger.alice)
    made = client.post("/api/memories", json={"content": "my locker is 12"}, headers=h).json()
    before = ledger.head()
    first = client.get("/api/export", params={"format": "hux"}, headers=h)
    assert first.status_code == 200
    assert ledger.head()[0] == before[0] + 1  # one export event, appended after the bytes
    record = list(ledger.memory.log(ALICE))[-1]
    assert record.meta is not None
    assert '"export"' in record.meta
    assert ALICE in record.meta  # the caller is the actor
    audit = client.get("/api/audit", params={"memory_id": made["id"]}, headers=h).json()
    assert "exported" in json.dumps(audit)
    second = client.get("/api/export", params={"format": "personaxis"}, headers=h)
    lines = export_member(second.content).decode().splitlines()
    assert len(lines) == before[0] + 1  # holds the first export's event, not its own


def test_search_returns_nothing_when_nothing_fits(client: TestClient, ledger: Ledger) -> None:
    # The review page's search (GET /api/search) goes through recall's relevance floor.
    h = auth(ledger.alice)
    written = client.post("/api/memories", json={"content": "I read novels before bed"}, headers=h)
    assert written.status_code == 201
    assert client.get("/api/search", params={"q": "what tea do I like?"}, headers=h).json() == {
        "hits": []
    }
    hits = client.get("/api/search", params={"q": "novels"}, headers=h).json()["hits"]
    assert [hit["id"] for hit in hits] == [written.json()["id"]]
    assert hits[0]["why"]["relevance"]["coverage"] == 1.0
