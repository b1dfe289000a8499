"""The MCP endpoint as an OAuth protected resource: discovery from the 401, static tokens kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from troth.adapters import oauth_server

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
    assert metadata.scopes_supported == ["memory:read", "memory:write", "memory.sensitive:read"]
    assert 'scope="memory:read memory:write"' in challenge
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


# -- troth's own authorization server ------------------------------------------------------

CALLBACK = "http://localhost:9/callback"


class Remembered:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """The person at the consent screen, deciding through the page's consent API."""

    def __init__(self, live: LiveServer, token: str, *, grant: bool) -> None:
        self.live = live
        self.token = token
        self.grant = grant
        self.seen: dict[str, object] = {}
        self.back = ""

    async def open(self, authorize_url: str) -> None:
        """The browser goes to /authorize, lands on the page, and the person decides."""
        async with httpx2.AsyncClient(timeout=10) as browser:
            sent = await browser.get(authorize_url)
            assert sent.status_code == 302, sent.text
            page = urlsplit(sent.headers["location"])
            assert page.path == "/", sent.headers["location"]
            consent = parse_qs(page.query)["consent"][0]
            api = f"{self.live.url}/api/oauth/consent/{consent}"
            shown = await browser.get(api, headers=auth(self.token))
            assert shown.status_code == 200, shown.text
            self.seen = shown.json()
            decided = await browser.post(api, json={"grant": self.grant}, headers=auth(self.token))
            assert decided.status_code == 200, decided.text
            self.back = decided.json()["redirect"]

    async def callback(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.back).query)
        if "error" in query:
            raise RuntimeError(f"authorization refused: {query['error'][0]}")
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


Opener = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[AuthorizationCodeResult]]


def oauth_client(
    live: LiveServer,
    person: Person | tuple[Opener, Callback],
    storage: Remembered,
    *,
    metadata_url: str | None = None,
) -> OAuthClientProvider:
    """The SDK's OAuth client; the person opens the authorization URL and hands back the code."""
    opener, callback = (person.open, person.callback) if isinstance(person, Person) else person
    return OAuthClientProvider(
        server_url=f"{live.url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Trip planner",
            redirect_uris=[AnyUrl(CALLBACK)],
            grant_types=["authorization_code"],
            response_types=["code"],
            scope="memory:read memory:write",
        ),
        storage=storage,
        redirect_handler=opener,
        callback_handler=callback,
        client_metadata_url=metadata_url,
    )


@pytest.fixture
def public(ledger: Ledger) -> Iterator[LiveServer]:
    with LiveServer(ledger, public=True) as server:
        yield server


async def tools_through_oauth(live: LiveServer, provider: OAuthClientProvider) -> list[str]:
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
    ):
        written = await client.call_tool("memory.write", {"content": "Alice flies on Friday"})
        assert not written.is_error, written.content[0].text
        return [t.name for t in (await client.list_tools()).tools]


def test_an_oauth_client_registers_the_person_consents_and_it_calls_a_tool(
    ledger: Ledger, public: LiveServer
) -> None:
    person = Person(public, ledger.alice, grant=True)
    storage = Remembered()
    tools = anyio.run(tools_through_oauth, public, oauth_client(public, person, storage))
    assert "memory.search" in tools
    assert person.seen["client_name"] == "Trip planner"
    assert person.seen["scopes"] == ["memory:read", "memory:write"]
    assert storage.tokens is not None
    # The token is an ordinary troth token for an agent acting for the person.
    issued = [t for t in ledger.tokens.records() if (t.label or "").startswith("OAuth:")]
    assert len(issued) == 1
    assert issued[0].on_behalf_of == ALICE
    assert issued[0].principal == person.seen["principal"]
    assert issued[0].scopes == ("memory:read", "memory:write")
    proposal = ledger.memory.memories(ALICE)[0]
    assert (proposal.status, proposal.actor) == ("proposed", issued[0].principal)
    # Revoked like any token: the next request is refused.
    ledger.tokens.revoke(issued[0].token_id)
    with_revoked = httpx2.post(
        f"{public.url}/mcp",
        json=LIST,
        headers=ACCEPT | {"Authorization": f"Bearer {storage.tokens.access_token}"},
        timeout=10,
    )
    assert with_revoked.status_code == 401


def test_a_refused_consent_gives_the_client_no_token(ledger: Ledger, public: LiveServer) -> None:
    person = Person(public, ledger.alice, grant=False)
    storage = Remembered()
    with pytest.raises(ExceptionGroup) as raised:  # the SDK's task groups wrap it
        anyio.run(tools_through_oauth, public, oauth_client(public, person, storage))
    assert raised.group_contains(RuntimeError, match="access_denied", depth=None)
    assert "error=access_denied" in person.back  # what the page sent the browser back with
    assert storage.tokens is None
    assert not [t for t in ledger.tokens.records() if (t.label or "").startswith("OAuth:")]


