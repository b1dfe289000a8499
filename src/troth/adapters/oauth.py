"""The MCP endpoint as an OAuth 2.1 protected resource (RFC 9728), on the MCP SDK's pieces.

What is here: the protected resource metadata document, served at
``/.well-known/oauth-protected-resource`` and at the path-suffixed
``/.well-known/oauth-protected-resource/mcp`` that RFC 9728 §3.1 derives from the resource
URL (clients try either), and the ``WWW-Authenticate`` challenge of a 401 on ``/mcp``, which
names that document in ``resource_metadata`` so an MCP client can start its OAuth discovery
from the refusal. The document is built with the SDK's ``ProtectedResourceMetadata`` model,
answered with its JSON response and CORS wrapper (browser-based clients such as MCP
Inspector fetch it cross-origin; it is public and carries no credentials).

The ``resource`` is the URL the client dialed — this server's origin as the request names it
(or ``ServerOptions.public_url``) plus ``/mcp`` — because a client must not use metadata whose
``resource`` differs from the URL it connected to. The authorization server it names is this
server itself (``ServerOptions.oauth_issuer`` to name another). Static bearer tokens
(``troth token create``) are unchanged: they are what ``/mcp`` accepts. The authorization
server itself (client registration, PKCE, the consent screen) is not built yet; see
docs/api.md, "OAuth".
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from troth.core.access import AGENT_DEFAULT_SCOPES, READ, SENSITIVE_READ, WRITE

METADATA_PATH = "/.well-known/oauth-protected-resource"
#: What an OAuth client may be granted on ``/mcp``: an agent's scopes. ``review:write`` and
#: ``export:read`` stay with the person's own tokens.
GRANTABLE = (READ, WRITE, SENSITIVE_READ)
#: The scopes the MCP tools need, named in the 401 challenge (the MCP authorization spec's
#: first source for what a client asks for).
NEEDED = AGENT_DEFAULT_SCOPES


def origin(scope: Scope, public_url: str | None = None) -> str:
    """This server's origin as the request reached it (``scheme://host[:port]``)."""
    if public_url:
        parts = urlsplit(public_url)
        return f"{parts.scheme}://{parts.netloc}"
    host = ""
    for key, value in scope.get("headers", ()):
        if key.lower() == b"host":
            host = value.decode("latin-1")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


class ProtectedResource:
    """The metadata routes and the 401 challenge of one MCP endpoint."""

    def __init__(
        self, mcp_path: str, *, public_url: str | None = None, issuer: str | None = None
    ) -> None:
        self.mcp_path = mcp_path
        self.public_url = public_url
        self.issuer = issuer

    def resource(self, scope: Scope) -> str:
        """The resource identifier: the MCP endpoint's URL."""
        return origin(scope, self.public_url) + self.mcp_path

    def metadata_url(self, scope: Scope) -> str:
        """Where the metadata of this resource is (RFC 9728 §3.1)."""
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource(scope))))

    def metadata(self, scope: Scope) -> ProtectedResourceMetadata:
        """The RFC 9728 document for a request."""
        # Validated from text, so that a path-less issuer keeps its exact form (no "/" added):
        # clients compare issuers as strings.
        return ProtectedResourceMetadata.model_validate(
            {
                "resource": self.resource(scope),
                "authorization_servers": [self.issuer or origin(scope, self.public_url)],
                "scopes_supported": list(GRANTABLE),
                "resource_name": "troth",
                "bearer_methods_supported": ["header"],
            }
        )

    async def handle(self, request: Request) -> Response:
        """``GET`` the metadata."""
        return PydanticJSONResponse(
            content=self.metadata(request.scope), headers={"Cache-Control": "no-store"}
        )

    def routes(self) -> list[Route]:
        """The two well-known paths, with the SDK's CORS wrapper (GET and OPTIONS)."""
        endpoint = cors_middleware(self.handle, ["GET", "OPTIONS"])
        return [
            Route(path, endpoint=endpoint, methods=["GET", "OPTIONS"])
            for path in (METADATA_PATH, METADATA_PATH + self.mcp_path)
        ]

    def challenge(self, scope: Scope, *, presented: bool) -> str:
        """The ``WWW-Authenticate`` value of a 401 on the MCP endpoint (RFC 6750 §3, RFC 9728
        §5.1): ``invalid_token`` only when a token was presented, and the scopes the tools
        need."""
        parts = ['realm="troth"']
        if presented:
            parts.append('error="invalid_token"')
            parts.append('error_description="the token is unknown, expired, revoked or malformed"')
        parts.append(f'scope="{" ".join(NEEDED)}"')
        parts.append(f'resource_metadata="{self.metadata_url(scope)}"')
        return "Bearer " + ", ".join(parts)
