"""The sealed tips: what a new process needs to extend an owner's tree without the chain.

After each seal, one small file per origin beside the signing key records the signed note,
the tree's compact range (one hash per binary digit of its size, :mod:`troth.core.merkle`)
and the hash of the chain's last entry at that size. A new process that finds the store's
entry at that index still carrying that hash — an entry's hash commits to every entry
before it — verifies only the entries appended since and extends the tree from the compact
range: a write that seals costs the new rows, not the chain (docs/ledger.md, section 12).

The file is a cache, kept honest: it is taken only when the note verifies with a trusted
key and the compact range hashes to the note's root; anything else (a missing, damaged or
foreign file) is ignored and the chain is verified whole, as before.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from troth.core import merkle
from troth.core.errors import TrothError
from troth.formats import note, tlog
from troth.service.witness import open_checkpoint, replace_file

__all__ = ["SealedTip", "SealedTips"]


@dataclass(frozen=True, slots=True)
class SealedTip:
    """An origin's last sealed tree: its checkpoint and note, compact range and last entry."""

    checkpoint: tlog.Checkpoint
    note: bytes
    nodes: tuple[bytes, ...]
    head: str
    sealed_at: float

    def tree(self) -> merkle.Tree:
        """The tree of that size, known by its compact range, ready to be extended."""
        return merkle.Tree.from_compact_range(self.checkpoint.size, self.nodes)


class SealedTips:
    """A folder of sealed tips, one file per origin."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def file_for(self, origin: str) -> Path:
        """The file of an origin's sealed tip."""
        return self.path / (urllib.parse.quote(origin, safe="") + ".json")

    def origins(self, prefix: str) -> list[str]:
        """The origins starting with ``prefix`` that have a sealed tip here."""
        if not self.path.is_dir():
            return []
        found = (
            urllib.parse.unquote(p.name.removesuffix(".json"))
            for p in self.path.iterdir()
            if p.name.endswith(".json")
        )
        return sorted(o for o in found if o.startswith(prefix))

    def load(self, origin: str, verifiers: Sequence[note.Verifier]) -> SealedTip | None:
        """The origin's sealed tip, if there is one that checks out."""
        try:
            document = json.loads(self.file_for(origin).read_text(encoding="utf-8"))
            data = document["note"].encode("utf-8")
            checkpoint = open_checkpoint(data, verifiers).checkpoint
            nodes = tuple(base64.b64decode(n, validate=True) for n in document["range"])
            tip = SealedTip(
                checkpoint, data, nodes, str(document["head"]), float(document["sealed_at"])
            )
            fits = tip.tree().root() == checkpoint.root and checkpoint.origin == origin
        except (OSError, ValueError, KeyError, TypeError, binascii.Error, TrothError):
            return None
        return tip if fits and (checkpoint.size == 0) == (tip.head == "") else None

    def drop(self, origin: str) -> None:
        """Forget an origin's sealed tip: the next process verifies that chain whole."""
        self.file_for(origin).unlink(missing_ok=True)

    def save(self, tip: SealedTip) -> None:
        """Record a sealed tree; a failure only costs the next process a whole verification."""
        document = {
            "note": tip.note.decode("utf-8"),
            "range": [base64.b64encode(n).decode("ascii") for n in tip.nodes],
            "head": tip.head,
            "sealed_at": tip.sealed_at,
        }
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            replace_file(
                self.file_for(tip.checkpoint.origin),
                json.dumps(document).encode("utf-8"),
                durable=False,  # a cache: losing it costs time, never a guarantee
            )
        except OSError:
            return
