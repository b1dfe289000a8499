"""Every limit is defined once (``core/limits.py``): the OpenAPI schema and the MCP tool
schemas declare exactly the numbers the service enforces, and a value at a declared limit
is accepted by the service while one past it is refused at the edge."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from tests.adapters.conftest import Ledger, auth
from troth.adapters.mcp import create_mcp
from troth.core import limits
from troth.core.versions import PCP_VERSION, VERSION


@pytest.fixture
def openapi(client: TestClient) -> dict[str, Any]:
    return dict(client.get("/openapi.json").json())


def _model(openapi: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(openapi["components"]["schemas"][name]["properties"])


def _string_limit(field: dict[str, Any]) -> int:
    """A string field's maxLength, also when it is optional (``anyOf`` with null)."""
    for option in field.get("anyOf", [field]):
        if option.get("type") == "string":
            return int(option["maxLength"])
    raise AssertionError(f"no string type in {field}")


def _parameter(openapi: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    for parameter in openapi["paths"][path]["get"]["parameters"]:
        if parameter["name"] == name:
            return dict(parameter["schema"])
    raise AssertionError(f"{path} has no parameter {name}")


def test_the_openapi_bodies_declare_the_service_limits(openapi: dict[str, Any]) -> None:
    write = _model(openapi, "WriteIn")
    assert _string_limit(write["content"]) == limits.MAX_CONTENT_CHARS
    assert _string_limit(write["title"]) == limits.MAX_TITLE_CHARS
    assert _string_limit(write["reason"]) == limits.MAX_REASON_CHARS
    assert _string_limit(write["scope"]) == limits.MAX_SCOPE_CHARS
    assert write["tags"]["maxItems"] == limits.MAX_TAGS
    assert write["tags"]["items"]["maxLength"] == limits.MAX_TAG_CHARS
    assert _string_limit(_model(openapi, "NoteIn")["note"]) == limits.MAX_NOTE_CHARS
    assert _string_limit(_model(openapi, "ForgetIn")["reason"]) == limits.MAX_NOTE_CHARS
    edit = _model(openapi, "EditIn")
    assert _string_limit(edit["content"]) == limits.MAX_CONTENT_CHARS
    assert _string_limit(edit["reason"]) == limits.MAX_REASON_CHARS
    redact = _model(openapi, "RedactIn")["reason"]
    assert _string_limit(redact) == limits.MAX_REDACTION_REASON_CHARS == 190


def test_the_openapi_parameters_declare_the_service_limits(openapi: dict[str, Any]) -> None:
    assert _parameter(openapi, "/api/memories", "limit")["maximum"] == limits.MAX_LIST_LIMIT
    assert _parameter(openapi, "/api/memories", "offset")["maximum"] == limits.MAX_LIST_OFFSET
    assert _parameter(openapi, "/api/search", "q")["maxLength"] == limits.MAX_QUERY_CHARS
    assert _parameter(openapi, "/api/search", "limit")["maximum"] == limits.MAX_SEARCH_LIMIT
    budget = _parameter(openapi, "/api/brief", "budget_chars")
    assert (budget["minimum"], budget["maximum"]) == (
        limits.MIN_BRIEF_CHARS,
        limits.MAX_BRIEF_CHARS,
    )
    assert _parameter(openapi, "/api/audit", "limit")["maximum"] == limits.MAX_AUDIT_LIMIT
    assert _parameter(openapi, "/api/audit", "start")["maximum"] == limits.MAX_AUDIT_START


def test_the_versions_come_from_one_place(client: TestClient, openapi: dict[str, Any]) -> None:
    assert openapi["info"]["version"] == VERSION
    assert client.get("/.well-known/pcp.json").json()["pcp_version"] == PCP_VERSION


def test_a_reason_at_the_declared_limit_is_kept_and_one_past_it_refused(
    client: TestClient, ledger: Ledger
) -> None:
    headers = auth(ledger.alice)
    for verb, limit in (
        ("redact", limits.MAX_REDACTION_REASON_CHARS),
        ("forget", limits.MAX_NOTE_CHARS),
    ):
        made = client.post("/api/memories", json={"content": f"to {verb}"}, headers=headers)
        url = f"/api/memories/{made.json()['id']}/{verb}"
        too_long = client.post(url, json={"reason": "r" * (limit + 1)}, headers=headers)
        assert too_long.status_code == 422, too_long.text
        kept = client.post(url, json={"reason": "r" * limit}, headers=headers)
        assert kept.status_code == 200, kept.text
    made = client.post("/api/memories", json={"content": "to approve"}, headers=auth(ledger.agent))
    url = f"/api/memories/{made.json()['id']}/approve"
    note = "n" * limits.MAX_NOTE_CHARS
    assert client.post(url, json={"note": note + "n"}, headers=headers).status_code == 422
    assert client.post(url, json={"note": note}, headers=headers).status_code == 200


def test_the_mcp_tool_schemas_declare_the_service_limits(ledger: Ledger) -> None:
    server = create_mcp(ledger.memory)
    tools = {tool.name: tool.input_schema["properties"] for tool in anyio.run(server.list_tools)}
    search, write = tools["memory.search"], tools["memory.write"]
    assert search["query"]["maxLength"] == limits.MAX_QUERY_CHARS
    assert search["limit"]["maximum"] == limits.MAX_SEARCH_LIMIT
    assert write["content"]["maxLength"] == limits.MAX_CONTENT_CHARS
    assert _string_limit(write["title"]) == limits.MAX_TITLE_CHARS
    assert _string_limit(write["reason"]) == limits.MAX_REASON_CHARS
    assert tools["memory.list"]["limit"]["maximum"] == limits.MAX_LIST_LIMIT
    assert _string_limit(tools["memory.forget"]["reason"]) == limits.MAX_NOTE_CHARS
    brief = tools["context.brief"]["budget_chars"]
    assert (brief["minimum"], brief["maximum"]) == (limits.MIN_BRIEF_CHARS, limits.MAX_BRIEF_CHARS)
    assert tools["audit.list"]["limit"]["maximum"] == limits.MAX_AUDIT_LIMIT
