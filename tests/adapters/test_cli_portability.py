"""``troth export`` and ``troth import`` through the CLI: summaries, exit codes,
an archive round trip, malformed input leaving the ledger head unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.conftest import as_json, invoke, said, tip
from tests.formats.test_personaxis_restore import LOGS
from troth.adapters.cli import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK
from troth.config import load_policy, open_store
from troth.embedding import StaticEmbedder
from troth.formats import archive
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.sqlite import SQLiteStore

ALICE, BOB, AGENT = "human:alice", "human:bob", "agent:bot"
AT = "2026-11-29T12:00:00Z"
GOLDEN = Path(__file__).resolve().parents[1] / "formats" / "golden"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A home whose ledger holds an active, a proposed and a rejected memory."""
    home = tmp_path / "source"
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    proposed = as_json(
        invoke(home, "remember", "Alice may like opera", "--owner", ALICE, "--json", who=AGENT)
    )
    assert proposed["status"] == "proposed"
    jazz = as_json(
        invoke(home, "remember", "Alice likes jazz", "--owner", ALICE, "--json", who=AGENT)
    )
    assert invoke(home, "reject", jazz["id"]).exit_code == EXIT_OK
    return home


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("pcp", "a.tar"), ("pcp", "a.zip"), ("personaxis", "e.jsonl"), ("hux", "m.json")],
)
def test_export_writes_the_file_and_reports_it(
    source: Path, tmp_path: Path, fmt: str, name: str
) -> None:
    out = tmp_path / name
    data = as_json(invoke(source, "export", "--format", fmt, "-o", str(out), "--json"))
    assert data["format"] == fmt
    assert data["path"] == str(out)
    assert data["bytes"] == len(out.read_bytes()) > 0
    assert data["items"] == (4 if fmt == "personaxis" else 3)
    human = invoke(source, "export", "--format", fmt, "-o", str(out))
    assert human.exit_code == EXIT_OK
    assert f"items written to {out}" in said(human)


def test_export_is_audited_in_the_ledger(source: Path, tmp_path: Path) -> None:
    before = tip(source)
    invoke(source, "export", "--format", "pcp", "-o", str(tmp_path / "a.tar"))
    assert tip(source).length == before.length + 1
    log = as_json(invoke(source, "log", "--json", "--start", str(before.length)))
    assert "lm:event:export" in json.dumps(log)


def test_an_archive_round_trips_through_the_cli(source: Path, tmp_path: Path) -> None:
    first = tmp_path / "first.zip"
    assert invoke(source, "export", "--format", "pcp", "-o", str(first), "--at", AT).exit_code == 0
    target = tmp_path / "target"
    report = as_json(invoke(target, "import", str(first), "--mode", "restore", "--json"))
    assert (report["format"], report["mode"], report["owner"]) == ("pcp", "restore", ALICE)
    assert (report["created"], report["unchanged"], report["refused"]) == (3, 0, [])
    second = tmp_path / "second.zip"
    assert invoke(target, "export", "--format", "pcp", "-o", str(second), "--at", AT).exit_code == 0
    # Every member is the same but the checkpoint, which names the ledger that signed it
    # (each home is its own ledger), and the manifest that lists its checksum.
    one, two = (
        archive.read(first.read_bytes(), where="1"),
        archive.read(second.read_bytes(), where="2"),
    )
    assert {n for n in one if one[n] != two[n]} == {"manifest.json", "troth/checkpoint.note"}
    again = as_json(invoke(target, "import", str(first), "--mode", "restore", "--json"))
    assert (again["created"], again["unchanged"]) == (0, 3)
    assert tip(target).length == tip(source).length  # the source's rows, and one export each


