"""``GET /api/export`` hands out what ``troth export`` writes: the export with its proof.

Each format comes over HTTP as one zip (a PCP archive, or a personaxis or HUX export in a
bundle with its restore copy and signed checkpoint), named by ``Content-Disposition``, its
checkpoint also in the ``Troth-Checkpoint`` header. The file verifies with ``troth verify
--against``, restores with ``troth import --mode restore`` into a fresh home to the same
ledger, holds the same bytes ``troth export -o NAME.zip`` writes from the same ledger, and,
cut short, is found out against its checkpoint.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.adapters.conftest import AGENT, ALICE, BOB, Ledger, as_json, auth, invoke, said
from troth.adapters.cli import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK
from troth.adapters.server import ServerOptions, create_app
from troth.config import Settings, build_memory
from troth.core.access import HUMAN_DEFAULT_SCOPES
from troth.formats import archive, ledger_copy, note
from troth.service.memory import Memory

FORMATS = ["personaxis", "hux", "pcp"]
Rows = list[tuple[str, str | None, dict[str, str]]]


def rows(home: Path, owner: str = ALICE) -> Rows:
    """Every row of an owner's chain as it is stored, read by a fresh facade over ``home``."""
    with build_memory(Settings.load(home=home, principal=owner)) as memory:
        return [(r.entry.to_line(), r.meta, dict(r.texts)) for r in memory.store.records(owner)]


def seed(home: Path) -> None:
    """Alice's ledger with a kept memory, an agent's proposal, an edit, a forget, a redaction."""
    assert invoke(home, "remember", "I prefer green tea").exit_code == EXIT_OK
    made = invoke(home, "remember", "Alice may like opera", "--owner", ALICE, "--json", who=AGENT)
    assert as_json(made)["status"] == "proposed"
    kept = as_json(invoke(home, "remember", "My bike is blue", "--json"))["id"]
    gone = as_json(invoke(home, "remember", "My locker is 12", "--json"))["id"]
    assert invoke(home, "edit", kept, "My bike is green", "--reason", "painted").exit_code == 0
    assert invoke(home, "forget", gone).exit_code == EXIT_OK
    assert invoke(home, "remember", "Bob's own note", who=BOB).exit_code == EXIT_OK


@dataclass
class Served:
    home: Path
    memory: Memory
    client: TestClient
    token: str

    def export(self, fmt: str, out: Path) -> tuple[Path, dict[str, str]]:
        """GET /api/export, saved under the name the server gives it."""
        answer = self.client.get("/api/export", params={"format": fmt}, headers=auth(self.token))
        assert answer.status_code == 200, answer.text
        disposition = answer.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="')
        saved = out / disposition.removeprefix('attachment; filename="').removesuffix('"')
        saved.write_bytes(answer.content)
        return saved, dict(answer.headers)


