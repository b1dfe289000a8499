"""CLI commands that carry memory across a boundary: export, import, migrate, checkpoint.

``adapters/cli.py`` registers them on the ``troth`` group; they share its context,
output and exit codes through ``adapters/console.py``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.progress import Progress

from troth.adapters.console import (
    EXIT_BAD_INPUT,
    EXIT_NOT_FOUND,
    Context,
    emit,
    err_console,
    handled,
    json_option,
    out_console,
    progress_bar,
    styled,
    with_json,
)
from troth.config import DATABASE_NAME, build_memory
from troth.core.errors import NotFoundError
from troth.service import exports
from troth.service.memory import Memory
from troth.service.migration import MigrationReport


@click.command()
@click.option(
    "--to",
    "destination",
    required=True,
    help="Where to copy: postgresql://…, sqlite:///PATH or a file path.",
)
@click.option(
    "--from",
    "source",
    help="Where to copy from: postgresql://…, sqlite:///PATH or a file path (default: the"
    " embedded ledger in the data directory; never TROTH_DATABASE_URL, which may well be the"
    " destination).",
)
@json_option
@click.pass_obj
def migrate(obj: Context, destination: str, source: str | None, as_json: bool) -> None:
    """Copy every owner's ledger, projection and tokens to another database, then verify the
    copy. The source is --from, or else the embedded ledger; never the destination."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        with migration_source(ctx, source) as memory:
            report = _copy(ctx, memory, destination)
        reports, vectors, tokens = report.owners, report.vectors, report.tokens or {}

        def human() -> None:
            for r in reports:
                out_console.print(
                    styled(
                        "ok",
                        "green",
                        f"  {r.owner}: {r.rows} entries ({r.copied} copied),"
                        f" {r.memories} memories, head {r.head[:16]}",
                    )
                )
            if not reports:
                out_console.print("no ledgers to copy")
            elif "note" in vectors:
                out_console.print(styled("note", "yellow", f" {vectors['note']}"))
            else:
                out_console.print(f"vectors: {vectors['embedded']} memories embedded")
            if "note" in tokens:
                out_console.print(styled("note", "yellow", f" {tokens['note']}"))
            else:
                out_console.print(
                    f"tokens: {tokens.get('copied', 0)} copied,"
                    f" {tokens.get('present', 0)} already there"
                )

        emit(ctx, report.to_dict(), human)


@contextmanager
def migration_source(ctx: Context, source: str | None) -> Iterator[Memory]:
    """The facade over the database a migration copies from: ``--from``, else the embedded
    ledger in the data directory (which must exist: copying nothing is not a success)."""
    if source is None:
        embedded = ctx.settings.home / DATABASE_NAME
        if not embedded.is_file():
            raise NotFoundError(
                f"there is no embedded ledger at {embedded} to copy; name the source with"
                " --from postgresql://… (or a file path)",
                path=str(embedded),
            )
        source = str(embedded)
    memory = build_memory(replace(ctx.settings, database_url=source))
    try:
        yield memory
    finally:
        memory.close()


def _copy(ctx: Context, memory: Memory, destination: str) -> MigrationReport:
    """Run the migration with progress bars (silent with --json)."""
    with progress_bar(ctx) as bar:
        tasks: dict[str, Any] = {}

        def advance(owner: str, done: int, total: int) -> None:
            if owner not in tasks:
                tasks[owner] = bar.add_task(owner, total=total)
            bar.update(tasks[owner], completed=done)

        vectors_task = bar.add_task("vectors", total=None, visible=False)

        def embedded(done: int, _total: int) -> None:
            bar.update(vectors_task, completed=done, visible=True)

        return memory.migrate(destination, progress=advance, vector_progress=embedded)


@click.command(name="export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["pcp", "personaxis", "hux"]),
    required=True,
    help="pcp: an archive (.tar, or .zip by the suffix); personaxis: episodic.jsonl;"
    " hux: a JSON array (JSON Lines when the file ends in .jsonl). A personaxis or HUX"
    " export to a .zip is one file holding it with its proof, as GET /api/export hands out.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--owner")
