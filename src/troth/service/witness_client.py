"""An HTTP witness that cosigns: the client side of C2SP tlog-witness.

:meth:`HTTPWitness.take` POSTs ``<url>/add-checkpoint`` with the consistency proof from the
size the witness holds (remembered, or learnt from its 409 answer) and adds the witness's
cosignature/v1 line to the note, after checking it with the witness's verifier key.
:meth:`HTTPWitness.latest` reads ``<url>/<SHA-256 of the origin>/checkpoint``, the newest
checkpoint it cosigned, and takes it only with a valid cosignature of that key.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable, Sequence

import httpx2

from troth.core.errors import (
    ConflictError,
    IntegrityError,
    InvalidInputError,
    StorageError,
    TrothError,
)
from troth.formats import note
from troth.service.witness import Prover, Witnessed, entries, open_checkpoint

__all__ = ["HTTPWitness"]

SIZE_TYPE = "text/x.tlog.size"


class HTTPWitness:
    """A witness reached over HTTP, known by its URL prefix and cosignature verifier key."""

    def __init__(self, url: str, verifier: note.Verifier, *, timeout: float = 10.0) -> None:
        if not isinstance(verifier, note.CosignatureVerifier):
            raise InvalidInputError(
                f"the witness {url} is configured with a key of type 0x01; a witness signs"
                " cosignature/v1 (type 0x04): use the key `troth witness key` prints",
                url=url,
            )
        self.url = url.rstrip("/")
        self.verifier = verifier
        self.timeout = timeout
        self._sizes: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"HTTPWitness({self.url!r})"

    def where(self, origin: str) -> str:
        """The witness as the sentences name it: its URL and key name."""
        return f"{self.url} ({self.verifier.name})"

    def origins(self, prefix: str) -> list[str]:
        """An HTTP witness lists nothing: it is asked about the origins the store knows."""
        return []

    def latest(self, origin: str) -> bytes | None:
        """The newest checkpoint the witness cosigned for ``origin`` (None if it has none)."""
        hashed = hashlib.sha256(origin.encode("utf-8")).hexdigest()
        answer = self._request("GET", f"{self.url}/{hashed}/checkpoint")
        if answer.status_code == 404:
            return None
        if answer.status_code != 200:
            raise StorageError(
                f"the witness {self.url} answered {answer.status_code} for {origin}'s"
                f" checkpoint: {_said(answer)}",
                url=self.url,
            )
        return self._cosigned(lambda: answer.content, f"served a checkpoint of {origin}")

    def take(
        self,
        signed: bytes,
        prove: Prover,
        verifiers: Sequence[note.Verifier],
        held_hint: int | None = None,
    ) -> Witnessed:
        """Submit a checkpoint; the note with the witness's cosignature added."""
        checkpoint = open_checkpoint(signed, verifiers).checkpoint
        origin = checkpoint.origin
        old = self._sizes.get(origin, held_hint or 0)
        for _ in range(3):  # a witness moving between our tries answers 409 again
            proof = prove(old) if old else []
            if proof is None:
                break
            body = (
                f"old {old}\n".encode() + b"".join(_b64(h) + b"\n" for h in proof) + b"\n" + signed
            )
            answer = self._request("POST", f"{self.url}/add-checkpoint", content=body)
            if answer.status_code == 409:
                old = _size(answer, self.url)
                if old > checkpoint.size:
                    break
                continue
            if answer.status_code != 200:
                raise self._refusal(answer, origin, checkpoint.size)
            cosigned = self._cosigned(
                functools.partial(_with_lines, signed, answer.content), "answered"
            )
            self._sizes[origin] = checkpoint.size
            return Witnessed(self.where(origin), checkpoint, cosigned, (self.verifier.name,))
        raise ConflictError(
            f"the witness {self.where(origin)} holds a cosigned checkpoint of"
            f" {entries(old)} for {origin}; this one has {checkpoint.size}: the ledger is"
            " behind its witness (rolled back or truncated)",
            origin=origin,
            witnessed=old,
            size=checkpoint.size,
        )

    def _cosigned(self, make: Callable[[], bytes], did: str) -> bytes:
        """The note ``make`` gives, if it carries this witness's valid cosignature."""
        try:
            data = make()
            note.open_note(data, [self.verifier])
        except TrothError as exc:
            raise IntegrityError(
                f"the witness {self.url} {did} without a valid cosignature of"
                f" {self.verifier.name}: {exc.message}",
                url=self.url,
            ) from exc
        return data

    def _refusal(self, answer: httpx2.Response, origin: str, size: int) -> TrothError:
        said = _said(answer)
        if answer.status_code == 422:
            return IntegrityError(
                f"the witness {self.where(origin)} refused the checkpoint of {origin}"
                f" ({entries(size)}) as not extending the one it cosigned: {said}",
                origin=origin,
            )
        if answer.status_code in (403, 404):
            return StorageError(
                f"the witness {self.where(origin)} does not witness this ledger ({said});"
                " its operator adds it with `troth witness serve --log <ledger name>"
                " <verifier key>` (the key `troth seal --verifier-key` prints)",
                origin=origin,
            )
        return StorageError(
            f"the witness {self.where(origin)} answered {answer.status_code}: {said}",
            origin=origin,
        )

    def _request(self, method: str, url: str, content: bytes | None = None) -> httpx2.Response:
        try:
            return httpx2.request(
                method,
                url,
                content=content,
                timeout=self.timeout,
                headers={"Content-Type": "text/plain"} if content is not None else None,
            )
        except httpx2.HTTPError as exc:
            raise StorageError(
                f"the witness {self.url} cannot be reached ({exc}); check its URL in the"
                " sealing configuration, or that it is running",
                url=self.url,
            ) from exc


def _with_lines(signed: bytes, block: bytes) -> bytes:
    return note.add_signatures(signed, note.signature_lines(block))


def _b64(digest: bytes) -> bytes:
    return base64.b64encode(digest)


def _said(answer: httpx2.Response) -> str:
    return answer.text.strip()[:300] or answer.reason_phrase


def _size(answer: httpx2.Response, url: str) -> int:
    text = answer.text.strip()
    if not answer.headers.get("content-type", "").startswith(SIZE_TYPE) or not text.isdigit():
        raise StorageError(f"the witness {url} answered 409 without the size it holds", url=url)
    return int(text)
