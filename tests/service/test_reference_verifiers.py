"""The reference implementations check what troth signs and proves.

golang.org/x/mod/sumdb/note opens troth's signed checkpoints (and their cosignatures: a
witness's cosignature/v1 line is checked by transparency-dev's verifier, in
``reference_cosignature.go``), and
golang.org/x/mod/sumdb/tlog checks its inclusion proofs (``tlog.CheckRecord``) and
consistency proofs (``tlog.CheckTree``). Debian packages both (golang-go and
golang-golang-x-mod-dev); ``scripts/install-go-verifiers.sh`` installs them (``make test``
runs it first, and this module runs it when ``go`` is missing), and the small Go program
beside this file is built once per session, offline, in GOPATH mode against Debian's source.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StepClock
from troth.config import load_policy
from troth.formats import note, tlog
from troth.service.cosigning import CosigningWitness, TrustedLog
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.service.witness import DirectoryWitness
from troth.storage.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
GOCODE = Path("/usr/share/gocode")


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built verifier program."""
    if shutil.which("go") is None or not (GOCODE / "src/golang.org/x/mod/sumdb/tlog").is_dir():
        subprocess.run([ROOT / "scripts/install-go-verifiers.sh"], check=True, timeout=900)
    work = tmp_path_factory.mktemp("go")
    shutil.copy(Path(__file__).with_name("reference_verifier.go"), work / "main.go")
    shutil.copy(Path(__file__).with_name("reference_cosignature.go"), work / "cosignature.go")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "GO111MODULE": "off",  # GOPATH mode: imports resolve in Debian's packaged source
        "GOPATH": str(GOCODE),
        "GOCACHE": str(work / "cache"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }
    subprocess.run(
        ["go", "build", "-o", str(work / "verify"), "main.go", "cosignature.go"],
        cwd=work,
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
    )
    return work / "verify"


def check(program: Path, request: dict[str, Any]) -> dict[str, list[str]]:
    done = subprocess.run(
        [program], input=json.dumps(request), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, list[str]] = json.loads(done.stdout)
    return answer


@pytest.fixture
def sealer(tmp_path: Path) -> Iterator[tuple[Memory, Sealer]]:
    store = SQLiteStore(tmp_path / "home" / "troth.db")
    memory = Memory(store, policy=load_policy(None), principal="human:a+b", clock=StepClock())
    keys = KeyStore(tmp_path / "config" / "signing.key")
    witness = DirectoryWitness(tmp_path / "config" / "witness")
    with memory:
        yield memory, Sealer(store, keys, "troth.local/0123456789abcdef", [witness])


