"""``troth gate ACTION MEMORY_ID…``: may these memories justify a sensitive action?

The library's one gate (``Memory.may_justify``), as ``POST /api/gate`` and the MCP tool
``trust.gate`` answer it: allowed or not, the reason, and the weakest source named. The
exit code says it too, for scripts: 0 when the memories justify the action, 1 when they do
not (as ``verify`` exits 1 when a chain does not verify), 2 for bad input.
"""

from __future__ import annotations

import sys

import click
from rich.text import Text

from troth.adapters.console import (
    EXIT_NOT_FOUND,
    Context,
    emit,
    handled,
    json_option,
    out_console,
    styled,
    with_json,
)


@click.command(name="gate")
@click.argument("action")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--owner", help="Whose memories (default: the acting person's).")
@json_option
@click.pass_obj
def gate(
    obj: Context, action: str, memory_ids: tuple[str, ...], owner: str | None, as_json: bool
) -> None:
    """May MEMORY_IDS justify ACTION (delete, credential_use, external_api, …)?

    The weakest source decides; a flagged memory never justifies anything. Exits 0 when
    allowed, 1 when not.
    """
    ctx = with_json(obj, as_json)
    with handled(ctx):
        answer = ctx.memory.may_justify(action, list(memory_ids), owner=owner)

        def human() -> None:
            verdict = ("allowed", "green") if answer.allowed else ("not allowed", "red")
            out_console.print(styled(verdict[0], f"bold {verdict[1]}", f" — {answer.reason}"))
            source = answer.weakest
            if source is not None:
                endorsed = ", ".join(source["endorsed_by"]) or "nobody"
                out_console.print(
                    Text.assemble(
                        ("weakest source: ", "dim"),
                        f"{source['memory']} through {source['channel']} (trust"
                        f" {source['trust']}), written by {source['writer']}, endorsed by"
                        f" {endorsed}" + (", flagged" if source["flagged"] else ""),
                    )
                )

        emit(ctx, answer.to_dict(), human)
        if not answer.allowed:
            sys.exit(EXIT_NOT_FOUND)
