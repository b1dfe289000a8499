"""Nothing a user sees says the old name: every verb's help, the served page, the OpenAPI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner
from starlette.testclient import TestClient

from troth.adapters.cli import cli

OLD = "ledger" + "mind"  # spelt in two, so that this file does not say it either


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's path under ``group``: ("remember",), ("token", "create"), …"""
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


def test_no_help_text_says_the_old_name(tmp_path: Path) -> None:
    runner = CliRunner()
    paths = [(), *command_paths(cli)]
    assert len(paths) > 25
    for path in paths:
        result = runner.invoke(cli, ["--home", str(tmp_path), *path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert OLD not in result.output.lower(), path
        if not path:
            assert "troth: long-term memory" in result.output


def test_the_page_and_the_openapi_document_do_not_say_the_old_name(client: TestClient) -> None:
    for path in ("/", "/web/app.js", "/web/app.css", "/openapi.json", "/.well-known/pcp.json"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert OLD not in answer.text.lower(), path
    assert client.get("/openapi.json").json()["info"]["title"].startswith("troth")
