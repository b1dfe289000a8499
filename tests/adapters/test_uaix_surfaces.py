"""Session checkpoints over the server: POST /uaix and the checkpoint.handle MCP tool."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.testclient import TestClient

from tests.adapters.conftest import AGENT, Ledger, LiveServer, auth
from tests.formats.uaix.make_golden import MANDATORY, base, create_body
from troth.formats.uaix import seal, validator


def envelope(message_id: str, principal: str = AGENT) -> bytes:
    """A sealed checkpoint.create request from ``principal`` that expires in an hour."""
    request: dict[str, Any] = base(create_body([*MANDATORY, "human-review-required"]), message_id)
    request["trust"]["principal"] = principal
    later = datetime.now(UTC) + timedelta(hours=1)
    request["delivery"]["expires_at"] = later.strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps(seal(request)).encode()


def test_post_uaix_creates_a_checkpoint_and_replays_the_first_answer(
    client: TestClient, ledger: Ledger
) -> None:
    raw = envelope("msg-http-1")
    first = client.post("/uaix", content=raw, headers=auth(ledger.agent))
    assert first.status_code == 200
    answer = first.json()
    validator("response.schema.json").validate(answer)
    assert answer["profile"] == "uai.intent.response.v1"
    head = ledger.head()
    again = client.post("/uaix", content=raw, headers=auth(ledger.agent))
    assert again.content == first.content
    assert ledger.head() == head
    proposed = client.get(
        "/api/memories", params={"status": "proposed"}, headers=auth(ledger.alice)
    ).json()["memories"]
    assert proposed, "stable facts wait for the person's review"


def test_post_uaix_refuses_an_envelope_from_another_principal_with_an_error_envelope(
    client: TestClient, ledger: Ledger
) -> None:
    head = ledger.head()
    answer = client.post(
        "/uaix",
        content=envelope("msg-http-2", principal="agent:someone-else"),
        headers=auth(ledger.agent),
    )
    assert answer.status_code == 200
    assert answer.json()["profile"] == "uai.error.v1"
    assert ledger.head() == head


def test_post_uaix_without_a_token_is_401(client: TestClient) -> None:
    assert client.post("/uaix", content=envelope("msg-http-3")).status_code == 401


def test_the_mcp_checkpoint_tool_answers_with_the_response_envelope(
    live: LiveServer, ledger: Ledger
) -> None:
    async def main() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=auth(ledger.agent), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool(
                "checkpoint.handle", {"envelope": envelope("msg-mcp-1").decode()}
            )
            assert not result.is_error
            data: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return data

    answer = anyio.run(main)
    validator("response.schema.json").validate(answer)
    assert answer["profile"] == "uai.intent.response.v1"
