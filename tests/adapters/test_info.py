"""``troth info``: where things are; the default principal resolved in one place."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

from click.testing import CliRunner

from troth.adapters.about import masked_url
from troth.adapters.cli import cli
from troth.config import Settings, default_principal, resolve_principal


def test_info_json_says_where_things_are(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["info", "--json"], env={"TROTH_HOME": str(tmp_path), "TROTH_PRINCIPAL": "human:al"}
    )
    assert result.exit_code == 0, result.output
    about = json.loads(result.stdout)
    assert about["version"] == "0.1.0"
    assert about["home"] == str(tmp_path)
    assert about["backend"] == "sqlite"
    assert about["database"] == str(tmp_path / "troth.db")
    assert about["database_exists"] is False
    assert about["embedding_model"] == {"name": "minilm-static-128-int8", "dim": 128}
    assert (about["principal"], about["principal_from"]) == ("human:al", "TROTH_PRINCIPAL")
    assert not (tmp_path / "troth.db").exists()  # asking creates nothing


def test_info_prints_lines_and_names_postgres_without_its_password(tmp_path: Path) -> None:
    url = "postgresql://troth:s3cret@db.internal:5433/troth"
    env = {"TROTH_HOME": str(tmp_path), "TROTH_DATABASE_URL": url}
    result = CliRunner().invoke(cli, ["--as", "human:bo", "info"], env=env)
    assert result.exit_code == 0, result.output
    assert "s3cret" not in result.output
    assert "database      postgresql://troth:***@db.internal:5433/troth" in result.output
    assert "backend       postgresql" in result.output
    assert "principal     human:bo   (from --as)" in result.output


def test_info_principal_prints_the_default_principal_alone(tmp_path: Path) -> None:
    env = {"TROTH_HOME": str(tmp_path), "TROTH_PRINCIPAL": "", "USER": "", "LOGNAME": ""}
    result = CliRunner().invoke(cli, ["info", "--principal"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == Settings.load(environ={}).principal + "\n"


def test_the_principal_resolves_the_same_way_where_user_is_unset() -> None:
    login = pwd.getpwuid(os.getuid()).pw_name
    assert default_principal({}) == f"human:{login}"
    assert default_principal({"USER": "a b"}) == "human:a_b"
    assert default_principal({"LOGNAME": "x", "USER": "y"}) == "human:x"
    assert resolve_principal(None, {}) == (f"human:{login}", "login")
    assert resolve_principal(None, {"TROTH_PRINCIPAL": "human:t"}) == ("human:t", "TROTH_PRINCIPAL")
    assert resolve_principal("agent:a", {"TROTH_PRINCIPAL": "human:t"}) == ("agent:a", "--as")


def test_masked_url_leaves_a_url_without_password() -> None:
    assert masked_url("postgresql://db/troth") == "postgresql://db/troth"
    assert masked_url("postgresql://u:p@h/d") == "postgresql://u:***@h/d"


def test_the_serve_banner_starts_with_where_the_data_lives() -> None:
    from troth.adapters.about import about_lines, describe

    lines = about_lines(describe(Settings.load(home="/data/t", environ={"USER": "al"})))
    assert lines[0] == "troth 0.1.0"
    assert "  database      /data/t/troth.db (created on first write)" in lines
