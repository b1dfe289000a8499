"""What every CLI command shares: the context object, output, and the one error-to-exit table.

Exit codes: 0 ok; 1 not found, or verification failed (or ``troth gate`` said no); 2 bad
input or denied by policy. ``cli.py`` (the ledger's verbs), ``exchange.py`` (export, import, migrate, checkpoint) and
``commands.py`` (serve, mcp, token, demo) all run their bodies under :func:`handled`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.progress import Progress

from troth.config import Settings, build_memory, build_sealer
from troth.core.errors import (
    AuthenticationError,
    ConflictError,
    FormatError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
    TrothError,
)
from troth.service.memory import Memory
from troth.service.sealing import Sealer

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT = 0, 1, 2

# The one table that maps errors to exit codes.
EXIT_CODES: dict[type[TrothError], int] = {
    NotFoundError: EXIT_NOT_FOUND,
    IntegrityError: EXIT_NOT_FOUND,
    InvalidInputError: EXIT_BAD_INPUT,
    PolicyDeniedError: EXIT_BAD_INPUT,
    ConflictError: EXIT_BAD_INPUT,
    FormatError: EXIT_BAD_INPUT,
    AuthenticationError: EXIT_BAD_INPUT,
}

# Control characters other than newline and tab, shown as escapes: an ESC or a CSI in a
# memory would otherwise reach the terminal as a command (clear the screen, retitle it).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Text as it should appear on a terminal: every control character as its escape."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class TextConsole(Console):
    """A console that prints what anyone wrote as text, never as instructions to it.

    Markup and emoji codes are off (a memory holding ``[/]`` had crashed every view, and
    ``[habit]`` vanished from it); what the program itself styles is built as ``Text`` with
    styles. Every string rendered, table cells included, passes :func:`visible`.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **options)


def styled(label: str, style: str, rest: str = "") -> Text:
    """A styled label the program wrote, then text anyone may have written."""
    return Text.assemble((label, style), visible(rest))


err_console = TextConsole(stderr=True)
out_console = TextConsole()


class Context:
    """What every command shares: settings, the output mode, and a lazily opened Memory."""

    def __init__(self, settings: Settings, as_json: bool) -> None:
        self.settings = settings
        self.as_json = as_json
        self._memory: Memory | None = None
        self._compacting = False  # whether the Memory was opened to compact
        self._swept = False
        self._sealer: Sealer | None = None
        self._lengths: dict[str, int] = {}

    @property
    def memory(self) -> Memory:
        return self.opened()

    def opened(self, *, compacting: bool = False) -> Memory:
        """The Memory, opened on first use (``compacting``: for ``troth compact``, whose
        store leaves pending erasures to the rewrite instead of scrubbing them as it opens).

        The flag only means something at the opening: asked of a Memory already opened
        without it, it is refused rather than ignored (that store scrubbed as it opened).
        """
        if self._memory is None:
            self._memory = build_memory(self.settings, compacting=compacting)
            self._compacting = compacting
        elif compacting and not self._compacting:
            raise ConflictError(
                "the store is already open, not for compacting (it scrubbed its pending"
                " erasures as it opened); compact from a new context, as `troth compact` does"
            )
        return self._memory

    @property
    def writer(self) -> Memory:
        """The Memory for a command that writes: retention is swept first ("run on start").

        A CLI has no background worker, so every write command expires and erases what
        retention says is over before it writes (docs/ledger.md, "Retention").
        """
        memory = self.memory
        if not self._swept:
            # A store behind its witnessed checkpoint takes no write; what the command
            # appends is sealed and witnessed when it ends (docs/ledger.md, section 12).
            sealer = build_sealer(memory, self.settings)
            self._lengths = sealer.guard()
            self._sealer = sealer
            memory.sweep()
            self._swept = True
        return memory

    def close(self) -> None:
        if self._memory is None:
            return
        try:
            if self._sealer is not None:
                for sealed in self._sealer.seal_moved(self._lengths):
                    for missed in sealed.missed:
                        what = (
                            "no checkpoint of it was signed"
                            if not sealed.witnessed_at
                            else "a witness did not take its checkpoint"
                        )
                        err_console.print(
                            styled(
                                "warning:", "yellow", f" the write is kept, but {what}: {missed}"
                            )
                        )
        except TrothError as error:
            err_console.print(
                "[yellow]warning:[/] the write is kept, but no checkpoint of it was signed:"
                f" {error.message}",
                highlight=False,
            )
        finally:
            self._sealer = None
            self._memory.close()


def fail(error: TrothError, as_json: bool) -> NoReturn:
    """Print an error as a sentence (or JSON) and exit with its code."""
    code = next((c for t, c in EXIT_CODES.items() if isinstance(error, t)), EXIT_BAD_INPUT)
    if as_json:
        click.echo(json.dumps(error.to_dict(), ensure_ascii=False, default=str))
    else:
        err_console.print(styled("error:", "bold red", f" {error.message}"))
    sys.exit(code)


def progress_bar(ctx: Context) -> Progress:
    """A progress bar on stderr (silent with --json): what, a bar, done/total, time left."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    columns = (*Progress.get_default_columns()[:1], BarColumn(), MofNCompleteColumn())
    return Progress(*columns, TimeRemainingColumn(), console=err_console, disable=ctx.as_json)


@contextmanager
def handled(ctx: Context) -> Iterator[Context]:
    """Run a command body, mapping troth errors to messages and exit codes."""
    try:
        yield ctx
    except TrothError as error:
        fail(error, ctx.as_json)
    finally:
        ctx.close()


def emit(ctx: Context, data: Any, human: Callable[[], None]) -> None:
    """JSON when asked for, the human rendering otherwise."""
    if ctx.as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        human()


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` on every command (also accepted before the command name)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


def with_json(obj: Context, as_json: bool) -> Context:
    """The group's context, in JSON mode when the command's own ``--json`` asks for it."""
    obj.as_json = obj.as_json or as_json
    return obj
