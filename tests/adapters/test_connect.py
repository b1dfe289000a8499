"""``troth connect CLIENT``: each client's documented configuration shape, printed and merged.

The shapes, from each client's documentation:

- Claude Desktop (claude_desktop_config.json): {"mcpServers": {NAME: {"command", "args", "env"}}}
- Cursor (~/.cursor/mcp.json): the same "mcpServers" shape.
- VS Code (mcp.json, configuration reference): {"servers": {NAME: {"type": "stdio",
  "command", "args", "env"}}} — "servers", not "mcpServers", and "type" is required.
- Codex (~/.codex/config.toml): [mcp_servers.NAME] with command, args and an env table.
- Claude Code: claude mcp add --transport stdio --env KEY=value NAME -- COMMAND [ARGS…];
  every option comes before the name, the server's command after "--".
"""

from __future__ import annotations

import json
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from troth.adapters.cli import cli
from troth.adapters.connect import installed_command

ALICE = "human:alice"
ARGS = ["--as", "agent:{client}", "mcp", "--on-behalf-of", ALICE]


def connect(home: Path, *args: str) -> Result:
    env = {"TROTH_HOME": str(home), "TROTH_PRINCIPAL": ALICE, "CODEX_HOME": str(home / "codex")}
    return CliRunner().invoke(cli, ["connect", *args], env=env)


def expected_entry(client: str, home: Path) -> dict[str, Any]:
    return {
        "command": installed_command(),
        "args": [a.format(client=client) for a in ARGS],
        "env": {"TROTH_HOME": str(home)},
    }


def test_the_command_is_the_absolute_path_of_the_running_install() -> None:
    command = Path(installed_command())
    assert command.is_absolute()
    assert command.samefile(Path(sys.executable).parent / "troth")


@pytest.mark.parametrize(
    ("client", "key"), [("claude-desktop", "mcpServers"), ("cursor", "mcpServers")]
)
def test_mcp_servers_clients(tmp_path: Path, client: str, key: str) -> None:
    result = connect(tmp_path, client)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {key: {"troth": expected_entry(client, tmp_path)}}


def test_vscode_uses_servers_with_a_stdio_type(tmp_path: Path) -> None:
    result = connect(tmp_path, "vscode")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document) == ["servers"]
    assert document["servers"]["troth"] == {"type": "stdio", **expected_entry("vscode", tmp_path)}


def test_codex_is_an_mcp_servers_table(tmp_path: Path) -> None:
    result = connect(tmp_path, "codex")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("[mcp_servers.troth]")
    document = tomllib.loads(result.stdout)
    assert document == {"mcp_servers": {"troth": expected_entry("codex", tmp_path)}}


def test_claude_code_is_the_claude_mcp_add_line(tmp_path: Path) -> None:
    result = connect(tmp_path, "claude-code")
    assert result.exit_code == 0, result.output
    argv = shlex.split(result.stdout)
    separator = argv.index("--")
    assert argv[:5] == ["claude", "mcp", "add", "--transport", "stdio"]
    assert argv[5:separator] == ["--env", f"TROTH_HOME={tmp_path}", "troth"]
    entry = expected_entry("claude-code", tmp_path)
    assert argv[separator + 1 :] == [entry["command"], *entry["args"]]


def test_json_output_and_the_agent_and_person_options(tmp_path: Path) -> None:
    result = connect(
        tmp_path, "cursor", "--agent", "agent:laptop", "--on-behalf-of", "human:bob", "--json"
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["client"] == "cursor"
    assert answer["path"] == str(Path.home() / ".cursor" / "mcp.json")
    args = answer["config"]["mcpServers"]["troth"]["args"]
    assert args == ["--as", "agent:laptop", "mcp", "--on-behalf-of", "human:bob"]


def test_an_agent_for_an_agent_is_refused(tmp_path: Path) -> None:
    result = connect(tmp_path, "cursor", "--on-behalf-of", "agent:other")
    assert result.exit_code == 2
    assert "--on-behalf-of human:NAME" in result.output


def test_write_merges_keeps_other_servers_and_backs_up(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    other = {"command": "other-server", "args": []}
    config.write_text(json.dumps({"servers": {"other": other}, "inputs": []}))
    result = connect(tmp_path, "vscode", "--path", str(config), "--write")
    assert result.exit_code == 0, result.output
    merged = json.loads(config.read_text())
    assert merged["servers"]["other"] == other
    assert merged["inputs"] == []
    assert merged["servers"]["troth"]["type"] == "stdio"
    (saved,) = tmp_path.glob("mcp.json.*.bak")
    assert json.loads(saved.read_text()) == {"servers": {"other": other}, "inputs": []}
    again = connect(tmp_path, "vscode", "--path", str(config), "--write")
    assert again.exit_code == 0
    assert json.loads(config.read_text()) == merged


def test_write_creates_a_missing_file(tmp_path: Path) -> None:
    config = tmp_path / "Claude" / "claude_desktop_config.json"
    result = connect(tmp_path, "claude-desktop", "--path", str(config), "--write")
    assert result.exit_code == 0, result.output
    assert json.loads(config.read_text()) == {
        "mcpServers": {"troth": expected_entry("claude-desktop", tmp_path)}
    }
    assert not list(config.parent.glob("*.bak"))


def test_write_refuses_a_file_that_is_not_plain_json(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    result = connect(tmp_path, "vscode", "--path", str(config), "--write")
    assert result.exit_code == 2
    assert "not plain JSON (line 2" in result.output
    assert config.read_text() == '{\n  // my servers\n  "servers": {}\n}\n'


def test_codex_write_keeps_comments_and_other_tables(tmp_path: Path) -> None:
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '# my settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    )
    result = connect(tmp_path, "codex", "--write")
    assert result.exit_code == 0, result.output
    text = config.read_text()
    assert text.startswith('# my settings\nmodel = "o3"\n')
    document = tomllib.loads(text)
    assert document["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert document["mcp_servers"]["troth"] == expected_entry("codex", tmp_path)
    assert len(list(config.parent.glob("config.toml.*.bak"))) == 1


def test_claude_code_write_needs_the_claude_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = connect(tmp_path, "claude-code", "--write")
    assert result.exit_code == 1
    assert "the claude command is not on PATH" in result.output


def test_claude_code_write_runs_claude_mcp_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "argv"
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    result = connect(tmp_path, "claude-code", "--write")
    assert result.exit_code == 0, result.output
    argv = record.read_text().splitlines()
    assert argv[:4] == ["mcp", "add", "--transport", "stdio"]
    assert argv[-5:] == [a.format(client="claude-code") for a in ARGS]
