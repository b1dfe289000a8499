"""The read check's fold, saved between processes so a first read does not walk the ledger.

A :class:`SavedFold` is what :class:`~troth.service.readcheck.ReadCheck` knew of one owner
when a process closed: the tip it had verified (length and head), how many memories each
census filter keeps, and per memory the chain makes there an 8-byte key of its id, a
16-byte :func:`digest` of its record and the census filters that keep it. The keys are
sorted, and the three columns are read with ``numpy.frombuffer``: taking a saved fold
costs its MAC and no Python work per memory; a served memory is found by ``searchsorted``.

:class:`FoldFiles` keeps one file per checkpoint origin in a folder outside the data
directory (beside the sealed tips, in the configuration directory), authenticated by keyed
BLAKE2b under a key derived from the signing key, which the store does not hold: a file
whose MAC fails, that names another origin or that does not decode is not taken (the chain
is then verified and folded whole). What else must hold before it is taken (the chain's
entry at its size, the census) is the read check's (docs/ledger.md, section 13).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from troth.core.records import MemoryRecord
from troth.service.witness import replace_file
from troth.storage.base import Tip

__all__ = ["FoldFiles", "SavedFold", "digest", "id_key"]

_FIELDS: Final = attrgetter(*(f.name for f in fields(MemoryRecord)))
_DICTS: Final = tuple(
    i for i, f in enumerate(fields(MemoryRecord)) if f.name in ("extra", "stamps")
)
_SORTED: Final = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
_MAGIC: Final = b"troth-fold/2\n"
_MAC_LABEL: Final = b"troth read-check saved fold\n"
_MAC_SIZE: Final = 32
_DIGEST: Final = 16


def digest(memory: MemoryRecord) -> bytes:
    """A memory's 16-byte digest: BLAKE2b-128 over its fields (the two free-form mappings
    written with sorted keys, so a record decoded from a document stored in another key
    order digests alike)."""
    values = list(_FIELDS(memory))
    for index in _DICTS:
        values[index] = _SORTED(values[index])
    return hashlib.blake2b(repr(values).encode("utf-8"), digest_size=_DIGEST).digest()


def id_key(memory_id: str) -> int:
    """A memory id's 8-byte key in a saved fold (BLAKE2b-64 of the id, as an integer)."""
    raw = hashlib.blake2b(memory_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(raw, "little")


@dataclass(frozen=True, slots=True)
class SavedFold:
    """An owner's fold as saved: the tip, the census counts, and three columns in key
    order (``keys`` uint64, ``digests`` 16 bytes a memory, ``marks`` uint16: bit i set when
    census filter i keeps the memory)."""

    tip: Tip
    counts: tuple[int, ...]
    keys: npt.NDArray[np.uint64]
    digests: npt.NDArray[np.uint8]
    marks: npt.NDArray[np.uint16]
    # Each memory :meth:`holds` found as the fold has it, by id: served again, it is
    # compared with that record (as a whole fold's memories are) instead of hashed again.
    _held: dict[str, MemoryRecord] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def find(self, memory_id: str) -> tuple[bytes, int] | None:
        """The digest and census marks of a memory the fold holds (None: it holds none)."""
        key = np.uint64(id_key(memory_id))
        at = int(np.searchsorted(self.keys, key))
        if at >= len(self.keys) or self.keys[at] != key:
            return None
        return self.digests[at].tobytes(), int(self.marks[at])

    def holds(self, memory: MemoryRecord) -> bool:
        """True when ``memory`` is the record the fold holds for its id (its digest, or a
        record equal to one whose digest was)."""
        held = self._held.get(memory.id)
        if held is not None and held == memory:
            return True
        found = self.find(memory.id)
        if found is None or found[0] != digest(memory):
            return False
        self._held[memory.id] = memory
        return True

    @classmethod
    def build(
        cls,
        tip: Tip,
        counts: Sequence[int],
        memories: Iterable[tuple[MemoryRecord, int]],
        base: SavedFold | None = None,
    ) -> SavedFold | None:
        """The fold of ``base`` (if any) with ``memories`` (each with its census marks)
        taken over it; None if two ids share a key (not saved: the next process folds)."""
        listed = list(memories)
        keys = np.fromiter((id_key(m.id) for m, _ in listed), dtype=np.uint64, count=len(listed))
        digests = np.frombuffer(b"".join(digest(m) for m, _ in listed), dtype=np.uint8)
        marks = np.fromiter((mark for _, mark in listed), dtype=np.uint16, count=len(listed))
        digests = digests.reshape(len(listed), _DIGEST)
        if base is not None:
            kept = ~np.isin(base.keys, keys)
            keys = np.concatenate((base.keys[kept], keys))
            digests = np.concatenate((base.digests[kept], digests))
            marks = np.concatenate((base.marks[kept], marks))
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        if len(keys) > 1 and bool(np.any(keys[1:] == keys[:-1])):
            return None
        return cls(tip, tuple(counts), keys, digests[order], marks[order])


class FoldFiles:
    """A folder of saved folds, one file per checkpoint origin, MACed under a key derived
    from ``key`` (the signing key's secret bytes, or None while there is none: then nothing
    is saved or taken)."""

    def __init__(
        self, path: Path, key: Callable[[], bytes | None], origin: Callable[[str], str]
    ) -> None:
        self.path = path
        self._key = key
        self._origin = origin
        self._mac_key: bytes | None = None

    def file_for(self, owner: str) -> Path:
        """The file of an owner's saved fold."""
        return self.path / (urllib.parse.quote(self._origin(owner), safe="") + ".fold")

    def _mac(self, body: bytes | memoryview) -> bytes | None:
        if self._mac_key is None:
            secret = self._key()
            if secret is None:
                return None
            self._mac_key = hashlib.blake2b(_MAC_LABEL, key=secret[:64]).digest()
        return hashlib.blake2b(body, key=self._mac_key, digest_size=_MAC_SIZE).digest()

    def load(self, owner: str) -> SavedFold | None:
        """The owner's saved fold, if its file is there, its MAC holds and it names this
        owner's origin."""
        try:
            data = self.file_for(owner).read_bytes()
        except (OSError, ValueError):
            return None
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4 + _MAC_SIZE:
            return None
        view = memoryview(data)
        body, tag = view[:-_MAC_SIZE], view[-_MAC_SIZE:]
        expected = self._mac(body)
        if expected is None or not hmac.compare_digest(expected, tag.tobytes()):
            return None
        try:
            return _decode(body, self._origin(owner))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None

    def save(self, owner: str, fold: SavedFold) -> None:
        """Write an owner's fold; a failure only costs the next process a whole fold."""
        count = len(fold.keys)
        header = json.dumps(
            {
                "origin": self._origin(owner),
                "length": fold.tip.length,
                "head": fold.tip.head,
                "counts": list(fold.counts),
                "count": count,
            }
        ).encode("utf-8")
        header += b" " * (-(len(_MAGIC) + 4 + len(header)) % 8)  # the columns 8-aligned
        body = b"".join(
            (
                _MAGIC,
                len(header).to_bytes(4, "little"),
                header,
                fold.keys.astype("<u8").tobytes(),
                fold.digests.tobytes(),
                fold.marks.astype("<u2").tobytes(),
            )
        )
        tag = self._mac(body)
        if tag is None:
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            replace_file(self.file_for(owner), body + tag, durable=False)  # a cache
        except OSError:
            return

    def drop(self, owner: str) -> None:
        """Forget an owner's saved fold (after a finding: the next process folds it whole)."""
        try:
            self.file_for(owner).unlink(missing_ok=True)
        except OSError:
            return


def _decode(body: memoryview, origin: str) -> SavedFold:
    at = len(_MAGIC)
    size = int.from_bytes(body[at : at + 4], "little")
    at += 4
    header = json.loads(bytes(body[at : at + size]).decode("utf-8"))
    if header["origin"] != origin:
        raise ValueError("another origin's fold")
    at += size
    count = int(header["count"])
    if len(body) != at + count * (8 + _DIGEST + 2):
        raise ValueError("a truncated fold")
    keys = np.frombuffer(body, dtype="<u8", count=count, offset=at)
    at += 8 * count
    digests = np.frombuffer(body, dtype=np.uint8, count=_DIGEST * count, offset=at)
    at += _DIGEST * count
    marks = np.frombuffer(body, dtype="<u2", count=count, offset=at)
    tip = Tip(int(header["length"]), str(header["head"]))
    counts = tuple(int(c) for c in header["counts"])
    return SavedFold(
        tip,
        counts,
        keys.astype(np.uint64, copy=False),
        digests.reshape(count, _DIGEST),
        marks.astype(np.uint16, copy=False),
    )
