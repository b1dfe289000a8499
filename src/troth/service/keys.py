"""The signing key: one Ed25519 key in a file of its own, never in the database.

The file holds one line, the key in the reference's signer-key encoding
(``PRIVATE+KEY+<name>+<hex id>+<base64>``, see :mod:`troth.formats.note`), readable by its
owner only (mode 0600). It lives in the user's configuration directory, apart from the
data directory, so that a copy of the data directory (a backup, a shared volume) carries no
key, and a restored data directory cannot carry an older one back; an operator can name
another path (``TROTH_SIGNING_KEY``), e.g. a file a KMS or an HSM agent mounts.

Beside it, ``trusted.keys`` may list more verifier keys, one a line (``#`` starts a
comment): the keys of earlier checkpoints after a rotation (docs/operations.md).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from troth.core.errors import FormatError, InvalidInputError
from troth.formats.note import Cosigner, Signer, Verifier

__all__ = ["TRUSTED_KEYS", "CosignerKey", "KeyStore"]

TRUSTED_KEYS = "trusted.keys"
K = TypeVar("K")


def default_key_name(seed: bytes) -> str:
    """``troth.local/key/<8 hex digits>`` from the public key: unique, and says nothing else."""
    public = Signer("troth.local/key", seed).verifier.public_key
    return f"troth.local/key/{hashlib.sha256(public).hexdigest()[:8]}"


class KeyStore:
    """The signing key file and the verifier keys trusted beside it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def trusted_path(self) -> Path:
        """The file of further trusted verifier keys."""
        return self.path.parent / TRUSTED_KEYS

    def signer(self, *, create: bool = True, name: str | None = None) -> Signer | None:
        """The signing key; made on first use when ``create`` (None when absent otherwise)."""
        if not self.path.exists():
            return self._create(name) if create else None
        return read_key_file(
            self.path,
            "signing key",
            Signer.from_key,
            "a signer key (PRIVATE+KEY+<name>+<id>+<key>); restore it from its backup, or"
            " move it aside to make a new one (earlier checkpoints then need its verifier"
            f" key in {self.trusted_path})",
        )

    def verifier_keys(self) -> list[Verifier]:
        """The keys whose checkpoints this installation trusts: its own, then trusted.keys."""
        out: list[Verifier] = []
        own = self.signer(create=False)
        if own is not None:
            out.append(own.verifier)
        if self.trusted_path.exists():
            lines = self.trusted_path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, start=1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                try:
                    out.append(Verifier.from_key(text))
                except FormatError as exc:
                    raise InvalidInputError(
                        f"{self.trusted_path} line {number}: {exc.message}",
                        path=str(self.trusted_path),
                    ) from exc
        return out

    def _create(self, name: str | None) -> Signer:
        try:
            return self._write_new(name)
        except OSError as exc:
            raise InvalidInputError(
                f"cannot make the signing key {self.path} ({exc.strerror or exc}); make its"
                " folder writable, or name another file with TROTH_SIGNING_KEY",
                path=str(self.path),
            ) from exc

    def _write_new(self, name: str | None) -> Signer:
        seed = secrets.token_bytes(32)
        signer = Signer(name or default_key_name(seed), seed)
        if not write_key_file(self.path, signer.to_key()):
            made = self.signer(create=False)
            assert made is not None  # it exists: another process has just made it
            return made
        return signer


def read_key_file(path: Path, what: str, parse: Callable[[str], K], expected: str) -> K:
    """A secret key file read and parsed, refused while others can read it."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise InvalidInputError(
            f"the {what} {path} can be read by others (mode {mode:04o}); run: chmod 600 {path}",
            path=str(path),
        )
    try:
        return parse(path.read_text(encoding="utf-8"))
    except (FormatError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"the {what} {path} is not {expected}", path=str(path)) from exc


def write_key_file(path: Path, key: str) -> bool:
    """Write a new secret key file (mode 0600, fsynced); False when one exists already."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(key + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # A hard link appears whole or not at all, and fails if the key exists: two
        # processes making the key at once both keep the first one's.
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)
    return True


class CosignerKey:
    """A witness's cosignature/v1 key in a file of its own (mode 0600), made on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def cosigner(self, name: str | None = None) -> Cosigner:
        """The key; made with ``name`` (default ``troth.local/witness/<8 hex>``) if absent."""
        if not self.path.exists():
            seed = secrets.token_bytes(32)
            public = Cosigner("troth.local/witness", seed).verifier.public_key
            made = Cosigner(
                name or f"troth.local/witness/{hashlib.sha256(public).hexdigest()[:8]}", seed
            )
            try:
                if write_key_file(self.path, made.to_key()):
                    return made
            except OSError as exc:
                raise InvalidInputError(
                    f"cannot make the witness key {self.path} ({exc.strerror or exc});"
                    " make its folder writable, or name another file with --key",
                    path=str(self.path),
                ) from exc
        return read_key_file(
            self.path,
            "witness key",
            Cosigner.from_key,
            "a cosigner key (PRIVATE+KEY+<name>+<id>+<key>, type 0x04); restore it from its backup",
        )
