"""`troth seal`, `troth prove` and the witness half of `troth verify`, through the CLI."""

from __future__ import annotations

import base64
import json
import shutil
import stat
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from troth.adapters.cli import cli
from troth.config import load_policy
from troth.core import merkle
from troth.formats import note, tlog
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

ALICE, BOB = "human:alice", "human:bob"


def invoke(home: Path, *args: str, who: str = ALICE) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), "--as", who, *args])


def said(result: Result) -> str:
    return " ".join(result.output.split())


def remember(home: Path, text: str, who: str = ALICE) -> str:
    result = invoke(home, "--json", "remember", text, who=who)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output)["id"])


def sealed(home: Path, *args: str) -> list[dict[str, Any]]:
    result = invoke(home, "--json", "seal", *args)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.output)["checkpoints"])


def test_seal_prints_a_signed_checkpoint_per_owner_that_its_verifier_key_checks(
    home: Path, sealing_config: Path
) -> None:
    remember(home, "alice likes green tea")
    remember(home, "bob likes coffee", who=BOB)
    key = invoke(home, "seal", "--verifier-key").output.strip()
    verifier = note.Verifier.from_key(key)
    assert key.startswith("troth.local/key/")
    printed = invoke(home, "seal")
    assert printed.exit_code == 0, printed.output
    notes = [n + "\n" for n in printed.output.split("\n\n— ") if n]
    assert len(printed.output.split("— troth.local/key/")) == 3
    checkpoints = {c["owner"]: c for c in sealed(home)}
    assert set(checkpoints) == {ALICE, BOB}
    for owner, item in checkpoints.items():
        opened, _ = note.open_note(item["note"].encode(), [verifier])
        body = tlog.decode(opened.text)
        assert body.origin.endswith("/" + owner)
        assert body.origin.startswith("troth.local/")
        assert body.size == item["size"] == 1
    assert notes  # printed as notes, not JSON
    # The key lives apart from the data, readable by its owner only.
    key_file = sealing_config / "signing.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not list(home.rglob("*.key"))
    assert key_file.read_text().startswith("PRIVATE+KEY+troth.local/key/")


