"""C2SP signed notes with Ed25519: keys, verifier keys, signing, cosigning and opening.

The format (c2sp.org/signed-note; golang.org/x/mod/sumdb/note is its reference)::

    <text: UTF-8, no control characters but newline, ending in a newline>
    <a blank line>
    — <key name> <base64(key id || signature)>        one line per signature

- a key name is non-empty UTF-8 without Unicode spaces or ``+``;
- the key id is the first four bytes of SHA-256(name || 0x0A || 0x01 || public key), big
  endian (0x01 is the Ed25519 signature type);
- the signature is Ed25519 over the text, its final newline included;
- a verifier key is ``<name>+<hex key id>+<base64(0x01 || public key)>``; a signer key
  ``PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 || 32-byte seed)>`` (the reference's
  encoding, so keys made by ``note.GenerateKey`` work here and the other way round).

A cosignature is one more signature line by another key over the same text: anyone who
holds both verifier keys checks both. Two kinds:

- :func:`cosign` adds a plain Ed25519 note signature (type 0x01);
- :class:`Cosigner` makes C2SP ``cosignature/v1`` signatures (c2sp.org/tlog-cosignature,
  type 0x04), what a witness adds: Ed25519 over ``cosignature/v1\ntime <T>\n`` + the text,
  the line's bytes being ``key id || u64 big-endian T || signature``; key id =
  SHA-256(name || 0x0A || 0x04 || public key)[:4]. :class:`CosignatureVerifier` checks
  them, and :meth:`Verifier.from_key` reads both kinds of verifier key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from troth.core.errors import FormatError, IntegrityError

__all__ = [
    "COSIGNATURE_V1",
    "ED25519",
    "CosignatureVerifier",
    "Cosigner",
    "Note",
    "Signature",
    "Signer",
    "Verifier",
    "add_signatures",
    "cosign",
    "cosigned_message",
    "decode",
    "encode",
    "key_id",
    "open_note",
    "sign",
    "signature_lines",
]

ED25519 = 0x01
COSIGNATURE_V1 = 0x04  # c2sp.org/tlog-cosignature: timestamped Ed25519 cosignatures
SIGNATURE_PREFIX = "— "  # em dash, space
MAX_SIGNATURES = 100  # as the reference: a note is not an unbounded list of lines
_HEX8 = re.compile(r"^[0-9a-f]{8}$")


def valid_name(name: str) -> bool:
    """A key name: non-empty, without Unicode spaces or ``+``."""
    return bool(name) and "+" not in name and not any(_is_space(c) for c in name)


def _is_space(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Zs"


def key_id(name: str, public_key: bytes, kind: int = ED25519) -> int:
    """The 32-bit key id: SHA-256(name || 0x0A || type || public key), first four bytes."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([kind]) + public_key).digest()
    return int(struct.unpack(">I", digest[:4])[0])


def _check_name(name: str) -> None:
    if not valid_name(name):
        raise FormatError(
            f"{name!r} is not a signed-note key name; use non-empty text without spaces or '+'"
            " (for example example.com/log)",
            field="name",
        )


@dataclass(frozen=True, slots=True)
class Signature:
    """One signature line: the key's name, its id, and the signature bytes after the id."""

    name: str
    key_id: int
    signature: bytes

    def to_line(self) -> str:
        """The line, without its newline."""
        blob = struct.pack(">I", self.key_id) + self.signature
        return f"{SIGNATURE_PREFIX}{self.name} {base64.b64encode(blob).decode('ascii')}"


@dataclass(frozen=True, slots=True)
class Note:
    """A note's text (ending in a newline) and its signatures, verified or not."""

    text: str
    signatures: tuple[Signature, ...] = ()