@contextmanager
def serving(home: Path) -> Iterator[Served]:
    """Alice's seeded ledger in ``home``, served over HTTP as ``troth serve`` builds it."""
    seed(home)
    memory = build_memory(Settings.load(home=home, principal=ALICE))
    token = memory.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token
    app = create_app(memory, memory.tokens, ServerOptions(allowed_hosts=("testserver",)))
    with memory, TestClient(app) as client:
        yield Served(home, memory, client, token)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving(tmp_path / "home") as made:
        yield made


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_http_export_verifies_and_restores_into_a_fresh_home_to_the_same_ledger(
    served: Served, tmp_path: Path, fmt: str
) -> None:
    before = rows(served.home)
    saved, headers = served.export(fmt, tmp_path)
    assert saved.name == f"troth-human-alice.{fmt}.zip"
    assert headers["content-type"] == "application/zip"
    found = as_json(invoke(served.home, "verify", "--against", str(saved), "--json"))
    assert (found["ok"], found["owner"], found["checkpoint_size"]) == (True, ALICE, len(before))
    # The header is the signed note the zip holds, and it signs the ledger as it was.
    carried = base64.b64decode(headers["troth-checkpoint"])
    with zipfile.ZipFile(saved) as opened:
        inside = [opened.read(n) for n in opened.namelist() if n.endswith(("checkpoint", ".note"))]
    assert inside == [carried]
    assert f"\n{len(before)}\n" in note.decode(carried).text
    fresh = tmp_path / "fresh"
    restored = as_json(invoke(fresh, "import", str(saved), "--mode", "restore", "--json"))
    assert (restored["mode"], restored.get("as_import")) == ("restore", None)
    assert rows(fresh) == before  # the same ledger: entries, metadata and texts
    assert as_json(invoke(fresh, "verify", "--json"))["ok"]
    again = as_json(invoke(fresh, "import", str(saved), "--mode", "restore", "--json"))
    assert again["created"] == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_http_export_is_the_file_troth_export_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    # A ledger named apart from its folder, so that a copy of the home is the same ledger
    # (the same key, the same checkpoint origin) at the same tip.
    monkeypatch.setenv("TROTH_LEDGER", "test.ledger")
    twin = tmp_path / "twin"
    with serving(tmp_path / "home") as served:
        shutil.copytree(served.home, twin)
        saved, _ = served.export(fmt, tmp_path)
    at: list[str] = []
    if fmt == "pcp":  # an archive is dated: the same instant makes the same bytes
        manifest = archive.read(saved.read_bytes(), where=saved.name)[archive.MANIFEST]
        at = ["--at", json.loads(manifest)["exported_at"]]
    written = tmp_path / "cli" / "mine.zip"
    written.parent.mkdir()
    result = invoke(twin, "export", "--format", fmt, "-o", str(written), *at)
    assert result.exit_code == EXIT_OK, result.output
    assert written.read_bytes() == saved.read_bytes()
    assert not ledger_copy.sidecars(written)[0].exists()  # a bundle holds its copy


def unzipped(bundle: Path, out: Path, fmt: str) -> Path:
    """Unzip a bundle into ``out``; the path of the export file among its three files."""
    with zipfile.ZipFile(bundle) as opened:
        opened.extractall(out)
    return out / f"troth-human-alice.{fmt}.{'jsonl' if fmt == 'personaxis' else 'json'}"


@pytest.mark.parametrize("fmt", ["personaxis", "hux"])
def test_a_bundle_unzipped_is_the_three_files_troth_export_writes(
    served: Served, tmp_path: Path, fmt: str
) -> None:
    saved, _ = served.export(fmt, tmp_path)
    export = unzipped(saved, tmp_path / "unzipped", fmt)
    out, name = export.parent, export.name
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [name, name + ledger_copy.LEDGER_SUFFIX, name + ledger_copy.CHECKPOINT_SUFFIX]
    )
    found = as_json(invoke(served.home, "verify", "--against", str(out / name), "--json"))
    assert found["ok"]


def cut_member(bundle: Path, member: str, lines: int) -> None:
    """Cut the last ``lines`` lines off one member of a zip, in place."""
    with zipfile.ZipFile(bundle) as opened:
        files = {n: opened.read(n) for n in opened.namelist()}
    kept = files[member].splitlines(keepends=True)
    files[member] = b"".join(kept[:-lines])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as written:
        for name, data in files.items():
            written.writestr(name, data)
    bundle.write_bytes(buffer.getvalue())


def test_an_http_personaxis_export_cut_short_is_found_against_its_checkpoint(
    served: Served, tmp_path: Path
) -> None:
    size = len(rows(served.home))
    saved, _ = served.export("personaxis", tmp_path)
    cut_member(saved, "troth-human-alice.personaxis.jsonl", 2)
    result = invoke(served.home, "verify", "--against", str(saved))
    assert result.exit_code == EXIT_NOT_FOUND
    assert f"holds {size - 2} entries but its checkpoint was signed at {size}" in said(result)
    assert "the last 2 were cut off" in said(result)
    # The export and its checkpoint alone, unzipped, say the same.
    out = tmp_path / "alone"
    with zipfile.ZipFile(saved) as opened:
        opened.extract("troth-human-alice.personaxis.jsonl", out)
        opened.extract("troth-human-alice.personaxis.jsonl.checkpoint", out)
    alone = invoke(
        served.home, "verify", "--against", str(out / "troth-human-alice.personaxis.jsonl")
    )
    assert alone.exit_code == EXIT_NOT_FOUND
    assert "the last 2 were cut off" in said(alone)


