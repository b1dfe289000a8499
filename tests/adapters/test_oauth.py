"""The MCP endpoint as an OAuth protected resource: discovery from the 401, static tokens kept."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.client.streamable_http import streamable_http_client

from tests.adapters.conftest import Ledger, LiveServer, auth
from troth.core.access import SCOPES

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc"])
def test_a_refusal_names_the_protected_resource_metadata_the_sdk_client_finds(
    ledger: Ledger, live: LiveServer, header: str | None
) -> None:
    headers = ACCEPT | ({"Authorization": header} if header else {})
    refused = httpx2.post(f"{live.url}/mcp", json=LIST, headers=headers, timeout=10)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert ('error="invalid_token"' in challenge) == (header is not None)
    # The SDK's own OAuth client parses the challenge and fetches the document.
    where = extract_resource_metadata_from_www_auth(refused)
    assert where == f"{live.url}/.well-known/oauth-protected-resource/mcp"

    async def discover() -> object:
        async with httpx2.AsyncClient(timeout=10) as http:
            for url in build_protected_resource_metadata_discovery_urls(where, f"{live.url}/mcp"):
                found = await handle_protected_resource_response(await http.get(url))
                if found is not None:
                    return found
        return None

    metadata = anyio.run(discover)
    assert metadata is not None
    assert str(metadata.resource) == f"{live.url}/mcp"  # the URL the client dialed
    assert [str(a) for a in metadata.authorization_servers] == [live.url]
    assert metadata.scopes_supported == list(SCOPES)
    assert metadata.bearer_methods_supported == ["header"]


def test_the_metadata_is_also_at_the_root_well_known_path_with_cors(
    ledger: Ledger, live: LiveServer
) -> None:
    root = httpx2.get(
        f"{live.url}/.well-known/oauth-protected-resource",
        headers={"Origin": "http://localhost:6274"},
        timeout=10,
    )
    assert root.status_code == 200
    assert root.json()["resource"] == f"{live.url}/mcp"
    assert root.headers["access-control-allow-origin"] == "*"  # read by in-browser clients
    # Named as the client names the server (the Host it dialed), not as it is bound.
    named = httpx2.get(
        f"{live.url}/.well-known/oauth-protected-resource/mcp",
        headers={"Host": f"localhost:{live.port}"},
        timeout=10,
    )
    assert named.json()["resource"] == f"http://localhost:{live.port}/mcp"


def test_static_bearer_tokens_keep_working(ledger: Ledger, live: LiveServer) -> None:
    async def main() -> list[str]:
        async with (
            httpx2.AsyncClient(headers=auth(ledger.agent), timeout=30) as http,
            Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
        ):
            return [t.name for t in (await client.list_tools()).tools]

    assert "memory.search" in anyio.run(main)
