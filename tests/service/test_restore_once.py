"""A restore verifies and folds its copy once; an import reads and unzips a bundle once.

The proof of an export's origin (``Proofs.origin``) verifies the restore copy's chain and
folds it; the restore that follows writes what that check made, without verifying or
folding the copy again. An import of a bundle (a zip of a flat export, its restore copy and
checkpoint) reads the file and unzips it once, and what it found is what it imports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import fresh_store
from tests.conftest import counting
from tests.pg import TestServer
from tests.service.test_restore_roundtrip import ALICE, every_kind, sealed
from troth.config import load_policy
from troth.core import events, lifecycle
from troth.formats import archive
from troth.service import portability, returns
from troth.service.memory import Memory


@pytest.mark.parametrize(
    ("fmt", "name"), [("personaxis", "log.jsonl"), ("hux", "m.json"), ("pcp", "a.zip")]
)
def test_a_restore_verifies_and_folds_its_copy_once(
    memory: Memory,
    backend: str,
    pg_server: TestServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
    name: str,
) -> None:
    key = tmp_path / "signing.key"
    with fresh_store(backend, pg_server) as store, sealed(store, key) as source:
        every_kind(source)
        projection = source.store.projection(ALICE)  # the export's own event comes after
        source.export_to(fmt, tmp_path / name)
        with fresh_store(backend, pg_server) as other, sealed(other, key) as target:
            verified = counting(monkeypatch, events, "verify_records")
            folded = counting(monkeypatch, lifecycle, "fold")
            report = target.import_path(tmp_path / name, mode="restore")
            assert (report.mode, report.as_import) == ("restore", None)
            assert target.store.projection(ALICE) == projection
            assert (len(verified), len(folded)) == (1, 1)


@pytest.mark.parametrize("fmt", ["personaxis", "hux"])
def test_an_import_reads_and_unzips_a_bundle_once(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    memory.remember("I prefer green tea", kind="preference", title="Tea")
    memory.remember("My bike is blue")
    bundle = tmp_path / f"export.{fmt}.zip"
    memory.export_to(fmt, bundle)
    unzipped = counting(monkeypatch, archive, "read")
    read = counting(monkeypatch, returns, "read_sources")
    with Memory(memory.store, policy=load_policy(None), principal="human:bob") as bob:
        report = bob.import_path(bundle)
    assert (report.format, report.mode, len(report.created)) == (fmt, "import", 2)
    assert (len(read), len(unzipped)) == (1, 1)


def test_a_plain_archive_import_reads_the_file_once(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A zip that is no bundle: what was read to find out is what the import reads.
    memory.remember("I prefer green tea", kind="preference", title="Tea")
    pages = tmp_path / "pages.zip"
    memory.export_to("pcp", pages)
    here = counting(monkeypatch, returns, "read_sources")
    there = counting(monkeypatch, portability, "read_sources")
    with Memory(memory.store, policy=load_policy(None), principal="human:bob") as bob:
        report = bob.import_path(pages)
    assert report.format == "pcp"
    assert len(here) + len(there) == 1
