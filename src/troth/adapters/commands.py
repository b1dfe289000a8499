"""Server commands of the CLI: ``serve``, ``mcp``, ``token create|list|revoke`` and ``demo``.

They live here, beside the server they start, and ``adapters/cli.py`` registers them on the
``troth`` group. They share the group's context object (settings, ``--json``, the
lazily opened facade) and its error-to-exit table through ``adapters/console.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from troth.adapters.console import Context, handled, json_option, with_json
from troth.config import build_sealer
from troth.core.access import (
    AGENT_DEFAULT_SCOPES,
    HUMAN_DEFAULT_SCOPES,
    SCOPES,
    SENSITIVE_READ,
    check_grant,
)
from troth.core.records import CHANNELS, principal_kind
from troth.service.schedule import SealingSchedule
from troth.service.sealing import Sealer
from troth.service.tokens import DEFAULT_EXPIRY


def _scopes(value: str | None, principal: str) -> tuple[str, ...]:
    if value is None:
        human = principal_kind(principal) == "human"
        return HUMAN_DEFAULT_SCOPES if human else AGENT_DEFAULT_SCOPES
    return tuple(s for s in value.split(",") if s.strip())


tool_names_option = click.option(
    "--tool-names",
    type=click.Choice(["dotted", "underscore"]),
    default=lambda: os.environ.get("TROTH_MCP_TOOL_NAMES", "dotted"),
    show_default="dotted, or TROTH_MCP_TOOL_NAMES",
    help="memory.search, or memory_search for MCP clients that reject dots.",
)


@click.group()
def token() -> None:
    """Create, list and revoke bearer tokens for the HTTP API, MCP and the review page."""


@token.command(name="create")
@click.option("--principal", required=True, help="Who the token is: human:NAME or agent:NAME.")
@click.option(
    "--on-behalf-of", "on_behalf_of", help="For an agent: the person it acts for (human:NAME)."
)
@click.option(
    "--scopes",
    help=f"Comma-separated, any of {', '.join(SCOPES)} "
    "(default: all for a person; memory:read,memory:write for an agent).",
)
@click.option(
    "--expires",
    default=DEFAULT_EXPIRY,
    show_default=True,
    help="never, a duration (30m, 12h, 90d, 2w) or a UTC time.",
)
@click.option("--label", help="A note to recognise the token by (device, client).")
@click.option(
    "--channel",
    type=click.Choice(CHANNELS),
    help="The channel every write with the token goes through, fixed for its life (default:"
    " user for a person, synthesis for an agent, internal for a service; an agent may take"
    " tool, never internal).",
)
@json_option
@click.pass_obj
def token_create(
    obj: Context,
    principal: str,
    on_behalf_of: str | None,
    scopes: str | None,
    expires: str,
    label: str | None,
    channel: str | None,
    as_json: bool,
) -> None:
    """Create a token; the secret is printed once and only its hash is stored."""
    with handled(with_json(obj, as_json)) as ctx:
        issued = ctx.memory.tokens.create(
            principal,
            _scopes(scopes, principal),
            on_behalf_of=on_behalf_of,
            expires=expires,
            label=label,
            channel=channel,
        )
        if ctx.as_json:
            click.echo(json.dumps(issued.to_dict(), ensure_ascii=False, indent=2))
        else:
            record = issued.record
            click.echo(issued.token)
            click.echo(
                f"id {record.token_id}, {record.principal}"
                + (f" for {record.on_behalf_of}" if record.on_behalf_of else "")
                + f", scopes {','.join(record.scopes)}, channel {record.channel},"
                f" expires {record.expires_at or 'never'}",
                err=True,
            )


@token.command(name="list")
@click.option("--principal", help="Only this principal's tokens.")
@json_option
@click.pass_obj
def token_list(obj: Context, principal: str | None, as_json: bool) -> None:
    """List tokens (never their secrets)."""
    with handled(with_json(obj, as_json)) as ctx:
        records = ctx.memory.tokens.records(principal)
        if ctx.as_json:
            click.echo(json.dumps({"tokens": [r.to_dict() for r in records]}, indent=2))
            return
        for r in records:
            state = (
                f"revoked {r.revoked_at}" if r.revoked_at else f"expires {r.expires_at or 'never'}"
            )
            whom = f" for {r.on_behalf_of}" if r.on_behalf_of else ""
            click.echo(f"{r.token_id}  {r.principal}{whom}  {','.join(r.scopes)}  {state}")
        if not records:
            click.echo("no tokens")


@token.command(name="revoke")
@click.argument("token_id")
@json_option
@click.pass_obj
def token_revoke(obj: Context, token_id: str, as_json: bool) -> None:
    """Revoke a token at once: later requests with it get 401."""
    with handled(with_json(obj, as_json)) as ctx:
        record = ctx.memory.tokens.revoke(token_id)
        if ctx.as_json:
            click.echo(json.dumps(record.to_dict(), indent=2))
        else:
            click.echo(f"{record.token_id} revoked")


@contextmanager
def sealing_schedule(sealer: Sealer) -> Iterator[None]:
    """Checkpoint a served store on the configured schedule while the block runs, and what
    grew since its last checkpoint when it ends (service/schedule.py)."""
    schedule = SealingSchedule(sealer)
    schedule.start()
    try:
        yield
    finally:
        schedule.stop()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@tool_names_option
@click.option(
    "--first-token/--no-first-token",
    default=False,
    help="Create and print a token for the acting person if they have none.",
)
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--sweep-every",
    type=click.FloatRange(min=0, min_open=True),
    default=lambda: os.environ.get("TROTH_SWEEP_EVERY") or "600",
    show_default="600, or TROTH_SWEEP_EVERY",
    help="Seconds between retention sweeps (one also runs on start): expired text is erased.",
)
@click.pass_obj
def serve(
    obj: Context,
    host: str,
    port: int,
    tool_names: str,
    first_token: bool,
    ssl_certfile: str | None,
    ssl_keyfile: str | None,
    sweep_every: float,
) -> None:
    """Serve the HTTP API, MCP (streamable HTTP at /mcp) and the review page."""
    from troth.adapters import server
    from troth.adapters.about import about_lines, describe, principal_origin

    with handled(obj) as ctx:
        principal = ctx.settings.principal
        memory = ctx.memory  # opened first, so the banner says the database exists
        sealer = build_sealer(memory, ctx.settings)
        sealer.guard()  # no serving a store behind its witness
        about = about_lines(describe(ctx.settings, principal_origin=principal_origin()))
        with sealing_schedule(sealer):
            server.serve(
                memory,
                host=host,
                port=port,
                tool_names="underscore" if tool_names == "underscore" else "dotted",
                first_token_for=principal
                if first_token and principal_kind(principal) == "human"
                else None,
                ssl_certfile=ssl_certfile,
                ssl_keyfile=ssl_keyfile,
                about=[*about, ""],
                sweep_every=sweep_every,
            )


@click.command(name="mcp")
@click.option(
    "--on-behalf-of",
    "on_behalf_of",
    default=lambda: os.environ.get("TROTH_ON_BEHALF_OF"),
    help="For an agent principal (--as agent:NAME): the person it acts for.",
)
@click.option(
    "--scopes",
    help="Comma-separated scopes (default: memory:read,memory:write; "
    "a person also gets memory.sensitive:read).",
)
@tool_names_option
@click.pass_obj
def mcp_command(
    obj: Context, on_behalf_of: str | None, scopes: str | None, tool_names: str
) -> None:
    """Serve the MCP tools over stdio, acting as the configured principal (--as)."""
    from troth.adapters import server

    with handled(obj) as ctx:
        principal = ctx.settings.principal
        wanted: Any = scopes.split(",") if scopes else list(AGENT_DEFAULT_SCOPES)
        if scopes is None and principal_kind(principal) == "human":
            wanted.append(SENSITIVE_READ)
        grant = check_grant(principal, on_behalf_of, wanted)
        sealer = build_sealer(ctx.memory, ctx.settings)
        sealer.guard()
        with sealing_schedule(sealer):
            server.serve_stdio(
                ctx.memory,
                grant,
                tool_names="underscore" if tool_names == "underscore" else "dotted",
            )


@click.command()
def demo() -> None:
    """Walk through remember → recall → approve → redact → verify on a demo home."""
    from troth.adapters import walkthrough

    walkthrough.main()
