"""C2SP tlog-checkpoint bodies: origin, tree size and root hash, one per line.

The body (c2sp.org/tlog-checkpoint) is the text a signed note signs::

    troth.local/3f6c0a1be2d94c57/human:alice     origin: a unique, schema-less URL-ish name
    42                                           tree size, ASCII decimal, no leading zeros
    qbc4Y8b2c1...=                               root hash, standard base64 with padding
                                                 (optional extension lines would follow)

troth's origin is ``<ledger name>/<owner>`` with the owner percent-encoded where the spec
forbids a character (``+``, spaces) or it would be ambiguous (``%``): see :func:`origin_for`.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from dataclasses import dataclass

from troth.core.errors import FormatError
from troth.core.merkle import HASH_SIZE

__all__ = ["Checkpoint", "decode", "encode", "origin_for"]

_SIZE = re.compile(r"^(0|[1-9][0-9]{0,19})$")
# What a principal may hold and a checkpoint origin keeps as it is; '+' becomes %2B.
_OWNER_SAFE = ":@/._-"


def origin_for(ledger: str, owner: str) -> str:
    """The origin of an owner's log in a ledger: ``<ledger>/<owner, percent-encoded>``."""
    return f"{ledger}/{urllib.parse.quote(owner, safe=_OWNER_SAFE)}"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A tree head: which log, how many leaves, and the root hash."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def to_text(self) -> str:
        """The body, newline-terminated (what a signed note signs)."""
        return encode(self)


def encode(checkpoint: Checkpoint) -> str:
    """The checkpoint body."""
    if not checkpoint.origin or any(c.isspace() for c in checkpoint.origin):
        raise FormatError(
            f"a checkpoint origin is a non-empty name without spaces; got {checkpoint.origin!r}",
            field="origin",
        )
    if checkpoint.size < 0 or len(checkpoint.root) != HASH_SIZE:
        raise FormatError("a checkpoint holds a tree size ≥ 0 and a 32-byte root hash")
    if any(not line or "\n" in line for line in checkpoint.extensions):
        raise FormatError("checkpoint extension lines are non-empty single lines")
    lines = [
        checkpoint.origin,
        str(checkpoint.size),
        base64.b64encode(checkpoint.root).decode("ascii"),
        *checkpoint.extensions,
    ]
    return "".join(line + "\n" for line in lines)


def decode(text: str) -> Checkpoint:
    """Parse a checkpoint body (a signed note's text)."""
    if not text.endswith("\n"):
        raise FormatError("a checkpoint body ends with a newline", field="checkpoint")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise FormatError(
            "a checkpoint body has three lines at least: origin, tree size, root hash",
            field="checkpoint",
        )
    origin, size, root, *extensions = lines
    if not origin:
        raise FormatError("the checkpoint's origin line is empty", field="origin")
    if not _SIZE.match(size):
        raise FormatError(
            f"the checkpoint's tree size {size[:30]!r} is not a decimal number", field="size"
        )
    try:
        digest = base64.b64decode(root, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError("the checkpoint's root hash is not base64", field="root") from exc
    if len(digest) != HASH_SIZE:
        raise FormatError("the checkpoint's root hash is not 32 bytes", field="root")
    if any(not line for line in extensions):
        raise FormatError("a checkpoint extension line is empty", field="extensions")
    return Checkpoint(origin, int(size), digest, tuple(extensions))