class Verifier:
    """An Ed25519 verifier key: checks signatures made by one key name and id."""

    #: The signature type byte of the key (and of its key id).
    kind = ED25519

    def __init__(self, name: str, public_key: bytes) -> None:
        _check_name(name)
        self.name = name
        self.public_key = public_key
        self.key_id = key_id(name, public_key, self.kind)
        self._key = Ed25519PublicKey.from_public_bytes(public_key)

    @classmethod
    def from_key(cls, vkey: str) -> Verifier:
        """Parse ``<name>+<hex id>+<base64(type || public key)>``: type 0x01 gives a
        :class:`Verifier`, type 0x04 a :class:`CosignatureVerifier`."""
        parts = vkey.strip().split("+", 2)  # base64 may hold "+" too
        if len(parts) != 3 or not _HEX8.match(parts[1]):
            raise FormatError(
                "a verifier key reads <name>+<8 hex digits>+<base64 key>; got "
                f"{vkey.strip()[:80]!r}",
                field="verifier_key",
            )
        name, hex_id, b64 = parts
        kind, public = _typed_key(b64, "verifier key")
        verifier = (
            CosignatureVerifier(name, public) if kind == COSIGNATURE_V1 else cls(name, public)
        )
        if verifier.key_id != int(hex_id, 16):
            raise FormatError(
                f"the verifier key's id {hex_id} does not match its name and key"
                f" (expected {verifier.key_id:08x})",
                field="verifier_key",
            )
        return verifier

    def to_key(self) -> str:
        """The verifier key string."""
        encoded = base64.b64encode(bytes([self.kind]) + self.public_key).decode("ascii")
        return f"{self.name}+{self.key_id:08x}+{encoded}"

    def verifies(self, text: str, signature: Signature) -> bool:
        """True when ``signature`` is this key's and holds over ``text``."""
        if (signature.name, signature.key_id) != (self.name, self.key_id):
            return False
        try:
            self._key.verify(signature.signature, text.encode("utf-8"))
        except InvalidSignature:
            return False
        return True


class _Ed25519Key:
    """A named Ed25519 private key and its verifier (of the subclass's kind)."""

    verifier_type: type[Verifier] = Verifier

    def __init__(self, name: str, seed: bytes) -> None:
        _check_name(name)
        if len(seed) != 32:
            raise FormatError("an Ed25519 private key is a 32-byte seed", field="signer_key")
        self.name = name
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self._seed = seed
        public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.verifier = self.verifier_type(name, public)
        self.key_id = self.verifier.key_id

    def seed(self) -> bytes:
        """The 32-byte private seed (secret)."""
        return self._seed

    def to_key(self) -> str:
        """The secret key string: ``PRIVATE+KEY+<name>+<hex id>+<base64(type || seed)>``."""
        encoded = base64.b64encode(bytes([self.verifier.kind]) + self._seed).decode("ascii")
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{encoded}"


class Signer(_Ed25519Key):
    """An Ed25519 signing key with its name; keep its key string secret."""

    @classmethod
    def generate(cls, name: str) -> Signer:
        """A new random key."""
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        key = Ed25519PrivateKey.generate()
        return cls(name, key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))

    @classmethod
    def from_key(cls, skey: str) -> Signer:
        """Parse ``PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>``."""
        parts = skey.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"] or not _HEX8.match(parts[3]):
            raise FormatError(
                "a signer key reads PRIVATE+KEY+<name>+<8 hex digits>+<base64 key>",
                field="signer_key",
            )
        signer = cls(parts[2], _ed25519(parts[4], "signer key"))
        if signer.key_id != int(parts[3], 16):
            raise FormatError(
                f"the signer key's id {parts[3]} does not match its name and key",
                field="signer_key",
            )
        return signer

    def sign(self, text: str) -> Signature:
        """This key's signature over ``text``."""
        return Signature(self.name, self.key_id, self._key.sign(text.encode("utf-8")))


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"the {what} is not valid base64", field=what) from exc


def _ed25519(value: str, what: str) -> bytes:
    """The 32 key bytes of ``base64(0x01 || key)``."""
    kind, raw = _typed_key(value, what)
    if kind != ED25519:
        raise FormatError(
            f"the {what} is not an Ed25519 key (type 0x01 and 32 bytes)",
            field=what.replace(" ", "_"),
        )
    return raw


