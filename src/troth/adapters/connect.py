"""``troth connect CLIENT``: the MCP configuration an agent's client needs, printed or merged.

Each client starts ``troth mcp`` itself, often with a scrubbed environment, so the entry
names the absolute path of the installed command and carries an ``env`` block with
``TROTH_HOME`` (and ``TROTH_DATABASE_URL`` / ``TROTH_POLICY`` when set), and the arguments
name the agent (``--as agent:CLIENT``) and the person it acts for (``--on-behalf-of``).

The documented shapes (docs/api.md, "Connecting an agent", cites each client's reference):

- Claude Desktop: ``claude_desktop_config.json``, ``{"mcpServers": {NAME: {command, args,
  env}}}``;
- Cursor: ``~/.cursor/mcp.json``, the same ``mcpServers`` shape;
- VS Code: the user profile's ``mcp.json``, ``{"servers": {NAME: {"type": "stdio",
  command, args, env}}}``;
- Codex: ``~/.codex/config.toml``, a ``[mcp_servers.NAME]`` table with ``command``,
  ``args`` and an ``env`` table;
- Claude Code: the ``claude mcp add --transport stdio --env K=V NAME -- COMMAND ARGS…``
  command line (options before the name, the server's command after ``--``).

``--write`` merges the entry into the file (other servers and settings kept, the old file
copied to a timestamped backup first, the new one written atomically); for Claude Code it
runs the ``claude mcp add`` line.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import platformdirs
import tomlkit
from tomlkit.exceptions import TOMLKitError

from troth.adapters.console import (
    Context,
    emit,
    err_console,
    handled,
    json_option,
    out_console,
    with_json,
)
from troth.config import Settings
from troth.core.errors import InvalidInputError, NotFoundError
from troth.core.records import check_principal, principal_kind

SERVER_NAME = "troth"


@dataclass(frozen=True, slots=True)
class Launch:
    """How a client starts the server: the command, its arguments and its environment."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    def entry(self, **extra: str) -> dict[str, Any]:
        """The server entry of a JSON configuration (``extra`` first, e.g. ``type``)."""
        return {**extra, "command": self.command, "args": list(self.args), "env": dict(self.env)}


def installed_command() -> str:
    """The absolute path of the ``troth`` command that is running now.

    The one found on PATH when it is the same file (a stable link such as
    ``~/.local/bin/troth``), else the script beside this interpreter.
    """
    beside = Path(sys.executable).parent / "troth"
    on_path = shutil.which("troth")
    if on_path is not None and (not beside.exists() or Path(on_path).samefile(beside)):
        return str(Path(on_path).absolute())
    if beside.exists():
        return str(beside)
    raise NotFoundError(
        "cannot find the installed troth command; run `make install` (or install the wheel)"
        " and try again"
    )


def launch_for(settings: Settings, *, agent: str, person: str, command: str) -> Launch:
    """The launch of ``troth mcp`` for ``agent`` acting for ``person`` on these settings."""
    env = {"TROTH_HOME": str(settings.home.absolute())}
    if settings.database_url:
        env["TROTH_DATABASE_URL"] = settings.database_url
    if settings.policy_path is not None:
        env["TROTH_POLICY"] = str(settings.policy_path.absolute())
    return Launch(command, ("--as", agent, "mcp", "--on-behalf-of", person), env)


def claude_code_argv(launch: Launch, name: str = SERVER_NAME) -> list[str]:
    """``claude mcp add --transport stdio --env K=V … NAME -- COMMAND ARGS…``."""
    env = [part for key, value in launch.env.items() for part in ("--env", f"{key}={value}")]
    return ["claude", "mcp", "add", "--transport", "stdio", *env, name, "--", launch.command,
            *launch.args]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Client:
    """One client: where its configuration lives and how its entry is shaped."""

    name: str
    default_path: Callable[[], Path] | None
    key: str | None  # the JSON object holding the servers; None for TOML or a command line
    extra: Mapping[str, str]

    def snippet(self, launch: Launch, name: str = SERVER_NAME) -> dict[str, Any]:
        """The configuration fragment this client reads, as a document."""
        if self.key is not None:
            return {self.key: {name: launch.entry(**self.extra)}}
        return {"mcp_servers": {name: launch.entry()}}


def _claude_desktop_path() -> Path:
    return Path(platformdirs.user_config_dir("Claude", appauthor=False, roaming=True)) / (
        "claude_desktop_config.json"
    )


def _vscode_path() -> Path:
    return Path(platformdirs.user_config_dir("Code", appauthor=False, roaming=True)) / (
        "User/mcp.json"
    )


def _codex_path() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


CLIENTS: dict[str, Client] = {
    "claude-desktop": Client("claude-desktop", _claude_desktop_path, "mcpServers", {}),
    "claude-code": Client("claude-code", None, None, {}),
    "cursor": Client("cursor", lambda: Path.home() / ".cursor" / "mcp.json", "mcpServers", {}),
    "vscode": Client("vscode", _vscode_path, "servers", {"type": "stdio"}),
    "codex": Client("codex", _codex_path, None, {}),
}


