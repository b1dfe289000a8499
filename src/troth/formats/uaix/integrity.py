"""``integrity.checksum``: lowercase hex sha256 of the JCS form of the envelope minus ``integrity``.

The UAIX excerpt fixes ``algorithm: sha256`` and ``canonicalization: jcs`` but not what is
covered nor how the digest is written; troth covers the whole envelope except its
``integrity`` member (so every routing, trust and body field is protected) and writes lowercase
hex. Canonicalisation is RFC 8785, done by the ``rfc8785`` library.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, Final

from troth.core.events import CanonicalizationError
from troth.core.events import canonical_bytes as jcs
from troth.formats.uaix.refusals import RequestIntegrityError, UnreadableRequestError

__all__ = [
    "INTEGRITY_VERSION",
    "canonical_bytes",
    "compute_checksum",
    "seal",
    "verify_checksum",
]

#: The ``integrity.version`` troth writes and accepts.
INTEGRITY_VERSION: Final = 1


def canonical_bytes(envelope: Mapping[str, Any]) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of ``envelope`` without its ``integrity`` member."""
    covered = {key: value for key, value in envelope.items() if key != "integrity"}
    try:
        return jcs(covered)
    except (CanonicalizationError, TypeError, ValueError, UnicodeError) as exc:
        raise UnreadableRequestError(
            f"the envelope cannot be canonicalised (RFC 8785): {exc}; send I-JSON only "
            "(finite numbers, integers within ±2**53, valid Unicode)",
            uaix_code="malformed-envelope",
        ) from exc


def compute_checksum(envelope: Mapping[str, Any]) -> str:
    """Lowercase hex sha256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(envelope)).hexdigest()


def verify_checksum(envelope: Mapping[str, Any]) -> str:
    """Return the checksum if ``integrity`` matches the envelope; raise ``IntegrityError`` if not.

    Expects a schema-valid envelope (``integrity`` present with sha256/jcs); a version other
    than :data:`INTEGRITY_VERSION` is refused because its coverage would be unknown.
    """
    integrity = envelope.get("integrity")
    if not isinstance(integrity, Mapping):
        raise RequestIntegrityError(
            "the envelope has no integrity member", uaix_code="integrity-mismatch"
        )
    if integrity.get("version") != INTEGRITY_VERSION:
        raise RequestIntegrityError(
            f"integrity.version {integrity.get('version')!r} is not supported; use "
            f"{INTEGRITY_VERSION}",
            uaix_code="integrity-mismatch",
        )
    expected = compute_checksum(envelope)
    given = integrity.get("checksum")
    if not isinstance(given, str) or not hmac.compare_digest(given, expected):
        raise RequestIntegrityError(
            "integrity.checksum does not match the envelope: it must be the lowercase hex "
            "sha256 of the RFC 8785 (JCS) form of the envelope without its integrity member",
            uaix_code="integrity-mismatch",
            expected=expected,
        )
    return expected


def seal(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``envelope`` with a fresh ``integrity`` member (any old one is replaced)."""
    sealed = {key: value for key, value in envelope.items() if key != "integrity"}
    sealed["integrity"] = {
        "version": INTEGRITY_VERSION,
        "algorithm": "sha256",
        "canonicalization": "jcs",
        "checksum": compute_checksum(sealed),
    }
    return sealed