def _typed_key(value: str, what: str) -> tuple[int, bytes]:
    """The type and 32 key bytes of ``base64(type || key)``, type 0x01 or 0x04."""
    raw = _b64(value, what)
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE_V1):
        raise FormatError(
            f"the {what} is not an Ed25519 key (type 0x01, or 0x04 for a cosigner, and 32 bytes)",
            field=what.replace(" ", "_"),
        )
    return raw[0], raw[1:]


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise FormatError("a note's text must end with a newline", field="text")
    bad = next((c for c in text if ord(c) < 0x20 and c != "\n"), None)
    if bad is not None:
        raise FormatError(
            f"a note's text may hold no control character but newline (found U+{ord(bad):04X})",
            field="text",
        )


def encode(note: Note) -> bytes:
    """The signed note's bytes."""
    _check_text(note.text)
    if not note.signatures:
        raise FormatError("a signed note needs at least one signature", field="signatures")
    lines = "".join(s.to_line() + "\n" for s in note.signatures)
    return (note.text + "\n" + lines).encode("utf-8")


def decode(message: bytes) -> Note:
    """Parse a signed note without checking any signature (see :func:`open_note`)."""
    try:
        data = message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError("a signed note must be UTF-8", field="note") from exc
    split = data.rfind("\n\n")
    if split < 0:
        raise FormatError(
            "not a signed note: no blank line before the signature lines", field="note"
        )
    text, block = data[: split + 1], data[split + 2 :]
    _check_text(text)
    if not block or not block.endswith("\n"):
        raise FormatError("a signed note ends with signature lines, each ending in a newline")
    signatures = []
    for number, line in enumerate(block[:-1].split("\n"), start=1):
        if not line.startswith(SIGNATURE_PREFIX):
            raise FormatError(f"signature line {number} does not start with '— '", line=number)
        name, _, b64 = line[len(SIGNATURE_PREFIX) :].partition(" ")
        raw = _b64(b64, "signature") if b64 and " " not in b64 else b""
        if not valid_name(name) or len(raw) < 5:
            raise FormatError(f"signature line {number} is malformed", line=number)
        signatures.append(Signature(name, int(struct.unpack(">I", raw[:4])[0]), raw[4:]))
    if len(signatures) > MAX_SIGNATURES:
        raise FormatError(f"a signed note may carry at most {MAX_SIGNATURES} signatures")
    return Note(text, tuple(signatures))


def sign(text: str, *signers: Signer) -> bytes:
    """A new signed note over ``text``."""
    _check_text(text)
    return encode(Note(text, tuple(s.sign(text) for s in signers)))


def cosign(message: bytes, *signers: Signer) -> bytes:
    """Add these keys' signatures to a signed note (replacing any they made before)."""
    note = decode(message)
    mine = {(s.name, s.key_id) for s in signers}
    kept = tuple(s for s in note.signatures if (s.name, s.key_id) not in mine)
    return encode(Note(note.text, kept + tuple(s.sign(note.text) for s in signers)))


def open_note(message: bytes, known: Iterable[Verifier]) -> tuple[Note, Sequence[Verifier]]:
    """Parse a note and check it: returns the note and the known keys that signed it.

    As the reference: a signature by a known key that does not verify is an
    :class:`IntegrityError`; so is a note that no known key signed. Signatures by unknown
    keys are kept in the note and ignored.
    """
    note = decode(message)
    by_id = {(v.name, v.key_id): v for v in known}
    signed: list[Verifier] = []
    for signature in note.signatures:
        verifier = by_id.get((signature.name, signature.key_id))
        if verifier is None or verifier in signed:
            continue
        if not verifier.verifies(note.text, signature):
            raise IntegrityError(
                f"the signature of {signature.name} ({signature.key_id:08x}) on this note does"
                " not verify: the note was altered after signing, or the key is not the one"
                " that signed it",
                key=signature.name,
            )
        signed.append(verifier)
    if not signed:
        names = ", ".join(sorted({s.name for s in note.signatures}))
        raise IntegrityError(
            f"no trusted key signed this note (it carries signatures of {names}); add the"
            " signer's verifier key to the trusted keys if you trust it",
            signed_by=names,
        )
    return note, signed


