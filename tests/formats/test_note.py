"""C2SP signed notes and tlog checkpoints: the reference's own example, and every refusal."""

from __future__ import annotations

import base64

import pytest

from troth.core.errors import FormatError, IntegrityError
from troth.formats import note, tlog

# The example of golang.org/x/mod/sumdb/note (its package documentation).
SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
SIGNED = (
    TEXT + "\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqd"
    "ngotpRZb6KE6RyyBwJnAM=\n"
).encode()


def test_the_reference_example_signs_to_the_same_bytes_and_verifies() -> None:
    signer = note.Signer.from_key(SKEY)
    assert signer.to_key() == SKEY
    assert signer.verifier.to_key() == VKEY
    assert note.sign(TEXT, signer) == SIGNED
    opened, by = note.open_note(SIGNED, [note.Verifier.from_key(VKEY)])
    assert opened.text == TEXT
    assert [v.name for v in by] == ["PeterNeumann"]


def test_a_cosignature_adds_a_line_both_keys_verify() -> None:
    witness = note.Signer.generate("witness.example/w1")
    both = note.cosign(SIGNED, witness)
    assert both.startswith(SIGNED)
    assert both.count(b"\n\xe2\x80\x94 ") == 2
    _, by = note.open_note(both, [note.Verifier.from_key(VKEY), witness.verifier])
    assert {v.name for v in by} == {"PeterNeumann", "witness.example/w1"}
    assert note.cosign(both, witness).count(b"witness.example/w1") == 1


def test_an_altered_text_or_an_unknown_key_is_refused() -> None:
    known = [note.Verifier.from_key(VKEY)]
    with pytest.raises(IntegrityError, match="does not verify"):
        note.open_note(SIGNED.replace(b"answer", b"ANSWER"), known)
    with pytest.raises(IntegrityError, match="no trusted key signed"):
        note.open_note(SIGNED, [note.Signer.generate("other").verifier])


@pytest.mark.parametrize(
    ("message", "says"),
    [
        (TEXT.encode(), "no blank line"),
        (TEXT.encode() + b"\n", "ends with signature lines"),
        (TEXT.encode() + b"\n- PeterNeumann AAAAAAA=\n", "does not start"),
        (TEXT.encode() + b"\n\xe2\x80\x94 Peter+Neumann x08go/ZJ\n", "malformed"),
        (TEXT.encode() + b"\n\xe2\x80\x94 PeterNeumann !!\n", "base64"),
        (b"a\x01b\n\n\xe2\x80\x94 PeterNeumann x08go/ZJ\n", "control character"),
        (b"\xff\n\n", "UTF-8"),
    ],
)
def test_a_malformed_note_says_what_is_wrong(message: bytes, says: str) -> None:
    with pytest.raises(FormatError, match=says):
        note.decode(message)


def test_key_strings_are_checked() -> None:
    with pytest.raises(FormatError, match="does not match"):
        note.Verifier.from_key(VKEY.replace("c74f20a3", "c74f20a4"))
    with pytest.raises(FormatError, match="reads <name>"):
        note.Verifier.from_key("PeterNeumann+ARpc2Qc")
    with pytest.raises(FormatError, match="key name"):
        note.Signer.generate("has space")


def test_a_checkpoint_body_round_trips_and_percent_encodes_the_owner() -> None:
    origin = tlog.origin_for("troth.local/0123456789abcdef", "human:a+b%c")
    assert origin == "troth.local/0123456789abcdef/human:a%2Bb%25c"
    body = tlog.Checkpoint(origin, 3, bytes(range(32)))
    text = body.to_text()
    assert text == f"{origin}\n3\n{base64.b64encode(bytes(range(32))).decode()}\n"
    assert tlog.decode(text) == body
    assert tlog.decode(text + "extension line\n").extensions == ("extension line",)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("o\n3\n", "three lines"),
        ("o\n03\nAAAA\n", "decimal"),
        ("o\n3\nAAAA\n", "32 bytes"),
        ("\n3\nAAAA\n", "origin line is empty"),
        ("o\n3\nAAAA", "ends with a newline"),
    ],
)
def test_a_malformed_checkpoint_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(FormatError, match=says):
        tlog.decode(text)
