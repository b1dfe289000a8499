"""The README is tested: every ``sh`` and ``python`` block runs, in order, as written.

The blocks run on a fresh home (a copy of /etc/skel, no ``$USER``, no project variable)
against troth installed from the wheel (``tests/install/conftest.py``), each shell command
in bash with ``set -e -o pipefail`` and the variables of the commands before it, each Python
block in the installed environment's interpreter. What the test fills in:

- the placeholders ``m_…``, ``t_…`` and ``troth_t_…``: the last memory id, token id and token
  printed before the line;
- the files the examples read (``request.json``, a fresh UAIX request for the acting person;
  ``mem0.json``; ``episodic.jsonl``, a personaxis runtime log from shared/seeds) when no
  earlier block wrote them;
- ``postgresql://troth@db.internal/troth``: a database on the test PostgreSQL server;
- ``127.0.0.1:8765``: the port of the server the test started.

Three lines are interpreted rather than run: ``make install`` runs the script the Makefile's
install target runs (``scripts/install-user.sh``, reusing the session's environment),
``troth serve`` (and ``make run``, whose recipe is ``troth serve --first-token``) starts the
server in the background and waits for it, and ``make test`` is this suite itself (checked
to be the Makefile's target that runs pytest).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import zipfile
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import pytest

from tests.conftest import SHARED
from tests.install.conftest import REPO, Installed, fresh_home, newcomer_env
from tests.servers import free_port, serving
from troth.adapters.cli import cli

README = REPO / "README.md"
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
EXAMPLE_URL = "postgresql://troth@db.internal/troth"
MEMORY_ID = re.compile(r"\bm_[0-9a-f]{16,}\b")
TOKEN_ID = re.compile(r"(?<![_A-Za-z0-9])t_[0-9a-f]{12}\b")
TOKEN = re.compile(r"\btroth_t_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")


def blocks(text: str) -> list[tuple[str, str]]:
    """Every ``sh`` and ``python`` fenced block, in order: (language, body)."""
    return re.findall(r"^```(sh|python)\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def commands(body: str) -> list[str]:
    """A shell block's logical commands (continuation lines joined), blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip()]


def last(pattern: re.Pattern[str], seen: str, what: str) -> str:
    found = pattern.findall(seen)
    assert found, f"the README uses a {what} before any was printed"
    return str(found[-1])


def uaix_request(principal: str) -> bytes:
    """A sealed checkpoint-create request from ``principal``, valid now."""
    from tests.formats.uaix.make_golden import MANDATORY, base, create_body
    from troth.formats.uaix import format_timestamp, seal

    now = datetime.now(UTC)
    request: dict[str, Any] = base(create_body(MANDATORY), "msg-readme-1")
    request["delivery"]["expires_at"] = format_timestamp(now + timedelta(hours=1))
    request["provenance"]["issued_at"] = format_timestamp(now - timedelta(seconds=1))
    request["trust"]["principal"] = principal
    return json.dumps(seal(request), indent=2).encode()


