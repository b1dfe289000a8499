"""An agent's correction over MCP, approved by the person on the review page in a browser."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Page, expect

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from tests.adapters.test_web import browser, page, sign_in

__all__ = ["browser", "page"]  # the browser fixtures, shared with test_web


def agent_calls(live: LiveServer, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call as the agent over streamable HTTP; its structured result."""

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(headers=auth(token), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            return result.structured_content

    # Playwright's sync API keeps an event loop running in this thread: the client gets its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result(timeout=60)


def test_the_person_approves_an_agents_correction_on_the_page(
    page: Page, ledger: Ledger, live: LiveServer
) -> None:
    old = ledger.memory.remember("Alice's dentist is Dr Weber", owner=ALICE, actor=ALICE)
    proposed = agent_calls(
        live,
        ledger.agent,
        "memory.update",
        {"id": old.id, "content": "Alice's dentist is Dr Braun", "reason": "she changed"},
    )
    assert proposed["status"] == "proposed"

    sign_in(page, live, ledger.alice)
    inbox = page.locator("#inbox-list")
    item = inbox.locator(f'li[data-id="{proposed["id"]}"]')
    expect(item).to_contain_text("Dr Braun")
    item.locator("button", has_text="Approve").click()
    expect(page.locator("#status")).to_have_text("Approved.")

    hits = agent_calls(live, ledger.agent, "memory.search", {"query": "dentist"})["hits"]
    assert [h["content"] for h in hits] == ["Alice's dentist is Dr Braun"]
    assert ledger.memory.get(old.id, owner=ALICE).superseded_by == proposed["id"]
