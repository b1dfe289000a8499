"""The MCP server, driven by the SDK's own client over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from troth.adapters.mcp import create_mcp
from troth.core.access import Grant

TOOLS = {
    "memory.search",
    "memory.read",
    "memory.write",
    "memory.update",
    "memory.list",
    "memory.proposals",
    "memory.forget",
    "context.brief",
    "audit.list",
    "trust.gate",
    "checkpoint.create",
    "checkpoint.drift_audit",
    "checkpoint.restore_brief",
    "checkpoint.handle",
}
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """A tool's structured result; a tool error becomes an AssertionError with its text."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        raise AssertionError(f"{tool} failed: {text}")
    return result.structured_content or json.loads(text)


def human(live: LiveServer, ledger: Ledger) -> httpx2.Client:
    return httpx2.Client(base_url=live.url, headers=auth(ledger.alice), timeout=30)


async def agent_flow(client: Client, live: LiveServer, ledger: Ledger) -> None:
    """write → proposed → the person approves over HTTP → found → forgotten → not found."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    written = await call(
        client,
        "memory.write",
        {"content": "Alice is training for the Berlin marathon", "kind": "context"},
    )
    assert written["status"] == "proposed"
    assert (await call(client, "memory.search", {"query": "marathon"}))["hits"] == []
    with human(live, ledger) as person:
        approved = person.post(f"/api/memories/{written['id']}/approve")
        assert approved.status_code == 200, approved.text
    hits = (await call(client, "memory.search", {"query": "marathon"}))["hits"]
    assert [h["id"] for h in hits] == [written["id"]]
    brief = await call(client, "context.brief", {"task": "plan a marathon week"})
    assert written["id"] in brief["memory_ids"]
    with human(live, ledger) as person:
        assert person.post(f"/api/memories/{written['id']}/forget").status_code == 200
    assert (await call(client, "memory.search", {"query": "marathon"}))["hits"] == []
    trail = await call(client, "audit.list", {"memory_id": written["id"]})
    assert [e["action"] for e in trail["events"]] == ["proposed", "approved", "forgotten"]


def test_an_agent_over_streamable_http_writes_and_the_person_decides(
    ledger: Ledger, live: LiveServer
) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            await run_over_http()

    async def run_over_http() -> None:
        async with (
            httpx2.AsyncClient(headers=auth(ledger.agent), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            await agent_flow(client, live, ledger)

    anyio.run(main)
    assert all(report.ok for report in ledger.memory.verify())


def test_an_agent_over_stdio_writes_and_the_person_decides(
    ledger: Ledger, live: LiveServer
) -> None:
    command = Path(sys.executable).with_name("troth")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "HOME": str(ledger.home),
    }
    params = StdioServerParameters(
        command=str(command),
        args=[
            "--home",
            str(ledger.home),
            "--as",
            "agent:assistant",
            "mcp",
            "--on-behalf-of",
            ALICE,
        ],
        env=env,
    )

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                await agent_flow(client, live, ledger)

    anyio.run(main)
    first = next(ledger.memory.log(ALICE)).decode()
    assert first is not None
    assert (first.actor, first.on_behalf_of) == ("agent:assistant", ALICE)


def test_a_domain_error_is_a_tool_error_the_agent_can_act_on(ledger: Ledger) -> None:
    grant = Grant("agent:assistant", frozenset({"memory:read"}), ALICE)

    async def main() -> None:
        async with Client(create_mcp(ledger.memory, stdio_grant=grant)) as client:
            denied = await client.call_tool("memory.write", {"content": "x"})
            assert denied.is_error
            assert "memory:write" in denied.content[0].text
            missing = await client.call_tool("memory.read", {"id": "m_nothere"})
            assert missing.is_error
            assert "no memory m_nothere" in missing.content[0].text

    anyio.run(main)
    assert ledger.head() == (0, "")


def test_tools_can_be_named_with_underscores(ledger: Ledger) -> None:
    grant = Grant("agent:assistant", frozenset({"memory:read"}), ALICE)

    async def main() -> set[str]:
        server = create_mcp(ledger.memory, stdio_grant=grant, tool_names="underscore")
        async with Client(server) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert anyio.run(main) == {name.replace(".", "_") for name in TOOLS}


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc"])
def test_mcp_over_http_needs_a_valid_token(
    ledger: Ledger, live: LiveServer, header: str | None
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if header:
        headers["Authorization"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = httpx2.post(f"{live.url}/mcp", json=body, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
