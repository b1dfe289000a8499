"""One ASGI application: the HTTP API, the MCP endpoint, PCP discovery and the review page.

``troth serve`` runs it under uvicorn; ``troth mcp`` serves the same tools over
stdio. Layout of the application::

    Guard            Host allow-list (DNS rebinding), same-origin check on every unsafe
                     request, security headers on every answer
    └── Dispatch     /mcp → McpAuth → the MCP SDK's streamable HTTP app
                     else → the FastAPI app: /api/…, /openapi.json, /.well-known/pcp.json,
                            /.well-known/oauth-protected-resource[/mcp] (oauth.py),
                            the OAuth authorization server (oauth_server.py: its metadata,
                            /register, /authorize, /token, /revoke, /api/oauth/consent/…),
                            /api/counts, /api/tokens … (http_ledger.py),
                            /api/gate, the trust gate (http_gate.py),
                            / (the review page) and /web/… (its static files)
"""

from __future__ import annotations

import ipaddress
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse
from mcp.server.transport_security import TransportSecuritySettings
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from troth.adapters import heap
from troth.adapters.http import authenticated, create_api, error_response
from troth.adapters.http_gate import gate_router
from troth.adapters.http_ledger import ledger_router
from troth.adapters.mcp import GRANT_KEY, ToolNames, create_mcp
from troth.adapters.oauth import ProtectedResource
from troth.adapters.oauth_server import AuthorizationServer
from troth.core.access import Grant
from troth.core.errors import TrothError
from troth.service.memory import Memory
from troth.service.tokens import Tokens

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: How often a served store sweeps retention (seconds; ``troth serve --sweep-every``).
DEFAULT_SWEEP_SECONDS = 600.0
MCP_PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: OAuth endpoints an in-browser client calls cross-site; they act on no ambient credential
#: (the client authenticates in the request itself), so there is no request to forge.
CROSS_SITE_PATHS = frozenset({"/token", "/register", "/revoke"})
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        b" connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def is_loopback(host: str) -> bool:
    """True for a loopback address or ``localhost``."""
    if host in ("localhost", "[::1]"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name part of a Host header (``[::1]:8765`` → ``[::1]``, ``a:1`` → ``a``)."""
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if ":" in header else header


class Guard:
    """Refuse foreign Host headers and cross-site unsafe requests; add security headers.

    The review page keeps its token in the tab's ``sessionStorage`` and sends it in the
    ``Authorization`` header, which a browser never attaches on its own; on top of that,
    any POST/PUT/PATCH/DELETE carrying an ``Origin`` other than this server's is refused
    (but on the OAuth client endpoints, which act on no ambient credential), and only the
    OAuth endpoints and metadata send CORS headers (the MCP SDK's, docs/api.md).
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] | None) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else frozenset(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.allowed_hosts is not None and _host_name(host) not in self.allowed_hosts:
            await _refuse(scope, receive, send, 421, "this server does not answer for that host")
            return
        origin = headers.get("origin")
        unsafe = scope["method"] not in SAFE_METHODS and scope.get("path") not in CROSS_SITE_PATHS
        if unsafe and origin is not None:
            parts = urlsplit(origin)
            if origin == "null" or parts.netloc != host or parts.scheme not in ("http", "https"):
                await _refuse(
                    scope,
                    receive,
                    send,
                    403,
                    "cross-site request refused: use the review page served by this server",
                )
                return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, secured)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    response = JSONResponse({"error": "denied", "message": message}, status_code=status)
    await response(scope, receive, send)


class McpAuth:
    """Authenticate each MCP HTTP request with the same bearer tokens as the HTTP API.

    A refusal is a 401 whose challenge names the protected resource metadata
    (``oauth.ProtectedResource``), where an OAuth client starts its discovery.
    """

    def __init__(self, app: ASGIApp, tokens: Tokens, resource: ProtectedResource) -> None:
        self.app = app
        self.tokens = tokens
        self.resource = resource

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        value = ""
        for key, raw in scope["headers"]:
            if key.lower() == b"authorization":
                value = raw.decode("latin-1")
        scheme, _, credentials = value.partition(" ")
        token = credentials.strip() if scheme.lower() == "bearer" else None
        try:
            # As the HTTP API's ``caller``: on the embedded store the check is cheaper than
            # a worker thread's round trip, so it runs here (docs/api.md, "Concurrency").
            grant = await authenticated(self.tokens, token)
        except TrothError as error:
            response = error_response(error)
            if response.status_code == 401:
                response.headers["WWW-Authenticate"] = self.resource.challenge(
                    scope, presented=bool(value)
                )
            await response(scope, receive, send)
            return
        await self.app({**scope, GRANT_KEY: grant}, receive, send)


