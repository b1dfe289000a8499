"""troth's own OAuth 2.1 authorization server, for the local and self-hosted case.

The MCP SDK provides the endpoints (``create_auth_routes``: authorization server metadata,
``/authorize`` with PKCE, ``/token``, ``/register`` for RFC 7591 dynamic registration,
``/revoke``); this module is the provider behind them, plus the consent API the review page
calls. The flow:

1. a client registers (``/register``) — or uses the URL of its client ID metadata document as
   its ``client_id``, fetched when first seen — and sends the person to ``/authorize``;
2. :meth:`AuthorizationServer.authorize` keeps the request and sends the browser to the
   review page (``/?consent=<id>``), where the person signs in as themselves;
3. the page shows which client asks for which scopes (``GET /api/oauth/consent/<id>``); the
   person grants or refuses (``POST`` the same path), and the page follows the redirect back
   to the client — with a one-time code, or ``error=access_denied``;
4. ``/token`` checks the PKCE verifier (the SDK) and exchanges the code for an ordinary troth
   token (:meth:`Tokens.create`): principal ``agent:<client>``, acting for the person, with
   the granted scopes, labelled ``OAuth: <client name>`` — listed by ``troth token list`` and
   revoked by ``troth token revoke`` like any other.

Tokens are issued only for this server's MCP endpoint (RFC 8707: a ``resource`` naming
anything else is refused at ``/authorize`` and ``/token``). Registered clients, pending
consents and codes live in this process's memory: a restart forgets them (clients register
again; issued tokens stay valid, they are in the store). No refresh tokens are issued.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import httpx2
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata as sdk_metadata
from mcp.server.auth.routes import cors_middleware, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from troth.adapters.http import error_response
from troth.adapters.oauth import GRANTABLE
from troth.core.access import AGENT_DEFAULT_SCOPES, Grant
from troth.core.errors import AuthenticationError, InvalidInputError, NotFoundError, TrothError
from troth.service.base import parse_time
from troth.service.tokens import Tokens

METADATA_ROUTE = "/.well-known/oauth-authorization-server"
#: The most a client ID metadata document may weigh, and how long fetching it may take.
DOCUMENT_BYTES = 64 * 1024
DOCUMENT_SECONDS = 5.0
CONSENT_SECONDS = 600
CODE_SECONDS = 300
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Consent:
    """An authorization request waiting for the person's decision."""

    consent_id: str
    client: OAuthClientInformationFull
    params: AuthorizationParams
    scopes: tuple[str, ...]
    expires_at: float

    def to_json(self) -> dict[str, Any]:
        """What the review page shows the person."""
        return {
            "id": self.consent_id,
            "client_id": self.client.client_id,
            "client_name": self.client.client_name or self.client.client_id,
            "principal": client_principal(self.client),
            "redirect_uri": str(self.params.redirect_uri),
            "scopes": list(self.scopes),
        }


def client_principal(client: OAuthClientInformationFull) -> str:
    """The agent principal a client's tokens carry: its name, and a digest of its id that
    tells two clients of the same name apart (an id may be a URL, which no principal holds)."""
    name = _UNSAFE.sub("-", client.client_name or "client").strip("-")[:48] or "client"
    digest = hashlib.sha256((client.client_id or "").encode("utf-8")).hexdigest()[:8]
    return f"agent:{name}-{digest}"


def is_metadata_url(client_id: str) -> bool:
    """Whether a client id is a client ID metadata document's URL (https, with a path)."""
    parts = urlsplit(client_id)
    return parts.scheme == "https" and parts.path not in ("", "/") and not parts.fragment