# -- C2SP cosignature/v1 (c2sp.org/tlog-cosignature) ------------------------------------------

COSIGNATURE_HEADER = "cosignature/v1\n"
_TIMESTAMP = struct.Struct(">Q")
_MAX_TIMESTAMP = 2**63 - 1


def cosigned_message(text: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs: the header line, the time line, then the note's text."""
    if not 0 <= timestamp <= _MAX_TIMESTAMP:
        raise FormatError("a cosignature's time is a POSIX time between 0 and 2^63 - 1")
    return f"{COSIGNATURE_HEADER}time {timestamp}\n{text}".encode()


class CosignatureVerifier(Verifier):
    """A witness's cosignature/v1 key (type 0x04): checks its timestamped cosignatures."""

    kind = COSIGNATURE_V1

    def verifies(self, text: str, signature: Signature) -> bool:
        """True when ``signature`` is this key's cosignature/v1 over ``text``."""
        if (signature.name, signature.key_id) != (self.name, self.key_id):
            return False
        blob = signature.signature
        if len(blob) != _TIMESTAMP.size + 64:
            return False
        (timestamp,) = _TIMESTAMP.unpack(blob[: _TIMESTAMP.size])
        if timestamp > _MAX_TIMESTAMP or len(text.split("\n")) < 4:
            return False
        try:
            self._key.verify(blob[_TIMESTAMP.size :], cosigned_message(text, timestamp))
        except InvalidSignature:
            return False
        return True

    @staticmethod
    def timestamp(signature: Signature) -> int:
        """The POSIX time a cosignature/v1 says it was made at."""
        return int(_TIMESTAMP.unpack(signature.signature[: _TIMESTAMP.size])[0])


class Cosigner(_Ed25519Key):
    """A witness's Ed25519 key making cosignature/v1 signatures; keep its key string secret.

    Not a :class:`Signer`: the spec keeps a cosigner's key to cosignatures."""

    verifier_type = CosignatureVerifier

    @classmethod
    def generate(cls, name: str) -> Cosigner:
        """A new random key."""
        return cls(name, Signer.generate(name).seed())

    @classmethod
    def from_key(cls, skey: str) -> Cosigner:
        """Parse ``PRIVATE+KEY+<name>+<hex id>+<base64(0x04 || seed)>``."""
        parts = skey.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"] or not _HEX8.match(parts[3]):
            raise FormatError(
                "a cosigner key reads PRIVATE+KEY+<name>+<8 hex digits>+<base64 key>",
                field="signer_key",
            )
        kind, seed = _typed_key(parts[4], "cosigner key")
        cosigner = cls(parts[2], seed)
        if kind != COSIGNATURE_V1 or cosigner.key_id != int(parts[3], 16):
            raise FormatError(
                f"the cosigner key's type or id {parts[3]} does not match a cosignature/v1"
                " key of its name",
                field="signer_key",
            )
        return cosigner

    def cosign(self, text: str, timestamp: int) -> Signature:
        """This key's cosignature/v1 over a checkpoint's text, made at ``timestamp``."""
        _check_text(text)
        signed = self._key.sign(cosigned_message(text, timestamp))
        return Signature(self.name, self.key_id, _TIMESTAMP.pack(timestamp) + signed)


def add_signatures(message: bytes, lines: Sequence[Signature]) -> bytes:
    """The note with these signature lines added (a line it already carries is kept once)."""
    note = decode(message)
    held = set(note.signatures)
    extra = tuple(s for s in lines if s not in held)
    return encode(Note(note.text, note.signatures + extra))


def signature_lines(block: bytes) -> list[Signature]:
    """Parse a block of signature lines alone (a witness's answer), each ending in newline."""
    return list(decode(b"x\n\n" + block).signatures)