def b64(items: list[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in items]


def test_checkpoints_cosignatures_and_proofs_verify_with_the_go_reference(
    reference: Path, sealer: tuple[Memory, Sealer]
) -> None:
    memory, seals = sealer
    owner = memory.principal
    ids = [memory.remember(f"memory number {i}").memory.id for i in range(5)]
    [first] = seals.seal()
    for i in range(5, 12):
        memory.remember(f"memory number {i}")
    memory.redact(ids[1], reason="erase it")
    [second] = seals.seal()
    tree = seals.tree(owner)
    signer = seals.keys.signer(create=False)
    assert signer is not None
    n = tree.size
    assert (first.checkpoint.size, second.checkpoint.size) == (5, n)

    # A checkpoint of every prefix, signed by the program's own key, and a cosignature.
    prefixes = {
        m: note.sign(tlog.Checkpoint(seals.origin(owner), m, tree.root(m)).to_text(), signer)
        for m in range(1, n + 1)
    }
    assert prefixes[5] == first.note
    assert prefixes[n] == second.note
    witness = note.Signer.generate("witness.example/one")
    cosigned = note.cosign(second.note, witness)
    tampered = second.note.replace(f"\n{n}\n".encode(), f"\n{n + 1}\n".encode())
    proved = seals.prove(ids[1])

    entries = [r.entry.hash for r in memory.store.records(owner)]
    request = {
        "keys": [signer.verifier.to_key(), witness.verifier.to_key()],
        "notes": [
            {"note": first.note.decode(), "signers": 1},
            {"note": cosigned.decode(), "signers": 2},
            {"note": tampered.decode(), "signers": 1},
        ],
        "inclusion": [
            {
                "note": second.note.decode(),
                "index": i,
                "entry_hash": entries[i],
                "proof": b64(tree.inclusion(i)),
            }
            for i in range(n)
        ]
        + [
            {
                "note": proved["note"],
                "index": e["index"],
                "entry_hash": e["entry_hash"],
                "proof": e["proof"],
            }
            for e in proved["entries"].values()
        ]
        + [
            {  # the right proof for the wrong leaf, and for the wrong place
                "note": second.note.decode(),
                "index": 3,
                "entry_hash": entries[4],
                "proof": b64(tree.inclusion(3)),
            },
            {
                "note": second.note.decode(),
                "index": 2,
                "entry_hash": entries[3],
                "proof": b64(tree.inclusion(3)),
            },
        ],
        "consistency": [
            {
                "old": prefixes[m].decode(),
                "new": prefixes[k].decode(),
                "proof": b64(tree.consistency(m, k)),
            }
            for m in range(1, n + 1)
            for k in range(m, n + 1)
        ]
        + [
            {  # a proof between other sizes does not hold
                "old": prefixes[3].decode(),
                "new": prefixes[n].decode(),
                "proof": b64(tree.consistency(4, n)),
            }
        ],
    }
    answer = check(reference, request)
    assert answer["notes"][:2] == ["ok", "ok"]
    assert "invalid signature" in answer["notes"][2]
    assert answer["inclusion"][: n + 2] == ["ok"] * (n + 2)
    assert answer["inclusion"][n + 2 :] == ["invalid transparency proof"] * 2
    pairs = n * (n + 1) // 2
    assert answer["consistency"][:pairs] == ["ok"] * pairs
    assert answer["consistency"][pairs:] == ["invalid transparency proof"]


def test_a_witness_cosignature_verifies_with_the_ecosystems_cosignature_v1_verifier(
    reference: Path, sealer: tuple[Memory, Sealer], tmp_path: Path
) -> None:
    """The note troth's witness cosigns (c2sp.org/tlog-cosignature) opens in Go with the
    ledger's key and the witness's, the witness line checked by transparency-dev's verifier."""
    memory, seals = sealer
    owner = memory.principal
    for i in range(3):
        memory.remember(f"memory number {i}")
    [first] = seals.seal()
    for i in range(3, 9):
        memory.remember(f"memory number {i}")
    [second] = seals.seal()
    signer = seals.keys.signer(create=False)
    assert signer is not None
    ledger = seals.ledger
    cosigner = note.Cosigner.generate("witness.example/w1")
    witness = CosigningWitness(tmp_path / "state", cosigner, [TrustedLog(ledger, signer.verifier)])
    tree = seals.full_tree(owner)

    def cosigned(old: int, message: bytes) -> bytes:
        proof = "".join(f"{h}\n" for h in b64(tree.consistency(old, tree.size if old else 0)))
        body = f"old {old}\n{proof if old else ''}\n".encode() + message
        reply = witness.add_checkpoint(body)
        assert reply.status == 200, reply.body
        return note.add_signatures(message, note.signature_lines(reply.body))

    one = cosigned(0, first.note)
    two = cosigned(3, second.note)
    lines = note.decode(two).signatures
    # The same cosignature line with its time moved one second: the signature fails.
    late = note.Signature(
        lines[1].name,
        lines[1].key_id,
        (note.CosignatureVerifier.timestamp(lines[1]) + 1).to_bytes(8, "big")
        + lines[1].signature[8:],
    )
    moved = note.encode(note.Note(note.decode(two).text, (lines[0], late)))
    stranger = note.Cosigner.generate("witness.example/w1")
    other = note.add_signatures(second.note, [stranger.cosign(note.decode(two).text, 1)])
    request = {
        "keys": [signer.verifier.to_key()],
        "cosigners": [cosigner.verifier.to_key()],
        "notes": [
            {"note": one.decode(), "signers": 2},
            {"note": two.decode(), "signers": 2},
            {"note": moved.decode(), "signers": 2},
            {"note": other.decode(), "signers": 2},
        ],
        "consistency": [
            {"old": one.decode(), "new": two.decode(), "proof": b64(tree.consistency(3, 9))}
        ],
    }
    answer = check(reference, request)
    assert answer["notes"][:2] == ["ok", "ok"]
    assert "invalid signature" in answer["notes"][2]
    assert answer["notes"][3] == "1 verified signatures, want 2"
    assert answer["consistency"] == ["ok"]