@pytest.mark.parametrize(
    ("fmt", "member", "found"),
    [
        ("hux", "troth-human-alice.hux.json.ledger.jsonl", "the copy was cut off"),
        # An archive's manifest names each member's checksum and size.
        ("pcp", ledger_copy.ARCHIVE_LEDGER, "does not match its manifest checksum or size"),
    ],
)
def test_an_http_export_whose_restore_copy_was_cut_short_is_found(
    served: Served, tmp_path: Path, fmt: str, member: str, found: str
) -> None:
    saved, _ = served.export(fmt, tmp_path)
    cut_member(saved, member, 1)
    result = invoke(served.home, "verify", "--against", str(saved))
    assert result.exit_code == EXIT_NOT_FOUND
    assert found in said(result)
    fresh = tmp_path / "fresh"
    refused = invoke(fresh, "import", str(saved), "--mode", "restore")
    assert refused.exit_code == EXIT_BAD_INPUT
    assert found in said(refused)
    assert rows(fresh) == []  # nothing was written


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_http_export_whose_last_bytes_were_cut_off_is_found(
    served: Served, tmp_path: Path, fmt: str
) -> None:
    saved, _ = served.export(fmt, tmp_path)
    saved.write_bytes(saved.read_bytes()[:-200])
    result = invoke(served.home, "verify", "--against", str(saved))
    assert result.exit_code == EXIT_NOT_FOUND
    assert "not a readable zip archive" in said(result)


@pytest.mark.parametrize("fmt", ["personaxis", "hux"])
def test_a_bundle_imports_plainly_as_its_three_files_do(
    served: Served, tmp_path: Path, fmt: str
) -> None:
    saved, _ = served.export(fmt, tmp_path)
    export = unzipped(saved, tmp_path / "unzipped", fmt)
    found = {}
    for what, path in (("bundle", saved), ("files", export)):
        made = invoke(tmp_path / what, "import", str(path), "--json", who=BOB)
        assert made.exit_code in (EXIT_OK, EXIT_BAD_INPUT), made.output  # 2: some refused
        report = json.loads(made.output)
        assert (report["format"], report["mode"], report["owner"]) == (fmt, "import", BOB)
        listed = as_json(invoke(tmp_path / what, "list", "--json", who=BOB))
        found[what] = (
            report["created"],
            [r["reason"] for r in report["refused"]],
            sorted((m["content"], m["kind"], m["status"]) for m in listed["memories"]),
        )
    assert found["bundle"] == found["files"]
    assert "My bike is green" in json.dumps(found["bundle"])


def test_a_server_that_signs_nothing_hands_out_no_checkpoint_and_says_so(
    client: TestClient, ledger: Ledger, tmp_path: Path
) -> None:
    # A library facade with no sealer attached (troth serve always attaches one).
    h = auth(ledger.alice)
    assert client.post("/api/memories", json={"content": "my locker is 12"}, headers=h).is_success
    answer = client.get("/api/export", params={"format": "personaxis"}, headers=h)
    assert answer.status_code == 200
    assert "troth-checkpoint" not in answer.headers
    saved = tmp_path / "unsigned.zip"
    saved.write_bytes(answer.content)
    with zipfile.ZipFile(saved) as opened:
        assert not any(n.endswith(ledger_copy.CHECKPOINT_SUFFIX) for n in opened.namelist())
    result = invoke(tmp_path / "home2", "verify", "--against", str(saved))
    assert result.exit_code == EXIT_NOT_FOUND
    assert "carries no signed checkpoint" in said(result)
    fresh = tmp_path / "fresh"
    report = as_json(invoke(fresh, "import", str(saved), "--mode", "restore", "--json"))
    assert report["mode"] == "import"
    assert "carries no signed checkpoint" in report["as_import"]
