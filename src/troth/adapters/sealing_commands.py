"""CLI commands for signed checkpoints: ``seal`` and ``prove``; and the witness check of ``verify``.

``troth seal`` signs each owner's current Merkle tree (a C2SP tlog checkpoint in a C2SP
signed note), hands it to the witness and prints the notes; ``troth seal --verifier-key``
prints the public key in the note verifier-key format; ``troth prove MEMORY_ID`` prints the
inclusion proofs of a memory's entries against the checkpoint it signs. See docs/ledger.md
(section 12) and docs/operations.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

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
from troth.config import build_sealer
from troth.service.sealing import Holding

__all__ = ["hold_against_witnesses", "prove", "render_holdings", "seal", "verify_against"]


@click.command()
@click.option("--owner", help="Only this owner's ledger (default: every owner).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the signed notes to this file instead of printing them.",
)
@click.option(
    "--verifier-key", is_flag=True, help="Print the verifier key that checks the checkpoints."
)
@json_option
@click.pass_obj
def seal(
    obj: Context, owner: str | None, output: Path | None, verifier_key: bool, as_json: bool
) -> None:
    """Sign each owner's latest checkpoint, hand it to the witness and print it."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        sealer = build_sealer(ctx.memory, ctx.settings)
        if verifier_key:
            key = sealer.verifier_key()
            emit(ctx, {"verifier_key": key}, lambda: click.echo(key))
            return
        seals = sealer.seal(owner)
        notes = "\n".join(s.note.decode("utf-8") for s in seals)
        if output is not None:
            output.write_text(notes, encoding="utf-8")

        def human() -> None:
            if output is not None:
                for s in seals:
                    out_console.print(
                        f"{s.owner}: {s.checkpoint.size} entries sealed", highlight=False
                    )
                out_console.print(f"written to {output}", highlight=False)
            elif seals:
                click.echo(notes, nl=False)
            else:
                out_console.print("no ledgers yet")

        emit(ctx, {"checkpoints": [s.to_dict() for s in seals]}, human)


@click.command()
@click.argument("memory_id")
@click.option("--owner")
@json_option
@click.pass_obj
def prove(obj: Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """Print the inclusion proofs of a memory's first and latest entries, with the checkpoint."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        found = ctx.memory.get(memory_id, owner=owner)  # the usual access rules and errors
        proof = build_sealer(ctx.memory, ctx.settings).prove(memory_id, found.owner)

        def human() -> None:
            click.echo(json.dumps(proof, ensure_ascii=False, indent=2))

        emit(ctx, proof, human)


def hold_against_witnesses(
    ctx: Context, owner: str | None, broken: Sequence[str] = ()
) -> list[Holding]:
    """``verify``'s second half: the store against the newest checkpoints its witnesses
    hold, each chain verified from its first entry. The sealed tips of the ``broken``
    owners are forgotten, so no later write starts from them (it verifies and refuses)."""
    sealer = build_sealer(ctx.memory, ctx.settings)
    for whose in broken:
        sealer.distrust(whose)
    return sealer.hold(owner, full=True)


def render_holdings(holdings: list[Holding]) -> None:
    """One line per witnessed checkpoint: ok, or the sentence saying what was found."""
    for h in holdings:
        if h.ok:
            out_console.print(
                f"[green]ok[/]  {h.owner}: extends its witnessed checkpoint of"
                f" {h.witnessed_size} entries",
                highlight=False,
            )
        else:
            out_console.print(f"[red]{h.state.replace('_', ' ')}[/]  {h.message}", highlight=False)


def verify_against(ctx: Context, path: Path, owner: str | None) -> None:
    """``verify --against FILE``: an export against its checkpoint, or the ledger against a
    checkpoint note; exit 1 when they do not agree (a cut-off or changed file, a rollback)."""
    with handled(ctx):
        found = ctx.memory.verify_export(path, owner=owner)

        def human() -> None:
            label = ("ok", "green") if found["ok"] else ("does not match", "red")
            out_console.print(styled(*label, f"  {found['message']}"), highlight=False)

        emit(ctx, found, human)
        if not found["ok"]:
            sys.exit(EXIT_NOT_FOUND)
