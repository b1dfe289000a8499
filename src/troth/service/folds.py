"""The read check's fold: kept packed in a process, and saved between processes so a
first read does not walk the ledger.

A :class:`Fold` is what a process keeps of an owner's chain: per memory one ``bytes``
(its census marks and :func:`pack` of its record), which the garbage collector does not
track, so a fold of every memory costs no collection pause (docs/ledger.md, "The fold in
memory").

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
import marshal
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, cast, get_args, get_origin, get_type_hints

import numpy as np
import numpy.typing as npt

from troth.core.records import MemoryRecord
from troth.service.witness import replace_file
from troth.storage.base import Tip

__all__ = ["HELD_MAX", "Fold", "FoldFiles", "SavedFold", "digest", "id_key", "pack", "unpack"]

_FIELDS: Final = attrgetter(*(f.name for f in fields(MemoryRecord)))
_MAGIC: Final = b"troth-fold/3\n"  # 3: digests of packed records (2: of their repr)
_MAC_LABEL: Final = b"troth read-check saved fold\n"
_MAC_SIZE: Final = 32
_DIGEST: Final = 16
HELD_MAX: Final = 4096
"""How many served memories a :class:`SavedFold` keeps packed (~1 KB each) to compare a
memory served again without hashing it (``SavedFold.holds``)."""


def digest(memory: MemoryRecord) -> bytes:
    """A memory's 16-byte digest: BLAKE2b-128 of its :func:`pack` (the two free-form
    mappings with sorted keys, so a record decoded from a document stored in another key
    order digests alike)."""
    return _digest_packed(pack(memory))


def _digest_packed(packed: bytes | memoryview) -> bytes:
    return hashlib.blake2b(packed, digest_size=_DIGEST).digest()


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
    # Each memory :meth:`holds` found as the fold has it, packed, by id: served again, it
    # is compared with that record (as a whole fold's memories are) instead of looked up
    # and hashed again (6.7 against 19.1 µs of CPU a served memory, 100k keys). At most
    # HELD_MAX of them, the oldest dropped first: a long-running server serving every
    # memory of a large owner would otherwise keep a second copy of the fold.
    _held: dict[str, bytes] = field(default_factory=dict, init=False, repr=False, compare=False)

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
        if held is not None and _packs(held, memory):
            return True
        found = self.find(memory.id)
        if found is None or found[0] != digest(memory):
            return False
        held_now = self._held
        if len(held_now) >= HELD_MAX:
            del held_now[next(iter(held_now))]
        held_now[memory.id] = pack(memory)
        return True

    @classmethod
    def build(
        cls,
        tip: Tip,
        counts: Sequence[int],
        memories: Iterable[tuple[str, bytes, int]],
        base: SavedFold | None = None,
    ) -> SavedFold | None:
        """The fold of ``base`` (if any) with ``memories`` (each an id, its :func:`digest`
        and its census marks: :meth:`Fold.digested`) taken over it; None if two ids share a
        key (not saved: the next process folds)."""
        listed = list(memories)
        keys = np.fromiter((id_key(i) for i, _, _ in listed), dtype=np.uint64, count=len(listed))
        digests = np.frombuffer(b"".join(d for _, d, _ in listed), dtype=np.uint8)
        marks = np.fromiter((mark for _, _, mark in listed), dtype=np.uint16, count=len(listed))
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


# -- the packed form of a record: what a fold keeps per memory ------------------------------


def _nested() -> dict[int, tuple[type[Any], bool]]:
    """The record's fields that hold dataclasses: position -> (class, a tuple of them)."""
    hints = get_type_hints(MemoryRecord)
    out: dict[int, tuple[type[Any], bool]] = {}
    for index, f in enumerate(fields(MemoryRecord)):
        hint = hints[f.name]
        if isinstance(hint, type) and is_dataclass(hint):
            out[index] = (hint, False)
        elif get_origin(hint) is tuple:
            inner = get_args(hint)[0]
            if isinstance(inner, type) and is_dataclass(inner):
                out[index] = (inner, True)
    return out


_NESTED: Final = _nested()
_KINDS: Final[list[type[Any]]] = [MemoryRecord, *(kind for kind, _ in _NESTED.values())]
_SLOTS: Final = {kind: tuple(f.name for f in fields(kind)) for kind in _KINDS}
# Each nested class's fields read at once (attrgetter of two or more names gives a tuple).
_PARTS: Final = {kind: attrgetter(*_SLOTS[kind]) for kind in _KINDS[1:]}
assert all(len(_SLOTS[kind]) > 1 for kind in _PARTS), "a one-field class packs as its value"
_NAMES: Final = _SLOTS[MemoryRecord]
_MAPPINGS: Final = tuple(_NAMES.index(name) for name in ("extra", "stamps"))
_MARSHAL: Final = b"m"  # a packed record: marshal (version 2) of its fields as plain values


