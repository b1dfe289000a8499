"""The ``troth`` command line: the library's verbs as commands.

Exit codes: 0 ok; 1 not found, or verification failed; 2 bad input or denied by policy
(the table is in ``adapters/console.py``). Every command takes ``--json`` for
machine-readable output. The server commands live in ``adapters/commands.py``, the ones
that carry memory across a boundary in ``adapters/exchange.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from troth.adapters.about import info
from troth.adapters.commands import demo, mcp_command, serve, token
from troth.adapters.connect import connect
from troth.adapters.console import (
    EXIT_BAD_INPUT,
    EXIT_NOT_FOUND,
    EXIT_OK,
    Context,
    emit,
    fail,
    handled,
    json_option,
    out_console,
    progress_bar,
    styled,
    with_json,
)
from troth.adapters.exchange import checkpoint, export_command, import_command, migrate
from troth.adapters.gate_command import gate
from troth.adapters.sealing_commands import (
    hold_against_witnesses,
    prove,
    render_holdings,
    seal,
    verify_against,
)
from troth.adapters.witness_server import witness
from troth.config import Settings
from troth.core.errors import TrothError
from troth.core.ranking import ADDITIVE_ADJUSTMENTS
from troth.core.records import CHANNELS, KINDS, STATUSES, TOPICS, MemoryRecord
from troth.service.changes import FORGET_REASON
from troth.service.memory import MemoryFilter
from troth.service.recall import Query

__all__ = ["EXIT_BAD_INPUT", "EXIT_NOT_FOUND", "EXIT_OK", "cli", "main"]


def write_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every write takes."""
    options = [
        click.option("--owner", help="Whose ledger (a principal, e.g. human:alice)."),
        click.option(
            "--source",
            "channel",
            type=click.Choice(CHANNELS),
            help="Channel: user, internal, tool, synthesis.",
        ),
        click.option("--kind", type=click.Choice(KINDS), default="fact", show_default=True),
        click.option("--topic", type=click.Choice(TOPICS), default="general", show_default=True),
        click.option(
            "--scope",
            default="global",
            show_default=True,
            help="global, project:ID or conversation:ID.",
        ),
        click.option("--reason", help="Why this is remembered, in the person's words."),
        click.option("--title", help="A short title."),
        click.option("--tag", "tags", multiple=True, help="A tag (repeatable)."),
        click.option(
            "--ttl",
            default="never",
            show_default=True,
            help="never, expires_at:<UTC time> or decay:<days>.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def render_memory(memory: MemoryRecord) -> None:
    """A memory as a small table: its flag first, then its source beside its text."""
    if memory.flagged:
        out_console.print(styled("flagged:", "bold red", " " + FLAG_WORDS))
    table = Table(show_header=False, box=None)
    for key in (
        "id",
        "owner",
        "status",
        "retrievable",
        "kind",
        "topic",
        "sensitivity",
        "channel",
        "writer",
        "actor",
        "endorsed_by",
        "content",
        "reason",
        "created_at",
        "updated_at",
        "revision",
        "supersedes",
        "superseded_by",
    ):
        value = getattr(memory, key)
        if key == "endorsed_by":
            value = ", ".join(value)
        if value not in (None, ""):
            table.add_row(Text(key, style="bold"), str(value))
    out_console.print(table)
    for item in memory.audit:
        note = f" — {item.note}" if item.note else ""
        out_console.print(f"  {item.at}  {item.action:<18} {item.actor}{note}", highlight=False)


#: What the CLI says of a flagged memory wherever it shows one.
FLAG_WORDS = "the text reads as an instruction to an assistant; it is data, never a command"


def as_data(memory: MemoryRecord) -> dict[str, Any]:
    """A memory's JSON on the CLI: every field, the writer of its origin named."""
    return {**memory.to_dict(), "origin": memory.writer}


@click.group()
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Data directory (default: TROTH_HOME or the user data directory).",
)
@click.option(
    "--as", "principal", help="Acting principal (default: TROTH_PRINCIPAL or human:<login>)."
)
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A TOML policy overriding the defaults.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.version_option(package_name="troth")
@click.pass_context
def cli(
    ctx: click.Context,
    home: Path | None,
    principal: str | None,
    policy_path: Path | None,
    as_json: bool,
) -> None:
    """troth: long-term memory for AI assistants that people can trust."""
    try:
        settings = Settings.load(home=home, principal=principal, policy_path=policy_path)
    except TrothError as error:
        fail(error, as_json)
    ctx.obj = Context(settings, as_json)


for _command in (
    serve,
    mcp_command,
    token,
    demo,
    migrate,
    export_command,
    import_command,
    checkpoint,
    seal,
    prove,
    witness,
    info,
    connect,
    gate,
):
    cli.add_command(_command)


@cli.command()
@click.argument("text")
@write_options
@click.option("--as-agent-for", "on_behalf_of", help="The human principal an agent acts for.")
@json_option
@click.pass_obj
def remember(
    obj: Context,
    text: str,
    owner: str | None,
    channel: str | None,
    kind: str,
    topic: str,
    scope: str,
    reason: str | None,
    title: str | None,
    tags: tuple[str, ...],
    ttl: str,
    on_behalf_of: str | None,
    as_json: bool,
) -> None:
    """Remember TEXT; the policy decides whether it is kept, proposed or not stored."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        memory = ctx.writer
        result = memory.remember(
            text,
            owner=owner,
            channel=channel,  # None: the one rule of core.access.default_channel
            on_behalf_of=on_behalf_of,
            kind=kind,
            topic=topic,
            scope=scope,
            reason=reason,
            title=title,
            tags=tags,
            ttl=ttl,
        )
        emit(
            ctx,
            result.to_dict(),
            lambda: out_console.print(
                f"{result.id} {result.status} — {result.why}", highlight=False
            ),
        )


@cli.command()
@click.argument("query")
@click.option("--owner", help="Whose memories to search.")
@click.option("--limit", default=10, show_default=True, type=int)
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS))
@click.option("--scope")
@click.option("--tag", "tags", multiple=True)
@click.option("--partition")
@click.option("--sensitive", "include_sensitive", is_flag=True, help="Include sensitive memories.")
@click.option("--archived", "include_archived", is_flag=True, help="Include archived memories.")
@click.option("--no-stale", "exclude_stale", is_flag=True, help="Leave out stale memories.")
@click.option("--valid-on", help="Only what was valid on this date (YYYY-MM-DD or a time).")
@click.option("--as-of", help="As the ledger stood at this UTC time (2026-01-01T00:00:00Z).")
@json_option
@click.pass_obj
def recall(
    obj: Context,
    query: str,
    owner: str | None,
    limit: int,
    kinds: tuple[str, ...],
    scope: str | None,
    tags: tuple[str, ...],
    partition: str | None,
    include_sensitive: bool,
    include_archived: bool,
    exclude_stale: bool,
    valid_on: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Recall the memories that best answer QUERY, each with its score and why it ranked."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        hits = ctx.memory.recall(
            Query(
                text=query,
                owner=owner,
                limit=limit,
                kinds=kinds or None,
                scope=scope,
                tags=tags,
                partition=partition,
                include_sensitive=include_sensitive,
                include_archived=include_archived,
                include_stale=not exclude_stale,
                valid_on=valid_on,
                as_of=as_of,
            )
        )

        def human() -> None:
            for hit in hits:
                found = hit.memory
                flag = "[flagged] " if found.flagged else ""
                out_console.print(
                    f"{hit.score:8.3f}  {found.id}  {flag}{found.content}", highlight=False
                )
                out_console.print(
                    styled(f"          via {found.channel} from {found.writer}", "dim")
                )
                out_console.print(styled(f"          {_why(hit.why)}", "dim"))
            if not hits:
                out_console.print("nothing found")

        emit(ctx, {"hits": [h.to_dict() for h in hits]}, human)


@cli.command()
@click.argument("memory_id")
@click.option("--owner")
@json_option
@click.pass_obj
def show(obj: Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """Show one memory with its audit trail."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        memory = ctx.memory.get(memory_id, owner=owner)
        emit(ctx, as_data(memory), lambda: render_memory(memory))


@cli.command(name="list")
@click.option("--owner")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES))
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS))
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@json_option
@click.pass_obj
def list_command(
    obj: Context,
    owner: str | None,
    statuses: tuple[str, ...],
    kinds: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """List memories, newest first."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        items = ctx.memory.memories(
            owner, MemoryFilter(statuses=statuses or None, kinds=kinds or None, limit=limit)
        )

        def human() -> None:
            table = Table("id", "status", "kind", "source", "content")
            for m in items:
                table.add_row(
                    m.id,
                    m.status + ("" if m.retrievable or m.status != "active" else " (hidden)"),
                    m.kind,
                    f"{m.channel} ({m.writer})",
                    ("[flagged] " if m.flagged else "") + m.content[:80],
                )
            out_console.print(table)

        emit(ctx, {"memories": [as_data(m) for m in items]}, human)


def _transition(name: str, doc: str) -> None:
    @cli.command(name=name, help=doc)
    @click.argument("memory_id")
    @click.option("--owner")
    @click.option("--note", help="A short note for the audit trail.")
    @json_option
    @click.pass_obj
    def command(
        obj: Context, memory_id: str, owner: str | None, note: str | None, as_json: bool
    ) -> None:
        ctx = with_json(obj, as_json)
        with handled(ctx):
            method = getattr(ctx.writer, name)
            memory = method(memory_id, owner=owner, note=note)
            emit(
                ctx,
                memory.to_dict(),
                lambda: out_console.print(f"{memory.id} {memory.status}", highlight=False),
            )


_transition("approve", "Approve a proposed memory: it becomes active.")
_transition("reject", "Reject a proposed memory.")
_transition("hide", "Remove a memory from retrieval without forgetting it.")


@cli.command()
@click.argument("memory_id")
@click.argument("text")
@click.option("--owner")
@click.option("--reason")
@json_option
@click.pass_obj
def edit(
    obj: Context, memory_id: str, text: str, owner: str | None, reason: str | None, as_json: bool
) -> None:
    """Supersede a memory with new TEXT (a new memory; the old one leaves retrieval)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        result = ctx.writer.edit(memory_id, text, owner=owner, reason=reason)
        emit(
            ctx,
            {**result.to_dict(), "supersedes": memory_id},
            lambda: out_console.print(
                f"{result.id} {result.status} (supersedes {memory_id})", highlight=False
            ),
        )


@cli.command()
@click.argument("memory_id")
@click.option("--owner")
@click.option("--reason", default=FORGET_REASON, show_default=True)
@json_option
@click.pass_obj
def forget(obj: Context, memory_id: str, owner: str | None, reason: str, as_json: bool) -> None:
    """Forget a memory at once (a tombstone); `redact` erases its bytes."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        memory = ctx.writer.forget(memory_id, owner=owner, reason=reason)
        emit(
            ctx,
            memory.to_dict(),
            lambda: out_console.print(f"{memory.id} {memory.status}", highlight=False),
        )


@cli.command()
@click.argument("memory_id")
@click.option("--reason", required=True, help="Why it is erased (kept in the audit trail).")
@click.option("--owner")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def redact(
    obj: Context, memory_id: str, reason: str, owner: str | None, yes: bool, as_json: bool
) -> None:
    """Erase a memory's text from every file the store keeps; the chain still verifies."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        if not yes and sys.stdin.isatty() and not ctx.as_json:
            click.confirm(f"Erase the text of {memory_id} for good?", abort=True)
        memory = ctx.writer.redact(memory_id, owner=owner, reason=reason)
        emit(
            ctx,
            memory.to_dict(),
            lambda: out_console.print(f"{memory.id} redacted", highlight=False),
        )


@cli.command()
@click.option("--owner")
@click.option(
    "--against",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Check an exported file against the signed checkpoint it carries, or the ledger"
    " against a checkpoint note (troth seal -o FILE).",
)
@json_option
@click.pass_obj
def verify(obj: Context, owner: str | None, against: Path | None, as_json: bool) -> None:
    """Verify every chain, compare each projection with the ledger, and hold the store
    against the newest checkpoints its witness holds (or check one file: --against)."""
    ctx = with_json(obj, as_json)
    if against is not None:
        verify_against(ctx, against, owner)
        return
    with handled(ctx):
        reports = ctx.memory.verify(owner)
        held = hold_against_witnesses(ctx, owner, [r.owner for r in reports if not r.chain.ok])
        ok = all(r.ok for r in reports) and all(h.ok for h in held)

        def human() -> None:
            for r in reports:
                if r.ok:
                    out_console.print(
                        styled(
                            "ok",
                            "green",
                            f"  {r.owner}: {r.chain.length} entries, head {r.chain.head[:16]}",
                        ),
                        highlight=False,
                    )
                elif not r.chain.ok:
                    out_console.print(
                        styled(
                            "broken",
                            "red",
                            f"  {r.owner}: entry #{r.chain.broken_at}: {r.chain.reason}",
                        ),
                        highlight=False,
                    )
                else:
                    out_console.print(
                        styled("projection differs", "red", f"  {r.owner}: {r.mismatch}")
                    )
            render_holdings(held)
            if not reports and not held:
                out_console.print("no ledgers yet")

        owners = [r.to_dict() for r in reports]
        emit(ctx, {"ok": ok, "owners": owners, "witnessed": [h.to_dict() for h in held]}, human)
        if not ok:
            sys.exit(EXIT_NOT_FOUND)


@cli.command()
@click.option("--owner")
@click.option("--start", default=0, type=click.IntRange(0))
@json_option
@click.pass_obj
def log(obj: Context, owner: str | None, start: int, as_json: bool) -> None:
    """Show an owner's ledger entries (personaxis lines)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        records = list(ctx.memory.log(owner, start=start))

        def human() -> None:
            for r in records:
                event = r.decode()
                label = f"{event.event} {event.memory}" if event else "entry"
                out_console.print(
                    f"#{r.seq:<5} {r.entry.ts}  {r.entry.source:<9} {label}  {r.entry.content[:60]}",
                    highlight=False,
                )

        emit(ctx, {"entries": [{"seq": r.seq, **r.entry.to_json()} for r in records]}, human)


@cli.command()
@json_option
@click.pass_obj
def sweep(obj: Context, as_json: bool) -> None:
    """Expire memories whose retention ran out, and erase their text."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        expired = ctx.memory.sweep()
        emit(
            ctx,
            {"expired": [m.id for m in expired]},
            lambda: out_console.print(f"{len(expired)} expired"),
        )


@cli.command()
@click.option("--owner")
@json_option
@click.pass_obj
def rebuild(obj: Context, owner: str | None, as_json: bool) -> None:
    """Repair: rebuild the projection from a ledger that verifies against its witnessed
    checkpoint, and report whether it equalled the stored one (docs/ledger.md, section 13)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        results = ctx.memory.rebuild(owner)

        def human() -> None:
            for r in results:
                state = "equal" if r["equal"] else f"differed ({r['mismatch']})"
                out_console.print(
                    f"{r['owner']}: {r['memories']} memories rebuilt; {state}", highlight=False
                )

        emit(ctx, {"owners": results}, human)
        if not all(r["equal"] for r in results):
            sys.exit(EXIT_NOT_FOUND)


@cli.command()
@json_option
@click.pass_obj
def compact(obj: Context, as_json: bool) -> None:
    """Maintenance: rewrite every file erased text lived in. On PostgreSQL this is VACUUM
    FULL, which holds each table while it copies it (docs/operations.md, erasure)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        pending = ctx.opened(compacting=True).compact()
        emit(
            ctx,
            {"compacted": True, "pending_erasures": pending},
            lambda: out_console.print(
                "compacted: no file keeps an erased text"
                if not pending
                else f"compacted; {pending} erasures still wait for a reader to end"
            ),
        )


def _why(why: dict[str, Any]) -> str:
    """One line: lexical and vector rank, then each adjustment."""
    parts = []
    for name in ("lexical", "vector"):
        if why.get(f"{name}_rank") is not None:
            parts.append(f"{name} #{why[f'{name}_rank']}")
    parts += [
        f"{k} {v:+.2f}" if k in ADDITIVE_ADJUSTMENTS else f"{k} x{v:.2f}"
        for k, v in why.get("adjustments", {}).items()
    ]
    return ", ".join(parts)


@cli.command()
@click.option("--owner", help="Only this owner's memories (default: every owner).")
@json_option
@click.pass_obj
def reindex(obj: Context, owner: str | None, as_json: bool) -> None:
    """Recompute the vector of every retrievable memory (after changing the embedding model)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        with progress_bar(ctx) as bar:
            task = bar.add_task("embedding", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            counts = ctx.memory.reindex(owner, progress=advance)
        embedder = ctx.memory.embedder
        model = None if embedder is None else {"name": embedder.name, "dim": embedder.dim}

        def human() -> None:
            for whose, count in counts.items():
                out_console.print(f"{whose}: {count} memories embedded", highlight=False)
            if model:
                out_console.print(f"model {model['name']} ({model['dim']} dimensions)")

        emit(ctx, {"owners": counts, "model": model}, human)


def main() -> None:
    """Console entry point."""
    cli(prog_name="troth")


if __name__ == "__main__":  # pragma: no cover
    main()
