"""``troth migrate`` names its source (issue 20, point 4): never the destination, never
nothing copied by accident, and the tokens come along."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.adapters.conftest import ALICE, invoke
from troth.adapters.cli import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK, cli
from troth.core.errors import InvalidInputError
from troth.service.migration import refuse_same_database
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore


def test_the_readme_order_copies_the_embedded_ledger_not_the_destination_into_itself(
    tmp_path: Path, pg_url: str
) -> None:
    home = tmp_path / "home"
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    made = invoke(home, "token", "create", "--principal", ALICE, "--json")
    assert made.exit_code == EXIT_OK, made.output
    token_id = json.loads(made.stdout)["id"]
    # export TROTH_DATABASE_URL=…; troth migrate --to "$TROTH_DATABASE_URL"
    env = {"TROTH_DATABASE_URL": pg_url}
    runner = CliRunner()
    copied = runner.invoke(
        cli, ["--home", str(home), "--as", ALICE, "migrate", "--to", pg_url, "--json"], env=env
    )
    assert copied.exit_code == EXIT_OK, copied.output
    report = json.loads(copied.stdout)
    assert [o["owner"] for o in report["owners"]] == [ALICE]
    assert report["owners"][0]["copied"] > 0
    assert report["tokens"] == {"copied": 1, "present": 0}
    server = PostgresStore(pg_url)
    try:
        assert server.tip(ALICE).length == SQLiteStore(home / "troth.db").tip(ALICE).length
        assert server.token(token_id) is not None
    finally:
        server.close()
    # Copying into the source itself is an error with a sentence, and changes nothing.
    respelled = pg_url + ("&" if "?" in pg_url else "?") + "connect_timeout=5"
    again = runner.invoke(
        cli, ["--home", str(home), "migrate", "--from", pg_url, "--to", respelled], env=env
    )
    assert again.exit_code == EXIT_BAD_INPUT
    assert "is the database being copied from" in " ".join(again.output.split())


def test_no_embedded_ledger_is_not_found_not_zero_copied(tmp_path: Path) -> None:
    home = tmp_path / "empty"
    refused = invoke(home, "migrate", "--to", str(tmp_path / "copy.db"))
    assert refused.exit_code == EXIT_NOT_FOUND
    assert "no embedded ledger" in " ".join(refused.output.split())
    assert "--from" in refused.output
    assert not (tmp_path / "copy.db").exists()


def test_a_file_named_two_ways_is_the_same_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    same = invoke(home, "migrate", "--to", f"sqlite:///{home}/../home/troth.db")
    assert same.exit_code == EXIT_BAD_INPUT
    assert "is the database being copied from" in " ".join(same.output.split())
    store = SQLiteStore(home / "troth.db")
    try:
        with pytest.raises(InvalidInputError, match="--from"):
            refuse_same_database(store, store)
    finally:
        store.close()


def test_tokens_already_at_the_destination_are_kept_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    assert invoke(home, "token", "create", "--principal", ALICE).exit_code == EXIT_OK
    target = tmp_path / "copy.db"
    first = invoke(home, "migrate", "--to", str(target), "--json")
    assert json.loads(first.stdout)["tokens"] == {"copied": 1, "present": 0}
    second = invoke(home, "migrate", "--to", str(target), "--json")
    assert second.exit_code == EXIT_OK, second.output
    assert json.loads(second.stdout)["tokens"] == {"copied": 0, "present": 1}
