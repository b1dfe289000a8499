"""The CLI's restore, proof and batch approval: ``verify --against``, ``import --approve``.

Each home in a test signs with the test's key (``TROTH_SIGNING_KEY``, tests/conftest.py);
a test that needs an installation whose key is not trusted points it elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.conftest import AGENT, ALICE, BOB, as_json, invoke, said, tip
from troth.adapters.cli import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK
from troth.formats import ledger_copy


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A home holding a kept memory, an agent's proposal and a proposal on a health topic."""
    home = tmp_path / "source"
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    for text, topic in (("Alice may like opera", "general"), ("Alice sees a physio", "health")):
        made = invoke(
            home, "remember", text, "--owner", ALICE, "--topic", topic, "--json", who=AGENT
        )
        assert as_json(made)["status"] == "proposed"
    return home


@pytest.mark.parametrize("name", ["a.tar", "a.zip", "episodic.jsonl", "m.json", "m.jsonl"])
def test_every_export_verifies_against_its_checkpoint(
    source: Path, tmp_path: Path, name: str
) -> None:
    fmt = {"tar": "pcp", "zip": "pcp", "jsonl": "personaxis", "json": "hux"}[name.split(".")[1]]
    fmt = "hux" if name == "m.jsonl" else fmt
    out = tmp_path / name
    assert invoke(source, "export", "--format", fmt, "-o", str(out)).exit_code == EXIT_OK
    found = as_json(invoke(source, "verify", "--against", str(out), "--json"))
    assert found["ok"]
    assert (found["owner"], found["checkpoint_size"]) == (ALICE, tip(source).length - 1)


def test_a_personaxis_export_cut_short_is_found_from_the_file_and_its_checkpoint_alone(
    source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "episodic.jsonl"
    invoke(source, "export", "--format", "personaxis", "-o", str(out))
    copy, checkpoint = ledger_copy.sidecars(out)
    copy.unlink()  # the file and its checkpoint alone
    assert checkpoint.is_file()
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:-2]))
    result = invoke(source, "verify", "--against", str(out))
    assert result.exit_code == EXIT_NOT_FOUND
    assert f"holds {len(lines) - 2} entries but its checkpoint was signed at {len(lines)}" in said(
        result
    )
    assert "the last 2 were cut off" in said(result)


def test_a_hux_export_cut_short_or_an_archive_cut_off_is_found(
    source: Path, tmp_path: Path
) -> None:
    hux = tmp_path / "m.jsonl"
    invoke(source, "export", "--format", "hux", "-o", str(hux))
    hux.write_bytes(b"".join(hux.read_bytes().splitlines(keepends=True)[:-1]))
    found = as_json(invoke(source, "verify", "--against", str(hux), "--json"), code=EXIT_NOT_FOUND)
    assert "are not the memories its restore copy makes" in found["message"]
    zipped = tmp_path / "a.zip"
    invoke(source, "export", "--format", "pcp", "-o", str(zipped))
    zipped.write_bytes(zipped.read_bytes()[:-200])
    result = invoke(source, "verify", "--against", str(zipped))
    assert result.exit_code == EXIT_NOT_FOUND
    assert "not a readable zip archive" in said(result)


def test_the_ledger_verifies_against_a_checkpoint_note(source: Path, tmp_path: Path) -> None:
    note = tmp_path / "alice.note"
    assert invoke(source, "seal", "--owner", ALICE, "-o", str(note)).exit_code == EXIT_OK
    found = as_json(invoke(source, "verify", "--against", str(note), "--json"))
    assert (found["ok"], found["against"]) == (True, "ledger")
    # A ledger that holds less than the checkpoint (a fresh one, restored from an older
    # export) is found behind it.
    early = tmp_path / "early.zip"
    target = tmp_path / "target"
    invoke(source, "export", "--format", "pcp", "-o", str(early))
    invoke(source, "remember", "one more")
    later = tmp_path / "later.note"
    invoke(source, "seal", "--owner", ALICE, "-o", str(later))
    assert invoke(target, "import", str(early), "--mode", "restore").exit_code == EXIT_OK
    behind = invoke(target, "verify", "--against", str(later))
    assert behind.exit_code == EXIT_NOT_FOUND
    assert "cut off" in said(behind)


