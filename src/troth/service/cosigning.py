"""troth as a witness for other ledgers: C2SP tlog-witness ``add-checkpoint``, cosigning.

c2sp.org/tlog-witness: a log POSTs ``old <size>``, the consistency proof from that size (one
base64 hash a line, at most 63), a blank line and its new signed checkpoint. The witness

- answers 404 for an origin it does not witness, 403 when no trusted key of that log signed
  the note (or a trusted key's signature fails), 400 for ``old`` above the new size or a
  body that is not the protocol's;
- answers 409 with the size it holds (``text/x.tlog.size``) when ``old`` is not the size of
  the checkpoint it last cosigned for that origin (0 if none): the log proves again from it;
- answers 422 when the proof does not show the new tree extends the one it holds (a fork or
  a rewrite), a non-empty proof from 0, an empty tree whose root is not SHA-256(""), or the
  same size with another root: it never cosigns a rollback or a fork;
- else persists the checkpoint with its own cosignature/v1 (c2sp.org/tlog-cosignature) and
  answers that signature line.

The check of the old size and the write of the new checkpoint happen under the state
folder's lock, so two submissions at once cannot roll the witness back (the spec's race).
``GET /<hex SHA-256 of the origin>/checkpoint`` serves the newest cosigned checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from troth.core import merkle
from troth.core.errors import FormatError, IntegrityError
from troth.formats import note, tlog
from troth.service.witness import folder_lock, replace_file

__all__ = ["MAX_BODY", "CosigningWitness", "Reply", "TrustedLog"]

#: The largest add-checkpoint body taken: 63 proof lines and a note of 100 signatures fit.
MAX_BODY = 64 * 1024
MAX_PROOF = 63
SIZE_TYPE = "text/x.tlog.size"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer: status, body and its media type."""

    status: int
    body: bytes
    content_type: str = TEXT


def _say(status: int, sentence: str) -> Reply:
    return Reply(status, (sentence + "\n").encode("utf-8"))


@dataclass(frozen=True, slots=True)
class TrustedLog:
    """A log this witness cosigns for: an origin (or a ledger name, the prefix of its owners'
    origins ``<ledger>/<owner>``) and the verifier key that signs its checkpoints."""

    origin: str
    verifier: note.Verifier

    def covers(self, origin: str) -> bool:
        """True for the origin itself and for the origins under it."""
        return origin == self.origin or origin.startswith(self.origin + "/")


def origin_hash(origin: str) -> str:
    """The monitoring path's name of an origin: SHA-256 of it, lowercase hex."""
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()


class CosigningWitness:
    """The newest cosigned checkpoint of each origin, in a folder; cosigns newer ones."""

    def __init__(
        self,
        state: Path,
        cosigner: note.Cosigner,
        logs: Sequence[TrustedLog] | Callable[[], Sequence[TrustedLog]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``logs``: the logs it witnesses, or a function giving them anew for each
        request (so a ledger trusted while the witness runs counts at once)."""
        self.state = state
        self.cosigner = cosigner
        self._logs = logs
        self.clock = clock

    @property
    def logs(self) -> tuple[TrustedLog, ...]:
        """The logs this witness cosigns for, now."""
        return tuple(self._logs() if callable(self._logs) else self._logs)

    def file_for(self, origin: str) -> Path:
        """The file holding an origin's newest cosigned checkpoint."""
        return self.state / f"{origin_hash(origin)}.checkpoint"

    def checkpoint(self, hashed: str) -> Reply:
        """The monitoring answer: the newest cosigned checkpoint of the hashed origin."""
        if len(hashed) != 64 or any(c not in "0123456789abcdef" for c in hashed):
            return _say(404, "no checkpoint: the path names an origin by its SHA-256 in hex")
        try:
            data = (self.state / f"{hashed}.checkpoint").read_bytes()
        except FileNotFoundError:
            return _say(404, "this witness has cosigned no checkpoint of that origin")
        return Reply(200, data)

    def add_checkpoint(self, body: bytes) -> Reply:
        """The add-checkpoint answer to a request body (see the module's docstring)."""
        try:
            old, proof, signed = _parse(body)
            opened = note.decode(signed)
            checkpoint = tlog.decode(opened.text)
        except FormatError as exc:
            return _say(400, f"not an add-checkpoint request: {exc.message}")
        trusted = [log.verifier for log in self.logs if log.covers(checkpoint.origin)]
        if not trusted:
            return _say(404, f"this witness does not witness {checkpoint.origin}")
        try:
            _, by = note.open_note(signed, trusted)
        except IntegrityError as exc:
            return _say(403, exc.message)
        if old > checkpoint.size:
            return _say(400, f"old size {old} is above the checkpoint's size {checkpoint.size}")
        with folder_lock(self.state):
            return self._cosign(checkpoint, opened, by, old, proof)

    def _cosign(
        self,
        new: tlog.Checkpoint,
        opened: note.Note,
        by: Sequence[note.Verifier],
        old: int,
        proof: Sequence[bytes],
    ) -> Reply:
        target = self.file_for(new.origin)
        held = _held(target)
        held_size = 0 if held is None else held.size
        if old != held_size:
            return Reply(409, f"{held_size}\n".encode("ascii"), SIZE_TYPE)
        if new.size == 0 and new.root != merkle.EMPTY_ROOT:
            return _say(422, "a checkpoint of size 0 must carry the empty tree's root")
        if old == 0 and proof:
            return _say(422, "a proof from size 0 must be empty")
        if held is not None and not merkle.verify_consistency(
            held.size, new.size, held.root, new.root, proof
        ):
            print(  # evidence of a fork or a rewrite, signed by the log's own key
                f"troth witness: refused a checkpoint of {new.origin} ({new.size}) that does"
                f" not extend the one cosigned ({held.size})",
                file=sys.stderr,
            )
            return _say(
                422,
                f"the checkpoint of {new.origin} ({new.size}) does not extend the one this"
                f" witness cosigned ({held.size}): the proof does not verify",
            )
        cosignature = self.cosigner.cosign(opened.text, int(self.clock()))
        verified = {(v.name, v.key_id) for v in by}
        log_lines = tuple(s for s in opened.signatures if (s.name, s.key_id) in verified)
        replace_file(target, note.encode(note.Note(opened.text, (*log_lines, cosignature))))
        return Reply(200, (cosignature.to_line() + "\n").encode("utf-8"))


def _held(target: Path) -> tlog.Checkpoint | None:
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    # The witness wrote this file itself, after checking it: its text is all it needs.
    return tlog.decode(note.decode(data).text)


def _parse(body: bytes) -> tuple[int, list[bytes], bytes]:
    split = body.find(b"\n\n")
    if split < 0:
        raise FormatError("the body has no blank line before the checkpoint")
    head, signed = body[:split].split(b"\n"), body[split + 2 :]
    size = head[0].decode("ascii", "replace")
    number = size.removeprefix("old ")
    if number == size or not (number == "0" or (number.isdigit() and number[0] != "0")):
        raise FormatError("the first line is not 'old <size>' in decimal")
    if len(head) - 1 > MAX_PROOF:
        raise FormatError(f"a consistency proof has at most {MAX_PROOF} lines")
    proof = []
    for line in head[1:]:
        try:
            digest = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise FormatError("a consistency proof line is not base64") from exc
        if len(digest) != merkle.HASH_SIZE:
            raise FormatError("a consistency proof line is not a 32-byte hash")
        proof.append(digest)
    return int(number), proof, signed