@click.option(
    "--at",
    "at",
    type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"]),
    help="The export instant written in a PCP manifest (UTC; default now), for reproducible"
    " archives.",
)
@json_option
@click.pass_obj
def export_command(
    obj: Context,
    fmt: str,
    output: Path,
    owner: str | None,
    at: datetime | None,
    as_json: bool,
) -> None:
    """Export an owner's memories (pcp, hux) or ledger (personaxis) to a file."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        result = ctx.memory.export_to(
            fmt, output, owner=owner, at=at.replace(tzinfo=UTC) if at else None
        )
        written = [str(p) for p in exports.beside(fmt, output) if p.is_file()]
        emit(
            ctx,
            {**result.to_dict(), "path": str(output), "beside": written},
            lambda: out_console.print(
                f"{result.items} items written to {output}"
                + "".join(f"\n  left out: {o['what']} ({o['reason']})" for o in result.omitted)
                + "".join(f"\n  with {p}" for p in written),
                highlight=False,
            ),
        )


@click.command(name="import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(
        ["pcp", "pcp-page", "personaxis", "hux", "mem0", "omp", "remnic", "basic-memory"]
    ),
    help="The input's format (default: recognised from the bytes).",
)
@click.option(
    "--mode",
    type=click.Choice(["import", "restore"]),
    default="import",
    show_default=True,
    help="restore: troth's own export, everything kept; import: from elsewhere, with"
    " x_import provenance, agent- and tool-made content proposed.",
)
@click.option("--owner", help="Whose ledger receives the memories.")
@click.option("--reanchor", is_flag=True, help="Re-anchor a legacy (≤0.10) personaxis log.")
@click.option(
    "--approve",
    is_flag=True,
    help="Approve what the import proposes, in the same run (your own export coming back);"
    " the policy keeps some topics for one-by-one review.",
)
@json_option
@click.pass_obj
def import_command(
    obj: Context,
    path: Path,
    fmt: str | None,
    mode: str,
    owner: str | None,
    reanchor: bool,
    approve: bool,
    as_json: bool,
) -> None:
    """Import PATH (a file, a PCP archive or a folder of notes); nothing half-written."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        show = not ctx.as_json and err_console.is_terminal
        with Progress(console=err_console, disable=not show, transient=True) as bar:
            task = bar.add_task("importing", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            report = ctx.memory.import_path(
                path,
                fmt=fmt,
                mode=mode,
                owner=owner,
                reanchor=reanchor,
                progress=progress,
                approve=approve,
            )

        def human() -> None:
            out_console.print(
                f"{report.format} {report.mode} into {report.owner}: {len(report.created)}"
                f" created, {report.unchanged} unchanged, {len(report.refused)} refused",
                highlight=False,
            )
            for refusal in report.refused:
                out_console.print(f"  refused {refusal.where}: {refusal.reason}", highlight=False)
            if report.as_import is not None:
                out_console.print(styled("note", "yellow", f" {report.as_import}"))
            if report.approved or report.held:
                out_console.print(f"  approved {len(report.approved)}", highlight=False)
            for held in report.held:
                out_console.print(f"  left for review {held.where}: {held.reason}", highlight=False)

        emit(ctx, report.to_dict(), human)
        if report.refused:
            # Something the person asked to import is not in the ledger: a script must see it.
            sys.exit(EXIT_BAD_INPUT)


@click.group()
def checkpoint() -> None:
    """Session checkpoints: Spiralist UAIX request envelopes in, response envelopes out."""


@checkpoint.command(name="handle")
@click.argument("file", type=click.File("rb"))
@click.option(
    "--owner",
    help="Whose ledger keeps the checkpoint (default: the acting principal, if a person).",
)
@click.option(
    "--pretty", is_flag=True, help="Indent the answer (its checksum covers the JCS form)."
)
@json_option
@click.pass_obj
def checkpoint_handle(
    obj: Context, file: Any, owner: str | None, pretty: bool, as_json: bool
) -> None:
    """Answer the UAIX request envelope in FILE (- for stdin); print the response envelope.

    The acting principal (--as) is the caller and must equal the envelope's trust.principal.
    Exit 0 for a uai.intent.response.v1; for a uai.error.v1 refusal, 1 when the checkpoint
    is not found and 2 otherwise — the envelope is printed either way. The answer is JSON
    already, so --json changes nothing but is accepted like on every verb (and makes an
    error before any envelope, such as a bad --as, print as JSON too).
    """
    ctx = with_json(obj, as_json)
    with handled(ctx):
        answer = ctx.memory.handle_checkpoint(file.read(), owner=owner)
        envelope = json.loads(answer)
        if pretty:
            click.echo(json.dumps(envelope, ensure_ascii=False, indent=2, sort_keys=True))
        else:
            click.echo(answer.decode("utf-8"))
        if envelope.get("profile") == "uai.error.v1":
            code = envelope.get("body", {}).get("code")
            sys.exit(EXIT_NOT_FOUND if code == "checkpoint-not-found" else EXIT_BAD_INPUT)
