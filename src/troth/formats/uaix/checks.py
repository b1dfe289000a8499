"""Checks beyond the schema, on a parsed :class:`~troth.formats.uaix.codec.Request`.

``now`` and the caller are passed in, so every check is a pure function.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Final

from troth.core.errors import InvalidInputError
from troth.formats.uaix.codec import Request
from troth.formats.uaix.refusals import RequestDeniedError

__all__ = [
    "KNOWN_EXTENSIONS",
    "check_delivery",
    "check_extensions",
    "check_principal",
    "check_request",
]

#: Extension namespaces troth understands. None yet: every critical extension is refused,
#: non-critical ones are ignored (the UAIX rule for extensions a receiver does not know).
KNOWN_EXTENSIONS: Final[frozenset[str]] = frozenset()


def check_principal(request: Request, caller: str) -> None:
    """Refuse (``principal-mismatch``) unless ``trust.principal`` is the authenticated caller.

    An envelope's principal is only a claim; the caller comes from the transport's credentials.
    """
    if request.principal != caller:
        raise RequestDeniedError(
            "trust.principal does not match the credentials the request came with; send the "
            "envelope with the principal you are authenticated as",
            uaix_code="principal-mismatch",
            principal=request.principal,
        )


def check_delivery(request: Request, now: datetime) -> None:
    """Refuse (``expired``) when ``delivery.expires_at`` is not after ``now``."""
    if now.tzinfo is None:
        raise InvalidInputError("now must be timezone-aware", now=now.isoformat())
    expires_at = request.expires_at
    if expires_at <= now:
        raise RequestDeniedError(
            f"the request expired at {request.envelope['delivery']['expires_at']}; send a new "
            "message with a later delivery.expires_at",
            uaix_code="expired",
            expires_at=request.envelope["delivery"]["expires_at"],
        )


def check_extensions(request: Request, known: Collection[str] = KNOWN_EXTENSIONS) -> None:
    """Refuse (``unsupported-critical-extension``) a critical extension not in ``known``."""
    unknown = sorted(
        {
            str(ext["namespace"])
            for ext in request.envelope["extensions"]
            if ext["critical"] is True and ext["namespace"] not in known
        }
    )
    if unknown:
        raise RequestDeniedError(
            f"critical extensions not understood: {', '.join(unknown)}; drop them or mark them "
            "critical: false",
            uaix_code="unsupported-critical-extension",
            namespaces=unknown,
        )


def check_request(
    request: Request,
    *,
    caller: str,
    now: datetime,
    known_extensions: Collection[str] = KNOWN_EXTENSIONS,
) -> None:
    """All checks beyond the schema: principal, expiry, critical extensions — in that order."""
    check_principal(request, caller)
    check_delivery(request, now)
    check_extensions(request, known_extensions)