def test_import_reports_created_unchanged_and_refused(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar"
    invoke(source, "export", "--format", "pcp", "-o", str(out))
    target = tmp_path / "target"
    first = invoke(target, "import", str(out))
    # What was imported stays imported; the exit code tells a script that something was not.
    assert first.exit_code == EXIT_BAD_INPUT, first.output
    assert "pcp import into human:alice: 2 created, 0 unchanged, 1 refused" in said(first)
    assert "refused" in said(first)
    assert "rejected in the source; not imported" in said(first)
    data = as_json(invoke(target, "import", str(out), "--json"), code=EXIT_BAD_INPUT)
    assert (data["created"], data["unchanged"]) == (0, 2)
    assert data["ids"] == []
    (refusal,) = data["refused"]
    assert refusal["where"].startswith("a.tar:memory/")
    assert refusal["reason"] == "rejected in the source; not imported"


def test_import_into_another_owner_with_format_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = as_json(
        invoke(
            home,
            "import",
            str(GOLDEN / "mem0_get_all.json"),
            *("--format", "mem0", "--owner", BOB, "--json"),
            who=BOB,
        )
    )
    assert (data["format"], data["owner"], data["created"]) == ("mem0", BOB, 6)
    assert tip(home, ALICE).length == 0
    listed = as_json(invoke(home, "list", "--owner", BOB, "--json", who=BOB))
    assert listed


def test_a_legacy_log_is_reanchored_on_restore(tmp_path: Path) -> None:
    log = tmp_path / "old-episodic.jsonl"
    log.write_bytes(LOGS["legacy_chain"])
    home = tmp_path / "home"
    data = as_json(invoke(home, "import", str(log), "--mode", "restore", "--reanchor", "--json"))
    # Another runtime's log proves no origin: it comes in as an import, held for review.
    assert (data["format"], data["mode"]) == ("personaxis", "import")
    assert "carries no restore copy" in data["as_import"]
    assert data["created"] == len(LOGS["legacy_chain"].splitlines())
    listed = as_json(invoke(home, "list", "--status", "proposed", "--json"))
    assert len(listed) == data["created"]
    verified = invoke(home, "verify", "--json")
    assert verified.exit_code == EXIT_OK, verified.output


def test_a_malformed_file_names_file_and_line_and_leaves_the_head(
    source: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "mem0.json"
    broken.write_bytes((GOLDEN / "mem0_get_all.json").read_bytes()[:300])
    before = tip(source)
    human = invoke(source, "import", str(broken))
    assert human.exit_code == EXIT_BAD_INPUT
    assert "mem0.json:" in said(human)
    assert "not valid JSON" in said(human)
    machine = invoke(source, "import", str(broken), "--json")
    assert machine.exit_code == EXIT_BAD_INPUT
    error = json.loads(machine.stdout)
    assert error["error"] == "format_error"
    assert error["line"] > 1
    assert "mem0.json" in error["message"]
    assert tip(source) == before


def test_a_tampered_archive_is_refused_and_the_head_kept(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar"
    invoke(source, "export", "--format", "pcp", "-o", str(out))
    files = archive.read(out.read_bytes(), where="a.tar")
    page = next(n for n in files if n.startswith("memory/"))
    files[page] = files[page].replace(b"sensitivity: normal", b"sensitivity: [normal", 1)
    out.write_bytes(archive.write_tar(files, AT))
    target = tmp_path / "target"
    result = invoke(target, "import", str(out))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "does not match its manifest checksum" in said(result)
    assert tip(target).length == 0


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["import", "{missing}"], EXIT_NOT_FOUND, "does not exist"),
        (["import", "{mem0}", "--format", "hux"], EXIT_BAD_INPUT, "mem0_get_all.json"),
        (["import", "{mem0}", "--mode", "restore"], EXIT_BAD_INPUT, "--mode import"),
        (["import", "{mem0}", "--owner", "alice"], EXIT_BAD_INPUT, "owner"),
        (["import", "{mem0}", "--format", "yaml"], EXIT_BAD_INPUT, "yaml"),
        (["export", "--format", "pcp", "-o", "{missing}/a.tar"], EXIT_NOT_FOUND, "not a folder"),
    ],
)
def test_exit_codes(tmp_path: Path, args: list[str], code: int, words: str) -> None:
    home = tmp_path / "home"
    names = {"missing": str(tmp_path / "missing"), "mem0": str(GOLDEN / "mem0_get_all.json")}
    result = invoke(home, *[a.format(**names) for a in args])
    assert result.exit_code == code, result.output
    assert words in said(result)
    assert tip(home).length == 0


def test_another_persons_import_is_refused(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar"
    invoke(source, "export", "--format", "pcp", "-o", str(out))
    before = tip(source)
    result = invoke(source, "import", str(out), "--owner", ALICE, who=BOB)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "human:bob acts on human:bob's ledger only" in said(result)
    assert tip(source) == before


def test_migrate_copies_the_ledger_and_gives_the_copy_its_own_vectors(
    source: Path, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    destination = (
        request.getfixturevalue("pg_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path / 'copy.db'}"
    )
    report = as_json(invoke(source, "migrate", "--to", destination, "--json"))
    assert [o["owner"] for o in report["owners"]] == [ALICE]
    assert report["owners"][0]["head"] == tip(source).head
    assert report["vectors"] == {"embedded": 1}  # the active one; proposed/rejected wait
    target = open_store(destination)
    try:
        assert target.tip(ALICE) == tip(source)
        copy = Memory(
            target, policy=load_policy(None), principal=ALICE, embedder=StaticEmbedder.default()
        )
        found = copy.recall(Query(text="a cup of green tea", indexes=("vector",)))
        assert [h.memory.content for h in found] == ["I prefer green tea"]
        assert target.vector_model() == (copy.embedder.name, copy.embedder.dim)  # type: ignore[union-attr]
    finally:
        target.close()


def test_migrate_leaves_a_target_with_another_models_vectors_alone(
    source: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "copy.db"
    other = SQLiteStore(destination)
    other.set_vector_model("other-model", 8)
    other.close()
    report = as_json(invoke(source, "migrate", "--to", f"sqlite:///{destination}", "--json"))
    assert report["vectors"]["embedded"] == 0
    assert "other-model" in report["vectors"]["note"]
    target = SQLiteStore(destination)
    try:
        assert target.vector_model() == ("other-model", 8)
        assert target.tip(ALICE) == tip(source)
    finally:
        target.close()
