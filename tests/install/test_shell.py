"""After the README's set-up lines, a new login shell finds ``troth``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.install.conftest import Installed, install, newcomer_env


def login_shell(home: Path, command: str) -> subprocess.CompletedProcess[str]:
    """``bash -lc COMMAND`` with the environment a new terminal of ``home`` starts with."""
    return subprocess.run(
        ["bash", "-lc", command],
        capture_output=True,
        text=True,
        env=newcomer_env(home),
        check=False,
        timeout=120,
    )


def test_a_new_login_shell_runs_troth_help(installed: Installed) -> None:
    shell = login_shell(installed.home, "troth --help")
    assert shell.returncode == 0, shell.stderr
    assert "Commands:" in shell.stdout
    where = login_shell(installed.home, "command -v troth")
    assert where.stdout.strip() == str(installed.troth)
    # /etc/skel's profile already puts ~/.local/bin on PATH: nothing was appended.
    assert "added" not in installed.output


def test_a_home_without_a_profile_gets_the_path_line(installed: Installed, tmp_path: Path) -> None:
    home = tmp_path / "bare"
    home.mkdir()
    assert login_shell(home, "command -v troth").returncode != 0
    # The same environment as the first install (pip finds everything already there).
    done = install(home, installed.wheel, TROTH_INSTALL_VENV=str(installed.venv))
    assert done.returncode == 0, done.stderr
    assert "added" in done.stdout
    assert "export PATH=" in (home / ".profile").read_text(encoding="utf-8")
    shell = login_shell(home, "troth --help")
    assert shell.returncode == 0, shell.stderr
    # A second install adds nothing more.
    again = install(home, installed.wheel, TROTH_INSTALL_VENV=str(installed.venv))
    assert again.returncode == 0
    assert (home / ".profile").read_text(encoding="utf-8").count("export PATH=") == 1