class Dispatch:
    """``/mcp`` to the MCP app, everything else (lifespan included) to the FastAPI app."""

    def __init__(self, api: ASGIApp, mcp: ASGIApp) -> None:
        self.api = api
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await self.mcp(scope, receive, send)
        else:
            await self.api(scope, receive, send)


class RetentionSweeper:
    """The retention sweep of a served store: once when the server starts, then every
    ``interval`` seconds in a thread of its own, so text whose time to live ends while the
    server runs is erased without any CLI command (docs/operations.md, "Retention")."""

    def __init__(self, memory: Memory, interval: float) -> None:
        if not interval > 0:
            raise ValueError("the sweep interval must be a positive number of seconds")
        self.memory = memory
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> None:
        """One sweep of every owner; a failure is reported and the server keeps serving."""
        try:
            self.memory.sweep()
        except TrothError as error:
            print(f"warning: the retention sweep failed: {error.message}", file=sys.stderr)

    def start(self) -> None:
        """Sweep now, then keep sweeping on schedule until :meth:`stop`."""
        self.sweep()
        self._thread = threading.Thread(target=self._run, name="troth-sweep", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the schedule (a sweep under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sweep()


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """How the application is bound and named, and whether it sweeps retention.

    ``sweep_every``: seconds between retention sweeps (and one on start); ``None`` for an
    application that leaves retention to its host (the in-process test clients do).
    """

    host: str = DEFAULT_HOST
    tool_names: ToolNames = "dotted"
    allowed_hosts: tuple[str, ...] | None = None
    #: The URL clients reach this server at, when it is not what requests say (a proxy).
    public_url: str | None = None
    #: The OAuth authorization server named in the protected resource metadata (default:
    #: this server's origin).
    oauth_issuer: str | None = None
    sweep_every: float | None = None
    #: Freeze the startup heap out of the collector's walks once the application has
    #: started (``adapters.heap``): ``troth serve`` does; in-process test clients do not.
    settle_heap: bool = False

    def hosts(self) -> tuple[str, ...] | None:
        """The Host allow-list: loopback names when bound to loopback, else as configured."""
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if is_loopback(self.host):
            return LOOPBACK_NAMES
        return None


def web_root() -> str:
    """The directory of the review page's static files, shipped in the package."""
    return str(resources.files("troth.adapters").joinpath("web"))


def create_app(memory: Memory, tokens: Tokens, options: ServerOptions | None = None) -> ASGIApp:
    """The combined ASGI application over one facade (a new one per server start)."""
    options = options or ServerOptions()
    # One recall limiter for both transports: each its own would let twice the slots in.
    recalls = anyio.CapacityLimiter(memory.max_concurrent_recalls)
    mcp = create_mcp(memory, tool_names=options.tool_names, recalls=recalls)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # The Guard checks Host and Origin for the whole application, /mcp included.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    sweeper = None if options.sweep_every is None else RetentionSweeper(memory, options.sweep_every)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            if sweeper is not None:
                await anyio.to_thread.run_sync(sweeper.start)
            if options.settle_heap:
                # Everything the process keeps is built by now (uvicorn's protocols too).
                heap.settle()
            try:
                yield
            finally:
                if sweeper is not None:
                    await anyio.to_thread.run_sync(sweeper.stop)

    api = create_api(memory, tokens, lifespan=lifespan, mcp_path=MCP_PATH, recalls=recalls)
    api.include_router(ledger_router())
    api.include_router(gate_router(sorted(memory.policy.actions)))
    resource = ProtectedResource(
        MCP_PATH, public_url=options.public_url, issuer=options.oauth_issuer
    )
    api.router.routes.extend(resource.routes())
    if options.public_url and not options.oauth_issuer:
        # The issuer is a fixed URL (clients compare it as a string), so troth's own
        # authorization server runs only where the server knows the URL it is reached at.
        public = options.public_url.rstrip("/")
        issuer = AuthorizationServer(tokens, issuer=public, resource=public + MCP_PATH)
        api.router.routes.extend(issuer.routes())
    root = web_root()
    api.mount("/web", StaticFiles(directory=root), name="web")

    @api.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        # Browsers ask for /favicon.ico whatever the page links; an SVG answers both.
        return FileResponse(f"{root}/favicon.svg", media_type="image/svg+xml")

    @api.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(f"{root}/index.html", media_type="text/html")

    return Guard(Dispatch(api, McpAuth(mcp_app, tokens, resource)), options.hosts())


def banner(
    *, host: str, port: int, principal: str, token: str | None, tls: bool, existing: str | None
) -> str:
    """What ``serve`` prints: where the page is, how to sign in, how to connect an agent."""
    scheme = "https" if tls else "http"
    shown = f"[{host}]" if ":" in host else host
    base = f"{scheme}://{shown}:{port}"
    lines = [
        f"troth is serving on {base}",
        f"  review page   {base}/",
        f"  MCP endpoint  {base}{MCP_PATH}   (streamable HTTP; stdio: `troth mcp`)",
        f"  HTTP API      {base}/api   (OpenAPI: {base}/openapi.json)",
        f"  discovery     {base}/.well-known/pcp.json",
        "",
    ]
    if token is not None:
        lines += [
            f"Your first token, for {principal} (shown once; sign in to the review page with it):",
            f"  {token}",
        ]
    elif existing is not None:
        lines += [f"{principal} already has token {existing}; to sign in with a new one:"]
    else:
        lines += [f"To sign in to the review page as {principal}:"]
    if token is None:
        lines.append(
            f"  troth token create --principal {principal} "
            "--scopes memory:read,memory:write,memory.sensitive:read,export:read,review:write"
        )
    lines += [
        "",
        "Connect an agent (its memories wait for your approval):",
        f"  troth token create --principal agent:assistant --on-behalf-of {principal}"
        " --scopes memory:read,memory:write --json",
        f'  then point the MCP client at {base}{MCP_PATH} with "Authorization: Bearer <token>"',
        "",
    ]
    return "\n".join(lines)


def serve(
    memory: Memory,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    tool_names: ToolNames = "dotted",
    first_token_for: str | None = None,
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    log_level: str = "info",
    about: Iterable[str] = (),
    sweep_every: float = DEFAULT_SWEEP_SECONDS,
) -> None:
    """Run the application under uvicorn until interrupted, sweeping retention on start and
    every ``sweep_every`` seconds.

    ``about`` heads the banner: where the data lives (``adapters/about.py``).
    """
    import uvicorn

    from troth.core.access import HUMAN_DEFAULT_SCOPES

    tokens = memory.tokens
    tls = ssl_certfile is not None
    if not is_loopback(host) and not tls:
        print(
            f"warning: serving bearer tokens over plain HTTP on {host}; anyone on the network "
            "can read them. Bind to 127.0.0.1, or pass --ssl-certfile and --ssl-keyfile.",
            file=sys.stderr,
        )
    token, existing = None, None
    if first_token_for is not None:
        active = tokens.active(first_token_for)
        if active:
            existing = active[-1].token_id
        else:
            token = tokens.create(
                first_token_for, HUMAN_DEFAULT_SCOPES, label="first token (serve)"
            ).token
    principal = first_token_for or "human:NAME"
    heading = "".join(f"{line}\n" for line in about)
    print(
        heading
        + banner(
            host=host, port=port, principal=principal, token=token, tls=tls, existing=existing
        ),
        flush=True,
    )
    # The URL clients reach the server at: the OAuth issuer and the resource its tokens are
    # for. Behind a reverse proxy it is not the bound address: TROTH_PUBLIC_URL says it.
    shown = f"[{host}]" if ":" in host else host
    public_url = os.environ.get("TROTH_PUBLIC_URL") or (
        f"{'https' if tls else 'http'}://{shown}:{port}"
    )
    options = ServerOptions(
        host=host,
        tool_names=tool_names,
        public_url=public_url,
        sweep_every=sweep_every,
        settle_heap=True,
    )
    app = create_app(memory, tokens, options)
    config: dict[str, Any] = {"host": host, "port": port, "log_level": log_level}
    if tls:
        config.update(ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile)
    uvicorn.run(app, **config)


def serve_stdio(memory: Memory, grant: Grant, *, tool_names: ToolNames = "dotted") -> None:
    """Serve the MCP tools over stdin/stdout as one principal (``troth mcp``)."""
    server = create_mcp(memory, stdio_grant=grant, tool_names=tool_names)
    anyio.run(server.run_stdio_async)
