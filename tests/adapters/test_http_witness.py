"""An HTTP witness that cosigns, as a real `troth witness serve` process over loopback.

The ledger (the CLI, in this process) lists the witness in its sealing file with the key the
witness prints; each write's checkpoint goes to it and comes back cosigned; a home restored
from an older copy, or rewritten, is refused against what the witness holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner, Result

from tests.servers import free_port
from troth.adapters.cli import cli
from troth.formats import note, tlog

ALICE = "human:alice"
LEDGER = "memory.example.test/alice-laptop"


def invoke(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), "--as", ALICE, *args])


def said(result: Result) -> str:
    return " ".join(result.output.split())


@contextmanager
def witness_process(home: Path, port: int, *logs: tuple[str, str]) -> Iterator[str]:
    """``troth witness serve`` until the block ends; yields its base URL."""
    options = [a for pair in logs for a in ("--log", *pair)]
    command = [sys.executable, "-m", "troth.adapters.cli", "witness", "serve"]
    server = subprocess.Popen(
        [*command, "--home", str(home), "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(f"{base}/{'0' * 64}/checkpoint", timeout=2).status_code == 404:
                    break
            except httpx2.HTTPError:
                pass
            assert server.poll() is None, "the witness stopped before it answered"
            assert time.monotonic() < deadline, "the witness did not answer"
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def setup(
    tmp_path: Path, sealing_config: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, str, note.Verifier, note.Verifier]]:
    """A home whose only witness is a real HTTP witness process (no folder witness)."""
    monkeypatch.setenv("TROTH_LEDGER", LEDGER)
    monkeypatch.setenv("TROTH_WITNESS", "off")
    home = tmp_path / "home"
    ledger_key = invoke(home, "seal", "--verifier-key").output.strip()
    witness_home = tmp_path / "witness-home"
    key = CliRunner().invoke(cli, ["witness", "key", "--home", str(witness_home)])
    assert key.exit_code == 0, key.output
    witness_key = key.output.strip()
    with witness_process(witness_home, free_port(), (LEDGER, ledger_key)) as base:
        (sealing_config / "sealing.toml").write_text(
            f'every = "commit"\n[[witness]]\nurl = "{base}/"\nkey = "{witness_key}"\n'
        )
        yield (
            home,
            base,
            note.Verifier.from_key(ledger_key),
            note.Verifier.from_key(witness_key),
        )


def test_each_write_is_cosigned_and_a_restored_copy_is_refused(
    setup: tuple[Path, str, note.Verifier, note.Verifier], tmp_path: Path
) -> None:
    home, base, ledger, witness = setup
    for text in ("alice likes green tea", "alice walks at six", "alice reads at night"):
        assert invoke(home, "remember", text).exit_code == 0
    # The witness holds the third checkpoint, cosigned: both keys check it.
    origin = tlog.origin_for(LEDGER, ALICE)
    served = httpx2.get(f"{base}/{hashlib.sha256(origin.encode()).hexdigest()}/checkpoint")
    assert served.status_code == 200
    opened, by = note.open_note(served.content, [ledger, witness])
    assert tlog.decode(opened.text).size == 3
    assert {v.name for v in by} == {ledger.name, witness.name}
    # `troth seal` prints the cosigned note.
    printed = json.loads(invoke(home, "--json", "seal").output)["checkpoints"]
    [item] = printed
    _, by = note.open_note(item["note"].encode(), [ledger, witness])
    assert len(by) == 2
    assert item["witnessed_at"] == [f"{base} ({witness.name})"]

    shutil.copytree(home, tmp_path / "older")
    assert invoke(home, "remember", "alice moved to Lyon").exit_code == 0
    shutil.rmtree(home)
    shutil.copytree(tmp_path / "older", home)

    checked = invoke(home, "--json", "verify")
    assert checked.exit_code == 1, checked.output
    [finding] = json.loads(checked.output)["witnessed"]
    assert finding["state"] == "rolled_back"
    assert (finding["witnessed_size"], finding["size"]) == (4, 3)
    assert base in finding["message"]
    refused = invoke(home, "remember", "a write on the old copy")
    assert refused.exit_code != 0
    assert "rolled back" in said(refused)


def test_a_witness_that_is_down_keeps_the_write_and_warns(
    setup: tuple[Path, str, note.Verifier, note.Verifier], sealing_config: Path
) -> None:
    home, _, _, witness = setup
    assert invoke(home, "remember", "alice likes green tea").exit_code == 0
    port = free_port()
    (sealing_config / "sealing.toml").write_text(
        f'[[witness]]\nurl = "http://127.0.0.1:{port}/"\nkey = "{witness.to_key()}"\n'
    )
    kept = invoke(home, "remember", "alice walks at six")
    assert kept.exit_code == 0, kept.output
    assert "the write is kept, but no checkpoint of it was signed" in said(kept)
    assert "cannot be reached" in said(kept)
    checked = invoke(home, "--json", "verify")
    assert [h["state"] for h in json.loads(checked.output)["witnessed"]] == ["unreachable"]


def test_an_emptied_or_rewritten_home_is_refused_against_the_http_witness(
    setup: tuple[Path, str, note.Verifier, note.Verifier],
    sealing_config: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home, _, _, _ = setup
    assert invoke(home, "remember", "alice likes green tea").exit_code == 0
    assert invoke(home, "remember", "alice walks at six").exit_code == 0
    shutil.rmtree(home)
    emptied = invoke(home, "remember", "a write on an empty store")
    assert emptied.exit_code != 0
    assert "rolled back" in said(emptied), said(emptied)
    # Another history of alice's log under the same name and key, written where the
    # witness was not configured, then met by it: the witness's two entries are not its.
    shutil.rmtree(home)
    monkeypatch.setenv("TROTH_SEALING", str(sealing_config / "none.toml"))
    for text in ("something else", "and more", "and a third"):
        assert invoke(home, "remember", text).exit_code == 0
    monkeypatch.setenv("TROTH_SEALING", str(sealing_config / "sealing.toml"))
    forked = invoke(home, "remember", "a fourth")
    assert forked.exit_code != 0
    assert "rewritten" in said(forked), said(forked)


def test_witness_trust_adds_a_ledger_and_refuses_a_key_it_cannot_read(tmp_path: Path) -> None:
    from troth.adapters.witness_server import read_logs

    home = tmp_path / "witness-home"
    key = note.Signer.generate("troth.local/key/abcd").verifier.to_key()
    added = CliRunner().invoke(cli, ["witness", "trust", "--home", str(home), LEDGER, key])
    assert added.exit_code == 0, added.output
    [log] = read_logs(home / "logs")
    assert (log.origin, log.verifier.to_key()) == (LEDGER, key)
    assert log.covers(LEDGER + "/human:alice")
    assert not log.covers(LEDGER + "-other/human:alice")
    bad = CliRunner().invoke(cli, ["witness", "trust", "--home", str(home), LEDGER, "nope"])
    assert bad.exit_code == 2
    assert "a verifier key reads" in said(bad)
    assert len(read_logs(home / "logs")) == 1
