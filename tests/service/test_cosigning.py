"""The witness's add-checkpoint rules (c2sp.org/tlog-witness), one answer each, in process."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from troth.core import merkle
from troth.formats import note, tlog
from troth.service.cosigning import CosigningWitness, TrustedLog

LEDGER = "example.test/ledger"
ORIGIN = LEDGER + "/human:alice"
LEAVES = [merkle.leaf_hash(bytes([i])) for i in range(12)]
TREE = merkle.Tree(LEAVES)


@pytest.fixture
def log() -> note.Signer:
    return note.Signer.generate("example.test/log")


@pytest.fixture
def cosigning(tmp_path: Path, log: note.Signer) -> CosigningWitness:
    cosigner = note.Cosigner.generate("witness.test/w1")
    return CosigningWitness(
        tmp_path / "state", cosigner, [TrustedLog(LEDGER, log.verifier)], clock=lambda: 1700
    )


def signed(log: note.Signer, size: int, origin: str = ORIGIN, root: bytes | None = None) -> bytes:
    checkpoint = tlog.Checkpoint(origin, size, TREE.root(size) if root is None else root)
    return note.sign(checkpoint.to_text(), log)


def body(old: int, proof: list[bytes], message: bytes) -> bytes:
    lines = "".join(base64.b64encode(h).decode() + "\n" for h in proof)
    return f"old {old}\n{lines}\n".encode() + message


def test_a_first_checkpoint_is_cosigned_and_served(
    cosigning: CosigningWitness, log: note.Signer
) -> None:
    first = signed(log, 5)
    reply = cosigning.add_checkpoint(body(0, [], first))
    assert reply.status == 200, reply.body
    [line] = note.signature_lines(reply.body)
    cosigned = note.add_signatures(first, [line])
    _, by = note.open_note(cosigned, [log.verifier, cosigning.cosigner.verifier])
    assert [v.name for v in by] == ["example.test/log", "witness.test/w1"]
    assert note.CosignatureVerifier.timestamp(line) == 1700
    served = cosigning.checkpoint(hashlib.sha256(ORIGIN.encode()).hexdigest())
    assert served.status == 200
    assert served.body == cosigned
    assert cosigning.checkpoint("0" * 64).status == 404


def test_each_refusal_answers_the_status_the_spec_names(
    cosigning: CosigningWitness, log: note.Signer
) -> None:
    assert cosigning.add_checkpoint(body(0, [], signed(log, 5))).status == 200
    stranger = note.Signer.generate("example.test/log")
    cases = {
        "unknown origin": (404, body(0, [], signed(log, 5, origin="other.test/x"))),
        "untrusted key": (
            403,
            body(
                5, [], note.sign(tlog.decode(note.decode(signed(log, 5)).text).to_text(), stranger)
            ),
        ),
        "old above size": (400, body(9, [], signed(log, 7))),
        "not the protocol": (400, b"hello\n\n" + signed(log, 7)),
        "a fork": (422, body(5, TREE.consistency(5, 8), signed(log, 8, root=b"\x07" * 32))),
        "a wrong proof": (422, body(5, TREE.consistency(4, 8), signed(log, 8))),
        "same size, other root": (422, body(5, [], signed(log, 5, root=b"\x01" * 32))),
    }
    for name, (status, request) in cases.items():
        reply = cosigning.add_checkpoint(request)
        assert reply.status == status, (name, reply.body)
    stale = cosigning.add_checkpoint(body(0, [], signed(log, 3)))
    assert (stale.status, stale.body, stale.content_type) == (409, b"5\n", "text/x.tlog.size")
    # A rollback, proved from the size it holds, is refused too: the old size is above.
    assert cosigning.add_checkpoint(body(5, [], signed(log, 3))).status == 400
    moved = cosigning.add_checkpoint(body(5, TREE.consistency(5, 12), signed(log, 12)))
    assert moved.status == 200
    assert cosigning.add_checkpoint(body(5, [], signed(log, 12))).status == 409


def test_an_empty_tree_must_carry_the_empty_root(
    cosigning: CosigningWitness, log: note.Signer
) -> None:
    assert cosigning.add_checkpoint(body(0, [], signed(log, 0, root=b"\x02" * 32))).status == 422
    assert (
        cosigning.add_checkpoint(body(0, [], signed(log, 0, root=merkle.EMPTY_ROOT))).status == 200
    )
    assert cosigning.add_checkpoint(body(0, [b"\x00" * 32], signed(log, 4))).status == 422


def test_cosignature_keys_round_trip_and_refuse_the_other_kind() -> None:
    cosigner = note.Cosigner.generate("witness.test/w2")
    again = note.Cosigner.from_key(cosigner.to_key())
    assert again.verifier.to_key() == cosigner.verifier.to_key()
    parsed = note.Verifier.from_key(cosigner.verifier.to_key())
    assert isinstance(parsed, note.CosignatureVerifier)
    assert base64.b64decode(parsed.to_key().split("+", 2)[2])[0] == 0x04
    text = tlog.Checkpoint(ORIGIN, 3, TREE.root(3)).to_text()
    line = cosigner.cosign(text, 42)
    assert parsed.verifies(text, line)
    assert not parsed.verifies(text.replace("\n3\n", "\n4\n"), line)
    plain = note.Signer.generate("witness.test/w2")
    assert not parsed.verifies(text, plain.sign(text))  # another key id: type 0x01
    with pytest.raises(Exception, match="cosigner key"):
        note.Cosigner.from_key(plain.to_key())