def test_an_agent_cannot_consent_and_another_resource_is_refused(
    ledger: Ledger, public: LiveServer
) -> None:
    registered = httpx2.post(
        f"{public.url}/register",
        json={
            "client_name": "x",
            "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
        },
        timeout=10,
    ).json()
    query = {
        "client_id": registered["client_id"],
        "response_type": "code",
        "redirect_uri": CALLBACK,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        "state": "s",
    }
    elsewhere = httpx2.get(
        f"{public.url}/authorize", params=query | {"resource": "https://other.example/mcp"}
    )
    assert elsewhere.status_code == 302
    assert "error=invalid_target" in elsewhere.headers["location"]
    sent = httpx2.get(f"{public.url}/authorize", params=query)
    consent = parse_qs(urlsplit(sent.headers["location"]).query)["consent"][0]
    api = f"{public.url}/api/oauth/consent/{consent}"
    by_agent = httpx2.post(api, json={"grant": True}, headers=auth(ledger.agent))
    assert by_agent.status_code == 403
    assert by_agent.json()["error"] == "denied"
    assert httpx2.get(api, headers=auth("troth_nope")).status_code == 401


def test_the_person_lists_and_revokes_the_agents_acting_for_them(
    ledger: Ledger, live: LiveServer
) -> None:
    listed = httpx2.get(f"{live.url}/api/tokens", headers=auth(ledger.alice), timeout=10)
    assert listed.status_code == 200
    agents = [t for t in listed.json()["tokens"] if t["principal"] != "human:alice"]
    # alice's agent and reader, not bob's agent nor her own tokens
    assert sorted(t["principal"] for t in agents) == ["agent:assistant", "agent:reader"]
    assert all("secret" not in str(t) and "hash" not in str(t) for t in agents)
    assert httpx2.get(f"{live.url}/api/tokens", headers=auth(ledger.agent)).status_code == 403
    reader = next(t["id"] for t in agents if t["principal"] == "agent:reader")
    by_bob = httpx2.post(f"{live.url}/api/tokens/{reader}/revoke", headers=auth(ledger.bob))
    assert by_bob.status_code == 404  # not his to revoke, nor to know of
    done = httpx2.post(f"{live.url}/api/tokens/{reader}/revoke", headers=auth(ledger.alice))
    assert done.status_code == 200
    assert done.json()["revoked_at"] is not None
    with_it = httpx2.get(f"{live.url}/api/me", headers=auth(ledger.reader), timeout=10)
    assert with_it.status_code == 401


def test_a_client_identified_by_its_metadata_document_needs_no_registration(
    ledger: Ledger, public: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    document_url = "https://planner.example/oauth/client.json"
    fetched: list[str] = []

    async def fetch(url: str) -> dict[str, object]:
        fetched.append(url)
        return {
            "client_id": document_url,
            "client_name": "Planner (hosted)",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        }

    monkeypatch.setattr(oauth_server, "fetch_client_document", fetch)
    described = httpx2.get(f"{public.url}/.well-known/oauth-authorization-server").json()
    assert described["issuer"] == public.url
    assert described["client_id_metadata_document_supported"] is True
    person = Person(public, ledger.alice, grant=True)
    provider = oauth_client(public, person, Remembered(), metadata_url=document_url)
    tools = anyio.run(tools_through_oauth, public, provider)
    assert "memory.write" in tools
    assert fetched
    assert set(fetched) == {document_url}
    assert person.seen["client_id"] == document_url
    assert person.seen["client_name"] == "Planner (hosted)"
    issued = [t for t in ledger.tokens.records() if t.label == "OAuth: Planner (hosted)"]
    assert [t.on_behalf_of for t in issued] == [ALICE]


def test_a_metadata_document_that_names_another_client_is_not_that_client(
    ledger: Ledger, public: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fetch(url: str) -> dict[str, object]:
        return {"client_id": "https://elsewhere.example/c.json", "redirect_uris": [CALLBACK]}

    monkeypatch.setattr(oauth_server, "fetch_client_document", fetch)
    query = {
        "client_id": "https://planner.example/oauth/client.json",
        "response_type": "code",
        "redirect_uri": CALLBACK,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    refused = httpx2.get(f"{public.url}/authorize", params=query)
    assert refused.status_code == 400
    assert "client" in refused.text.lower()