def backup(path: Path, now: datetime | None = None) -> Path:
    """Copy ``path`` beside itself with a UTC timestamp; return the copy's path."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    copy = path.with_name(f"{path.name}.{stamp}.bak")
    shutil.copy2(path, copy)
    return copy


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a sibling file, then one rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.troth-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def merge_json(path: Path, key: str, name: str, entry: Mapping[str, Any]) -> str:
    """``path``'s JSON document with ``entry`` at ``key.name``, every other member kept."""
    document: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            loaded = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"{path} is not plain JSON (line {exc.lineno}: {exc.msg}; comments are not"
                " kept by this merge); add the printed entry by hand"
            ) from exc
        if not isinstance(loaded, dict) or not isinstance(loaded.get(key, {}), dict):
            raise InvalidInputError(f"{path}: expected a JSON object with an object {key!r}")
        document = loaded
    servers = document.setdefault(key, {})
    servers[name] = dict(entry)
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def merge_toml(text: str, name: str, launch: Launch, *, where: str = "the TOML") -> str:
    """``text`` with ``[mcp_servers.NAME]`` set, its other tables and comments kept."""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InvalidInputError(f"{where} is not valid TOML: {exc}") from exc
    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise InvalidInputError(f"{where}: mcp_servers must be a table")
    table = tomlkit.table()
    table["command"] = launch.command
    table["args"] = list(launch.args)
    env = tomlkit.inline_table()
    env.update(launch.env)
    table["env"] = env
    servers[name] = table
    return tomlkit.dumps(document)


def render(client: Client, launch: Launch, name: str) -> str:
    """What ``connect`` prints for ``client``: JSON, TOML or a shell command line."""
    if client.name == "claude-code":
        return shlex.join(claude_code_argv(launch, name))
    if client.name == "codex":
        return merge_toml("", name, launch).strip()
    return json.dumps(client.snippet(launch, name), ensure_ascii=False, indent=2)


def write(client: Client, launch: Launch, name: str, path: Path | None) -> dict[str, Any]:
    """Merge the entry into ``path`` (a backup first); for Claude Code run ``claude mcp add``."""
    if client.name == "claude-code":
        argv = claude_code_argv(launch, name)
        if shutil.which("claude") is None:
            raise NotFoundError(
                "the claude command is not on PATH; install Claude Code, or run the printed"
                " command once it is"
            )
        subprocess.run(argv, check=True)  # the argv built above; no shell
        return {"ran": argv}
    if path is None:
        raise InvalidInputError(f"{client.name} has no configuration file; give one with --path")
    if client.key is not None:
        text = merge_json(path, client.key, name, launch.entry(**client.extra))
    else:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        text = merge_toml(old, name, launch, where=str(path))
    saved = backup(path) if path.exists() else None
    _replace(path, text)
    return {"path": str(path), "backup": str(saved) if saved else None}


@click.command()
@click.argument("client_name", metavar="CLIENT", type=click.Choice(sorted(CLIENTS)))
@click.option("--agent", help="The agent's principal (default: agent:CLIENT).")
@click.option(
    "--on-behalf-of",
    "person",
    help="The person the agent acts for (default: the acting principal, troth info --principal).",
)
@click.option("--name", default=SERVER_NAME, show_default=True, help="The server's name.")
@click.option(
    "--path",
    "path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The configuration file to merge into (default: the client's user file).",
)
@click.option("--write", "do_write", is_flag=True, help="Merge into the file (a backup first).")
@json_option
@click.pass_obj
def connect(
    obj: Context,
    client_name: str,
    agent: str | None,
    person: str | None,
    name: str,
    path: Path | None,
    do_write: bool,
    as_json: bool,
) -> None:
    """Print (or --write) the MCP configuration CLIENT needs to start `troth mcp`.

    CLIENT is claude-desktop, claude-code, cursor, vscode or codex.
    """
    ctx = with_json(obj, as_json)
    with handled(ctx):
        client = CLIENTS[client_name]
        agent = agent or f"agent:{client_name}"
        person = person or ctx.settings.principal
        check_principal(agent, "--agent")
        check_principal(person, "--on-behalf-of")
        if principal_kind(agent) != "agent" or principal_kind(person) != "human":
            raise InvalidInputError(
                f"an agent acts for a person: --agent must be agent:NAME (got {agent}) and"
                f" --on-behalf-of human:NAME (got {person}); set it with --as or TROTH_PRINCIPAL"
            )
        launch = launch_for(ctx.settings, agent=agent, person=person, command=installed_command())
        target = path or (client.default_path() if client.default_path else None)
        text = render(client, launch, name)
        result: dict[str, Any] = {
            "client": client_name,
            "path": str(target) if target else None,
            "config": claude_code_argv(launch, name)
            if client_name == "claude-code"
            else client.snippet(launch, name),
            "text": text,
        }
        if do_write:
            result["written"] = write(client, launch, name, target)

        def human() -> None:
            out_console.print(text, highlight=False, markup=False, soft_wrap=True)
            written = result.get("written")
            if written and written.get("path"):
                note = f" (previous file kept as {written['backup']})" if written["backup"] else ""
                err_console.print(
                    f"merged into {written['path']}{note}", highlight=False, soft_wrap=True
                )
            elif written is None and target is not None:
                err_console.print(
                    f"add it to {target}, or run with --write", highlight=False, soft_wrap=True
                )

        emit(ctx, result, human)