def test_seal_writes_to_a_file_and_for_one_owner(home: Path, tmp_path: Path) -> None:
    remember(home, "alice likes green tea")
    remember(home, "bob likes coffee", who=BOB)
    out = tmp_path / "alice.note"
    result = invoke(home, "seal", "--owner", ALICE, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n— ") == 1
    assert "/human:alice\n1\n" in out.read_text()
    missing = invoke(home, "seal", "--owner", "human:nobody")
    assert missing.exit_code == 1
    assert "human:nobody has no ledger here" in said(missing)


def test_prove_gives_proofs_that_verify_and_survive_redaction(home: Path) -> None:
    first = remember(home, "the canary is 5521")
    remember(home, "another memory")
    result = invoke(home, "--json", "prove", first)
    assert result.exit_code == 0, result.output
    proof = json.loads(result.output)
    root = base64.b64decode(proof["root"])
    created = proof["entries"]["created"]
    assert created["index"] == 0
    leaf = merkle.entry_leaf(created["entry_hash"])
    path = [base64.b64decode(p) for p in created["proof"]]
    assert merkle.verify_inclusion(leaf, 0, proof["size"], path, root)
    assert invoke(home, "redact", first, "--reason", "test", "--yes").exit_code == 0
    # The erased entry keeps its hash: the old proof still holds against the old checkpoint,
    # and the ledger still extends what was witnessed.
    again = json.loads(invoke(home, "--json", "prove", first).output)
    assert again["entries"]["created"]["entry_hash"] == created["entry_hash"]
    assert again["entries"]["latest"]["index"] > again["entries"]["created"]["index"]
    verified = invoke(home, "--json", "verify")
    assert verified.exit_code == 0, verified.output
    assert [w["state"] for w in json.loads(verified.output)["witnessed"]] == ["ok"]
    assert invoke(home, "prove", "m_missing").exit_code == 1


def test_a_home_restored_from_an_older_copy_is_refused_by_verify(
    home: Path, tmp_path: Path
) -> None:
    for text in ("one", "two", "three"):
        remember(home, f"memory {text}")
    sealed(home)
    backup = tmp_path / "backup"
    shutil.copytree(home, backup)
    remember(home, "memory four")
    sealed(home)
    assert invoke(home, "verify").exit_code == 0
    shutil.rmtree(home)
    shutil.copytree(backup, home)
    result = invoke(home, "verify")
    assert result.exit_code == 1
    text = said(result)
    assert "rolled back" in text
    assert "holds 3 entries, but the witness" in text
    assert "signed checkpoint of 4" in text
    assert "Restore the newest copy" in text
    # The witness does not move back with the store.
    refused = invoke(home, "seal")
    assert refused.exit_code == 2
    assert "behind its witness" in said(refused)


def test_a_rewritten_or_emptied_store_is_refused_by_verify(home: Path) -> None:
    for text in ("one", "two"):
        remember(home, f"memory {text}")
    sealed(home)
    shutil.rmtree(home)
    emptied = invoke(home, "--json", "verify")
    assert emptied.exit_code == 1
    [held] = json.loads(emptied.output)["witnessed"]
    assert (held["state"], held["size"], held["witnessed_size"]) == ("rolled_back", 0, 2)
    # Someone writes another history into the empty store behind the program's back.
    with Memory(SQLiteStore(home / "troth.db"), policy=load_policy(None), principal=ALICE) as m:
        for text in ("other one", "other two", "other three"):
            m.remember(text)
    rewritten = invoke(home, "verify")
    assert rewritten.exit_code == 1
    assert "no longer hash to the root the witness" in said(rewritten)
    refused = invoke(home, "seal")
    assert refused.exit_code == 1
    assert "does not extend" in said(refused)


def test_a_key_others_can_read_is_refused(home: Path, sealing_config: Path) -> None:
    remember(home, "alice likes green tea")
    assert invoke(home, "seal").exit_code == 0
    key = sealing_config / "signing.key"
    key.chmod(0o644)
    result = invoke(home, "--json", "seal")
    assert result.exit_code == 2
    assert json.loads(result.output)["message"].endswith(f"(mode 0644); run: chmod 600 {key}")


def test_without_a_witness_seal_still_signs(home: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TROTH_WITNESS", "off")
    remember(home, "alice likes green tea")
    [item] = sealed(home)
    assert item["witnessed_at"] == []
    assert invoke(home, "--json", "verify").exit_code == 0


def test_every_cli_write_is_sealed_and_a_restored_home_takes_no_write(
    home: Path, tmp_path: Path, sealing_config: Path
) -> None:
    for text in ("one", "two", "three"):
        remember(home, f"memory {text}")
    witnessed = list((sealing_config / "witness").glob("*.checkpoint"))
    assert len(witnessed) == 1
    assert "\n3\n" in witnessed[0].read_text()
    backup = tmp_path / "backup"
    shutil.copytree(home, backup)
    remember(home, "memory four")
    shutil.rmtree(home)
    shutil.copytree(backup, home)
    assert invoke(home, "verify").exit_code == 1
    refused = invoke(home, "remember", "memory five")
    assert refused.exit_code == 1
    assert "holds 3 entries, but the witness" in said(refused)
    assert "signed checkpoint of 4" in said(refused)
    # Reads fail closed too (docs/ledger.md, section 13): nothing of the rolled-back
    # ledger is served.
    listed = invoke(home, "list")
    assert listed.exit_code != 0
    assert "holds 3 entries, but the witness" in said(listed)
    assert "Nothing more of" in said(listed)


def test_a_witness_that_cannot_be_written_keeps_the_write_and_warns(
    home: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("TROTH_WITNESS", str(blocker / "witness"))
    result = invoke(home, "remember", "alice likes green tea")
    assert result.exit_code == 0, result.output
    assert "the write is kept, but no checkpoint of it was signed" in said(result)
    assert "cannot be written" in said(result)
    listed = json.loads(invoke(home, "--json", "list").output)
    assert len(listed["memories"]) == 1


def test_a_store_behind_its_witness_is_not_served(home: Path, tmp_path: Path) -> None:
    remember(home, "memory one")
    backup = tmp_path / "backup"
    shutil.copytree(home, backup)
    remember(home, "memory two")
    shutil.rmtree(home)
    shutil.copytree(backup, home)
    for command in (["serve", "--port", "0"], ["mcp"]):
        refused = invoke(home, *command)
        assert refused.exit_code == 1, command
        assert "holds 1 entry, but the witness" in said(refused)
