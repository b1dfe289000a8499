"""Witnesses: places outside the store that keep the newest signed checkpoint of each log.

A witness answers two questions: what is the newest checkpoint you hold for this origin
(:meth:`DirectoryWitness.latest`), and will you take this newer one
(:meth:`DirectoryWitness.submit`)? It takes a checkpoint only when the key that signs the
ledger's checkpoints signed it and a consistency proof shows that it extends the one held,
so a store that was rolled back or rewritten cannot move its witness back with it.

:class:`DirectoryWitness` is a folder — by default in the user's configuration directory,
or another disk or a mounted share the operator names — holding one file per origin, each
the signed note itself, replaced atomically.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from troth.core import merkle
from troth.core.errors import ConflictError, IntegrityError, StorageError
from troth.formats import note, tlog

__all__ = ["DirectoryWitness", "Witnessed", "entries", "open_checkpoint"]

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


class DirectoryWitness:
    """A folder holding the newest signed checkpoint of each origin, one file each."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"DirectoryWitness({str(self.path)!r})"

    def file_for(self, origin: str) -> Path:
        """The file that holds ``origin``'s newest checkpoint."""
        return self.path / (urllib.parse.quote(origin, safe="") + SUFFIX)

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
        new = open_checkpoint(signed, verifiers)
        try:
            return self._take(new, consistency, verifiers)
        except OSError as exc:
            raise StorageError(
                f"the witness folder {self.path} cannot be written ({exc.strerror or exc});"
                " make it writable, or name another one with TROTH_WITNESS",
                path=str(self.path),
            ) from exc

    def _take(
        self,
        new: Witnessed,
        consistency: Sequence[bytes] | None,
        verifiers: Sequence[note.Verifier],
    ) -> Witnessed:
        signed = new.note
        origin = new.checkpoint.origin
        with self._locked():
            held_bytes = self.latest(origin)
            if held_bytes is not None:
                held = open_checkpoint(held_bytes, verifiers).checkpoint
                self._check_extends(held, new.checkpoint, consistency)
                if held == new.checkpoint:
                    return Witnessed(str(self.file_for(origin)), held, held_bytes, new.signed_by)
            self._write(self.file_for(origin), signed)
        return Witnessed(str(self.file_for(origin)), new.checkpoint, signed, new.signed_by)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the folder's lock: two processes sealing at once must not let the older
        checkpoint land last (each checks against what the other wrote)."""
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path / LOCK_NAME, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

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

    def _write(self, target: Path, data: bytes) -> None:
        """Replace the file atomically: the old note or the new one, never half of one."""
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