def _plain(value: Any) -> Any:
    """A free-form mapping's value with every mapping's keys in sorted order (so two equal
    records pack alike whatever order a document stored them in)."""
    if isinstance(value, Mapping):
        return {key: _plain(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def pack(memory: MemoryRecord) -> bytes:
    """A record as one ``bytes`` object, which the garbage collector does not track.

    Equal records built alike pack to equal bytes (the mappings with sorted keys); records
    equal in a way the bytes do not show (``1`` and ``1.0``) pack apart, and
    :meth:`Fold.holds` then compares the unpacked record. :func:`unpack` gives back a
    record equal to ``memory``.
    """
    values = list(_FIELDS(memory))
    for index, (kind, many) in _NESTED.items():
        parts = _PARTS[kind]
        values[index] = tuple(map(parts, values[index])) if many else parts(values[index])
    for index in _MAPPINGS:  # JSON values (a record's mappings are stored as JSON)
        value = values[index]
        values[index] = _plain(value) if value else {}
    return _MARSHAL + marshal.dumps(tuple(values), 2)


def unpack(packed: bytes | memoryview) -> MemoryRecord:
    """The record :func:`pack` packed (set field by field: it was a valid record)."""
    values = list(marshal.loads(packed[1:]))
    for index, (kind, many) in _NESTED.items():
        value = values[index]
        values[index] = tuple(_made(kind, v) for v in value) if many else _made(kind, value)
    return cast(MemoryRecord, _made(MemoryRecord, values))


def _packs(packed: bytes | memoryview, memory: MemoryRecord) -> bool:
    """Whether ``packed`` is :func:`pack` of a record equal to ``memory``: the same bytes,
    or (equal in a way the bytes do not show, ``1`` and ``1.0``) the record unpacked."""
    return packed == pack(memory) or unpack(packed) == memory


def _made(kind: type[Any], values: Sequence[Any]) -> Any:
    made = object.__new__(kind)
    for name, value in zip(_SLOTS[kind], values, strict=True):
        object.__setattr__(made, name, value)
    return made


class Fold:
    """The memories an owner's chain makes, one ``bytes`` a memory: its census marks (two
    bytes) and its packed record.

    A fold of every memory an owner has is kept for as long as the process reads that
    owner. Kept as records it was about eight objects a memory for the garbage collector
    to walk at every full collection (~5 µs a memory: ~0.5 s a pause at 100,000); kept as
    bytes in one dict of strings, it is none (docs/ledger.md, "The fold in memory").
    """

    __slots__ = ("_packed",)

    def __init__(self) -> None:
        self._packed: dict[str, bytes] = {}

    def __len__(self) -> int:
        return len(self._packed)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._packed

    def put(self, memory: MemoryRecord, marks: int) -> None:
        """Hold ``memory`` (with its census marks) as what the chain makes for its id."""
        self._packed[memory.id] = marks.to_bytes(2, "little") + pack(memory)

    def get(self, memory_id: str) -> MemoryRecord | None:
        """The record the chain makes for ``memory_id`` (None: it makes none)."""
        packed = self._packed.get(memory_id)
        return None if packed is None else unpack(memoryview(packed)[2:])

    def marks(self, memory_id: str) -> int | None:
        """The census marks of a memory the fold holds (None: it holds none)."""
        packed = self._packed.get(memory_id)
        return None if packed is None else int.from_bytes(packed[:2], "little")

    def holds(self, memory: MemoryRecord) -> bool | None:
        """Whether ``memory`` is the record the fold holds for its id (None: it holds none)."""
        packed = self._packed.get(memory.id)
        if packed is None:
            return None
        return _packs(memoryview(packed)[2:], memory)

    def ids(self) -> Iterator[tuple[str, int]]:
        """Each memory's id and census marks."""
        for memory_id, packed in self._packed.items():
            yield memory_id, int.from_bytes(packed[:2], "little")

    def digested(self) -> Iterator[tuple[str, bytes, int]]:
        """Each memory's id, :func:`digest` and census marks (what a saved fold keeps)."""
        for memory_id, packed in self._packed.items():
            view = memoryview(packed)
            yield memory_id, _digest_packed(view[2:]), int.from_bytes(view[:2], "little")


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