def test_restoring_into_the_ledger_it_came_from_changes_nothing(
    source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "memories.zip"
    invoke(source, "export", "--format", "pcp", "-o", str(out))
    before = tip(source)
    result = invoke(source, "import", str(out), "--mode", "restore")
    assert result.exit_code == EXIT_OK, result.output
    assert "pcp restore into human:alice: 0 created, 3 unchanged, 0 refused" in said(result)
    assert tip(source) == before


def test_an_unproven_restore_is_approved_in_one_run_but_the_policy_keeps_health(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "memories.zip"
    invoke(source, "export", "--format", "pcp", "-o", str(out))
    monkeypatch.setenv("TROTH_SIGNING_KEY", str(tmp_path / "elsewhere" / "signing.key"))
    target = tmp_path / "target"
    report = as_json(invoke(target, "import", str(out), "--mode", "restore", "--approve", "--json"))
    assert report["mode"] == "import"
    assert "cannot be trusted here" in report["as_import"]
    assert report["created"] == 3
    assert len(report["approved"]) == 2
    [(held)] = report["held"]
    assert held["reason"] == "the policy keeps health memories for one-by-one review"
    proposed = as_json(invoke(target, "list", "--status", "proposed", "--json"))
    assert [m["id"] for m in proposed["memories"]] == [held["id"]]
    log = json.dumps(as_json(invoke(target, "log", "--json")))
    assert log.count("lm:event:approve") >= 2


def test_only_the_owner_approves_an_import(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    invoke(source, "export", "--format", "hux", "-o", str(out))
    result = invoke(source, "import", str(out), "--owner", ALICE, "--approve", who=BOB)
    assert result.exit_code == EXIT_BAD_INPUT
    # The access authority refuses first: bob does not reach alice's ledger at all.
    assert "acts on human:bob's ledger only, not on human:alice's" in said(result)


def test_a_personaxis_export_imported_plainly_keeps_its_kinds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    invoke(home, "remember", "I prefer green tea", "--kind", "preference")
    out = tmp_path / "episodic.jsonl"
    invoke(home, "export", "--format", "personaxis", "-o", str(out))
    report = as_json(invoke(home, "import", str(out), "--json", who=BOB))
    assert (report["owner"], report["created"]) == (BOB, 1)
    [made] = as_json(invoke(home, "list", "--json", who=BOB))["memories"]
    assert (made["kind"], made["content"]) == ("preference", "I prefer green tea")
    assert made["extra"]["x_import"]["format"] == "personaxis"


@pytest.mark.parametrize(("fmt", "name"), [("pcp", "a.zip"), ("hux", "m.json")])
def test_an_export_imported_into_its_own_ledger_adds_nothing(
    source: Path, tmp_path: Path, fmt: str, name: str
) -> None:
    out = tmp_path / name
    invoke(source, "export", "--format", fmt, "-o", str(out))
    before = tip(source)
    report = as_json(invoke(source, "import", str(out), "--json"))
    assert (report["created"], report["unchanged"]) == (0, 3)
    assert tip(source) == before


def test_a_note_naming_another_owner_is_not_checked_against_that_ledger(
    source: Path, tmp_path: Path
) -> None:
    # The note names alice's ledger; bob may not read it, so nothing of it is reported.
    note = tmp_path / "alice.note"
    assert invoke(source, "seal", "--owner", ALICE, "-o", str(note)).exit_code == EXIT_OK
    refused = invoke(source, "verify", "--against", str(note), "--json", who=BOB)
    assert refused.exit_code == EXIT_BAD_INPUT, refused.output
    assert '"ok": true' not in refused.output
