"""Witnesses: places outside the store that keep the newest signed checkpoint of each log.

A witness answers two questions: what is the newest checkpoint you hold for this origin
(``latest``), and will you take this newer one (``take``, given a way to prove the new tree
consistent with the one the witness holds)? It takes a checkpoint only when the key that
signs the ledger's checkpoints signed it and a consistency proof shows that it extends the
one held, so a store that was rolled back or rewritten cannot move its witness back with it.

- :class:`DirectoryWitness` is a folder — by default in the user's configuration directory,
  or another disk or a mounted share the operator names — holding one file per origin, each
  the signed note itself, replaced atomically.
- ``HTTPWitness`` (:mod:`troth.service.witness_client`) is a C2SP tlog-witness that adds its
  cosignature; :class:`Witness` is what the sealer needs of either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from troth.core import merkle
from troth.core.errors import ConflictError, IntegrityError, StorageError
from troth.formats import note, tlog

__all__ = [
    "DirectoryWitness",
    "Prover",
    "Witness",
    "Witnessed",
    "entries",
    "folder_lock",
    "open_checkpoint",
    "replace_file",
]

#: Given the size of the tree a witness holds, the consistency proof from it to the new tree
#: (None when the witness holds a larger tree than the new one, which it then refuses).
Prover = Callable[[int], Sequence[bytes] | None]

SUFFIX = ".checkpoint"
LOCK_NAME = ".lock"


@dataclass(frozen=True, slots=True)
class Witnessed:
    """A checkpoint a witness holds, opened: where it is, what it says, who signed it."""

    location: str
    checkpoint: tlog.Checkpoint
    note: bytes
    signed_by: tuple[str, ...]


def entries(count: int) -> str:
    """``1 entry``, ``2 entries``: the count as the sentences say it."""
    return f"{count} entry" if count == 1 else f"{count} entries"


def open_checkpoint(data: bytes, verifiers: Sequence[note.Verifier]) -> Witnessed:
    """A signed checkpoint note, checked against the trusted keys."""
    opened, by = note.open_note(data, verifiers)
    return Witnessed("", tlog.decode(opened.text), data, tuple(v.name for v in by))


class Witness(Protocol):
    """What the sealer needs of a witness, a folder or an HTTP service."""

    def where(self, origin: str) -> str:
        """Where the witness keeps ``origin``'s checkpoint, as the sentences name it."""
        ...

    def origins(self, prefix: str) -> list[str]:
        """The origins starting with ``prefix`` the witness can list (none, if it cannot)."""
        ...

    def latest(self, origin: str) -> bytes | None:
        """The newest checkpoint note the witness holds for ``origin``."""
        ...

    def take(
        self,
        signed: bytes,
        prove: Prover,
        verifiers: Sequence[note.Verifier],
        held_hint: int | None = None,
    ) -> Witnessed:
        """Hand the witness a new checkpoint; what it answers, its cosignatures included.

        ``held_hint`` is the size the caller believes the witness holds (it saves an HTTP
        witness a round trip)."""
        ...


@contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """Hold a folder's lock (a ``.lock`` file in it, made with the folder if need be)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path / LOCK_NAME, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def replace_file(
    target: Path, data: bytes, *, durable: bool = True, sync_folder: bool = True
) -> None:
    """Replace a file atomically: the old bytes or the new ones, never half of them; when
    ``durable``, the new file is fsynced before it replaces the old one, and the folder
    after it (unless ``sync_folder`` is False: the rename may then be lost in a crash)."""
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
    with open(temporary, "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, target)
    if not (durable and sync_folder):
        return
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class DirectoryWitness:
    """A folder holding the newest signed checkpoint of each origin, one file each."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"DirectoryWitness({str(self.path)!r})"

    def file_for(self, origin: str) -> Path:
        """The file that holds ``origin``'s newest checkpoint."""
        return self.path / (urllib.parse.quote(origin, safe="") + SUFFIX)

    def where(self, origin: str) -> str:
        """The file's path, as the sentences name it."""
        return str(self.file_for(origin))

    def take(
        self,
        signed: bytes,
        prove: Prover,
        verifiers: Sequence[note.Verifier],
        held_hint: int | None = None,
    ) -> Witnessed:
        """:meth:`submit`, the proof made from the size held, read under the folder's lock."""
        return self._guarded(open_checkpoint(signed, verifiers), prove, verifiers)

    def origins(self, prefix: str) -> list[str]:
        """Every origin this witness holds that starts with ``prefix``."""
        if not self.path.is_dir():
            return []
        found = (
            urllib.parse.unquote(p.name.removesuffix(SUFFIX))
            for p in self.path.iterdir()
            if p.name.endswith(SUFFIX)
        )
        return sorted(o for o in found if o.startswith(prefix))

    def latest(self, origin: str) -> bytes | None:
        """The newest signed checkpoint held for ``origin``, as its note bytes."""
        try:
            return self.file_for(origin).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageError(
                f"the witness folder {self.path} cannot be read ({exc.strerror or exc})",
                path=str(self.path),
            ) from exc

    def submit(
        self,
        signed: bytes,
        consistency: Sequence[bytes] | None,
        verifiers: Sequence[note.Verifier],
    ) -> Witnessed:
        """Take a newer checkpoint: signed by a trusted key and extending the one held.

        ``consistency`` proves the held checkpoint's tree is a prefix of the new one (the
        caller makes it for the held size, which it reads with :meth:`latest`). A checkpoint
        equal to the one held is a no-op.
        """
        return self._guarded(open_checkpoint(signed, verifiers), lambda _: consistency, verifiers)

    def _guarded(
        self, new: Witnessed, prove: Prover, verifiers: Sequence[note.Verifier]
    ) -> Witnessed:
        try:
            return self._take(new, prove, verifiers)
        except OSError as exc:
            raise StorageError(
                f"the witness folder {self.path} cannot be written ({exc.strerror or exc});"
                " make it writable, or name another one with TROTH_WITNESS",
                path=str(self.path),
            ) from exc

    def _take(
        self,
        new: Witnessed,
        prove: Prover,
        verifiers: Sequence[note.Verifier],
    ) -> Witnessed:
        signed = new.note
        origin = new.checkpoint.origin
        with self._locked():
            held_bytes = self.latest(origin)
            if held_bytes is not None:
                held = open_checkpoint(held_bytes, verifiers).checkpoint
                consistency = prove(held.size) if held.size <= new.checkpoint.size else None
                self._check_extends(held, new.checkpoint, consistency)
                if held == new.checkpoint:
                    # The same tree: keep every signature either note carries (a cosigned
                    # note after a plain one, or the other way round, loses none).
                    merged = note.add_signatures(held_bytes, note.decode(signed).signatures)
                    if merged != held_bytes:
                        replace_file(self.file_for(origin), merged, sync_folder=False)
                    return Witnessed(str(self.file_for(origin)), held, merged, new.signed_by)
            # The file is fsynced before it replaces the old one; the folder is not: after a
            # crash the witness may hold the checkpoint before, which the store extends.
            replace_file(self.file_for(origin), signed, sync_folder=False)
        return Witnessed(str(self.file_for(origin)), new.checkpoint, signed, new.signed_by)

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the folder's lock: two processes sealing at once must not let the older
        checkpoint land last (each checks against what the other wrote)."""
        return folder_lock(self.path)

    def _check_extends(
        self, held: tlog.Checkpoint, new: tlog.Checkpoint, proof: Sequence[bytes] | None
    ) -> None:
        where = self.file_for(held.origin)
        if new.size < held.size:
            raise ConflictError(
                f"the witness {where} holds a checkpoint of {entries(held.size)} for"
                f" {held.origin}; this one has {new.size}: the ledger is behind its witness"
                " (rolled back or truncated) and the witness keeps the newer checkpoint",
                origin=held.origin,
                witnessed=held.size,
                size=new.size,
            )
        if proof is None or not merkle.verify_consistency(
            held.size, new.size, held.root, new.root, proof
        ):
            raise IntegrityError(
                f"the new checkpoint of {held.origin} ({entries(new.size)}) does not extend the"
                f" one the witness {where} holds ({entries(held.size)}): the ledger's first"
                f" {entries(held.size)} were rewritten since that checkpoint was signed",
                origin=held.origin,
                witnessed=held.size,
                size=new.size,
            )