async def fetch_client_document(url: str) -> dict[str, Any]:
    """A client ID metadata document: JSON at ``url``, fetched without following redirects,
    small and quickly, since any client can make the server fetch it."""
    async with httpx2.AsyncClient(timeout=DOCUMENT_SECONDS, follow_redirects=False) as http:
        answer = await http.get(url, headers={"Accept": "application/json"})
    if answer.status_code != 200 or len(answer.content) > DOCUMENT_BYTES:
        raise ValueError(f"no client ID metadata document at {url}")
    document = answer.json()
    if not isinstance(document, dict):
        raise ValueError(f"the client ID metadata document at {url} is not a JSON object")
    return document


class AuthorizationServer:
    """The SDK's ``OAuthAuthorizationServerProvider`` over troth's token store."""

    def __init__(self, tokens: Tokens, *, issuer: str, resource: str) -> None:
        self.tokens = tokens
        self.issuer = issuer.rstrip("/")
        self.resource = resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.consents: dict[str, Consent] = {}
        self.codes: dict[str, AuthorizationCode] = {}

    # -- clients ------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """A registered client, or one whose id is its client ID metadata document's URL."""
        known = self.clients.get(client_id)
        if known is not None or not is_metadata_url(client_id):
            return known
        try:
            document = await fetch_client_document(client_id)
            client = OAuthClientInformationFull.model_validate(
                # Like a registration without scopes: what an agent may be granted.
                {"token_endpoint_auth_method": "none", "scope": " ".join(GRANTABLE), **document}
            )
        except (ValueError, httpx2.HTTPError):
            return None
        # The document must name itself: a copy served elsewhere is not that client.
        return client if client.client_id == client_id else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a client registered through ``/register``."""
        if client_info.client_id is not None:
            self.clients[client_info.client_id] = client_info

    # -- authorization ------------------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Keep the request and send the browser to the consent screen."""
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError(
                "invalid_target", f"this server issues tokens for {self.resource} only"
            )
        wanted = tuple(params.scopes or AGENT_DEFAULT_SCOPES)
        refused = [s for s in wanted if s not in GRANTABLE]
        if refused:
            raise AuthorizeError(
                "invalid_scope",
                f"{', '.join(refused)} cannot be granted to a client; ask for"
                f" {', '.join(GRANTABLE)}",
            )
        self._expire()
        consent_id = secrets.token_urlsafe(24)
        self.consents[consent_id] = Consent(
            consent_id, client, params, wanted, time.time() + CONSENT_SECONDS
        )
        return f"{self.issuer}/?consent={consent_id}"

    def consent(self, consent_id: str) -> Consent:
        """A pending consent, or NotFoundError."""
        self._expire()
        found = self.consents.get(consent_id)
        if found is None:
            raise NotFoundError(
                "no such authorization request waits here (it may have expired after"
                f" {CONSENT_SECONDS // 60} minutes); start again from the application",
                id=consent_id,
            )
        return found

    def decide(self, consent_id: str, person: Grant, *, grant: bool) -> str:
        """The person's answer; returns where the browser goes back to."""
        person.require_review("grant an application access to your memory")
        consent = self.consent(consent_id)
        del self.consents[consent_id]
        params = consent.params
        if not grant:
            return construct_redirect_uri(
                str(params.redirect_uri),
                error="access_denied",
                error_description=f"{person.principal} refused",
                state=params.state,
            )
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=list(consent.scopes),
            expires_at=time.time() + CODE_SECONDS,
            client_id=consent.client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=self.resource,
            subject=person.principal,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    def _expire(self) -> None:
        now = time.time()
        for key in [k for k, c in self.consents.items() if c.expires_at <= now]:
            del self.consents[key]
        for key in [k for k, c in self.codes.items() if c.expires_at <= now]:
            del self.codes[key]

    # -- tokens -------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        """A code issued to this client, not yet used or expired."""
        self._expire()
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        """A troth token for the client, acting for the person who consented (one use)."""
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "this authorization code was already used")
        if authorization_code.subject is None:
            raise TokenError("invalid_grant", "the authorization code names no person")
        issued = await anyio.to_thread.run_sync(
            lambda: self.tokens.create(
                client_principal(client),
                authorization_code.scopes,
                on_behalf_of=authorization_code.subject,
                label=f"OAuth: {client.client_name or client.client_id}"[:100],
            )
        )
        expires = issued.record.expires_at
        lifetime = None
        if expires is not None:
            lifetime = max(0, int(parse_time(expires).timestamp() - time.time()))
        return OAuthToken(
            access_token=issued.token,
            expires_in=lifetime,
            scope=" ".join(issued.record.scopes),
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        """No refresh tokens are issued."""
        return None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """No refresh tokens are issued: authorize again."""
        raise TokenError("invalid_grant", "this server issues no refresh tokens; authorize again")

    async def load_access_token(self, token: str) -> AccessToken | None:
        """The token's grant as the SDK sees it (used by ``/revoke``)."""
        try:
            grant = await anyio.to_thread.run_sync(self.tokens.authenticate, token)
        except AuthenticationError:
            return None
        return AccessToken(
            token=token,
            client_id=grant.token_id or "",
            scopes=sorted(grant.scopes),
            resource=self.resource,
            subject=grant.on_behalf_of,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """Revoke the troth token behind an access token."""
        grant = await anyio.to_thread.run_sync(self.tokens.authenticate, token.token)
        if grant.token_id is not None:
            await anyio.to_thread.run_sync(self.tokens.revoke, grant.token_id)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        """Not offered (no enterprise identity provider)."""
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not offered here")

    # -- routes -------------------------------------------------------------------------

    def routes(self) -> list[Route]:
        """The SDK's OAuth endpoints over this provider, and the consent API of the page."""
        # Through AuthSettings, whose URLs keep a path-less issuer exact (no "/" added):
        # clients compare the issuer as a string.
        issuer_url = AuthSettings.model_validate(
            {"issuer_url": self.issuer, "resource_server_url": None}
        ).issuer_url
        registration = ClientRegistrationOptions(
            enabled=True, valid_scopes=list(GRANTABLE), default_scopes=list(AGENT_DEFAULT_SCOPES)
        )
        sdk = create_auth_routes(
            self,
            issuer_url=issuer_url,
            client_registration_options=registration,
            revocation_options=RevocationOptions(enabled=True),
        )
        # The SDK's metadata, plus what it does not say: client ID metadata documents are
        # accepted, by public clients (no secret at /token).
        metadata = sdk_metadata(
            issuer_url,
            None,
            registration,
            RevocationOptions(enabled=True),
        )
        metadata.client_id_metadata_document_supported = True
        metadata.token_endpoint_auth_methods_supported = [
            "none",
            *(metadata.token_endpoint_auth_methods_supported or ()),
        ]
        described = Route(
            METADATA_ROUTE,
            endpoint=cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        )
        return [
            described,
            *(route for route in sdk if route.path != METADATA_ROUTE),
            Route("/api/oauth/consent/{consent_id}", self._consent_api, methods=["GET", "POST"]),
        ]

    async def _consent_api(self, request: Request) -> Response:
        try:
            person = await caller(self.tokens, request)
            consent_id = request.path_params["consent_id"]
            if request.method == "GET":
                person.require_review("see an application's access request")
                return JSONResponse(self.consent(consent_id).to_json())
            try:
                body = await request.json()
            except ValueError:
                body = None
            decision = body.get("grant") if isinstance(body, dict) else None
            if not isinstance(decision, bool):
                raise InvalidInputError('send {"grant": true} or {"grant": false}', field="grant")
            return JSONResponse({"redirect": self.decide(consent_id, person, grant=decision)})
        except TrothError as error:
            return error_response(error)


async def caller(tokens: Tokens, request: Request) -> Grant:
    """The grant of a request's bearer token (AuthenticationError without one)."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    token = value.strip() if scheme.lower() == "bearer" else None
    return await anyio.to_thread.run_sync(tokens.authenticate, token)
