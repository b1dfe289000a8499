"""The wheel, built and installed the way ``make install`` installs it, into a fresh home.

One session-wide install serves every test here: ``scripts/install-user.sh`` (what
``make install`` runs) creates a virtual environment from the hashed runtime lock and the
wheel just built, in a home copied from ``/etc/skel`` as a new account gets it. pip reads
only the runtime lock's wheels (``build/wheelhouse``, which ``make setup`` fills, and
this fixture fills when it is missing), with ``--no-index``: an install that needs
anything the lock does not name fails here. The environment has no system site packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WHEELHOUSE = REPO / "build" / "wheelhouse"
SKELETON = Path("/etc/skel")


def fill_wheelhouse() -> Path:
    """The runtime lock's wheels (downloaded once, as the Makefile does)."""
    complete = WHEELHOUSE / ".complete"
    lock = REPO / "requirements-run.lock"
    if not complete.exists() or complete.stat().st_mtime < lock.stat().st_mtime:
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--require-hashes",
             "--no-deps", "--only-binary=:all:", "-d", str(WHEELHOUSE), "-r", str(lock)],
            check=True,
        )  # fmt: skip
        complete.touch()
    return WHEELHOUSE


def fresh_home(path: Path) -> Path:
    """A home as a new account has it: a copy of /etc/skel (empty where there is none)."""
    if SKELETON.is_dir():
        shutil.copytree(SKELETON, path, symlinks=True)
    else:
        path.mkdir(parents=True)
    return path


def newcomer_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment a fresh terminal has: no virtual environment, no project variables."""
    return {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb", **extra}


@dataclass(frozen=True)
class Installed:
    """troth installed for one home: the link on PATH and the environment behind it."""

    home: Path
    troth: Path
    venv: Path
    wheel: Path
    output: str

    def env(self, **extra: str) -> dict[str, str]:
        """A newcomer's environment with the install's bin directory on PATH."""
        env = newcomer_env(self.home, **extra)
        env["PATH"] = f"{self.troth.parent}:{env['PATH']}"
        return env

    def run(
        self, *args: str, env: Mapping[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed ``troth`` with ``args``."""
        return subprocess.run(
            [str(self.troth), *args],
            capture_output=True,
            text=True,
            env=dict(env or self.env()),
            check=check,
            timeout=120,
        )


def install(home: Path, wheel: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """``scripts/install-user.sh WHEEL`` for ``home``, offline from the wheelhouse."""
    env = newcomer_env(
        home,
        PYTHON=sys.executable,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(fill_wheelhouse()),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        **extra,
    )
    return subprocess.run(
        [str(REPO / "scripts" / "install-user.sh"), str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from this checkout with its pinned build backend."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(out), str(REPO)],
        check=True,
    )  # fmt: skip
    (built,) = out.glob("troth-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Installed:
    """The wheel installed by ``scripts/install-user.sh`` into a fresh home."""
    home = fresh_home(tmp_path_factory.mktemp("newcomer") / "home")
    done = install(home, wheel)
    assert done.returncode == 0, done.stdout + done.stderr
    troth = home / ".local" / "bin" / "troth"
    return Installed(home, troth, home / ".local" / "lib" / "troth" / "venv", wheel, done.stdout)