class Walkthrough:
    """The README's state as a newcomer pasting it would have: variables, outputs, files."""

    def __init__(self, installed: Installed, work: Path, pg_url: str) -> None:
        self.installed = installed
        self.work = work
        self.pg_url = pg_url
        self.home = fresh_home(work / "home")
        self.env = newcomer_env(self.home)
        self.env["PATH"] = f"{installed.troth.parent}:{self.env['PATH']}"
        self.seen = ""
        self.port = 8765
        self.servers = ExitStack()
        self.ran: list[str] = []
        self.state: dict[str, Any] = {}  # what README_CHECKS remember between lines

    def fill(self, text: str) -> str:
        """The placeholders replaced by what the test knows."""
        if "troth_t_…" in text:
            revoked = set(re.findall(r"\b(t_[0-9a-f]{12}) revoked", self.seen))
            live = [t for t in TOKEN.findall(self.seen) if t[len("troth_") :][:14] not in revoked]
            text = text.replace("troth_t_…", last(TOKEN, " ".join(live), "live token"))
        if "t_…" in text:
            text = text.replace("t_…", last(TOKEN_ID, self.seen, "token id"))
        if "m_…" in text:
            text = text.replace("m_…", last(MEMORY_ID, self.seen, "memory id"))
        return text.replace(EXAMPLE_URL, self.pg_url).replace(
            "127.0.0.1:8765", f"127.0.0.1:{self.port}"
        )

    def provide(self, text: str) -> None:
        """The input files an example reads, unless an earlier example wrote them."""
        principal = self.env.get("TROTH_PRINCIPAL", "human:alice")
        sources = {
            "request.json": lambda: uaix_request(principal),
            "mem0.json": lambda: (REPO / "tests/formats/golden/mem0_get_all.json").read_bytes(),
            "episodic.jsonl": lambda: (
                SHARED / "seeds/personaxis/derived-vectors/reference_generated.jsonl"
            ).read_bytes(),
        }
        for name, make in sources.items():
            if name in text and not (self.work / name).exists():
                (self.work / name).write_bytes(make())

    def shell(self, command: str, extra: dict[str, str] | None = None) -> None:
        """Run one command in bash with the variables so far; keep what it exports."""
        dump = self.work / ".env-after"
        script = f"set -a\nset -e -o pipefail\n{command}\nenv -0 > {shlex.quote(str(dump))}\n"
        self.execute(["bash", "-c", script], {**self.env, **(extra or {})}, command)
        pairs = (item.split("=", 1) for item in dump.read_text().split("\0") if "=" in item)
        self.env = {k: v for k, v in pairs if k not in ("PWD", "OLDPWD", "SHLVL", "_")}
        for key in extra or {}:
            self.env.pop(key, None)
        self.ran.append(command)

    def serve(self, command: str) -> None:
        """Start ``troth serve …`` in the background (stopping the one before) and wait."""
        argv = shlex.split(command, comments=True)
        if argv[:2] == ["make", "run"]:
            assert "$(RUN_VENV)/bin/troth serve --first-token" in MAKEFILE
            argv = ["troth", "serve", "--first-token"]
        self.servers.close()
        self.port = free_port()
        served = self.servers.enter_context(
            serving([*argv, "--port", str(self.port)], self.env, self.port)
        )
        self.seen += served.banner
        self.ran.append(command)

    def run_shell_block(self, body: str) -> None:
        for raw in commands(body):
            argv = shlex.split(raw, comments=True)
            if argv == ["make", "install"]:
                assert "scripts/install-user.sh $(WHEEL)" in MAKEFILE
                script = f"{REPO}/scripts/install-user.sh {self.installed.wheel}"
                self.shell(script, self.install_env())
            elif argv == ["make", "test"]:
                assert "\ntest: setup lint typecheck pytest\n" in MAKEFILE
                self.ran.append(raw)  # this suite is `make test`'s pytest
            elif argv[:2] in (["troth", "serve"], ["make", "run"]):
                self.serve(self.fill(raw))
            else:
                self.provide(raw)
                self.shell(self.fill(raw))
                check = README_CHECKS.get(raw.split("#", 1)[0].strip())
                if check is not None:
                    check(self)

    def install_env(self) -> dict[str, str]:
        from tests.install.conftest import fill_wheelhouse

        return {
            "PYTHON": sys.executable,
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(fill_wheelhouse()),
            "TROTH_INSTALL_VENV": str(self.installed.venv),
        }

    def run_python_block(self, body: str) -> None:
        self.provide(body)
        script = self.work / f"block-{len(self.ran)}.py"
        script.write_text(self.fill(body), encoding="utf-8")
        python = self.installed.venv / "bin" / "python"
        self.execute([str(python), str(script)], self.env, body)
        self.ran.append(body)

    def execute(self, argv: list[str], env: dict[str, str], example: str) -> None:
        """Run ``argv`` in the work directory; keep its output; fail naming the example."""
        done = subprocess.run(
            argv, cwd=self.work, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        self.seen += done.stdout + done.stderr
        assert done.returncode == 0, (
            f"README example failed:\n{example}\n{done.stdout}{done.stderr}"
        )


def troth_json(walk: Walkthrough, *args: str) -> Any:
    """A ``troth … --json`` answer in the walkthrough's environment (it must succeed)."""
    done = subprocess.run(
        [str(walk.installed.troth), *args, "--json"],
        cwd=walk.work,
        env=walk.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def ledger_state(walk: Walkthrough) -> dict[str, tuple[int, str]]:
    """Each owner's chain length and head: equal heads mean no memory was written twice."""
    return {o["owner"]: (o["length"], o["head"]) for o in troth_json(walk, "verify")["owners"]}


def after_export(walk: Walkthrough) -> None:
    walk.state["exported"] = ledger_state(walk)


def after_restore(walk: Walkthrough) -> None:
    # "into the ledger it came from: nothing changes" — no entry written, no memory twice.
    assert re.search(
        r"pcp restore into human:alice: 0 created, \d+ unchanged, 0 refused", walk.seen
    )
    assert ledger_state(walk) == walk.state["exported"]


def after_import_elsewhere(walk: Walkthrough) -> None:
    # "into another ledger, x_import provenance": bob holds a copy of each exported page,
    # approved in the same run unless the policy keeps its topic for review.
    bob = troth_json(walk, "--as", "human:bob", "list")["memories"]
    imported = [m for m in bob if m["extra"].get("x_import", {}).get("format") == "pcp"]
    assert sorted(m["content"] for m in imported) == sorted(page_texts(walk.work / "memories.zip"))
    assert all(m["status"] == "active" or m["sensitivity"] == "sensitive" for m in imported)


def page_texts(path: Path) -> list[str]:
    """The memory text of each page of a PCP archive (the body after its frontmatter)."""
    with zipfile.ZipFile(path) as archive:
        pages = [n for n in archive.namelist() if n.startswith("memory/")]
        return [archive.read(n).decode().split("---\n", 2)[2].rstrip("\n") for n in pages]


README_CHECKS: dict[str, Callable[[Walkthrough], None]] = {
    "troth export --format pcp -o memories.zip": after_export,
    "troth import memories.zip --mode restore": after_restore,
    "troth --as human:bob import memories.zip --approve": after_import_elsewhere,
}


# The whole README, a few dozen commands each starting the program, runs in one test: on a
# machine shared with other work it needs more than the suite's 300 s per test.
@pytest.mark.timeout(900)
def test_every_block_of_the_readme_runs_in_order(
    installed: Installed, tmp_path: Path, pg_url: str
) -> None:
    text = README.read_text(encoding="utf-8")
    found = blocks(text)
    assert len(found) >= 12
    walk = Walkthrough(installed, tmp_path, pg_url)
    try:
        for language, body in found:
            if language == "sh":
                walk.run_shell_block(body)
            else:
                walk.run_python_block(body)
    finally:
        walk.servers.close()
    shell_lines = sum(len(commands(b)) for lang, b in found if lang == "sh")
    python_blocks = sum(1 for lang, _ in found if lang == "python")
    assert len(walk.ran) == shell_lines + python_blocks


def verbs_listed(text: str) -> set[str]:
    sentence = re.search(r"`troth --help` lists the verbs:(.*?)\.\s", text, re.DOTALL)
    assert sentence is not None, "the README must list the verbs after `troth --help` lists"
    return set(re.findall(r"`([a-z-]+)`", sentence[1]))


def test_the_readme_lists_every_verb_and_only_verbs() -> None:
    assert verbs_listed(README.read_text(encoding="utf-8")) == set(cli.commands)


def takes_json(command: click.Command) -> bool:
    if isinstance(command, click.Group):
        return all(takes_json(sub) for sub in command.commands.values())
    return any("--json" in getattr(p, "opts", ()) for p in command.params)


def test_every_verb_takes_json_or_the_readme_names_it() -> None:
    text = README.read_text(encoding="utf-8")
    sentence = re.search(r"Every verb takes `--json` except (.*?), which", text, re.DOTALL)
    assert sentence is not None
    named = set(re.findall(r"`([a-z-]+)`", sentence[1]))
    without = {name for name, command in cli.commands.items() if not takes_json(command)}
    assert without == named
