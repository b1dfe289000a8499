"""MCP and the review page in a browser: an agent's correction approved, an OAuth consent granted."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from queue import Queue
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from playwright.sync_api import Page, expect

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from tests.adapters.test_oauth import CALLBACK, Remembered, oauth_client
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
    item.locator("button.approve").click()
    expect(page.locator("#status")).to_contain_text("Approved")

    hits = agent_calls(live, ledger.agent, "memory.search", {"query": "dentist"})["hits"]
    assert [h["content"] for h in hits] == ["Alice's dentist is Dr Braun"]
    assert ledger.memory.get(old.id, owner=ALICE).superseded_by == proposed["id"]


def test_an_oauth_client_is_granted_access_on_the_consent_screen(
    page: Page, ledger: Ledger
) -> None:
    """The SDK's OAuth client in one thread; the person signs in and grants in Chromium."""
    with LiveServer(ledger, public=True) as live:
        storage = Remembered()
        to_open: Queue[str] = Queue()
        came_back: Queue[str] = Queue()

        async def open_browser(url: str) -> None:
            to_open.put(url)

        async def callback() -> AuthorizationCodeResult:
            back = await anyio.to_thread.run_sync(lambda: came_back.get(timeout=60))
            query = parse_qs(urlsplit(back).query)
            return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

        provider = oauth_client(live, (open_browser, callback), storage)

        async def agent() -> list[str]:
            async with (
                httpx2.AsyncClient(auth=provider, timeout=60) as http,
                Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
            ):
                hits = await client.call_tool("memory.search", {"query": "tea"})
                assert not hits.is_error, hits.content[0].text
                return [h["content"] for h in (hits.structured_content or {})["hits"]]

        ledger.memory.remember("Alice drinks green tea", owner=ALICE, actor=ALICE)
        page.route(CALLBACK + "*", lambda route: route.fulfill(status=200, body="back"))
        with ThreadPoolExecutor(max_workers=1) as pool:
            running = pool.submit(anyio.run, agent)
            page.goto(to_open.get(timeout=60))
            page.fill("#token", ledger.alice)
            page.click("#sign-in-form button[type=submit]")
            expect(page.locator("#consent")).to_be_visible()
            expect(page.locator("#consent-text")).to_contain_text("Trip planner")
            expect(page.locator("#consent-scopes")).to_contain_text("memory:write")
            with page.expect_request(lambda request: request.url.startswith(CALLBACK)) as sent:
                page.click("#consent-grant")
            came_back.put(sent.value.url)
            assert running.result(timeout=60) == ["Alice drinks green tea"]

        # The grant is listed on the page with the agents acting for her; she revokes it.
        page.goto(live.url + "/")
        page.click("nav button[data-view=ledger]")
        granted = page.locator("#tokens li.token", has_text="OAuth: Trip planner")
        expect(granted).to_contain_text("propose")
        granted.locator("button", has_text="Revoke").click()
        page.click("#confirm-ok")
        expect(page.locator("#status")).to_have_text("Revoked.")
        assert storage.tokens is not None
        refused = httpx2.post(
            f"{live.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {storage.tokens.access_token}",
            },
            timeout=10,
        )
        assert refused.status_code == 401
