"""An export's checkpoint is an ordinary troth checkpoint: Go's reference packages open it
(golang.org/x/mod/sumdb/note) and check every exported entry's inclusion in the tree it signs
(golang.org/x/mod/sumdb/tlog), for the archive member and for the file beside a flat export."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.conftest import StepClock
from tests.service.test_reference_verifiers import check, reference  # noqa: F401 (fixture)
from troth.config import load_policy
from troth.core import merkle
from troth.formats import archive, ledger_copy
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.storage.sqlite import SQLiteStore


def test_export_checkpoints_verify_with_the_go_reference(
    reference: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "home" / "troth.db")
    keys = KeyStore(tmp_path / "config" / "signing.key")
    with Memory(store, policy=load_policy(None), principal="human:alice", clock=StepClock()) as m:
        m.seal_exports_with(Sealer(store, keys, "troth.local/0123456789abcdef"))
        for i in range(6):
            m.remember(f"memory number {i}")
        m.export_to("pcp", tmp_path / "a.zip")
        m.export_to("personaxis", tmp_path / "e.jsonl")
        files = archive.read((tmp_path / "a.zip").read_bytes(), where="a.zip")
        copy, beside = ledger_copy.sidecars(tmp_path / "e.jsonl")
        exports = [
            (files[ledger_copy.ARCHIVE_CHECKPOINT], files[ledger_copy.ARCHIVE_LEDGER]),
            (beside.read_bytes(), copy.read_bytes()),
        ]
        signer = keys.signer(create=False)
        assert signer is not None
        notes, inclusion = [], []
        for note_bytes, copy_bytes in exports:
            rows = ledger_copy.decode(copy_bytes, name="copy").records
            tree = merkle.Tree.of_entries(r.entry.hash for r in rows)
            notes.append({"note": note_bytes.decode(), "signers": 1})
            inclusion += [
                {
                    "note": note_bytes.decode(),
                    "index": i,
                    "entry_hash": r.entry.hash,
                    "proof": [base64.b64encode(h).decode() for h in tree.inclusion(i)],
                }
                for i, r in enumerate(rows)
            ]
    answer = check(
        reference,
        {
            "keys": [signer.verifier.to_key()],
            "notes": notes,
            "inclusion": inclusion,
            "consistency": [],
        },
    )
    assert answer["notes"] == ["ok", "ok"]
    assert answer["inclusion"] == ["ok"] * len(inclusion)
    assert len(inclusion) == 6 + 7  # the archive's rows, then the log's (one export event more)
